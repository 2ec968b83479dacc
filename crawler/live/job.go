package live

import (
	"context"
	"net/http"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// Job is what the job view shows of a crawl shared by several processes
// (a -redis job), read from its Store without crawling.
type Job struct {
	Name  string    `json:"name"`
	State string    `json:"state"` // as crawl status says it: running, complete, idle, stopped
	Now   time.Time `json:"now"`   // the Store's clock
	// Counts are the Store's: URLs queued and leased, hosts by state,
	// pages scheduled.
	Counts frontier.Counts `json:"counts"`
	// Pages and Errors total what the processes last reported.
	Pages  int64 `json:"pages"`
	Errors int64 `json:"errors"`
	// Paused says the job is paused: every process pauses within its
	// next heartbeat.
	Paused bool `json:"paused"`
	// Processes are those the Store knows of, the last seen first.
	Processes []JobProcess `json:"processes"`
}

// JobOptions configure a JobHandler.
type JobOptions struct {
	// Token is the secret the controls need; empty disables them.
	Token string
	// Pause pauses the whole job (on true) or resumes it; nil disables
	// the controls.
	Pause func(ctx context.Context, on bool) error
	// Frontier, if not nil, feeds the frontier panel and /api/frontier:
	// the job's Store asked how its queued URLs fall due (a redisstore's
	// DueCounts), at most every 5 s whatever the pages polling.
	Frontier DueAsker
}

// JobProcess is one process of a job, as its last heartbeat said.
type JobProcess struct {
	Name    string    `json:"name"`
	State   string    `json:"state"` // crawling, or how it ended: done, stopped, failed
	Seen    time.Time `json:"seen"`
	Started time.Time `json:"started"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Pages   int64     `json:"pages"`
	Errors  int64     `json:"errors"`
}

// JobHandler serves the job view: the page at / and its data at /api/job,
// asked of job at every request; with JobOptions.Frontier, the frontier
// panel's at /api/frontier as a Handler serves it (else no content); and, with
// JobOptions.Pause, controls that
// pause and resume the whole job (POST /api/pause, /api/resume, guarded as
// a Handler's). Make one with NewJobHandler.
type JobHandler struct {
	job   func(ctx context.Context) (Job, error)
	mux   *http.ServeMux
	front frontierCache
}

// NewJobHandler returns the job view of the job that job reads.
func NewJobHandler(job func(ctx context.Context) (Job, error), opt JobOptions) *JobHandler {
	h := &JobHandler{job: job, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", asset("assets/job.html", "text/html; charset=utf-8"))
	h.mux.HandleFunc("GET /job.js", asset("assets/job.js", "text/javascript; charset=utf-8"))
	h.mux.HandleFunc("GET /app.css", asset("assets/app.css", "text/css; charset=utf-8"))
	h.mux.HandleFunc("GET /frontier.js", asset("assets/frontier.js", "text/javascript; charset=utf-8"))
	if opt.Frontier != nil {
		h.mux.HandleFunc("GET /api/frontier", serveFrontier(func(ctx context.Context) Frontier {
			return h.front.get(ctx, time.Now(), opt.Frontier)
		}))
	} else {
		// No panel, said without an error the page's console would log.
		h.mux.HandleFunc("GET /api/frontier", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	}
	h.mux.HandleFunc("GET /api/job", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), apiTimeout)
		defer cancel()
		j, err := h.job(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		writeJSON(w, j)
	})
	if opt.Pause != nil {
		h.mux.HandleFunc("POST /api/pause", control(opt.Token, func(ctx context.Context) error { return opt.Pause(ctx, true) }))
		h.mux.HandleFunc("POST /api/resume", control(opt.Token, func(ctx context.Context) error { return opt.Pause(ctx, false) }))
	}
	return h
}

// ServeHTTP serves the job view.
func (h *JobHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	setSecurityHeaders(w)
	h.mux.ServeHTTP(w, req)
}
