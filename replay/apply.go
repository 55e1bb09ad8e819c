package replay

import (
	"errors"
	"fmt"

	"github.com/orkwal/orkwal/replay/workflow"
)

// ErrInvalid wraps every rejection by Apply: the record does not fit the
// state. The state is unchanged when Apply returns an error.
var ErrInvalid = errors.New("replay: record does not apply")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Apply folds one record into the state. It is the only way state changes.
func (s *State) Apply(r Record) error {
	err := s.apply(r)
	if bug := checkNoEnd(); bug != nil {
		return fmt.Errorf("%w (applying %s)", bug, r.Kind())
	}
	return err
}

func (s *State) apply(r Record) error {
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
	case *TaskDeferred:
		return s.applyTaskDeferred(r)
	case *RunCancelRequested:
		return s.applyRunCancel(r)
	case *RunRetried:
		return s.applyRunRetried(r)
	case *TaskMarked:
		return s.applyTaskMarked(r)
	case *RunPaused:
		return s.applyRunPaused(r)
	case *CronFired:
		return s.applyCronFired(r)
	case *SchedulePaused:
		return s.applySchedulePaused(r)
	case *RunsPruned:
		return s.applyRunsPruned(r)
	case *AlertRaised:
		return s.applyAlertRaised(r)
	case *AlertDelivered:
		return s.applyAlertDelivered(r)
	}
	return invalid("unknown record type %T", r)
}

func (s *State) applyWorkflowPut(r *WorkflowPut) error {
	if r.Spec == nil || r.Spec.Name == "" || len(r.Spec.Tasks) == 0 {
		return invalid("workflow_put without a spec, a name or tasks")
	}
	w := &Workflow{Name: r.Spec.Name, Version: 1, Spec: r.Spec, Source: r.Source, File: r.File,
		CreatedAt: r.At, UpdatedAt: r.At}
	old, ok := s.Workflows[w.Name]
	if ok {
		w.Version, w.CreatedAt, w.Past = old.Version+1, old.CreatedAt, pastAfterPut(old)
	}
	if r.Version != 0 {
		if last := s.LastVersion(w.Name); r.Version <= last {
			return invalid("workflow_put %s version %d: the name already had version %d", w.Name, r.Version, last)
		}
		w.Version = r.Version
	}
	if w.Version >= s.Retired[w.Name] { // else an earlier version's record after a delete: it restarted at 1
		delete(s.Retired, w.Name)
	}
	s.Workflows[w.Name] = w
	s.putSchedule(r.Spec, r.At)
	return nil
}

// putSchedule starts, changes or ends a workflow's schedule with a new
// version. A changed expression takes effect at once: fires are due from
// the change on. The last fire is kept, so no fire time repeats.
func (s *State) putSchedule(spec *workflow.Spec, at int64) {
	if spec.Schedule == nil {
		delete(s.Schedules, spec.Name)
		return
	}
	sc, ok := s.Schedules[spec.Name]
	if !ok {
		sc = &Schedule{Workflow: spec.Name}
		s.Schedules[spec.Name] = sc
	}
	if sc.Cron != spec.Schedule.Cron {
		sc.Cron, sc.Since = spec.Schedule.Cron, at
	}
}

func (s *State) applyWorkflowDeleted(r *WorkflowDeleted) error {
	w, ok := s.Workflows[r.Name]
	if !ok {
		return invalid("delete of unknown workflow %q", r.Name)
	}
	s.Retired[r.Name] = max(w.Version, s.Retired[r.Name])
	delete(s.Workflows, r.Name)
	delete(s.Schedules, r.Name)
	delete(s.links, r.Name)
	return nil
}

func (s *State) applyRunCreated(r *RunCreated) error {
	if err := s.checkNewRun(r.ID, r.Workflow, r.Version); err != nil {
		return err
	}
	if r.IdempotencyKey != "" && s.idem[r.IdempotencyKey] != nil {
		return invalid("run %s: idempotency key %q already made run %s", r.ID, r.IdempotencyKey, s.idem[r.IdempotencyKey].ID)
	}
	s.newRun(&Run{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Params: r.Params,
		runMore: newRunMore(runMore{Trigger: r.Trigger, IdemKey: r.IdempotencyKey}), CreatedAt: r.At})
	return nil
}

func (s *State) checkNewRun(id, wf string, version int) error {
	w, ok := s.Workflows[wf]
	switch {
	case id == "":
		return invalid("run without an id")
	case s.Runs[id] != nil:
		return invalid("run %s created twice", id)
	case !ok:
		return invalid("run %s of unknown workflow %q", id, wf)
	case w.Version != version:
		return invalid("run %s pins %s version %d, current is %d", id, wf, version, w.Version)
	}
	return nil
}

// newRun adds a run of its workflow's current version, with its tasks.
func (s *State) newRun(run *Run) {
	s.bornRun(run)
	run.Seq, run.Spec = s.NextRunSeq, s.Workflows[run.Workflow].Spec
	s.internRun(run)
	s.setRun(run, RunPending)
	s.NextRunSeq++
	if run.IdemKey != "" {
		s.idem[run.IdemKey] = run
	}
	s.Runs[run.ID] = run
	s.runIDs.add(run, s.RunList)
	s.RunList = append(s.RunList, run)
	s.createTasks(run, run.CreatedAt)
}

func (s *State) applyCronFired(r *CronFired) error {
	sc, ok := s.Schedules[r.Workflow]
	switch {
	case !ok:
		return invalid("cron_fired: workflow %q has no schedule", r.Workflow)
	case sc.Paused:
		return invalid("cron_fired: the schedule of %s is paused", r.Workflow)
	case r.ScheduledAt <= sc.LastFire || r.ScheduledAt < sc.Since:
		return invalid("cron_fired: %s fire at %d is not after its last fire (%d) and its start (%d)", r.Workflow, r.ScheduledAt, sc.LastFire, sc.Since)
	case r.ScheduledAt > r.At:
		return invalid("cron_fired: %s fire at %d is in the future (%d)", r.Workflow, r.ScheduledAt, r.At)
	case (r.RunID == "") == (r.Skipped == ""):
		return invalid("cron_fired: exactly one of run and skipped")
	}
	if r.RunID != "" {
		if err := s.checkNewRun(r.RunID, r.Workflow, r.Version); err != nil {
			return err
		}
	}
	sc.LastFire = r.ScheduledAt
	sc.Fires = append(sc.Fires, Fire{ScheduledAt: r.ScheduledAt, RunID: r.RunID, Skipped: r.Skipped, At: r.At})
	if len(sc.Fires) > MaxFires {
		sc.Fires = append(sc.Fires[:0:0], sc.Fires[len(sc.Fires)-MaxFires:]...)
	}
	if r.RunID != "" {
		s.newRun(&Run{ID: r.RunID, Workflow: r.Workflow, Version: r.Version,
			runMore: newRunMore(runMore{Trigger: "cron", ScheduledAt: r.ScheduledAt}), Queued: r.Queued, CreatedAt: r.At, Params: s.Workflows[r.Workflow].Spec.Params})
	}
	return nil
}

func (s *State) applySchedulePaused(r *SchedulePaused) error {
	sc, ok := s.Schedules[r.Workflow]
	switch {
	case !ok:
		return invalid("schedule_paused: workflow %q has no schedule", r.Workflow)
	case sc.Paused == r.Paused:
		return invalid("schedule_paused: the schedule of %s is already %s", r.Workflow, pausedWord(r.Paused))
	}
	sc.Paused = r.Paused
	if !r.Paused {
		sc.Since = r.At // no catch-up of what was due while paused
	}
	return nil
}

func pausedWord(p bool) string {
	if p {
		return "paused"
	}
	return "running"
}

// createTasks instantiates the pinned spec's tasks, pending, in spec order,
// and releases those without dependencies.
func (s *State) createTasks(run *Run, at int64) {
	run.Tasks = run.newTasks(len(run.Spec.Tasks))
	for i, ts := range run.Spec.Tasks {
		run.Tasks = append(run.Tasks, s.newTask(run, i, ts, -1))
	}
	s.linkTasks(run, nil)
	for _, t := range run.Tasks {
		t.waiting = int32(len(t.Deps()))
	}
	run.active = int32(len(run.Tasks))
	for _, t := range run.Tasks {
		if t.waiting == 0 {
			s.release(t, at)
		}
	}
}

// newTask creates a pending task (not yet in Run.Tasks).
func (s *State) newTask(run *Run, specIndex int, ts *workflow.Task, parent int) *Task {
	t := &Task{Run: run, Index: len(run.Tasks), SpecIndex: specIndex, Name: ts.Name, Seq: s.NextSeq,
		Status: Pending, Parent: parent, Count: 1, taskEnd: &noEnd}
	s.born(t)
	s.counts.task(t, +1)
	s.NextSeq++
	if ts.Mutex != "" && !ts.FansOut() || ts.Mutex != "" && parent >= 0 {
		s.own(t)
		t.MutexKey = workflow.RenderMutex(ts.Mutex, run.Params)
		s.mutexPush(t)
	}
	return t
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
	case t.Run.CancelRequested:
		return invalid("task_dispatched: run %s is being cancelled", t.Run.ID)
	}
	s.touch(t)
	s.ready.drop(t)
	s.setTask(t, Dispatched)
	t.Attempt, t.DispatchedAt = r.Attempt, r.At
	t.PID, t.StartTime, t.StartedAt, t.ExitCode, t.Error, t.Output = 0, 0, 0, 0, "", nil
	instanceDispatched(t, r.At)
	s.flight(t, +1)
	if t.Run.Status == RunPending {
		s.touchRun(t.Run)
		s.setRun(t.Run, RunRunning)
		if t.Run.StartedAt == 0 { // a rerun keeps its first start
			t.Run.StartedAt = r.At
		}
		s.activeRuns[t.Run.Workflow]++
	}
	return nil
}

// flight counts an attempt entering (+1) or leaving (-1) flight: for its
// fan-out node, and for its mutex key, which it holds meanwhile.
func (s *State) flight(t *Task, delta int) {
	if t.Parent >= 0 {
		node := t.Run.Tasks[t.Parent]
		s.own(node)
		if node.instFlight += delta; delta < 0 {
			s.ReleaseNode(node)
		}
	}
	switch {
	case t.MutexKey == "":
	case delta > 0:
		s.mutexHeld[t.MutexKey] = t
	case s.mutexHeld[t.MutexKey] == t:
		delete(s.mutexHeld, t.MutexKey)
		s.mutexChanged(t.MutexKey)
	}
}

// inFlight resolves a reference to an attempt that is in flight.
func (s *State) inFlight(what string, ref TaskRef, attempt int) (*Task, error) {
	t, err := s.Task(ref)
	switch {
	case err != nil:
		return nil, invalid("%s: %v", what, err)
	case !t.AttemptInFlight():
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
	s.touch(t)
	s.setTask(t, Running)
	t.PID, t.StartTime, t.StartedAt = r.PID, r.StartTime, r.At
	return nil
}

// applyTaskDeferred keeps a running attempt's output and marks it
// deferred: its process is gone, its deferred jobs are being polled.
func (s *State) applyTaskDeferred(r *TaskDeferred) error {
	t, err := s.inFlight("task_deferred", r.TaskRef, r.Attempt)
	if err != nil {
		return err
	}
	if t.Status != Running || t.Deferred {
		return invalid("task_deferred: task %s is %s (deferred: %t): only a running attempt defers, once", t.ID(), t.Status, t.Deferred)
	}
	s.touch(t)
	t.Output, t.Deferred, t.PID, t.StartTime = r.Output, true, 0, 0
	return nil
}

func (s *State) applyTaskFinished(r *TaskFinished) error {
	t, err := s.inFlight("task_finished", r.TaskRef, r.Attempt)
	if err != nil {
		return err
	}
	s.touch(t)
	t.Deferred = false
	s.flight(t, -1)
	t.ExitCode, t.Error, t.Output = r.ExitCode, r.Error, r.Output
	switch {
	case r.OK:
		t.attemptEnded("success", r.At)
		s.succeed(t, r.At)
	case t.Run.CancelRequested:
		t.attemptEnded("cancelled", r.At)
		s.cancel(t, r.At)
	default:
		t.attemptEnded("failed", r.At)
		s.attemptFailed(t, r.At, r.Jitter)
	}
	return nil
}

func (s *State) applyTaskInterrupted(r *TaskInterrupted) error {
	t, err := s.inFlight("task_interrupted", r.TaskRef, r.Attempt)
	if err != nil {
		return err
	}
	if (r.Unstarted || r.NotRun) && t.Status != Dispatched {
		return invalid("task_interrupted: task %s is %s: an unstarted or unprepared attempt is dispatched", t.ID(), t.Status)
	}
	s.touch(t)
	s.flight(t, -1)
	t.Deferred = false
	if !r.Clean && !r.Unstarted && !r.NotRun {
		t.Interruptions++
	}
	if r.NotRun {
		t.Error = r.Reason // the attempt's end says why it did not start
	}
	t.attemptEnded("interrupted", r.At)
	switch {
	case t.Run.CancelRequested:
		t.Error = "cancelled"
		s.cancel(t, r.At)
	case r.NotRun:
		s.setTask(t, Pending)
		t.NotBefore = r.NotBefore
		s.ready.push(t)
	case t.Spec().OnInterrupt == "fail":
		t.Error, t.ExitCode = "interrupted, and on_interrupt is fail: not run again", -1
		s.fail(t, r.At)
	case t.Interruptions >= MaxInterruptions:
		t.Error = fmt.Sprintf("interrupted by %d crashes in a row (crash loop); not run again", t.Interruptions)
		t.ExitCode = -1
		s.fail(t, r.At)
	default:
		s.setTask(t, Pending)
		t.PID, t.StartTime = 0, 0
		s.ready.push(t)
	}
	return nil
}

func (s *State) applyRunCancel(r *RunCancelRequested) error {
	run, ok := s.Runs[r.ID]
	switch {
	case !ok:
		return invalid("cancel of unknown run %q", r.ID)
	case run.Status.Finished():
		return invalid("cancel of run %s, which is %s", r.ID, run.Status)
	case run.CancelRequested:
		return invalid("run %s is already being cancelled", r.ID)
	}
	s.touchRun(run)
	run.CancelRequested = true
	for _, t := range run.Tasks {
		if t.Status == Pending || t.stuckNode() {
			s.touch(t)
			t.Error = "cancelled"
			s.cancel(t, r.At)
		}
	}
	s.maybeFinishRun(run, r.At)
	return nil
}

func (s *State) applyRunRetried(r *RunRetried) error {
	run, ok := s.Runs[r.ID]
	switch {
	case !ok:
		return invalid("retry of unknown run %q", r.ID)
	case !run.Status.Finished():
		return invalid("retry of run %s, which is still %s", r.ID, run.Status)
	case r.From != "":
		return s.rerunFrom(run, r.From, r.At)
	case run.Status == RunSuccess:
		return invalid("retry of run %s, which succeeded", r.ID)
	case r.Expand && !run.Resettable(): // earlier versions wrote it (see Resettable)
		return invalid("retry of run %s, which has no failed, skipped or cancelled task", r.ID)
	}
	s.rerun(run, r.Expand, r.At)
	return nil
}

func (s *State) applyRunsPruned(r *RunsPruned) error {
	drop := make(map[string]bool, len(r.IDs))
	for _, id := range r.IDs {
		run, ok := s.Runs[id]
		switch {
		case !ok:
			return invalid("runs_pruned: unknown run %q", id)
		case !run.Status.Finished():
			return invalid("runs_pruned: run %s is still %s", id, run.Status)
		}
		drop[id] = true
	}
	kept := s.RunList[:0]
	if s.pend != nil { // it holds the run list at N: build a new one
		kept = make([]*Run, 0, len(s.RunList)-len(drop))
	}
	for _, run := range s.RunList {
		if drop[run.ID] {
			s.countRun(run, -1)
			delete(s.Runs, run.ID)
			if run.IdemKey != "" {
				delete(s.idem, run.IdemKey)
			}
			continue
		}
		kept = append(kept, run)
	}
	if s.pend == nil {
		clear(s.RunList[len(kept):])
	}
	s.RunList = kept
	s.runIDs.drop(drop)
	s.ready.compact()
	s.trimAlerts(drop)
	return nil
}
