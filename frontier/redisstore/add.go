package redisstore

// Adding items: the seen-set, links split by shard, the page limit's
// reservations.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// seenMember returns what the seen-set holds for url.
func (s *Store) seenMember(url string) string {
	if s.opt.ExactSeen {
		return url
	}
	sum := sha256.Sum256([]byte(url))
	return string(sum[:8])
}

// Add implements frontier.Store. The batch is added one shard at a time,
// each shard's items in one script; the items the Store knows seen are
// refused without asking Redis (seenFilter).
func (s *Store) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if len(batch) == 0 {
		return nil, ctx.Err()
	}
	left, idx, refused := s.seenFilter(batch, lim)
	if refused == nil {
		return s.add(ctx, batch, lim)
	}
	if len(left) == 0 {
		return refused, ctx.Err()
	}
	got, err := s.add(ctx, left, lim)
	if err != nil {
		return nil, err
	}
	for j, i := range idx {
		refused[i] = got[j]
	}
	return refused, nil
}

// add adds batch as Add does, and learns what Redis answered.
func (s *Store) add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	refused := make([]error, len(batch))
	now := s.addNow()
	budget, err := s.reserve(ctx, batch, lim)
	if err != nil {
		return nil, err
	}
	gs := s.split(len(batch), func(i int) string { return batch[i].Key }, nil)
	switch {
	case budget < 0 && s.oneServer():
		err = s.addAll(ctx, gs, now, batch, lim, refused)
	case budget < 0 && s.perSlot():
		err = s.addNodes(ctx, gs, now, batch, lim, refused)
	case budget < 0 && len(gs) > 1:
		err = s.addGroups(ctx, gs, now, batch, lim, refused) // one pipelined round
	default:
		// A page limit is shared out in order: a shard at a time.
		for _, g := range gs {
			if err = s.addGroup(ctx, g, addScript, "add", nil, now, batch, lim, &budget, refused); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, s.giveBack(ctx, lim, budget, err)
	}
	s.seenLearn(batch, refused)
	return refused, s.giveBack(ctx, lim, budget, nil)
}

// addNow is the now of an Add: with CallerClock, the latest now a caller
// gave this Store (the shard takes its own latest if none).
func (s *Store) addNow() time.Time {
	if s.opt.CallerClock {
		return timeOf(s.lastNow.Load())
	}
	return time.Time{}
}

// addGroup adds the items of g with script sc (add, or doneadding with
// finish's arguments pre, whose answer goes to the last of refused), their
// answers into refused, and takes the pages it added from *budget
// (negative: no limit).
func (s *Store) addGroup(ctx context.Context, g group, sc script, op string, pre []any, now time.Time, batch []frontier.Item, lim frontier.Limits, budget *int, refused []error) error {
	r, err := s.call(ctx, g.sh, sc, op, now, s.addArgs(pre, base(now), g.items(batch), lim, *budget)...)
	if err != nil {
		return err
	}
	return s.addAnswered(r, g, op, pre != nil, batch, budget, refused)
}

// addGroups adds the items of gs, one shard each, in one pipelined round;
// the batch has no page limit.
func (s *Store) addGroups(ctx context.Context, gs []group, now time.Time, batch []frontier.Item, lim frontier.Limits, refused []error) error {
	rs := make([]*request, len(gs))
	for i, g := range gs {
		rs[i] = s.prepare(g.sh, addScript, "add", now, s.addArgs(nil, base(now), g.items(batch), lim, -1)...)
	}
	replies, err := s.callMany(ctx, rs)
	if err != nil {
		return err
	}
	budget := -1
	for i, g := range gs {
		if err := s.addAnswered(replies[i], g, "add", false, batch, &budget, refused); err != nil {
			return err
		}
	}
	return nil
}

// items returns g's items of batch.
func (g group) items(batch []frontier.Item) []frontier.Item {
	items := make([]frontier.Item, len(g.idx))
	for j, i := range g.idx {
		items[j] = batch[i]
	}
	return items
}

// addAnswered reads the reply r of an add of g (after finish's code, with
// done), into refused, and takes the pages added from *budget.
func (s *Store) addAnswered(r []any, g group, op string, done bool, batch []frontier.Item, budget *int, refused []error) error {
	items := g.items(batch)
	head := 0
	if done {
		head = 1
		if len(r) < 1 {
			return fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, r)
		}
		refused[len(refused)-1] = finishAnswer(op, r[:1])
	}
	got, err := addAnswers(op, r[head:], items)
	if err != nil {
		return err
	}
	for j, i := range g.idx {
		refused[i] = got[j]
		if got[j] == nil && items[j].Kind != frontier.KindSitemap && !items[j].SeenOnly && *budget > 0 {
			*budget--
		}
	}
	return nil
}

// reserve returns how many pages batch may add under lim.MaxPages,
// reserved of the job's count (in its own slot), or -1 for no limit.
func (s *Store) reserve(ctx context.Context, batch []frontier.Item, lim frontier.Limits) (int, error) {
	if lim.MaxPages <= 0 {
		return -1, nil
	}
	pages := 0
	for i := range batch {
		if batch[i].Kind != frontier.KindSitemap && !batch[i].SeenOnly {
			pages++
		}
	}
	if pages == 0 {
		return 0, nil
	}
	start := 0
	if !s.reserved {
		// The job's first reservation starts from what its shards
		// scheduled while no limit was asked for.
		c, err := s.Counts(ctx, time.Time{})
		if err != nil {
			return 0, err
		}
		start = c.Scheduled
	}
	var grant int64
	err := s.retry(ctx, "reserve pages", func() (err error) {
		grant, err = reserveScript.Run(ctx, s.c, []string{s.prefix + "n"}, lim.MaxPages, pages, start).Int64()
		return err
	})
	s.reserved = s.reserved || err == nil
	return int(grant), err
}

// giveBack returns the pages reserved and not added to the job's count,
// and err.
func (s *Store) giveBack(ctx context.Context, lim frontier.Limits, budget int, err error) error {
	if lim.MaxPages <= 0 || budget <= 0 {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	back := s.retry(ctx, "give back pages", func() error {
		return reserveScript.Run(ctx, s.c, []string{s.prefix + "n"}, lim.MaxPages, -budget, 0).Err()
	})
	return errors.Join(err, back)
}

// DoneAdding implements frontier.DoneAdder: on a single Redis without a
// page limit, in a batch (doneAddingAll); otherwise the links of shards
// other than l's are added first, a script a shard; then one script of
// l's shard adds the links of that shard and ends l as Done does — on a
// cluster without a page limit, in a batch of that shard (doneAddingSlot). A process that
// dies in between leaves l's page to be fetched again once its lease
// expires: the links added already are seen, none is lost. The links the
// Store knows seen are refused without asking Redis (seenFilter).
func (s *Store) DoneAdding(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	done := s.runDone(l, o, false)
	refused, err := s.doneAddingSeen(ctx, l, now, o, batch, lim)
	s.noteLost(err, done)
	return refused, err
}

// doneAddingSeen is DoneAdding with the seen cache.
func (s *Store) doneAddingSeen(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	left, idx, refused := s.seenFilter(batch, lim)
	if refused == nil {
		got, err := s.doneAdding(ctx, l, now, o, batch, lim)
		s.seenLearn(batch, got)
		return got, err
	}
	got, err := s.doneAdding(ctx, l, now, o, left, lim)
	if got == nil {
		return nil, err
	}
	s.seenLearn(left, got)
	for j, i := range idx {
		refused[i] = got[j]
	}
	return refused, err
}

// doneAdding is DoneAdding without the seen cache.
func (s *Store) doneAdding(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if len(batch) == 0 {
		return []error{}, s.Done(ctx, l, now, o)
	}
	if s.willDefer(l, now, o) {
		// The lease goes on with the run's next item (run.go): the
		// links go alone, first.
		refused, err := s.Add(ctx, batch, lim)
		if err != nil {
			return nil, err
		}
		return refused, s.Done(ctx, l, now, o)
	}
	if err := checkRevisit(l, o); err != nil {
		refused, addErr := s.Add(ctx, batch, lim)
		if addErr != nil {
			return nil, addErr
		}
		return refused, err
	}
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	own := s.shardOf(l.Key)
	if shardOfToken(l.Token) != own.i {
		refused, err := s.Add(ctx, batch, lim)
		if err != nil {
			return nil, err
		}
		return refused, frontier.ErrLeaseLost
	}
	budget, err := s.reserve(ctx, batch, lim)
	if err != nil {
		return nil, err
	}
	refused := make([]error, len(batch)+1) // the last is the Done's
	ownDone := false
	gs := s.split(len(batch), func(i int) string { return batch[i].Key }, own)
	if budget < 0 && s.oneServer() {
		return s.doneAddingAll(ctx, l, own, gs, now, o, batch, lim, refused)
	}
	if budget < 0 && s.perSlot() {
		return s.doneAddingSlot(ctx, l, own, gs, now, o, batch, lim, refused)
	}
	if budget < 0 && len(gs) > 2 {
		// No page limit to share out in order: the other shards' links
		// go in one pipelined round.
		n := len(gs) - 1
		if gs[n].sh != own {
			n++
		}
		if err := s.addGroups(ctx, gs[:n], now, batch, lim, refused); err != nil {
			return nil, err
		}
		gs = gs[n:]
	}
	for _, g := range gs {
		sc, op, pre := addScript, "add", []any(nil)
		if g.sh == own {
			sc, op, pre = doneAddingScript, "done adding", s.finishArgs(l, now, o, false)
			ownDone = true
		}
		if err := s.addGroup(ctx, g, sc, op, pre, now, batch, lim, &budget, refused); err != nil {
			return nil, s.giveBack(ctx, lim, budget, err)
		}
	}
	if err := s.giveBack(ctx, lim, budget, nil); err != nil {
		return nil, err
	}
	if !ownDone {
		return refused[:len(batch)], s.Done(ctx, l, now, o)
	}
	s.unhold(l.Token)
	return refused[:len(batch)], refused[len(batch)]
}

// addArgs appends add.lua's arguments for batch, added at the caller's
// now, to args.
func (s *Store) addArgs(args []any, now time.Time, batch []frontier.Item, lim frontier.Limits, budget int) []any {
	args = slices.Grow(args, 5+5*len(batch))
	args = append(args, budget, lim.MaxPagesPerHost, lim.MaxSitemapsPerHost, lim.MaxSitemapURLsPerHost, s.seen)
	for i := range batch {
		it := &batch[i]
		class := "0"
		switch {
		case it.SeenOnly:
			// A member's is kept pending until its report is written
			// (ReportsWritten): encoded, to be reported should it die.
			enc := ""
			if s.live.cur.Load() != nil {
				enc = string(encodeItem(nil, it))
			}
			args = append(args, s.seenMember(it.URL), it.Key, "3", enc, "")
			continue
		case it.Kind == frontier.KindSitemap:
			class = "1"
		case it.FromSitemap:
			class = "2"
		}
		args = append(args, s.seenMember(it.URL), it.Key, class, encodeItem(nil, it), s.dueArg(it.Due, now))
	}
	return args
}

// dueArg returns how the scripts are told an item's Due (lua/prelude.lua,
// dueOf): "" for the zero time (due at once); with CallerClock, Unix µs;
// else µs from the caller's now, so that an item due in an hour on the
// caller's clock is due in an hour on Redis's. A Due between two
// microseconds falls due at the later one: never before it.
func (s *Store) dueArg(due, now time.Time) string {
	if due.IsZero() {
		return ""
	}
	if s.opt.CallerClock {
		us := due.UnixMicro()
		if due.Nanosecond()%1000 != 0 {
			us++
		}
		return strconv.FormatInt(us, 10)
	}
	d := due.Sub(now)
	if d <= 0 || !due.After(time.Now()) {
		// Due already on this machine's clock, if not at the caller's now
		// (a Frontier stamps its links' Due after the now of their
		// DoneAdding): at once, to the key's list, not its sorted set.
		return strconv.FormatInt(min(d.Microseconds(), 0), 10)
	}
	return strconv.FormatInt(ceilMicros(d), 10)
}

// checkRevisit returns frontier.ErrRevisit if o queues again an item that
// is not l's, or frontier.ErrLeaseLost for no lease.
func checkRevisit(l *frontier.Lease, o frontier.Outcome) error {
	switch {
	case l == nil:
		return frontier.ErrLeaseLost
	case o.Revisit != nil && (l.URL == "" || o.Revisit.URL != l.URL || o.Revisit.Key != l.Key):
		return fmt.Errorf("redisstore: done: %w: %s for a lease of %q", frontier.ErrRevisit, o.Revisit.URL, l.URL)
	}
	return nil
}

// addAnswers reads add's codes in r, one per item of batch.
func addAnswers(op string, r []any, batch []frontier.Item) ([]error, error) {
	if len(r) != len(batch) {
		return nil, fmt.Errorf("redisstore: %s: %w: %d answers for %d items", op, errCorrupt, len(r), len(batch))
	}
	refused := make([]error, len(batch))
	for i, v := range r {
		switch n, _ := v.(int64); n {
		case 0:
		case 1:
			refused[i] = frontier.ErrSeen
		case 3:
			refused[i] = frontier.ErrLimit
		case 4:
			refused[i] = frontier.ErrHostLimit
		case 5:
			refused[i] = frontier.ErrSitemapLimit
		case 6, 7: // refused, and queued to be reported
			refused[i] = frontier.Refusal(n - 5).Reported()
		default:
			return nil, fmt.Errorf("redisstore: %s: %w: code %v", op, errCorrupt, v)
		}
	}
	return refused, nil
}

// ReportsWritten implements frontier.ReportWriter: the seen-only items'
// entries leave the member's pending hash (add.lua) with the next script
// each one's shard runs (prelude.lua), not in a round trip of their own.
func (s *Store) ReportsWritten(items []frontier.Item) {
	for i := range items {
		sh := s.shardOf(items[i].Key)
		m := s.seenMember(items[i].URL)
		sh.mu.Lock()
		sh.written = append(sh.written, m)
		sh.mu.Unlock()
	}
}

// takeWritten returns ARGV[4]'s suffix that names the seen-set members of
// the reports heard written (see prelude.lua), "" for none.
func (sh *shard) takeWritten() string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.written) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('|')
	for _, m := range sh.written {
		b.WriteString(strconv.Itoa(len(m)))
		b.WriteByte(':')
		b.WriteString(m)
	}
	sh.written = sh.written[:0]
	return b.String()
}
