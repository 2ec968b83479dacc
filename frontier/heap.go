package frontier

// readyHeap is a binary min-heap of hosts with queued items and a free
// slot, ordered by the time each may next be fetched and, among equal
// times, by when it was (re)scheduled, so hosts ready at once are served
// round-robin. Entries hold the key fields inline to keep comparisons in
// cache; each host records its index for O(log n) updates.
type readyHeap []heapEntry

type heapEntry struct {
	at  int64 // nanoseconds since the Frontier's epoch (Unix; math.MinInt64 for the zero time)
	seq uint64
	k   *keyState
}

func (q readyHeap) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q readyHeap) swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].k.index = int32(i)
	q[j].k.index = int32(j)
}

func (q *readyHeap) push(e heapEntry) {
	e.k.index = int32(len(*q))
	*q = append(*q, e)
	q.up(len(*q) - 1)
}

// remove takes entry i out of the heap.
func (q *readyHeap) remove(i int) {
	old := *q
	n := len(old) - 1
	old[i].k.index = -1
	if i != n {
		old[i] = old[n]
		old[i].k.index = int32(i)
	}
	old[n] = heapEntry{}
	*q = old[:n]
	if i != n {
		q.fix(i)
	}
}

// fix restores heap order after entry i changed.
func (q readyHeap) fix(i int) {
	if !q.down(i) {
		q.up(i)
	}
}

func (q readyHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.swap(i, p)
		i = p
	}
}

func (q readyHeap) down(i0 int) bool {
	i := i0
	for {
		l := 2*i + 1
		if l >= len(q) {
			break
		}
		m := l
		if r := l + 1; r < len(q) && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q.swap(i, m)
		i = m
	}
	return i > i0
}
