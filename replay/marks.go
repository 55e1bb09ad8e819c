package replay

// An operator unblocks a run by hand (`orkwal mark`, `orkwal retry
// --from`): these transitions are records like every other, so replay
// makes the same state.

// TaskMarked sets a task's outcome by hand: OK true marks it success,
// false failed. A pending task of a run not finished ends so at once (its
// downstream tasks are released, or skipped). A failed, skipped or
// cancelled task of a finished run may be marked success: the run runs
// again from the tasks downstream of it (as retry --from them would),
// other tasks keeping their outcome. The task's error says it was marked.
// Fan-out tasks and their instances cannot be marked.
type TaskMarked struct {
	TaskRef
	OK bool  `msgpack:"ok,omitempty"`
	At int64 `msgpack:"at"`
}

func (*TaskMarked) Kind() Kind { return KindTaskMarked }

// MarkedNote is the error of a task marked by hand.
func MarkedNote(ok bool) string {
	if ok {
		return "marked success by hand"
	}
	return "marked failed by hand"
}

func (s *State) applyTaskMarked(r *TaskMarked) error {
	t, err := s.Task(r.TaskRef)
	switch {
	case err != nil:
		return invalid("task_marked: %v", err)
	case t.IsNode() || t.Parent >= 0:
		return invalid("task_marked: task %s is a fan-out or one of its instances, which cannot be marked", t.ID())
	case t.Status.InFlight():
		return invalid("task_marked: task %s is %s: wait for its attempt to end, or cancel the run", t.ID(), t.Status)
	case !t.Run.Status.Finished() && t.Status == Pending:
		s.touch(t)
		t.Error = MarkedNote(r.OK)
		if r.OK {
			s.succeed(t, r.At)
		} else {
			s.fail(t, r.At)
		}
		return nil
	case !t.Run.Status.Finished():
		return invalid("task_marked: task %s is already %s", t.ID(), t.Status)
	case !r.OK:
		return invalid("task_marked: run %s has ended: only a pending task of a run not finished can be marked failed", t.Run.ID)
	case t.Status == Success:
		return invalid("task_marked: task %s already succeeded", t.ID())
	}
	down := s.downstreamOf(t.Run, t.Index)
	delete(down, t.Index)
	if err := checkResettable(t.Run, down); err != nil {
		return err
	}
	s.touch(t)
	s.setTask(t, Success)
	t.Error, t.FinishedAt = MarkedNote(true), r.At
	s.rerunOnly(t.Run, down, r.At)
	return nil
}

// downstreamOf is the task at index from and every task downstream of it.
func (s *State) downstreamOf(run *Run, from int) map[int]bool {
	set := map[int]bool{from: true}
	stack := []int{from}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range run.Tasks[i].downstream() {
			if !set[d] {
				set[d] = true
				stack = append(stack, d)
			}
		}
	}
	return set
}

// checkResettable refuses a partial rerun that would reach a fan-out.
func checkResettable(run *Run, set map[int]bool) error {
	for i := range set {
		if t := run.Tasks[i]; t.IsNode() || t.Parent >= 0 {
			return invalid("run %s: task %s is a fan-out: a partial rerun cannot reach one (retry the run's failed tasks instead)", run.ID, t.Key())
		}
	}
	return nil
}

// rerunOnly puts the tasks of set back to pending, whatever their outcome,
// and the run with them, as rerun does for its failed tasks: every other
// task keeps its outcome.
func (s *State) rerunOnly(run *Run, set map[int]bool, at int64) {
	s.touchRun(run)
	for i := range set {
		s.reset(run.Tasks[i], true)
	}
	run.failed, run.active, run.CancelRequested, run.FinishedAt = 0, 0, false, 0
	for _, t := range run.Tasks {
		switch {
		case t.Status == Failed:
			run.failed++
		case !t.Status.Terminal():
			run.active++
		}
	}
	s.setRun(run, RunPending)
	s.recountNodes(run)
	s.countWaiting(run)
	for _, t := range run.Tasks {
		if t.Status == Pending && t.Parent < 0 && t.waiting == 0 && set[t.Index] {
			s.release(t, at)
		}
	}
	s.maybeFinishRun(run, at) // an empty set: the run ends again as it was
}

// rerunFrom is RunRetried with From: the named task and everything
// downstream of it run again.
func (s *State) rerunFrom(run *Run, name string, at int64) error {
	from := -1
	for _, t := range run.Tasks {
		if t.Parent < 0 && t.Name == name {
			from = t.Index
		}
	}
	if from < 0 {
		return invalid("retry of run %s from task %q, which it does not have", run.ID, name)
	}
	set := s.downstreamOf(run, from)
	if err := checkResettable(run, set); err != nil {
		return err
	}
	s.rerunOnly(run, set, at)
	return nil
}
