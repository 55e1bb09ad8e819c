package engine

import (
	"errors"

	"github.com/orkwal/orkwal/executors"
)

// Spawning an attempt into its slot, and the ways it ends unspawned: the
// part of the loop's work that also runs off the loop (the launcher, and
// the executor goroutine whose report frees a slot: see reporter). The
// slots' rules are in slots.go.

// startPrepared spawns s's prepared work if it holds a slot, leaves it in
// the queue for one, or reports why it ends unspawned. Its dispatch is
// durable.
func (e *Engine) startPrepared(s *start, prep executors.Prepared, err error) {
	switch e.slots.ready(s.att, prep) {
	case readyGone: // stopped while it waited for a slot
		e.neverSpawned(s.att, prep)
	case readyFailed:
		e.reportStartFailure(s.job, err)
	case readySpawn:
		e.spawn(s.att, prep)
	case readyQueued: // whoever frees a slot spawns it
	}
}

// spawn starts a's prepared work: a holds its slot and its dispatch is
// durable. It runs on the launcher, on the loop (a lone start: see
// loneStart), or on the goroutine that reported the end of the attempt
// whose slot a got (see reporter).
func (e *Engine) spawn(a *attempt, prep executors.Prepared) {
	h, err := prep.Start(e.reporter(a))
	if err != nil {
		e.reportStartFailure(e.jobRef(a), err)
		return
	}
	a.exec.set(h)
}

// spawnAll spawns the attempts that got a slot, on the launcher (a caller
// on the loop).
func (e *Engine) spawnAll(ss []spawnable) {
	for _, s := range ss {
		e.launcher.submit(func() { e.spawn(s.a, s.prep) })
	}
}

// jobRef is what a start failure's report needs of a's job.
func (e *Engine) jobRef(a *attempt) executors.Job {
	return executors.Job{RunID: a.ref.Run, TaskID: a.taskID, Attempt: a.number,
		LogPath: e.dirs.log(a.ref.Run, a.key(), a.number)}
}

// neverSpawned ends an attempt stopped while it waited for a slot: what
// was prepared is removed and its end reported like that of an attempt
// stopped before it ran (the loop records the stop's reason).
func (e *Engine) neverSpawned(a *attempt, prep executors.Prepared) {
	if prep != nil {
		prep.Abort()
	}
	e.report(executors.Event{Kind: executors.Finished, TaskID: a.taskID, Attempt: a.number, ExitCode: -1,
		Err: "stopped while waiting for an executor slot", Cleaned: true})
}

// stopAttempt stops an attempt (cancel, deadline, shutdown): one that
// waits for a slot leaves the queue and never spawns; one that holds a
// slot is asked to stop. Loop goroutine.
func (e *Engine) stopAttempt(a *attempt) {
	if !e.withdraw(a) {
		a.exec.Stop(e.cfg.KillGrace, a.stopReason())
	}
}

// withdraw takes a out of the queue for a slot if it waits there, and
// tells whether it did: it then never spawns, and its end is reported
// (here, or by the launcher if it has not made it ready yet: see launch).
// Those that wait are withdrawn before any running attempt is stopped:
// a stopped attempt's end would give its slot to the next one waiting.
// Loop goroutine.
func (e *Engine) withdraw(a *attempt) bool {
	return e.withdrawEvery(func(w *attempt) bool { return w == a })[a]
}

// withdrawEvery withdraws at once every waiting attempt that match
// accepts (slots.withdrawEvery) and reports each end as withdraw does; it
// returns the set withdrawn. Loop goroutine.
func (e *Engine) withdrawEvery(match func(*attempt) bool) map[*attempt]bool {
	ws := e.slots.withdrawEvery(match)
	gone := make(map[*attempt]bool, len(ws))
	for _, w := range ws {
		gone[w.a] = true
		if w.prep != nil {
			a, prep := w.a, w.prep
			e.launcher.submit(func() { e.neverSpawned(a, prep) })
		}
	}
	return gone
}

// withdrawAll takes every attempt waiting for a slot out of the queue and
// forgets it (fail-stop: no record can say so; once the log recovers,
// their tasks, found in flight with no attempt, are interrupted and run
// again). Loop goroutine.
func (e *Engine) withdrawAll() {
	for _, w := range e.slots.withdrawEvery(func(*attempt) bool { return true }) {
		delete(e.attempts, w.a.taskID)
		if w.prep != nil {
			e.launcher.submit(w.prep.Abort)
		}
	}
}

// reportStartFailure records an attempt that could not be launched as a
// failure through the inbox, like any other outcome; one the daemon could
// not prepare (executors.PrepareError) is not the task's failure: see
// notRun.
func (e *Engine) reportStartFailure(job executors.Job, err error) {
	var pe *executors.PrepareError
	if errors.As(err, &pe) {
		e.notePrepareFailure(job, err)
		e.inbox.push(event{notRun: &notRun{taskID: job.TaskID, attempt: job.Attempt, err: err}})
		return
	}
	e.report(executors.Event{Kind: executors.Finished, TaskID: job.TaskID, Attempt: job.Attempt,
		ExitCode: -1, Err: "could not start: " + err.Error()})
}

func (e *Engine) report(ev executors.Event) { e.inbox.push(event{exec: &ev}) }

// reporter is the report function of attempt a's executor. The Started
// report of an attempt that is not held (see hold.go) waits in the inbox
// without waking the loop (see inbox.pushQuiet), at most startedDelay,
// the bound its task_started record keeps anyway (see deferStarted).
//
// An attempt whose slot is given back on its Finished report (see slots)
// gives it, and spawns the first attempt waiting for one, before the
// report goes to the loop: on the executor's goroutine, with no loop turn
// and no fsync in between (its dispatch is durable already).
//
// The function is one allocation, kept while the attempt runs: a closure
// of e and a alone (issue 27: memory per running task).
func (e *Engine) reporter(a *attempt) func(executors.Event) {
	if !a.slot.early { // early is set once, at dispatch
		if a.eager {
			return e.report
		}
		return e.reportStartedQuietly
	}
	return func(ev executors.Event) {
		if ev.Kind != executors.Finished {
			e.reportOf(a, ev)
			return
		}
		next, quiet := e.slots.leave(a)
		if quiet {
			// Enough is durable and prepared for the slots: the loop
			// need not wake for this end alone (see pushQuiet).
			e.inbox.pushQuiet(event{exec: &ev}, e.startedDelay, e.startedNow)
		} else {
			e.reportOf(a, ev)
		}
		for _, s := range next {
			e.spawn(s.a, s.prep)
		}
	}
}

// reportOf reports ev of attempt a: at once if a is held (eager, set
// before its spawn), its Started quietly otherwise.
func (e *Engine) reportOf(a *attempt, ev executors.Event) {
	if a.eager {
		e.report(ev)
		return
	}
	e.reportStartedQuietly(ev)
}

func (e *Engine) reportStartedQuietly(ev executors.Event) {
	if ev.Kind != executors.Started {
		e.report(ev)
		return
	}
	e.inbox.pushQuiet(event{exec: &ev}, e.startedDelay, e.startedNow)
}

// startedNow tells the loop that the task_started records it holds, and
// those waiting in the inbox, are due.
func (e *Engine) startedNow() {
	select {
	case e.startedDue <- struct{}{}:
	default:
	}
}
