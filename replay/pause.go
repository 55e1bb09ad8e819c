package replay

// RunPaused pauses (Paused) or resumes a run, or one task of it (Task is
// the task's index in the run; -1 is the whole run). A paused run
// dispatches nothing new: its ready tasks leave the ready queue, and a
// task that becomes ready while it is paused (its upstream ended, a retry
// is due) waits; attempts in flight run to their end. A paused task is
// not dispatched while the rest of its run goes on. A resume puts back in
// the queue what is ready and not held by the other pause. A cancel
// overrides both: a paused run or task is cancelled as any other. Pauses
// are cleared when the run ends.
type RunPaused struct {
	Run    string `msgpack:"run"`
	Task   int    `msgpack:"t"`
	Paused bool   `msgpack:"paused,omitempty"`
	At     int64  `msgpack:"at"`
}

func (*RunPaused) Kind() Kind { return KindRunPaused }

// Held reports whether a pause keeps t from being dispatched.
func (t *Task) Held() bool { return (t.Paused || t.Run.Paused) && !t.Run.CancelRequested }

func (s *State) applyRunPaused(r *RunPaused) error {
	run, ok := s.Runs[r.Run]
	switch {
	case !ok:
		return invalid("run_paused: unknown run %q", r.Run)
	case run.Status.Finished():
		return invalid("run_paused: run %s has ended %s", r.Run, run.Status)
	case r.Task == -1:
		s.touchRun(run)
		run.Paused = r.Paused
		for _, t := range run.Tasks {
			s.requeue(t)
		}
		return nil
	case r.Task < 0 || r.Task >= len(run.Tasks):
		return invalid("run_paused: run %s has no task %d", r.Run, r.Task)
	}
	t := run.Tasks[r.Task]
	switch {
	case t.IsNode() || t.Parent >= 0:
		return invalid("run_paused: task %s is a fan-out or one of its instances, which cannot be paused alone", t.ID())
	case t.Status.Terminal():
		return invalid("run_paused: task %s has ended %s", t.ID(), t.Status)
	}
	s.touchHot(t)
	t.Paused = r.Paused
	s.requeue(t)
	return nil
}

// requeue takes t out of the ready queue while a pause holds it, and puts
// it back when it is ready and nothing holds it.
func (s *State) requeue(t *Task) {
	switch {
	case t.Held():
		s.ready.drop(t)
	case t.Status == Pending && (t.Parent >= 0 || t.waiting == 0) && !(t.IsNode() && !t.Expanded):
		s.ready.push(t)
	}
}

// unpause clears run's pauses when it ends (a retried run starts afresh).
func (s *State) unpause(run *Run) {
	if run.Paused {
		s.touchRun(run)
		run.Paused = false
	}
	for _, t := range run.Tasks {
		if t.Paused {
			s.touchHot(t)
			t.Paused = false
		}
	}
}
