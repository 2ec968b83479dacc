package crawler

import "sync"

// reportOnce makes a crawl report each URL once however many of its
// workers hold the URL at once. A lease may be lost while its worker
// fetches — the process presumed dead while paused, a fetch outlasting
// its lease — and the Store may then hand the URL to another worker of the
// same crawl, the two fetches overlapping: whichever ends first reports
// it, the other does not. A URL is forgotten once no worker holds it and
// a lease of it has ended in the Store; a report made under a lease the
// Store had taken back is remembered until the URL comes back to this
// crawl and ends there (if it goes to another process, that one reports
// it), so that a process presumed dead and back writes one record of it.
type reportOnce struct {
	mu   sync.Mutex
	urls map[string]reportState
}

// reportState is what a crawl knows of a URL it holds or has reported.
type reportState struct {
	holders  int  // workers holding a lease of it
	reported bool // one of them has reported it
	ended    bool // a lease of it ended in the Store (Done accepted)
}

// hold notes that a worker took a lease of url.
func (o *reportOnce) hold(url string) {
	o.mu.Lock()
	if o.urls == nil {
		o.urls = make(map[string]reportState)
	}
	st := o.urls[url]
	st.holders++
	o.urls[url] = st
	o.mu.Unlock()
}

// first reports whether the caller, a holder of url, is the first to
// report it, and notes that it is reported.
func (o *reportOnce) first(url string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	st, held := o.urls[url]
	if !held || st.holders == 0 {
		return true // not held: nothing to share its report with
	}
	if st.reported {
		return false
	}
	st.reported = true
	o.urls[url] = st
	return true
}

// ended notes that a lease of url ended in the Store: the URL is done for
// the job.
func (o *reportOnce) ended(url string) {
	o.mu.Lock()
	st := o.urls[url]
	st.ended = true
	o.urls[url] = st
	o.mu.Unlock()
}

// release notes that a worker no longer holds url; the last to let go
// forgets it unless its report stands for a lease the Store took back.
func (o *reportOnce) release(url string) {
	o.mu.Lock()
	st := o.urls[url]
	st.holders--
	switch {
	case st.holders > 0:
		o.urls[url] = st
	case st.reported && !st.ended:
		o.urls[url] = reportState{reported: true}
	default:
		delete(o.urls, url)
	}
	o.mu.Unlock()
}
