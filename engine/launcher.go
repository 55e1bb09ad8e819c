package engine

import (
	"sync"
	"time"

	"github.com/orkwal/orkwal/executors"
)

// launchWorkers bounds the executors started at once. Starting a process
// is mostly waiting (for the kernel to create the task's files and folders,
// and for the child to exec), so a few starts in flight keep two cores busy
// where one at a time left them idle; beyond that they only contend.
// 4 (two per core here) is a judgement, not a tuned figure: on a loaded
// 2-core machine 1 and 8 workers were compared once (BenchmarkDaguEngine,
// BenchmarkProcessVsBare) and the noise was larger than the difference.
// Fewer with fewer slots: see launchWorkersFor.
const launchWorkers = 4

// launchWorkersFor is the launcher's bound for maxConcurrent slots: as
// many as the slots, at least 2 (a lone start is prepared beside one busy
// worker: see loneStart), at most launchWorkers. With 2 slots a turn's
// starts (about 16, dispatched ahead) woke 4 workers to prepare them on 2
// cores beside the running processes; 2 prepare them as fast as the slots
// use them (BenchmarkProcessVsBare/concurrency=2, 6 alternating pairs
// against 4 workers under load 12-15: median ratio +0.08, cpu-ratio
// +0.016).
func launchWorkersFor(maxConcurrent int) int { return min(launchWorkers, max(2, maxConcurrent)) }

// launcher runs the effects that need no answer from the loop, off the
// loop: starting executors (preparing their files while their dispatch is
// being made durable, spawning only once it is: see Engine.launch) and
// removing the scratch files of finished attempts. Jobs are taken in submission
// order, so starts begin in dispatch order, but up to max run at
// once and may complete in any order: the order that the log, the state
// and the gate define is the dispatch order, and a start is not an event
// anyone can observe before its Started report.
//
// Workers are goroutines started on demand, up to max, that park
// once the queue is empty and take the jobs of later turns, until close:
// a worker started for every turn cost its creation, its exit and the
// growth of its stack (preparing a start needs a deep one) several times a
// turn (issue 27: at concurrency 2, about 0.6 worker a task).
type launcher struct {
	max     int // workers at most (launchWorkersFor)
	mu      sync.Mutex
	wake    sync.Cond // signalled for a parked worker to take a job, or to end (closed)
	idle    sync.Cond // signalled when the queue is empty and no job runs
	queue   []func()
	workers int
	running int  // workers running a job (or back from one, not yet locked)
	parked  int  // workers waiting for a job and not yet signalled
	started int  // workers started so far (tests)
	closed  bool // parked workers end, and no more are started
}

func newLauncher(workers int) *launcher {
	l := &launcher{max: workers}
	l.wake.L = &l.mu
	l.idle.L = &l.mu
	return l
}

// submit queues jobs, in order, and wakes or starts workers for them.
func (l *launcher) submit(jobs ...func()) {
	if len(jobs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue = append(l.queue, jobs...)
	// A worker awake and running no job takes one queued; a parked one is
	// woken, then one started, for each job beyond those, up to max in
	// all.
	awake := l.workers - l.running - l.parked
	for ; awake < len(l.queue) && l.parked > 0; awake++ {
		l.parked-- // this one's: a later submit wakes another
		l.wake.Signal()
	}
	for ; awake < len(l.queue) && l.workers < l.max && !l.closed; awake++ {
		l.workers++
		l.started++
		go l.work()
	}
}

// work runs queued jobs until there are none, then parks until submit
// wakes it, or ends once the launcher is closed.
func (l *launcher) work() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if len(l.queue) > 0 {
			job := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			l.running++
			l.mu.Unlock()
			job()
			l.mu.Lock()
			l.running--
			continue
		}
		l.queue = nil // let the backing array go
		if l.running == 0 {
			l.idle.Broadcast()
		}
		if l.closed {
			l.workers--
			l.idle.Broadcast() // close waits for the last one
			return
		}
		l.parked++
		l.wake.Wait() // signalled by submit, which took it off parked, or by close
	}
}

// startsAtOnce tells whether a job submitted now starts at once, behind
// no other job: a worker is free, or may be started, for it and for each
// job queued before it (submit wakes or starts one for each; a job stays
// queued until its worker runs, which under load may take a while). Only
// the loop submits, and workers only free up, so it still holds when the
// loop submits right after.
func (l *launcher) startsAtOnce() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running+len(l.queue) < l.max
}

// wait returns once every job submitted so far has run (Close, and tests
// that must see every start of the turns they waited for).
func (l *launcher) wait() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.running > 0 || len(l.queue) > 0 {
		l.idle.Wait()
	}
}

// close returns once every job submitted so far has run and every worker
// has ended (Close: nothing is submitted after).
func (l *launcher) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.parked = 0
	l.wake.Broadcast()
	for l.workers > 0 || len(l.queue) > 0 {
		l.idle.Wait()
	}
}

// commit is a turn's frame as the starts it carries see it: done is closed
// once the frame is durable (ok) or its append failed.
type commit struct {
	done    chan struct{}
	ok      bool
	waiting sync.WaitGroup // starts that have not yet seen the outcome (and acted on a failure)
}

// close tells the waiting starts the outcome of the append (a nil commit
// has none). After a failure it returns only once every start has removed
// what it prepared: the same attempt may be dispatched again in a later
// turn (after the log recovers), and must not find its files removed
// under it by a start of this one.
func (c *commit) close(ok bool) {
	if c == nil {
		return
	}
	c.ok = ok
	close(c.done)
	if !ok {
		c.waiting.Wait()
	}
}

// failed tells, without waiting, whether the frame's append already failed.
func (c *commit) failed() bool {
	select {
	case <-c.done:
		return !c.ok
	default:
		return false
	}
}

// wait returns once the frame's append is over: true if it is durable.
func (c *commit) wait() bool {
	<-c.done
	return c.ok
}

// execHandle is an attempt's executor handle, set by the worker that
// started it and used by the loop to stop it: a stop asked before the
// handle exists is kept and delivered as soon as it does.
type execHandle struct {
	mu     sync.Mutex
	h      executors.Handle
	stop   bool          // a stop was asked before the handle was set
	grace  time.Duration // of that stop
	reason string        // of that stop
}

// set records the handle of the started work (once), delivering a stop
// asked meanwhile.
func (x *execHandle) set(h executors.Handle) {
	x.mu.Lock()
	x.h = h
	stop, grace, reason := x.stop, x.grace, x.reason
	x.mu.Unlock()
	if stop {
		h.Stop(grace, reason)
	}
}

// Stop asks the work to stop, for reason (which its log ends with): now
// if it has started, else once it has.
func (x *execHandle) Stop(grace time.Duration, reason string) {
	x.mu.Lock()
	h := x.h
	if h == nil && !x.stop {
		x.stop, x.grace, x.reason = true, grace, reason
	}
	x.mu.Unlock()
	if h != nil {
		h.Stop(grace, reason)
	}
}
