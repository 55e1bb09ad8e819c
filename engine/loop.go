package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

// event is one thing the loop reacts to: a command or an executor report.
type event struct {
	cmd    *command
	exec   *executors.Event
	notRun *notRun
	sent   *sent // an alert delivery's outcome
	quiet  bool  // pushed by inbox.pushQuiet
}

// command is a request from a caller. decide runs on the loop under the
// write lock and returns at most one record to apply and log; value is what
// the caller gets once that record is durable.
type command struct {
	decide func(st *replay.State, now int64) (rec replay.Record, value any, err error)
	// decideAll, when set instead of decide, returns several records: they
	// are applied in order and logged in the turn's frame, all or none.
	decideAll func(st *replay.State, now int64) (recs []replay.Record, value any, err error)
	reply     chan result
}

// records runs the command's decision.
func (c *command) records(st *replay.State, now int64) ([]replay.Record, any, error) {
	if c.decideAll != nil {
		return c.decideAll(st, now)
	}
	rec, value, err := c.decide(st, now)
	if rec == nil {
		return nil, value, err
	}
	return []replay.Record{rec}, value, err
}

type result struct {
	value any
	err   error
}

// turnOutput is what one turn decided: records to log and effects to run
// once they are durable.
type turnOutput struct {
	recs     []replay.Record
	replies  []pendingReply
	starts   []*start
	lone     *prepared  // the one start, spawned by the loop: see loneStart
	stops    []*attempt // attempts to stop (deadline, cancel)
	scratch  []string   // scratch files (prefixes) of finished attempts, removed after commit
	release  []*attempt // held attempts whose task_started this frame carries (hold.go)
	progress bool       // something was dispatched or decided
	wake     int64      // earliest not_before seen in the future
	index    uint64     // the WAL index the records were committed at

	// Alerts (alerts.go): records looked at so far, the daemon's log lines
	// and the sends to run once the frame is durable, and per turn which
	// runs' starts and ends were seen.
	noticed       int
	logs          []func()
	sends         []sendJob
	logged, ended map[string]bool
}

type pendingReply struct {
	cmd *command
	res result
}

type start struct {
	att *attempt
	ex  executors.Executor
	job executors.Job
	err error // the job could not be prepared (e.g. an input did not resolve)
}

func (e *Engine) loop() {
	defer close(e.done)
	stop := e.stop
	var evs []event
	idle := false
	for {
		if idle && !e.inbox.calling() {
			if e.stopping && len(e.attempts) == 0 {
				return
			}
			// With a snapshot being copied, the loop does not block: with
			// nothing else to do, a pass copies one step (and takes no
			// turn). Otherwise it sleeps until something happens.
			var copyNow <-chan struct{}
			if e.copying != nil {
				copyNow = closedChan
			}
			select {
			case <-copyNow:
				e.copyStep()
				continue
			case <-e.inbox.signal:
			case <-stop:
			case <-e.wakeCh:
				e.wakeAt, e.wakeCh = 0, nil
			case <-e.startedDue:
				e.startedFired = true
			case <-e.recoverTimer:
				e.recoverTimer = nil
				e.tryRecover()
			case r := <-e.compactDone:
				e.compacted(r) // bookkeeping only: no turn
				continue
			case <-e.halt:
				return
			}
		}
		select {
		case r := <-e.compactDone:
			e.compacted(r)
		default:
		}
		select {
		case <-e.recoverTimer:
			e.recoverTimer = nil
			e.tryRecover()
		default:
		}
		select {
		case <-e.halt:
			return
		case <-stop:
			stop = nil
			e.beginShutdown()
		default:
		}
		evs = e.inbox.drain(e.cfg.MaxBatch, evs[:0])
		e.turns.Add(1)
		out := e.turn(evs)
		e.effects(out)
		if e.copying != nil { // after the replies: a step delays none
			e.copyStep()
		}
		if e.afterTurn != nil {
			e.afterTurn()
		}
		e.armWake(out.wake)
		idle = !out.progress || !e.canDispatch()
		if e.stopping && len(e.attempts) == 0 && e.inbox.empty() {
			return
		}
	}
}

// closedChan is always ready to receive from.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// armWake sets the timer for the next deadline or not_before, if any.
func (e *Engine) armWake(notBefore int64) {
	wake := e.nextWake(notBefore)
	if wake == 0 || wake == e.wakeAt {
		return
	}
	e.wakeAt = wake
	e.wakeCh = atInstant(e.cfg.Clock, wake)
}

func (e *Engine) canDispatch() bool {
	return !e.stopping && e.poison.Load() == nil &&
		len(e.attempts) < e.dispatchMax() && e.state.ReadyCount() > 0
}

// dispatchMax is how many attempts may be in flight: the slots and as
// many dispatched ahead (see slots).
func (e *Engine) dispatchMax() int { return e.cfg.MaxConcurrent + aheadOf(e.cfg.MaxConcurrent) }

// turn decides and applies everything evs imply plus the dispatches that
// fit, then makes them durable. See the package doc.
func (e *Engine) turn(evs []event) *turnOutput {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := &turnOutput{}
	now := e.cfg.Clock.Now().UnixNano()
	for _, ev := range evs {
		switch {
		case ev.cmd != nil:
			e.flushStarted(out)
			e.decideCommand(ev.cmd, now, out)
		case ev.notRun != nil:
			e.flushStarted(out)
			e.decideNotRun(ev.notRun, now, out)
		case ev.sent != nil && e.poison.Load() != nil:
			delete(e.alerts.sending, ev.sent.ref) // sent again once the WAL recovers
		case ev.sent != nil:
			e.decideSent(ev.sent, now, out)
		case e.poison.Load() != nil:
			e.pendingStarted = nil
			releaseAll(e.heldStarts, false)
			e.heldStarts = nil
			e.forgetExec(ev.exec, out)
		case ev.exec.Kind == executors.Started:
			e.deferStarted(ev.exec, now)
		default:
			e.flushStarted(out)
			e.decideExec(ev.exec, now, out)
		}
		e.noticeRecords(out)
	}
	e.expireDeadlines(now, out)
	var cronWake int64
	if e.poison.Load() == nil && !e.stopping {
		cronWake = e.fireSchedules(now, out)
	}
	if e.canDispatch() || e.canOvertake(now, out) {
		e.dispatch(now, out)
	} else {
		e.keepSlots(e.waitsWhileFull(now))
	}
	e.noticeRecords(out)
	if e.poison.Load() == nil {
		e.alertTimersDue(now, out)
		e.noticeRecords(out)
	}
	if cronWake != 0 && (out.wake == 0 || cronWake < out.wake) {
		out.wake = cronWake
	}
	select {
	case <-e.startedDue:
		e.startedFired = true
	default:
	}
	if e.startedFired || len(out.recs) > 0 || e.stopping {
		e.flushStarted(out)    // rides this frame, or waited long enough for one
		e.startedFired = false // nothing waits now (what was due came with another event)
	}
	if len(out.recs) > 0 {
		var c *commit
		if out.lone = e.loneStart(out.starts); out.lone == nil {
			c = e.launchAfter(out.starts)
		}
		durable := e.append(out)
		c.close(durable)
		if !durable && out.lone != nil {
			out.lone.abort()
			out.lone = nil
		}
		if durable {
			e.publish(out.index, out.recs)
		}
		e.maybeCompact(now)
	}
	return out
}

func (e *Engine) decideCommand(c *command, now int64, out *turnOutput) {
	if err := e.refuseWork(); err != nil {
		out.replies = append(out.replies, pendingReply{c, result{err: err}})
		return
	}
	recs, value, err := c.records(e.state, now)
	for i := 0; err == nil && i < len(recs); i++ {
		// A record Apply refuses was decided wrongly; those applied before
		// it are logged all the same, so that the log holds the state.
		if err = e.state.Apply(recs[i]); err != nil {
			err = fmt.Errorf("%w: %v", ErrConflict, err)
			break
		}
		out.recs = append(out.recs, recs[i])
		out.progress = true
		if c, ok := recs[i].(*replay.RunCancelRequested); ok {
			e.stopRun(c.ID, out)
		}
	}
	out.replies = append(out.replies, pendingReply{c, result{value, err}})
}

// stopRun asks every attempt of a run being cancelled to stop, once the
// frame is durable (see stopEvery).
func (e *Engine) stopRun(runID string, out *turnOutput) {
	cancelling := func(a *attempt) bool { return a.ref.Run == runID && !a.cancelled }
	out.stops = append(out.stops, e.stopEvery(cancelling, func(a *attempt) { a.cancelled = true })...)
}

// stopEvery marks (mark) every attempt in flight that match accepts and
// returns those of them that hold a slot, for the caller to stop: those
// waiting for one leave the queue first, all at once (see withdrawEvery),
// and never spawn. A cancel and a shutdown both stop attempts so.
func (e *Engine) stopEvery(match func(*attempt) bool, mark func(*attempt)) (running []*attempt) {
	gone := e.withdrawEvery(match)
	for _, a := range e.attempts {
		if match(a) {
			mark(a)
			if !gone[a] {
				running = append(running, a)
			}
		}
	}
	return running
}

// refuseWork says why no new work is accepted, if it is not.
func (e *Engine) refuseWork() error {
	if p := e.poison.Load(); p != nil {
		return fmt.Errorf("%w: the write-ahead log failed, no work is accepted until it recovers: %w", ErrUnavailable, *p)
	}
	if e.stopping {
		return fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	return nil
}

// decideExec turns an executor report about a known attempt into a record.
// Heartbeats are kept in memory only: they matter to a live attempt, and a
// crash interrupts every attempt anyway.
func (e *Engine) decideExec(ev *executors.Event, now int64, out *turnOutput) {
	a := e.attempts[ev.TaskID]
	if a == nil || a.number != ev.Attempt {
		e.log.Debug("report for an attempt no longer in flight", "task", ev.TaskID, "attempt", ev.Attempt)
		return
	}
	var rec replay.Record
	if ev.Kind == executors.Finished {
		delete(e.notRunCount, ev.TaskID)
		a.cleaned(ev)
	}
	switch {
	case ev.Kind != executors.Finished: // a heartbeat (Started: see deferStarted)
		a.started, a.lastBeat = true, now
		return
	case deferring(a, ev):
		e.deferTask(a, ev, now, out)
		return
	case a.deferred && a.stopped && !ev.OK:
		e.forget(ev.TaskID, ev.Attempt, out) // stopped for a shutdown: the next boot tracks it again
		return
	case a.stopped && !ev.OK:
		rec = &replay.TaskInterrupted{TaskRef: a.ref, Attempt: a.number, Clean: true, At: now}
	default:
		rec = e.finishRecord(a, ev, now)
	}
	if err := e.state.Apply(rec); err != nil {
		e.log.Warn("executor report does not apply", "task", ev.TaskID, "err", err)
		return
	}
	out.recs = append(out.recs, rec)
	out.progress = true
	if ev.Kind == executors.Finished {
		a.release(false)
		e.observeFinish(a, now)
		e.remove(a, out)
	}
}

// defaultStartedDelay bounds how long a task_started record waits for a frame to
// ride. A Started report asks for no effect: nothing waits for its record
// to be durable (the process was started under its durable
// task_dispatched, and a crash before task_started is durable is recovered
// like one just after: the attempt is interrupted and runs again). So a
// turn that would log only task_started records does not commit: they join
// the next frame, which for a short task is the one of its task_finished,
// saving one fsync per task, or are committed on their own after
// e.startedDelay. Until then they are neither applied nor visible (readers
// never see state that is not durable); the task shows as dispatched.
//
// The cost: the pid and start time boot uses to kill what is left of a
// task's process group after a crash (see interruptInFlight) become
// durable up to startedDelay later. The leader dies with the daemon
// anyway (Pdeathsig); only background children a task spawned within
// startedDelay of a crash can outlive it unrecorded, as they already could
// within the fsync of its task_started.
const defaultStartedDelay = 10 * time.Millisecond

// deferStarted keeps a Started report's record until the next commit (see
// startedDelay); the attempt counts as started for its start deadline at
// once.
func (e *Engine) deferStarted(ev *executors.Event, now int64) {
	a := e.attempts[ev.TaskID]
	if a == nil || a.number != ev.Attempt || a.started {
		e.log.Debug("start report for an attempt no longer in flight", "task", ev.TaskID, "attempt", ev.Attempt)
		return
	}
	a.started, a.lastBeat = true, now
	delete(e.notRunCount, ev.TaskID)
	e.pendingStarted = append(e.pendingStarted, &replay.TaskStarted{TaskRef: a.ref, Attempt: a.number, PID: ev.PID, StartTime: ev.StartTime, At: now})
	if a.eager {
		e.startedFired = true // this turn commits it
		e.heldStarts = append(e.heldStarts, a)
	}
	if len(e.pendingStarted) == 1 {
		if e.startedTimer == nil {
			e.startedTimer = time.AfterFunc(e.startedDelay, e.startedNow)
		} else {
			e.startedTimer.Reset(e.startedDelay)
		}
	}
}

// flushStarted applies the deferred task_started records and adds them to
// the turn's frame. It runs before any other event of a turn is decided,
// so records keep the order of what they report.
func (e *Engine) flushStarted(out *turnOutput) {
	if len(e.pendingStarted) == 0 {
		return
	}
	e.startedTimer.Stop()
	select {
	case <-e.startedDue:
	default:
	}
	e.startedFired = false
	for _, rec := range e.pendingStarted {
		if err := e.state.Apply(rec); err != nil {
			e.log.Warn("start report does not apply", "task", rec.TaskRef, "err", err)
			continue
		}
		out.recs = append(out.recs, rec)
	}
	clear(e.pendingStarted)
	e.pendingStarted = e.pendingStarted[:0]
	out.release = append(out.release, e.heldStarts...)
	e.heldStarts = nil
}

// finishRecord records an attempt's outcome; an attempt the engine stopped
// fails with the engine's reason.
func (e *Engine) finishRecord(a *attempt, ev *executors.Event, now int64) *replay.TaskFinished {
	rec := &replay.TaskFinished{TaskRef: a.ref, Attempt: a.number, OK: ev.OK, ExitCode: ev.ExitCode,
		Error: ev.Err, Output: ev.Output, At: now}
	switch {
	case ev.OK:
	case a.failReason != "":
		rec.Error = a.failReason
	case a.cancelled:
		rec.Error = "cancelled"
	}
	if !ev.OK {
		rec.Jitter = replay.MaxJitter * e.cfg.Rand()
	}
	return rec
}

// forgetExec handles a report while the WAL is failed: nothing can be
// recorded, so a finished attempt is only forgotten. If the WAL recovers,
// its task is found in flight without an attempt and runs again.
func (e *Engine) forgetExec(ev *executors.Event, out *turnOutput) {
	if ev.Kind == executors.Finished {
		if a := e.attempts[ev.TaskID]; a != nil && a.number == ev.Attempt {
			a.cleaned(ev)
		}
		e.forget(ev.TaskID, ev.Attempt, out)
	}
}

// forget drops an attempt in flight that ended, if it is the one known.
func (e *Engine) forget(taskID string, number int, out *turnOutput) {
	a := e.attempts[taskID]
	if a == nil || a.number != number {
		return
	}
	a.release(false)
	e.remove(a, out)
}

// remove drops an attempt that ended from those in flight and gives back
// its slot (if its Finished report did not already: see slots).
func (e *Engine) remove(a *attempt, out *turnOutput) {
	delete(e.attempts, a.taskID)
	out.scratch = append(out.scratch, e.scratchOf(a))
	next, _ := e.slots.leave(a)
	e.spawnAll(next)
}

// append makes the turn's records durable and says whether they are. On
// failure the engine becomes fail-stop: no reply says success and no
// executor starts.
func (e *Engine) append(out *turnOutput) bool {
	payloads, err := e.frames.encode(out.recs)
	var index uint64
	if err == nil {
		index, err = e.wal.Append(payloads)
		defer e.frames.done()
	}
	if err == nil {
		// What the log grew by, framing included (about 6% more than the
		// records alone for a turn of one): --compact-bytes is disk.
		out.index = index
		n := wal.EntrySize(index, payloads)
		e.logBytes += n
		e.entryMax = max(e.entryMax, n)
		return true
	}
	e.failStop(err)
	unavailable := fmt.Errorf("%w: the write-ahead log failed: %w", ErrUnavailable, err)
	for i := range out.replies {
		if out.replies[i].res.err == nil {
			out.replies[i].res = result{err: unavailable}
		}
	}
	e.withdrawAll()
	for _, s := range out.starts {
		delete(e.attempts, s.job.TaskID)
		e.slots.leave(s.att) // nobody waits now: nothing to spawn
	}
	for _, s := range out.sends {
		delete(e.alerts.sending, s.ref) // still pending: sent once the WAL recovers
	}
	out.sends, out.logs = nil, nil
	out.starts, out.stops = nil, nil
	releaseAll(out.release, false) // their start is not durable: they never run
	out.release = nil
	return false
}

// prepared is a lone start (see loneStart): the launcher prepares its
// work while its frame is fsynced; the loop waits for it (done) and
// spawns it, or aborts it if the frame failed.
type prepared struct {
	s    *start
	done chan struct{}      // closed once prep and err are set
	prep executors.Prepared // nil exactly when err is not
	err  error
}

// abort removes what was prepared, once it is (the frame failed).
func (p *prepared) abort() {
	<-p.done
	if p.prep != nil {
		p.prep.Abort()
	}
}

// startLone spawns p's prepared work, once it is (the frame is durable).
func (e *Engine) startLone(p *prepared) {
	<-p.done
	e.startPrepared(p.s, p.prep, p.err)
}

// loneStart hands the one start of a turn when nothing else waits for the
// loop, if it is a process that holds its slot, to the launcher to prepare
// while the frame is fsynced, and leaves its spawn to the loop, once the
// frame is durable (see effects): a chain's next step is spawned with no
// goroutine to wake after the fsync. Only when the launcher starts its
// preparation at once: the loop then waits for that one preparation,
// never behind the launcher's backlog (earlier turns' starts and
// removals), which would hold up every command and report meanwhile. It
// returns nil otherwise (the launcher starts the turn's starts: see
// launchAfter).
func (e *Engine) loneStart(starts []*start) *prepared {
	if len(starts) != 1 || !e.inbox.empty() || !e.launcher.startsAtOnce() {
		return nil
	}
	s := starts[0]
	if !earlyRelease(s.att.spec) || e.slots.waiting(s.att) {
		return nil
	}
	p := &prepared{s: s, done: make(chan struct{})}
	e.launcher.submit(func() {
		p.prep, p.err = prepareStart(s, func() bool { return false })
		close(p.done)
	})
	return p
}

// launchAfter hands the turn's starts to the launcher before the turn's
// frame is appended: each prepares its attempt's files while the frame is
// being made durable (see executors.Preparer), then waits for the returned
// commit to be closed, and starts the work only if the frame is durable.
// Preparing during the fsync takes the files off the path from one task's
// end to the next one's start.
func (e *Engine) launchAfter(starts []*start) *commit {
	if len(starts) == 0 {
		return nil
	}
	c := &commit{done: make(chan struct{})}
	c.waiting.Add(len(starts))
	jobs := make([]func(), 0, len(starts))
	for _, s := range starts {
		jobs = append(jobs, func() { e.launch(s, c) })
	}
	e.launcher.submit(jobs...)
	return c
}

// effects runs what the durable records allow: replies and stops on the
// loop, and the removal of finished attempts' scratch files on the
// launcher (the starts are there already: see launchAfter).
func (e *Engine) effects(out *turnOutput) {
	if len(out.recs) > 0 {
		e.notify()
		e.wakeWaiters()
		releaseAll(out.release, true) // their task_started is durable
	}
	for _, log := range out.logs {
		log()
	}
	e.launchSends(out.sends)
	for _, r := range out.replies {
		r.cmd.reply <- r.res
	}
	for _, a := range out.stops {
		e.stopAttempt(a)
	}
	if out.lone != nil {
		e.startLone(out.lone)
	}
	jobs := make([]func(), 0, len(out.scratch))
	for _, prefix := range out.scratch {
		if prefix != "" {
			jobs = append(jobs, func() { executors.RemoveScratch(prefix) })
		}
	}
	e.launcher.submit(jobs...)
}

// launch starts an attempt's executor once its dispatch is durable (c); it
// runs on the launcher. The attempt is prepared before (its files, for an
// executor that is a Preparer), while the dispatch is being made durable,
// and what was prepared is removed if it never is. A stop the loop asked
// for meanwhile (cancel, timeout, shutdown) is delivered once the handle
// exists (see execHandle).
func (e *Engine) launch(s *start, c *commit) {
	prep, err := prepareStart(s, c.failed)
	durable := c.wait()
	if !durable && prep != nil {
		prep.Abort()
	}
	c.waiting.Done()
	if durable {
		e.startPrepared(s, prep, err)
	}
}

// prepareStart prepares s's work, unless s could not be made a job or
// its frame's append failed already: prep is nil exactly when err is not
// (or when the append failed).
func prepareStart(s *start, failed func() bool) (prep executors.Prepared, err error) {
	err = s.err
	if err == nil && s.ex == nil {
		err = errors.New("no executor for this task's kind")
	}
	if err == nil && !failed() {
		prep, err = executors.Prepare(s.ex, s.job)
	}
	return prep, err
}

// beginShutdown stops dispatching and asks every attempt to stop.
func (e *Engine) beginShutdown() {
	e.stopping = true
	every := func(*attempt) bool { return true }
	for _, a := range e.stopEvery(every, func(a *attempt) { a.stopped = true }) {
		a.exec.Stop(e.cfg.KillGrace, a.stopReason())
	}
}

// do submits a command and waits for its durable outcome.
func (e *Engine) do(decide func(*replay.State, int64) (replay.Record, any, error)) (any, error) {
	return e.send(&command{decide: decide, reply: make(chan result, 1)})
}

// doAll is do for a decision of several records, logged all or none.
func (e *Engine) doAll(decide func(*replay.State, int64) ([]replay.Record, any, error)) (any, error) {
	return e.send(&command{decideAll: decide, reply: make(chan result, 1)})
}

// send hands c to the loop and waits for its answer.
func (e *Engine) send(c *command) (any, error) {
	select {
	case <-e.done:
		return nil, fmt.Errorf("%w: engine stopped", ErrUnavailable)
	default:
	}
	e.inbox.push(event{cmd: c})
	select {
	case r := <-c.reply:
		return r.value, r.err
	case <-e.done:
		return nil, fmt.Errorf("%w: engine stopped", ErrUnavailable)
	}
}
