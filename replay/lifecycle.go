package replay

import (
	"fmt"
	"strings"

	"github.com/orkwal/orkwal/replay/workflow"
)

// release is called when t's dependencies are done: a fan-out node expands,
// any other task becomes ready (after its delay).
func (s *State) release(t *Task, at int64) {
	switch {
	case t.Run.CancelRequested:
		s.touch(t)
		t.Error = "cancelled"
		s.cancel(t, at)
	case t.IsNode() && !t.Expanded:
		s.expand(t, at)
	default:
		if d := t.Spec().Delay; d > 0 && t.NotBefore == 0 {
			s.touchHot(t)
			t.NotBefore = at + int64(d)
		}
		s.ready.push(t)
	}
}

func (s *State) succeed(t *Task, at int64) { s.end(t, Success, at) }
func (s *State) fail(t *Task, at int64)    { s.end(t, Failed, at) }
func (s *State) cancel(t *Task, at int64)  { s.end(t, Cancelled, at) }

// attemptFailed retries t after its backoff, less the recorded jitter
// fraction, while retries remain, and fails it otherwise.
func (s *State) attemptFailed(t *Task, at int64, jitter float64) {
	s.touch(t)
	t.Failures++
	spec := t.Spec()
	if t.Failures > spec.Retries {
		s.fail(t, at)
		return
	}
	backoff := workflow.DefaultBackoff
	if spec.RetryBackoff != nil {
		backoff = *spec.RetryBackoff
	}
	s.setTask(t, Pending)
	t.PID, t.StartTime = 0, 0
	t.NotBefore = at + int64(backoff.Jittered(t.Failures, jitter))
	s.ready.push(t)
}

// end moves t to a terminal status and propagates: to its fan-out node, to
// its downstream tasks, and to its run.
func (s *State) end(t *Task, status TaskStatus, at int64) {
	s.touch(t)
	s.ready.drop(t)
	s.mutexRemove(t)
	s.setTask(t, status)
	t.FinishedAt = at
	t.Run.active--
	if status == Failed {
		t.Run.failed++
	}
	if t.Parent >= 0 {
		s.instanceEnded(t, at)
	}
	s.notifyDownstream(t, at)
	s.maybeFinishRun(t.Run, at)
}

// notifyDownstream releases or skips the tasks that depend on t. A task with
// on_failure: run waits for its upstream to end whatever the outcome; any
// other task needs it to succeed and is skipped otherwise.
func (s *State) notifyDownstream(t *Task, at int64) {
	for _, d := range t.downstream() {
		dt := t.Run.Tasks[d]
		if dt.Expanded && dt.waiting > 0 { // a rerun fan-out (see countWaiting)
			dt.waiting--
			continue
		}
		if dt.Status != Pending || dt.Expanded {
			continue
		}
		if t.Status == Success || dt.Spec().OnFailure == "run" {
			dt.waiting--
			if dt.waiting == 0 {
				s.release(dt, at)
			}
			continue
		}
		s.touch(dt)
		dt.Error = "upstream task " + t.Key() + " did not succeed"
		s.end(dt, Skipped, at)
	}
}

// maybeFinishRun applies seed 001's check_run_completion.
func (s *State) maybeFinishRun(run *Run, at int64) {
	if run.active > 0 || run.Status.Finished() {
		return
	}
	s.touchRun(run)
	s.unpause(run)
	if run.Status == RunRunning {
		s.activeRuns[run.Workflow]--
	}
	switch {
	case run.CancelRequested:
		s.setRun(run, RunCancelled)
	case run.failed > 0:
		s.setRun(run, RunFailed)
	default:
		s.setRun(run, RunSuccess)
	}
	run.FinishedAt = at
	if run.StartedAt == 0 {
		run.StartedAt = at
	}
}

// rerun puts a finished run's failed, skipped and cancelled tasks back to
// pending, keeping every success and its output. The run is pending again
// until its next dispatch. expand is RunRetried.Expand.
func (s *State) rerun(run *Run, expand bool, at int64) {
	s.touchRun(run)
	for _, t := range run.Tasks {
		if t.Status == Failed || t.Status == Skipped || t.Status == Cancelled {
			s.reset(t, expand)
		}
	}
	run.failed, run.active, run.CancelRequested, run.FinishedAt = 0, 0, false, 0
	for _, t := range run.Tasks {
		if !t.Status.Terminal() {
			run.active++
		}
	}
	s.setRun(run, RunPending) // until its first dispatch, which max_active_runs gates
	s.recountNodes(run)
	s.countWaiting(run)
	for _, t := range run.Tasks {
		if t.Status == Pending && (t.Parent >= 0 || t.waiting == 0) {
			s.release(t, at)
		}
	}
}

// countWaiting sets the waiting count of a run's pending tasks, and of its
// fan-outs that run again after a rerun: a fan-out with on_failure: run
// whose upstream task failed runs again behind it, and its instances,
// though ready, are not dispatched until it ended (the engine's gate).
func (s *State) countWaiting(run *Run) {
	for _, t := range run.Tasks {
		if t.Parent < 0 && (t.Status == Pending || t.Expanded && t.Status == Running) {
			t.waiting = int32(s.waitingOn(t))
		}
	}
}

// reset returns a task to pending with a fresh retry budget. An expanded
// node goes back to running: its own instances are reset one by one. A
// node whose expansion failed has no instances to end it: it goes back to
// pending and expands again once its upstream tasks end; without expand
// (an earlier version's rerun) it goes back to running, as that version
// put it, and only a cancel ends it (see stuckNode).
func (s *State) reset(t *Task, expand bool) {
	s.touch(t)
	t.Failures, t.Interruptions, t.NotBefore = 0, 0, 0
	t.Error, t.ExitCode, t.Output, t.FinishedAt = "", 0, nil, 0
	if t.Expanded && (len(t.Instances) > 0 || !expand) {
		s.setTask(t, Running)
		return
	}
	t.Expanded = false
	s.setTask(t, Pending)
	if t.MutexKey != "" {
		s.mutexPush(t)
	}
}

// waitingOn counts t's upstream tasks that are not done for it.
func (s *State) waitingOn(t *Task) int {
	n := 0
	runAnyway := t.Spec().OnFailure == "run"
	for _, d := range t.Deps() {
		st := t.Run.Tasks[d].Status
		if st != Success && !(runAnyway && st.Terminal()) {
			n++
		}
	}
	return n
}

// describeFailure summarizes a node's failed instances.
func describeFailure(n *Task) string {
	var names []string
	for _, i := range n.Instances {
		if st := n.Run.Tasks[i].Status; st == Failed || st == Cancelled {
			names = append(names, n.Run.Tasks[i].Key())
			if len(names) == 5 {
				names = append(names, "...")
				break
			}
		}
	}
	return fmt.Sprintf("%d of %d instances did not succeed: %s", n.instFailed, len(n.Instances), strings.Join(names, ", "))
}
