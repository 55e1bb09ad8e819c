package engine

// Held attempts (docs/reliability.md, "The crash-loop rule"). A crash
// interruption counts toward the crash loop only if the attempt's start
// was durable (replay.TaskInterrupted.Unstarted); a task_started record
// may wait for a frame to ride (defaultStartedDelay). So that a task that
// takes the box down as soon as it starts is counted all the same, the
// attempt a boot dispatches after a crash interrupted its task is held:
// its executor spawns it (for a process: a shell waiting on a pipe, see
// executors.Job.Hold), its task_started is committed at once, and only
// once that record is durable is it let run. A crash before that finds it
// dispatched, or running with nothing of the task run; after that, what
// it did counts.

// holdIfCrashed holds the attempt s starts if a crash interrupted its
// task's previous attempt (Engine.crashed). Loop goroutine, at dispatch.
func (e *Engine) holdIfCrashed(s *start) {
	if !e.crashed[s.job.TaskID] {
		return
	}
	delete(e.crashed, s.job.TaskID)
	s.att.eager = true
	s.att.hold = make(chan bool, 1)
	s.job.Hold = s.att.hold
}

// release tells a held attempt, once, whether its program may run: true
// once its task_started is durable, false when it ends or is forgotten
// first. Loop goroutine.
func (a *attempt) release(ok bool) {
	if a.hold != nil && !a.released {
		a.released = true
		a.hold <- ok
	}
}

// releaseAll releases the attempts with ok.
func releaseAll(as []*attempt, ok bool) {
	for _, a := range as {
		a.release(ok)
	}
}
