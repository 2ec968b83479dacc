// Package redisstore is a frontier.Store in Redis: the state of a crawl
// shared by every process that crawls it, and kept as long as Redis keeps
// it.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	store, err := redisstore.New(client, "news", redisstore.Options{})
//	...
//	c, err := crawler.New(crawler.WithStore(store), ...)
//
// Any number of processes may open a Store on one job: they share its
// seen-set, its queues and each host's pacing, so that the crawl is as
// polite as one process would be, whichever process fetches.
//
// # Scheduling
//
// Every operation on a shard (see Shards) is one Lua script, run atomically by Redis: Add
// (add-if-new for a batch, with the limits), Claim, ClaimKey, Done and
// Requeue, DoneAdding (the links of a page, then its Done), GiveUp;
// EditQueued is one read transaction and one script (see
// Store.EditQueued). On a
// single Redis, which holds every shard, the calls of a Store that wait at
// once share one script (see Batches), and a page costs a share of one:
// its share of a batch that leases its item, and its share of the batch
// that ends its lease with its links (those of every shard) and, if the
// Outcome has one, queues its revisit. On a cluster the calls of a Store
// that wait at once for the shards of one node — Claims for the shards
// they picked among them — share one script of that node: a page costs its
// share of a batch that leases its item, its share of one that ends its
// lease with its links of that node, and its share of a batch of each
// other node its links go to (see Shards); the scripts sent at once go in
// one pipelined round. Plus, once
// per script after Redis starts, one to load the script, and on a cluster
// one to publish a shard that woke. Measured (BenchmarkCostPerPage; one
// page at a time, each linking to ten new URLs of ten of twenty hosts, so
// ten shards: nothing to batch or cache): on a single Redis with one
// shard, its default, 2.0 script calls, 2.0 round trips and some 56
// commands a page (64 with a SADD a link); on a cluster of three
// primaries (3 shards, one a primary) 4.0 script calls, 4.0 round trips
// and 68 commands (83 at 12 shards and a SADD a link). On bench
// workload (a), 256 workers of one process and one Redis: 0.05 script
// calls and 3.2 commands a page (a host's pages are leased 16 at a time:
// see Affinity; on three primaries with appendfsync always 0.08 and 3.5 —
// 0.10 and 5.7 at four shards a primary and a SADD a link, 0.27 and 9.5
// with 256 shards and Claims in batches of their shard, 1.3 and 21 before
// batches a node (see Batches and Shards); most
// links were seen before: see Seen cache; the links robots.txt disallows
// are only marked seen, frontier.Item.SeenOnly, and kept
// pending in the counters hash's write until the crawl says their reports
// are written (Store.ReportsWritten: one HDEL with a later script); those a
// page limit refuses are marked seen and queued to be reported,
// frontier.ErrReported; a
// sitemap's entries share a batch).
//
// What a script costs Redis is mostly Lua: on a shared 2-core machine
// some 80 % of a script's time is Lua and its calls into Redis (each
// converts its arguments and its reply, some 2–3 µs), 20 % the commands'
// own work (INFO commandstats). So a script makes few calls: a key's state
// is two packed fields of its hash (lua/keystate.lua), read in one HMGET
// and written in one HSET; a lease is one record of the shard's item hash
// and one member of its expiry set; and what a script writes to the
// expiry set, the item hash and the ready set waits in the script and
// goes in one command each a shard, before the script next reads them
// (flushLeases, flushReady) — a batch's claims read the ready set once;
// the items a script queues to one key go in one RPUSH once the key is
// saved (flushPush); a batch's links of a shard, three or more, are
// tested against its seen-set in one SMISMEMBER and the new ones added
// in one SADD when it leaves the shard (flushSeen; a SADD a link on a
// server before Redis 6.2, or for fewer links); and a link seen before
// costs nothing more, its key's state read only for a new URL.
// A batch (below) runs as a function (Redis Functions, Redis 7): the
// library of lua/prelude.lua and the batch's parts is loaded into each
// server once (FUNCTION LOAD, into every primary of a cluster, again by
// the first batch that finds a server without it), so that a call runs
// the batch alone, where EVALSHA would define the prelude's hundred
// functions again each call; the function keeps the server's run_id from
// call to call, which its restart or failover renews with its Lua state.
// A server without functions (Redis 6) runs the same script by EVALSHA.
// The library is named by a hash of its source, so that processes of two
// releases share a server; an older release's library stays loaded (some
// 250 KB of the server's memory) until FUNCTION DELETE removes it.
// The other scripts, run one at a time, stay EVALSHA scripts.
// Each script reads its shard's counters hash once and writes it once, and
// reads Redis's run_id (INFO server) at most once; its reply ends with each
// shard's next event (see Shards), read from the shard's ready and expiry
// sets — by a batch that claims nothing only where it moved them (the
// links of a key out on a run do not), as the Store's view of the others
// stands.
//
// The scripts implement what the frontier's Schedule does in one process: one
// queue per politeness key, ordered by Item.Due and then by arrival, and a
// sorted set of the keys that have queued items and a free lease slot,
// scored by when each may next be claimed — the later of when its token
// bucket is ready and when its first item is due — or, for a key ready
// already, since when it has waited, so that Claim takes the key ready
// longest: round-robin among ready keys. Keys that became ready in the same
// microsecond are taken in the order of their names. When no key is ready,
// Claim's Next is the least score (or the first lease expiry): a process
// waiting for a revisit sleeps until it falls due. With
// ClaimOptions.Affinity a key ready again at once is served up to 16
// items in a row (see Affinity).
//
// A key's queue is two Redis values. Items due when they are queued — new
// URLs, with no Due or one already past — are appended to a LIST, as
// before revisits existed: a crawl without revisits costs the same
// commands and memory as then. Items due later — revisits, and new URLs
// with a Due ahead — go to a sorted set scored by Due (µs), each member
// the item behind a sequence number of its key, 8 bytes big-endian, so
// that items due at the same µs keep their arrival order: O(log n) to add
// and to take. Before the list is appended to, the items of the sorted set
// that fell due meanwhile move to its end, in order: the list then holds
// items due no later than any in the sorted set, and a key's first item is
// the list's, or the sorted set's when the list is empty. An item due when
// queued is thus ordered as if due then (an Item.Due in the past counts as
// its arrival). Requeue, and a lease that expires or that Close gives
// back, put the item back at the front of the list; an item a closed key
// handed out before its Due (a closed key hands out all its items at
// once) goes back to the sorted set at its Due instead, ahead of the items
// due at the same µs. Done with Outcome.Revisit queues the item again in
// the script that ends the lease and stores the checkpoint: its URL stays
// in the seen-set and is not counted again against the limits.
//
// When a key may next be fetched is its token bucket's to say, as in the
// frontier's Schedule: the bucket of ratelimit.Bucket, a
// golang.org/x/time/rate Limiter of burst 1, kept in the key's hash and
// run by the scripts with rate's own arithmetic (lua/bucket.lua) on
// Redis's clock. A claim takes the key's token when PerHost is above one,
// and the end of a lease takes it with the Outcome's Rest; the key's score
// is when the token is back. A differential test drives rate.Limiter and
// the Lua bucket with the same claims, answers, Crawl-delays, back-offs,
// Retry-After pauses and restarts, and holds them to the same ready
// times.
//
// A lease has a fencing token (a counter in Redis) and belongs to the
// Store that claimed it, a member of the job, for as long as that member
// keeps its heartbeat (see Liveness). Done and Requeue are refused with
// frontier.ErrLeaseLost unless the lease is still the Store's: a worker
// whose lease was taken back can never end someone else's. A process that
// stops without ending its leases (killed, paused, partitioned away) thus
// delays its hosts by its liveness timeout, a fifth of it more at most,
// and a Delay; Close ends the leases of the Store at once.
//
// # Liveness
//
// A Store joins its job at its first Claim as a member, with a random id,
// and beats: one script in the job's own slot (lua/beat.lua) every fifth
// of its liveness timeout, ClaimOptions.Lease (frontier.DefaultLease,
// 15 s, if zero), whatever the Store does meanwhile — one call and five
// commands per process every 3 s by default, not per page. The heartbeat
// is kept on the clock of the decisions (Redis's TIME), in
// heed:{job}:live, with the member's timeout and what it holds (leases,
// runs, hosts: Store.Members, crawl status). A lease the member is granted
// carries its id instead of an expiry, so a long fetch or a long run never
// loses it while the member beats.
//
// Each heartbeat, of any member, declares dead every member whose last
// heartbeat is older than its timeout, and the Store that beat takes the
// dead members' leases back in every shard at once (lua/reclaim.lua, one
// pipelined round, beside its heartbeats: a shard failing over meanwhile
// does not hold them back): their items go back to the front of their queues in
// the order they were queued (a run's items too, those the dead process
// had done included, as Redis does not know of them: at most 16 a key,
// reported as fetched again, as kill -9 always was), and each key rests a
// full Delay from then, since a request may have been under way; its
// bucket then decides the next request as ever. The reclaim marks the
// member dead in each shard (field x:ID of its counters hash, kept a day),
// so that a claim of it that arrives late grants nothing, and queues
// the seen-only links it added whose reports it had not said written
// (fields p:ID:MEMBER of the counters hash) to be reported by whoever
// claims them (frontier.RefusedSeenOnly): at least once, twice only if it
// died between writing a report and saying so. A Store that closes
// deletes its member's. From a
// process's death to its item in another's hands: the timeout, less the
// time since its last heartbeat, plus up to a heartbeat interval and a
// Poll (BenchmarkReclaim; BENCHMARKS.md, "Liveness"). A lease whose
// Done a restart or failover lost after it was acknowledged stays with a
// member that beats on: the member's next heartbeat after a reply told of
// the shard's new epoch hands it back (lua/handback.lua; see Failover).
//
// The timeout must outlast what may hold heartbeats back: a failover of
// the primary of the job's slot (2–3 s with cluster-node-timeout 1 s)
// plus a heartbeat interval, and a Redis slow to answer. Declarations of
// death are made in the same slot as the heartbeats, so while that slot
// has no primary no member is declared dead either.
//
// A process paused (SIGSTOP, a long GC pause, a partition) must not act
// as a second crawler when it resumes. A Store knows, on its monotonic
// clock, when its last acknowledged heartbeat was sent: a lease's Expires
// is three quarters of the timeout after that (Redis waits a whole
// timeout from when the heartbeat arrived), so a worker — which starts no
// request, robots.txt included, on a lease past its Expires — makes no
// request under a lease that may have been taken back; the last quarter
// covers a request that was about to start when the process stopped. A
// run's next item is handed out only while the member is so alive. Once
// past that point the Store's next Claim beats first; if Redis declared
// the member dead, or a script answers that it is dead in its shard, the
// Store joins again as a new member (and logs it to Options.Log): its
// workers' Dones of the old leases are refused where they were taken back,
// and what they had written is fetched again by another process, once,
// as after kill -9.
//
// Heartbeats live in the job's slot, not per shard: a member beats with
// one write whatever the number of shards, and a
// member's leases are spread over every shard it claimed in. The cost is
// that a shard's scripts cannot read the heartbeats (a script touches one
// slot): declaring a member dead is the heartbeat's, in the job's slot,
// and taking its leases back is a script per shard, run by the Store that
// found it dead and repeated by the next heartbeat until every shard
// answered (the job's dead hash keeps the member until then). A failover
// of the job's slot loses at most the last writes of its hash: a heartbeat
// a few milliseconds older than it was, a declaration of death made again;
// the epochs of the shards (see Failover) are untouched. Options.FixedLeases
// gives back the leases of the releases before: an expiry
// ClaimOptions.Lease after the grant (a run's a quarter later), taken back
// by the next script of the shard after it.
//
// # Affinity
//
// A Claim with ClaimOptions.Affinity and one lease a key (PerHost 1)
// leases a run: up to Affinity+1 items, at most 16, of an open key —
// those queued first and due already, no more than its Delay lets be
// fetched in 75 s (a quarter of the 5-minute lease of the releases before
// liveness), none beyond the first if the Delay is longer — in one lease,
// with one lease record holding them all. The Store hands them out one after the
// other: the Claim that leased them gets the first, and after a Done that
// neither closes the key nor carries a checkpoint the Store's first Claim
// once the key's rest is over (Claim.Next says when) gets the next, ahead
// of keys that waited and without a round trip; that Done is the Store's
// alone, and its revisit (and the host's revisit state) is stored when
// the run ends. The run ends in
// Redis once — with the Done or Requeue of the last item handed out, any
// other Done, or when its next item would have less than a lease to go —
// and the items not handed out go back to the front of the key's queue,
// the key resting from the last Done; with FixedLeases also when its next
// item would have less than a lease to go. So a key is served out of turn by at
// most 15 items, as the memory store's Affinity serves one ready again at
// once, and the crawler (Affinity 64) fetches a host 16 pages at a time
// over one warm connection, its delay kept by the Store between them. The items after a run's
// first count as queued until it ends; ClaimKey of a key whose run waits
// for the next Claim ends the run first; GiveUp ends a run at its next
// Done.
//
// A run goes on only while Redis answers: a Done is held back only if a
// request the Store sent after the item was handed out came back (on a
// single Redis any; on a cluster one of the run's shard) — the page's
// links, mostly; if there was none, the Done asks for the shard's tail in
// the batch of the calls waiting (an Add of nothing) — and no reply said
// the shard's Redis restarted or failed over since the run began. A
// process that loses Redis stops after the request under way, as with
// leases of one item (the crawl command's TestRedisGoneDuringCrawl).
// What a run gives up: a process that dies mid-run leaves its items, those
// done too, to be fetched again once it is declared dead (at most 16 a
// key). The Close of a Store ends a run that waits for its
// next Claim as its last Done would have, and gives back the items of one
// whose item is out but those done — all of them, if their revisits wait
// for the run's end: a revisit is never lost.
//
// On bench workload (a), 200 hosts × 50 pages with no delay, runs take a
// page from 1.07 leases to some 0.12, Redis's CPU a page from 86–100 µs
// to 48–54 (from 56–63 to 28–30 with Redis on a core of its own) and the
// pages/s of one process on Redis from 0.47–0.50× to 0.58–0.65× those in
// memory (2 shared cores, paired rounds); on three primaries from 396 µs
// and 0.22× to 172–195 µs and 0.36×. Without
// runs (Affinity 0) a host waits its turn after every page, which costs
// nothing while the hosts ready at once are fewer than the idle
// connections the crawler keeps (512 at its 256 workers); with more hosts
// than that, a host's connection is dropped before its turn comes back:
// on workload (c), 2,000 hosts × 20 pages, Affinity 0 opens a connection
// per request, 40,000 instead of 2,000, for 2.1× the CPU per page
// (crawler and loopback server together) and 0.4× the pages/s, and over
// a network a TCP (and TLS) handshake per page. Measured with
// (2026-11-25, f7ce9a1; the runs since, in BENCHMARKS.md):
//
//	go test -run '^$' -bench 'Affinity/c/' -benchtime 1x ./crawler
//	go -C bench run ./cmd/benchrun -workloads a -crawlers heed,heed-redis -runs 2 -broken=false -port 0
//
// # Clock
//
// Every decision — whether a key may be fetched, when a lease expires, when
// a rest ends — is made on one clock, Redis's (the TIME command), whatever
// the clocks of the processes say; an Outcome.Rest counts from the moment
// Redis records the outcome, and an Item.Due is as far ahead of Redis's now
// as it was of the caller's (for Add, given no now, of the process's
// clock), to the µs, rounded up; the item keeps the Due it was given, which
// Claim hands back. The times a Store returns to its caller
// (Claim.Next, Lease.Expires, the next time of ClaimKey) are translated to
// the caller's clock: now plus how far ahead they are on Redis's, so that a
// worker whose clock runs behind Redis's never starts a request on an
// expired lease. HostState.NextAllowed is on Redis's clock.
//
// Options.CallerClock makes the Store decide on the now its caller passes
// instead (Add and GiveUp, which are given none, take the latest now any
// caller gave): for a crawl of one process that keeps its state in Redis,
// and for tests on a controlled clock — the contract suite in
// frontier/storetest asks for a key at "t0 + 3 s" right after it rested
// 2 s.
//
// # Shards
//
// A job is split into shards (Options.Shards: ShardsPerPrimary for each
// primary of a cluster when the job starts, one on a single Redis; fixed
// when the job starts and kept in its settings): a politeness key belongs
// to shard FNV-1a(key) mod shards, whose keys share a hash tag,
// {job/SHARD.K}, one slot of a Redis Cluster. K is the least number that
// puts shard i of n in the i-th of n equal ranges of the 16,384 slots
// (for up to 1,024 shards; {job/SHARD} for a job of an earlier release):
// a cluster made by redis-cli --cluster create gives its primaries equal
// ranges in order, so a job's shards fall on them evenly — exactly
// ShardsPerPrimary each on the cluster it started on. A key's queue, due
// set, pacing state (bucket), leases and the seen-set of its URLs are in
// its shard, and every script that is not a batch touches one shard: a
// job spreads over a cluster's primaries, and a single Redis holds every
// shard. A batch (see Batches) enters the shards of one server: on a
// cluster, those its node serves (a script declared without flags may
// touch any key of its node's slots). Each shard a batch enters costs it
// commands of its own (its counters read and written, its next event
// read): on bench workload (a), three primaries, appendfsync always, one
// process, a job of 256 shards took 9.5 commands a page, 24 shards 7.3
// and 3 shards 5.8, against 5.3 on a single Redis; hence one shard a
// primary (since, with one push a key, a seen link's SADD alone and a
// node's batches waiting for company: 5.7 commands at four a primary,
// 4.8 and some 20 % less Redis CPU at one, and some 10 % more pages/s). A
// job spreads over at most as many primaries as it has shards (a shard
// is one slot): one that is to grow onto more primaries than
// ShardsPerPrimary times those it starts on needs Options.Shards (crawl's
// -redis-shards). On a
// single Redis a job has one shard unless Options.Shards asks for more (a
// job to be moved into a cluster): there shards spread nothing. A shard
// costs
// nothing until a key of it has work, and an idle shard is never polled.
//
// Claim asks the shard whose first ready key has waited longest, as far as
// the Store knows: every script's reply ends with its shard's next event
// (first ready key and its score, or first lease expiry), which the Store
// keeps per shard. A shard whose next event comes earlier than it last
// said (it woke: an Add to an empty shard, a closed key) publishes it in
// the job's wake index (heed:{job}:wake) — on a single Redis the script
// itself, on a cluster the Store in a round trip more — which each Store
// reads once a Poll (one HGET of its version when nothing changed).
//
// On a cluster, a Claim asks the shard whose first ready key has waited
// longest, with claims of the Store in flight there or not, and carries
// the score and name of the first ready key of the other shards as a
// bound: a shard whose head is later (another process took the key the
// Store knew) hands out nothing and tells its real head, and the Store
// asks the next (at most 8 bounded tries a Claim). The claims of a Store
// for the shards of one node that wait at once share a script of that
// node (see Batches), bounded by the first ready key of every shard they
// did not pick, as the Store knows it then. A Store sends a shard no more claims
// at once than the shard has ready keys (its tail counts them, up to 8):
// a Claim that finds every ready shard so busy waits for a claim to come
// back instead of sending one that would hand out nothing. On a single
// Redis, the Claims waiting
// at once share one script (see Batches), which reads the first ready key
// of the candidate shards — the k+1 shards whose ready keys the Store
// knows to have waited longest, for k Claims, and those of the leases the
// batch ends — and takes up to k keys among them in the order they became
// ready, bounded likewise by the first ready key of the shards that are
// not candidates.
//
// Fairness bound, either way: a claim never takes a key that became ready
// after the first ready key of another shard, as the Store knows it,
// except that a shard that woke is known to another process up to one
// Poll (and a round trip) late, and cluster nodes' clocks may differ by
// their skew. The Store reports Idle only after reading every shard's
// first ready keys and first lease expiry in one pipelined round (then
// the wake index) and finding them all empty; it does so only when it
// knows of leases alone, and that round (no script) is what it learns the
// shards from then — while it holds leases itself (the job cannot be over
// then) at most once a Poll for every 32 shards (eight Polls for 256
// shards: two commands a shard, 512 a read), as only the loss of
// a publication needs it; the Claims that find a read under way wait for
// its answer.
//
// An Add or DoneAdding splits its batch by shard. On a single Redis,
// which holds every shard, a DoneAdding without -max-pages is part of a
// batch (see Batches), whose script adds the links of every shard and
// ends the lease. On a cluster without -max-pages, the links of the
// shards of other nodes than the page's go first, each node's in a batch
// of that node (the nodes at once, in one pipelined round), then a batch
// of the page's node adds its links there and ends its lease. With a
// page limit the links of other shards than the page's go first, a
// script a shard in order (so that the limit is shared out in order),
// then one script of the page's shard adds its links and ends its lease. A process
// that dies in between has added some links and not ended the lease: the
// lease expires, the page is fetched again, its links are refused as seen;
// none is lost. A link added to a shard that woke but not yet published
// (the process died in between) is found at the latest by the Idle check.
//
// Limits.MaxPages is exact: a batch reserves its pages of the job's count
// (heed:{job}:n, field reserved) before adding, and gives back those it did
// not add, two small commands in the job's slot, only when a limit is set.
// While a reservation is out, another process's batch may be refused a page
// the first gives back; a process that dies between reserving and giving
// back leaves its reservation taken (at most one batch's pages). Lease
// tokens carry their shard in their top 16 bits. Checkpoints are stored in
// the shard of the Done, stamped (8 bytes, µs, increasing per Store), and
// Checkpoint returns the latest stamp of the job's shards. Restart
// detection (run_id) and the fencing counter are per shard, so a failover
// of one primary rests only the keys of its shards.
//
// A job of an earlier release, which keeps its keys in one slot (its hash
// heed:{job}:n without a "shards" field), is read as one shard, as before.
// A shard of an earlier layout (three records a lease: hashes lease and
// item by lease counter, the expiry set of counters; the counter in a key
// token) is moved to this one by the first script that enters it. All
// processes of a job run one release.
//
// # Batches
//
// On a single Redis, a Store's Claims, Dones, Requeues, DoneAddings and
// Adds (without -max-pages) that wait at once share one script
// (lua/batch.lua). On a cluster the calls that wait at once for the
// shards of one node do — a Claim for the node of the shard it picked,
// the end of a lease for its key's node, with a DoneAdding's links of
// that node (the others' go first, each node's in a batch of its own), an
// Add's links of that node — in one script that enters each of those
// shards as on a single Redis
// (the memo of the request in the first's slot). The scripts a Store
// sends at once, of every shard and node, go in one pipelined round
// (go-redis's cluster client sends a pipeline to each node at once);
// while a round is in flight, the scripts that come wait for the next.
// A node's batch relies on the node serving each of its shards: a
// failover moves a primary's slots to its replica together; a slot of
// the job moved to another primary while a crawl runs (resharding) makes
// the batches that enter it and another shard of its old node fail, and
// retried for Options.RetryFor, then the crawl stop with the error: move
// a job's slots while its processes are stopped. While a batch is in flight,
// the calls that come queue, and the next
// batch serves up to 32 of them — first the leases it ends, each after
// the links of its page, and the Adds, then the Claims, in the order their
// keys became ready, so that a key a Done of the batch freed may go to a
// Claim of the same batch in its turn. The call that finds no batch in
// flight runs the next, and hands the lead on once served. A batch is
// atomic, as each of its calls alone; its Claims share their options
// (PerHost, Lease: a Claim with others waits for the next batch). Each
// lease it grants is fenced and expires as any other, and goes to one
// waiting Claim; a call whose context ends while its batch is in flight
// gets its answer all the same, and the batch is cancelled only once
// every call it serves gave up.
//
// On a cluster a batch takes its calls as late as the rounds allow: one
// that finds a round in flight, for which its script would wait anyway,
// waits for that round to come back before it takes its calls, so that
// the calls that come meanwhile join it rather than the batch after it;
// the next round waits for the batches so released, so that the nodes'
// scripts still share it. And a node's batch that follows the node's
// previous one by less than 2 ms lingers until 2 ms passed since that one
// came back, unless a full batch (32 calls) waits. Each of these waits is
// at most 2 ms (TestBatcherLinger, TestRoundGate), so a call waits at most
// 6 ms more — nothing beside a lease's seconds or the liveness timeout —
// and a call that finds its node idle and no round in flight waits for
// none of them. A batch's bound (below) is taken when it is sent, after
// them. On bench workload (a), three primaries, appendfsync always, they
// took the script calls from 0.14–0.18 a page to 0.11–0.13, and the
// primaries' CPU a page by 12–18 % in the medians of three sets of rounds
// (128 µs against 146, 77 against 89, 94 against 114), though single
// rounds on the loaded machine went either way (BENCHMARKS.md).
//
// On bench workload (a), 256 workers of one process, a batch serves some
// 12 Claims; the claims of a batch that the bound refuses cost no script
// of their own.
//
// Fairness bound of a cluster's batches: a node's batch takes keys of the
// shards its Claims picked and of those whose leases it ends, in the order
// they became ready, none ready after the first ready key of every other
// shard as the Store knows it when the batch is sent — the bound of a
// single Redis's batch, with the node's shards as the candidates — so
// that no Claim is served out of the order the Store knows
// (TestNodeBatchBound, TestFairAcrossSlots). A batch none of whose Claims
// is bounded (each tried 8 times: the Store's view may be wrong) has no
// bound. If the Store knows no node of a shard, its Claims share a batch
// of that shard alone, bounded by the tightest of their bounds
// (TestClusterBatchBound).
//
// # Seen cache
//
// Most links of a page were seen before. A Store keeps fingerprints of
// the URLs it knows are in the job's seen-set — it added them, or Redis
// refused them as seen — in a bounded, lossy table (4 MiB, 2¹⁹ slots; a
// fingerprint overwrites the one in its slot), and refuses such a link
// with frontier.ErrSeen without asking Redis: on workload (a) it takes
// the links Redis tests from 4.3 to 1.6 a page. Redis checks the limits
// before the seen-set, and answers with those refusals, so the cache does
// not answer for a link a limit applies to (MaxPages, MaxPagesPerHost;
// MaxSitemapsPerHost for a sitemap, MaxSitemapURLsPerHost for a page from
// one). A link of a key given up is queued, to be reported, if new, and
// refused as seen otherwise, as the cache answers. The
// seen-set only grows, except when Redis loses writes (see Failures and
// persistence, and Failover): the Store forgets the whole cache when an
// operation fails for a transient reason (a dropped connection, a
// failover under way) and when a reply tells a new epoch of its shard (a
// restart or a promoted replica, noticed by its run_id). What remains: a
// call made between the loss and the first reply that tells of it, or a
// reply that arrived before the loss and is noted just after the Store
// forgot, may leave a link whose add was lost known as seen: it is
// refused as seen if found again — lost, as the loss itself loses the
// links not found again. With Options.ExactSeen there is no
// cache (a fingerprint would let two URLs collide).
//
// # Keys
//
// The job's own slot, heed:{job}:, holds what is global and small, off the
// path of each page:
//
//	heed:{job}:n          hash: shards, seen kind, reserved pages
//	heed:{job}:wake       hash: shard → "publication:score" of its last
//	                      wake-up, and "#" its version
//	heed:{job}:meta       hash: SetMeta's values
//	heed:{job}:scope      set: the job's scope
//	heed:{job}:live       hash: member id → "BEAT TIMEOUT HOLDS" (µs, JSON)
//	heed:{job}:dead       hash: member id → when it was declared dead,
//	                      until its leases are taken back in every shard
//
// Each shard, heed:{job/SHARD}:, holds its keys' state:
//
//	heed:{job/S}:c        hash: the shard's counters (queued, leased, hosts,
//	                      busy, scheduled), its settings (perhost, keep,
//	                      seen), restart detection (runid, epoch, epochat),
//	                      its last publication (pub, pv), its fencing
//	                      counter (token) and layout (lv)
//	heed:{job/S}:seen     set: the seen-set, 8-byte fingerprints or URLs
//	heed:{job/S}:q:KEY    list: KEY's encoded items due when queued
//	heed:{job/S}:d:KEY    sorted set: KEY's items due later, by Due (µs),
//	                      each an 8-byte sequence number and the item
//	heed:{job/S}:k:KEY    hash: KEY's scheduling state, packed in two
//	                      fields, s and c (lua/keystate.lua: its token
//	                      bucket, when its token is back, its Delay, its
//	                      leases, closed until, given up, counters for the
//	                      limits, the length of q:KEY, the length, first
//	                      Due and last sequence number of d:KEY, its score
//	                      in ready); st: the rest of its HostState; rv: its
//	                      revisit state, frontier.Lease.Revisiting; the Due
//	                      of a leased item it handed out early (ldTOKEN)
//	heed:{job/S}:ready    sorted set: keys with queued items and a free slot
//	heed:{job/S}:item     hash: lease counter → its expiry (µs), key and
//	                      item (none for a lease of a key alone; a run's
//	                      items, each behind its length)
//	heed:{job/S}:exp      sorted set: the leases, "COUNTER KEY" → expiry, µs
//	                      (2⁵² for a member's: see Liveness)
//	heed:{job/S}:robots:A string: the robots.txt entry of authority A, in
//	                      the shard of A (no script reads it)
//	heed:{job/S}:cp:NAME  string: the stamped checkpoint NAME of the
//	                      shard's last Done that carried one
//	heed:{job/S}:memo:ID  hash: replies of one Store's requests in flight
//
// A key's state lasts while it has queued items or leases, and for a minute
// after its rest ends (unless per-key limits are in force or it was given
// up, which it must remember): memory follows the hosts with work, plus
// the seen-set.
//
// # Memory
//
// The seen-set holds, by default, the first 8 bytes of each URL's SHA-256
// (two URLs collide with probability 2⁻⁶⁴ per pair: about 3e-8 over a
// million URLs, 3e-4 over a billion — a collision skips one URL); with
// Options.ExactSeen it holds the URLs. A URL in the seen-set costs 54
// bytes of Redis memory, and some 67 once its item left the queue, its
// key's state (some 220 bytes a key while it has work: its packed state
// and host state, in a hash Redis keeps compact; every value stays under
// hash-max-listpack-value, which is why a leased item lives in the
// shard's item hash and not in its key's) shared with its key's other
// URLs; queued, with a 60-byte URL and a referrer, 170
// (BenchmarkCostPerURL: 200,000 URLs over 2,000 keys, single Redis or
// cluster alike). A queued item costs its encoding (the URL, its
// referrer, and only the other fields that are not zero) plus Redis's
// overhead: a few bytes in a list, some 140 in a sorted set, whose members
// are longer than a listpack takes (zset-max-listpack-value). An item of
// a 55-byte URL with a referrer and a full Visit (a 20-byte ETag) encodes
// in about 190 bytes: queued due at once it costs 197 bytes of used_memory, as
// a revisit due later 328 (BenchmarkRevisitMemory, 100,000 items over
// 1,000 keys).
//
// # Jobs of earlier releases
//
// A job whose items were queued before revisits existed is read as it is:
// its lists hold items due at once, as this layout's lists do, in the
// encoding package codec still decodes (TestOldValues, TestOldQueues), and
// a key's hash without the fields of its sorted set has none. A key's
// hash of a field each (the layouts before the packed state) is read as it
// is and packed when the key is next saved; a shard's leases of the
// layout of three records a lease are moved once (see Keys). Nothing is
// refused. The other way round does not hold: a process of an
// earlier release does not know the sorted sets, and must not share a job
// with processes of this one once revisits are queued.
//
// # Failures and persistence
//
// A reply lost to the network is not a reason to apply an operation twice:
// each request carries an id, and a script that already ran answers a retry
// with the reply it gave (kept in the Store's memo hash of the shard until
// a later request of the Store clears it, 16 at a time, or ten minutes
// after the Store's last request there). Transient errors — a dropped or refused connection, a
// server loading its data set, a failover in progress — are retried with
// back-off for Options.RetryFor (on top of the client's own retries, see
// redis.Options.MaxRetries), then returned: the crawl stops with the
// error. A worker never fetches on a lease the Store did not grant.
//
// What survives a Redis restart is what Redis persisted:
//
//   - No persistence: nothing. The next operation of a Store that used the
//     job fails with ErrStateLost, instead of ending the crawl as if it
//     were done.
//   - RDB snapshots: the state of the last snapshot. Work done since is
//     lost: URLs added since are forgotten (not seen, so added again if
//     rediscovered), pages done since are fetched again.
//   - AOF with appendfsync everysec (Redis's default for AOF): all but the
//     last second or so of operations.
//   - AOF with appendfsync always: every operation acknowledged. Nothing a
//     Store was told succeeded is lost.
//
// The same holds of a failover to a replica, which may lag its primary.
// Whatever was lost, a Store notices a restart or failover by Redis's
// run_id: the first script to run on the new server makes every key rest
// a full Delay from then — a request may have been under way, and the
// state of a key's last rest may have been lost — and moves the fencing
// token counter ahead by 2³², so that a counter rolled back never grants a
// token a worker still holds.
//
// # Failover
//
// On a Redis Cluster whose primaries have replicas, a primary that dies is
// replaced by its replica after cluster-node-timeout and an election (some
// 2–3 s with a timeout of 1 s). Meanwhile the operations on its shards
// fail and are retried (Options.RetryFor); on each transient failure a
// cluster client reloads its map of slots (go-redis would otherwise keep
// sending the dead primary's slots to it until its periodic reload, a
// minute), so the first retry after the promotion reaches the new primary.
// The other primaries' shards are crawled on meanwhile.
//
// What a failover can lose: the writes the primary acknowledged that its
// replica had not yet received. Replication is asynchronous, and
// appendfsync always protects only against a crash and restart of the
// primary itself, on its own file. The Store does not WAIT for replicas
// (WAIT cannot run in a script: it would be a round trip more per
// operation, and a replica that WAIT counted may still not be the one
// promoted); the loss is bounded by the replication lag, milliseconds on a
// healthy link, and every loss costs work again, not politeness:
//
//   - A lost Done or DoneAdding: the lease is back as it was, held by a
//     member that beats on; once a reply tells its Store of the new
//     epoch, the Store's next heartbeat hands back its leases there
//     granted before the epoch that it no longer holds (handback.lua), a
//     full Delay's rest first; its page is fetched again (by whichever
//     process: this one's output may then hold it twice), its links
//     refused as seen but those the lost script added, added again.
//   - A lost Claim: the item is still queued; the worker that holds the
//     lease finds it refused (frontier.ErrLeaseLost) at Done, and the
//     page is fetched again. A run (see Affinity) may hand out one item
//     more before a reply tells the Store of the failover, which ends it;
//     its key has no Delay to keep.
//   - A lost robots.txt entry (SaveEntry): that authority's robots.txt is
//     fetched once more.
//   - A lost Add: URLs added by the lost script are not seen; those
//     rediscovered are added again (a Store forgets the URLs it knew
//     seen once it notices the failover: see Seen cache). A lost creation of a shard (its
//     counters hash) is ErrStateLost for the Stores that had used it, as a
//     Redis restarted without persistence: the crawl stops rather than
//     end without the shard's URLs.
//   - In the job's slot: a lost reservation of -max-pages lets the job
//     fetch up to that batch's pages more; a lost wake-up of a shard is
//     found at the latest by the Idle check.
//
// How the job stays polite: the promoted replica has another run_id, so
// the first script to run on each of its shards starts a new epoch there
// (see above): every key of those shards rests a full Delay from then,
// whatever its last rest was and whatever request was under way, and the
// fencing counter jumps 2³², past any token the old primary handed out,
// kept or lost. The keys of the other shards are not affected. A request
// can only have started before the failover, on a lease the old primary
// granted, so every key is at least a Delay from it. A lease granted
// before the failover and kept ends as usual, if its Done comes before it
// expires (with FixedLeases; a member's lasts while it beats); one that
// expired, or whose member was declared dead, while no primary served its
// shard is refused, and its page fetched again.
// TestFailoverLosesWrites shows each loss on a Redis restarted on an
// older copy of the job; the crawl command's TestClusterFailover kills a
// process and a primary during a crawl of three processes and checks the
// crawl is complete and polite, robots.txt fetched once per host, and each
// page fetched again explained by a lease that expired or was lost.
//
// # Processes and checkpoints
//
// Counts are exact, but a key that must rest after a restart counts as
// ready until a script touches it. Checkpoint and the checkpoint a Done
// carries are stored under Options.Checkpoint: with processes that each
// write their own output, give each its own name, so that each resumes from
// its own checkpoint; with the default name, "", they share one, the last
// acknowledged by any.
//
// Every process of a job must use the same ExactSeen (a Store refuses to
// add to a job with the other kind of seen-set) and the same
// ClaimOptions.PerHost (the last Claim's applies).
package redisstore
