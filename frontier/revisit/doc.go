// Package revisit is the mathematics of keeping a crawled copy fresh: how
// fast each page changes, how often to fetch it again, and how to share a
// host's politeness budget between its pages and its new URLs. It does no
// I/O, starts no goroutine and keeps no state of its own: the state is a
// Page per URL and a Host per politeness key, small fixed-size values the
// frontier's Store keeps beside each URL's record and each key's pacing
// state (ratelimit.HostState), with binary encodings for the stores on
// disk and in Redis.
//
// # Freshness and its optimum
//
// A page that changes as a Poisson process of rate λ (changes per second)
// and is fetched f times a second, at regular intervals, is current a
// share of the time
//
//	F(λ, f) = (1 − e^(−λ/f)) · f/λ
//
// (Freshness). Cho and Garcia-Molina ("Effective page refresh policies for
// web crawlers", ACM TODS 2003) maximise the mean freshness of a copy of
// many pages under a budget of B fetches per second: F is concave in f,
// so at the optimum every page fetched at all has the same slope
//
//	∂F/∂f = (1 − (1 + r)·e^(−r)) / λ = μ,   r = λ/f
//
// (FreshnessSlope, OptimalFreq), and a page gets f = 0 where even its first
// fetch is worth less, where 1/λ ≤ μ: pages that change faster than they
// can usefully be fetched are best left alone, however important their
// changes look. μ, in seconds, is the freshness one fetch per second buys
// at the margin, the price of the budget. Allocate finds the μ at which
// the frequencies spend the budget exactly, by bisection, within bounds on
// each page's interval: the offline optimum, from known rates.
//
// # Estimating a page's change rate
//
// A crawler does not see changes, only whether a page differs from the
// copy fetched before: a fetch after an interval t finds a change with
// probability 1 − e^(−λt), whether the page changed once or ten times.
// Counting changes over time therefore underestimates fast pages (by half
// where λt = 1, see TestEstimatorBias). Page keeps a 28-byte summary of a
// page's last 16 to 32 fetches from which Page.Estimate solves Cho and
// Garcia-Molina's maximum-likelihood equation for irregular intervals
// ("Estimating frequency of change", ACM TOIT 2003)
//
//	Σ_changed tᵢ/(e^(λtᵢ) − 1) + D/λ = U + c
//
// where the sum runs over the intervals that found a change, U is the time
// observed without one, D counts changes dated by a trustworthy
// Last-Modified or sitemap <lastmod> (each then adds only the time since
// the change to U: the likelihood of a dated change is λ·e^(−λu)), and c
// is their small-sample correction, half an observation: with n regular
// intervals I, X of them changed, the estimate is theirs,
// −ln((n − X + ½)/(n + ½))/I (RegularEstimate). The changed intervals are
// kept as counts on a sliding grid of interval lengths a doubling apart,
// each shared between its two grid points, which keeps the estimate
// within a few percent of the exact one from the whole history
// (ExactEstimate) where the estimate's own error is ten times that; once
// 32 fetches would not fit, every count is halved, so that the estimate
// follows a page whose rate changes.
//
// # Trusting what hosts claim
//
// A Trust per host and per kind of claim (Last-Modified headers, sitemap
// <lastmod>) weighs each claim against what the fetch found: a claimed
// change since the previous fetch must match a change found; a claim of no
// change is contradicted by a change found only as far as that change
// probably came before the claim was read. A sitemap, read between two
// fetches, is judged more strictly on what it can fake: its claim of no
// change confirmed by a fetch weighs nothing (a sitemap never updated
// makes it too), and one contradicted counts only where the change most
// likely (9 in 10) came before the reading — so that the changes a true
// sitemap could not yet list do not hold it short of trust. Claims are
// used as evidence once at least 8 verdicts have found them true 9 times
// in 10; claims that are always "now", never move or lie otherwise are
// never trusted, and the page is judged by what fetches find (304,
// validators, content digest).
//
// # The Default policy
//
// After each fetch of a page, Default.Schedule records what it found in
// the page's Page and its host's Host and returns when the page is next
// due: after the interval
//
//	I = clamp(min(1/f*, 2·T), Min, Max),   f* = OptimalFreq(λ̂, μ_host)
//
// where λ̂ is the page's estimate and T the time its summary covers (so a
// page seen unchanged a few times is not at once left for Max). A page
// with f* = 0 is fetched every Max, never left to go stale forever. A page
// never observed is first revisited after the host's Span, the interval of
// uniform revisiting. A page found changed at every one of at least 4
// fetches, none dated, may change at any rate above what its fetches can
// show: it counts as too fast (Max), but after each long interval it is
// probed once, μ later, so that a page only fetched too seldom to show its
// rate gets an unchanged fetch and its estimate back.
//
// Each host learns its μ online, with no view of its other pages: a
// revisit due at Due and answered at At waited w = At − Due for the host,
// which had no revisit due for τ = clamp(Due − LastRevisit, 0, gap) of the
// gap since its last revisit. Then
//
//	e = clamp((w − 8·delay)/(8·delay), −1, 1)
//	ln μ += clamp(0.5·(e·(gap − τ) − τ)/Span, −0.25, 0.25),   μ ∈ [Min/16, 16·Max]
//
// where delay is the host's delay between requests and Span the average
// interval between two fetches of one of its pages (weighted by fetches,
// about its pages over its budget). Revisits queueing beyond eight delays
// mean its pages ask for more than the budget: μ rises and their intervals
// lengthen; a host with nothing due idles its budget: μ falls. Each page's
// next due time counts from its fetch, so a backlog lengthens every
// interval at once and the queue steadies itself while μ moves, by at
// most half an e-fold per Span of time: the controller is an integrator
// slower than the demand it steers, which keeps it stable. In the
// simulations of the tests it settles within about 10 % of the optimal μ
// and keeps the host 95 % busy.
//
// # New URLs and revisits
//
// New URLs and revisits share each host's one politeness budget. heed's
// crawler shares it by due time: a frontier.Store hands out each key's
// items by Item.Due, new URLs due when they were found and revisits when
// Schedule said, so a new URL waits only for what was due before it was
// found and a due revisit only for what was found before it fell due.
// Neither starves: the controller keeps the revisits that are due to a few
// delays' worth (μ rises while they wait), so a new URL found at t is
// fetched about (the host's backlog at t + its place among the new URLs
// found with it) × delay later, and a site that keeps growing delays a
// revisit only by the new URLs found before it fell due. The real-crawl
// benchmark of package crawler measures the longest wait of a new page.
//
// A scheduler that keeps new URLs and revisits in separate queues can
// share the budget with Default.Choose instead: whichever waits if only
// one does; when both do, new URLs get NewShare of the requests (¾ by
// default) and revisits the rest, interleaved by a credit in Host. A new
// URL then waits at most about (its place in the host's queue + 1) × delay
// / NewShare, and due revisits get at least 1 − NewShare of the requests
// however fast the site grows. The package's simulations schedule so.
//
// # Sitemaps
//
// When a host's sitemaps are trusted, Default.Claim applies a <lastmod>
// read for a page already fetched: a claimed change since the last fetch
// makes the page due at once if it is worth fetching at all (1/λ̂ > μ: the
// fetch keeps it fresh until its next change, 1/λ̂ on average), and a
// claim of no change shows the copy fresh when the sitemap was read, so
// the page is next due an interval after that. Fetch.Lastmod carries the
// claim to Schedule, which weighs it into the host's trust and, trusted,
// uses it to date a change found. A crawler applies both when it reads a
// sitemap again: heed's (crawler.LastmodPolicy) edits each listed page's
// queued revisit in its Store (frontier.QueueEditor), giving it the claim,
// when it was read and Claim's due time, and passes the claim to Schedule
// at the page's next fetch — once, since that fetch spends it.
//
// # Custom policies
//
// A crawler that takes revisit policies should define the interface where
// it consumes them, in this shape, which *Default satisfies:
//
//	type RevisitPolicy interface {
//		// Schedule records a fetch of a page in its state and its
//		// host's, and returns when the page is next due.
//		Schedule(h *revisit.Host, p *revisit.Page, f revisit.Fetch) time.Time
//	}
//
// A custom policy keeps its state in the same two values (the estimate
// from Page is there to use) and may schedule as it likes: at fixed
// intervals, by page importance, or by this package's optimum with a
// weight per page.
//
// # Figures
//
// BenchmarkFreshness simulates, in fake time, a host of 1000 pages with
// change rates spread log-uniformly from once per 100 uniform intervals to
// 100 per interval (a tenth never change), crawled from a cold start by the
// Default policy, and reports the freshness kept over the second half of
// 400 uniform intervals against the offline optimum at the same budget
// (about 0.98) and the share of the gap from uniform revisiting to the
// optimum it closes (about 0.8; uniform alone is at 0.92 of the optimum):
//
//	go test -run '^$' -bench Freshness -benchtime 1x ./frontier/revisit/
package revisit
