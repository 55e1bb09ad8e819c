package fuzz

import (
	"sort"
	"sync"
	"time"

	"github.com/orkwal/orkwal/executors"
)

// fakeClock is a manual clock for the engine: time moves only by Advance,
// which fires the timers that come due. Shared by every engine of one
// power-loss scenario, so time never goes backwards across a crash.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock and fires due timers.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// fakeExec is an executor the scenario drives: Start only records the job;
// the scenario decides when it reports Started and Finished, and how it
// ends. Stop (a cancel) only marks the job; its Finished comes when the
// scenario says so. Once closing is set (the engine is being closed after
// its crash image was taken), Stop finishes the job at once so that Close
// can return.
type fakeExec struct {
	mu      sync.Mutex
	jobs    map[string]*fakeJob // task id → its latest attempt
	seq     int
	closing bool
	changed chan struct{} // closed and replaced on every change
}

type fakeJob struct {
	job      executors.Job
	report   func(executors.Event)
	seq      int // launch order: deterministic for a seed
	started  bool
	stopped  bool
	finished bool
}

func newFakeExec() *fakeExec {
	return &fakeExec{jobs: map[string]*fakeJob{}, changed: make(chan struct{})}
}

func (f *fakeExec) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change.
func (f *fakeExec) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeExec) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	j := &fakeJob{job: job, report: report, seq: f.seq}
	f.jobs[job.TaskID] = j
	f.signal()
	return fakeHandle{f: f, j: j}, nil
}

type fakeHandle struct {
	f *fakeExec
	j *fakeJob
}

func (h fakeHandle) Stop(time.Duration, string) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.j.stopped = true
	if h.f.closing && !h.j.finished {
		h.j.finished = true
		h.j.report(executors.Event{Kind: executors.Finished, TaskID: h.j.job.TaskID, Attempt: h.j.job.Attempt,
			ExitCode: -1, Err: "stopped"})
	}
	h.f.signal()
}

// close makes every later Stop finish its job at once.
func (f *fakeExec) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
}

// launched reports whether attempt of task id was handed to the executor,
// and whether it was asked to stop.
func (f *fakeExec) launched(taskID string, attempt int) (ok, stopped bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[taskID]
	if j == nil || j.job.Attempt != attempt {
		return false, false
	}
	return true, j.stopped
}

// live returns the jobs not finished yet, in launch order.
func (f *fakeExec) live() []*fakeJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeJob
	for _, j := range f.jobs {
		if !j.finished {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].seq < out[b].seq })
	return out
}

// start reports j started (PID 0: in-process work, never signalled).
func (f *fakeExec) start(j *fakeJob) {
	f.mu.Lock()
	j.started = true
	f.mu.Unlock()
	j.report(executors.Event{Kind: executors.Started, TaskID: j.job.TaskID, Attempt: j.job.Attempt})
}

// finish reports j's outcome.
func (f *fakeExec) finish(j *fakeJob, ok bool, output []byte) {
	f.mu.Lock()
	j.finished = true
	f.mu.Unlock()
	ev := executors.Event{Kind: executors.Finished, TaskID: j.job.TaskID, Attempt: j.job.Attempt, OK: ok, Output: output}
	if !ok {
		ev.ExitCode, ev.Err = 1, "exit status 1"
	}
	j.report(ev)
}
