package replay

import (
	"errors"
	"fmt"
)

// ErrInvalid wraps every rejection by Apply: the record does not fit the
// state. The state is unchanged when Apply returns an error.
var ErrInvalid = errors.New("replay: record does not apply")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Apply folds one record into the state. It is the only way state changes.
func (s *State) Apply(r Record) error {
	switch r := r.(type) {
	case *WorkflowPut:
		return s.applyWorkflowPut(r)
	case *WorkflowDeleted:
		return s.applyWorkflowDeleted(r)
	case *RunCreated:
		return s.applyRunCreated(r)
	case *TaskDispatched:
		return s.applyTaskDispatched(r)
	case *TaskStarted:
		return s.applyTaskStarted(r)
	case *TaskFinished:
		return s.applyTaskFinished(r)
	case *TaskInterrupted:
		return s.applyTaskInterrupted(r)
	}
	return invalid("unknown record type %T", r)
}

func (s *State) applyWorkflowPut(r *WorkflowPut) error {
	if r.Spec == nil || r.Spec.Name == "" || len(r.Spec.Tasks) == 0 {
		return invalid("workflow_put without a spec, a name or tasks")
	}
	w := &Workflow{Name: r.Spec.Name, Version: 1, Spec: r.Spec, Source: r.Source,
		CreatedAt: r.At, UpdatedAt: r.At}
	if old, ok := s.Workflows[w.Name]; ok {
		w.Version, w.CreatedAt = old.Version+1, old.CreatedAt
	}
	s.Workflows[w.Name] = w
	return nil
}

func (s *State) applyWorkflowDeleted(r *WorkflowDeleted) error {
	if _, ok := s.Workflows[r.Name]; !ok {
		return invalid("delete of unknown workflow %q", r.Name)
	}
	delete(s.Workflows, r.Name)
	return nil
}

func (s *State) applyRunCreated(r *RunCreated) error {
	w, ok := s.Workflows[r.Workflow]
	switch {
	case r.ID == "":
		return invalid("run_created without an id")
	case s.Runs[r.ID] != nil:
		return invalid("run %s created twice", r.ID)
	case !ok:
		return invalid("run %s of unknown workflow %q", r.ID, r.Workflow)
	case w.Version != r.Version:
		return invalid("run %s pins %s version %d, current is %d", r.ID, r.Workflow, r.Version, w.Version)
	}
	run := &Run{ID: r.ID, Seq: uint64(len(s.RunList)), Workflow: r.Workflow, Version: r.Version,
		Spec: w.Spec, Params: r.Params, Trigger: r.Trigger, Status: RunPending, CreatedAt: r.At}
	s.createTasks(run)
	s.Runs[run.ID] = run
	s.RunList = append(s.RunList, run)
	return nil
}

// createTasks instantiates the pinned spec's tasks, pending, in spec order.
func (s *State) createTasks(run *Run) {
	index := make(map[string]int, len(run.Spec.Tasks))
	for i, ts := range run.Spec.Tasks {
		index[ts.Name] = i
	}
	run.Tasks = make([]*Task, len(run.Spec.Tasks))
	for i, ts := range run.Spec.Tasks {
		t := &Task{Run: run, Index: i, Name: ts.Name, Seq: s.NextSeq, Status: Pending}
		s.NextSeq++
		for _, d := range ts.DependsOn {
			t.Deps = append(t.Deps, index[d])
		}
		t.waiting = len(t.Deps)
		run.Tasks[i] = t
	}
	for _, t := range run.Tasks {
		for _, d := range t.Deps {
			run.Tasks[d].Downstream = append(run.Tasks[d].Downstream, t.Index)
		}
	}
	run.active = len(run.Tasks)
	for _, t := range run.Tasks {
		if t.waiting == 0 {
			s.ready.push(t)
		}
	}
}

func (s *State) applyTaskDispatched(r *TaskDispatched) error {
	t, err := s.Task(r.TaskRef)
	switch {
	case err != nil:
		return invalid("task_dispatched: %v", err)
	case t.Status != Pending || !t.queued:
		return invalid("task_dispatched: task %s is %s, not ready", t.ID(), t.Status)
	case r.Attempt != t.Attempt+1:
		return invalid("task_dispatched: task %s attempt %d after %d", t.ID(), r.Attempt, t.Attempt)
	}
	s.ready.drop(t)
	t.Status, t.Attempt, t.DispatchedAt = Dispatched, r.Attempt, r.At
	t.PID, t.StartTime, t.StartedAt, t.ExitCode, t.Error, t.Output = 0, 0, 0, 0, "", nil
	if t.Run.Status == RunPending {
		t.Run.Status, t.Run.StartedAt = RunRunning, r.At
	}
	return nil
}

// inFlight resolves a reference to an attempt that is in flight.
func (s *State) inFlight(what string, ref TaskRef, attempt int) (*Task, error) {
	t, err := s.Task(ref)
	switch {
	case err != nil:
		return nil, invalid("%s: %v", what, err)
	case !t.Status.InFlight():
		return nil, invalid("%s: task %s is %s", what, t.ID(), t.Status)
	case attempt != t.Attempt:
		return nil, invalid("%s: task %s attempt %d, current is %d", what, t.ID(), attempt, t.Attempt)
	}
	return t, nil
}

func (s *State) applyTaskStarted(r *TaskStarted) error {
	t, err := s.inFlight("task_started", r.TaskRef, r.Attempt)
	if err != nil {
		return err
	}
	if t.Status != Dispatched {
		return invalid("task_started: task %s is already %s", t.ID(), t.Status)
	}
	t.Status, t.PID, t.StartTime, t.StartedAt = Running, r.PID, r.StartTime, r.At
	return nil
}

func (s *State) applyTaskFinished(r *TaskFinished) error {
	t, err := s.inFlight("task_finished", r.TaskRef, r.Attempt)
	if err != nil {
		return err
	}
	t.ExitCode, t.Error, t.Output = r.ExitCode, r.Error, r.Output
	if r.OK {
		s.succeed(t, r.At)
	} else {
		s.fail(t, r.At)
	}
	return nil
}

func (s *State) applyTaskInterrupted(r *TaskInterrupted) error {
	t, err := s.inFlight("task_interrupted", r.TaskRef, r.Attempt)
	if err != nil {
		return err
	}
	if !r.Clean {
		t.Interruptions++
	}
	if t.Interruptions >= MaxInterruptions {
		t.Error = fmt.Sprintf("interrupted by %d crashes in a row (crash loop); not run again", t.Interruptions)
		t.ExitCode = -1
		s.fail(t, r.At)
		return nil
	}
	t.Status, t.PID, t.StartTime = Pending, 0, 0
	s.ready.push(t)
	return nil
}

// succeed ends t with success and releases its downstream tasks.
func (s *State) succeed(t *Task, at int64) {
	s.end(t, Success, at)
	run := t.Run
	for _, d := range t.Downstream {
		dt := run.Tasks[d]
		dt.waiting--
		if dt.waiting == 0 && dt.Status == Pending {
			s.ready.push(dt)
		}
	}
	s.maybeFinishRun(run, at)
}

// fail ends t with failure and skips everything downstream of it.
func (s *State) fail(t *Task, at int64) {
	s.end(t, Failed, at)
	t.Run.failed++
	s.skipDownstream(t, at)
	s.maybeFinishRun(t.Run, at)
}

func (s *State) skipDownstream(t *Task, at int64) {
	for _, d := range t.Downstream {
		dt := t.Run.Tasks[d]
		if dt.Status != Pending {
			continue
		}
		dt.Error = "upstream task " + t.Name + " did not succeed"
		s.end(dt, Skipped, at)
		s.skipDownstream(dt, at)
	}
}

func (s *State) end(t *Task, status TaskStatus, at int64) {
	s.ready.drop(t)
	t.Status, t.FinishedAt = status, at
	t.Run.active--
}

// maybeFinishRun applies seed 001's check_run_completion.
func (s *State) maybeFinishRun(run *Run, at int64) {
	if run.active > 0 || run.Status.Finished() {
		return
	}
	run.Status, run.FinishedAt = RunSuccess, at
	if run.failed > 0 {
		run.Status = RunFailed
	}
	if run.StartedAt == 0 {
		run.StartedAt = at
	}
}
