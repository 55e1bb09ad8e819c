package replay

import (
	"fmt"

	"github.com/orkwal/orkwal/replay/workflow"
)

// Restore builds a State from a snapshot, rebuilding every derived
// structure exactly as Apply would have left it.
func Restore(snap *Snapshot) (*State, error) {
	r := newRestorer(snap, len(snap.Runs))
	for i := range snap.Runs {
		if err := r.add(&snap.Runs[i]); err != nil {
			return nil, err
		}
	}
	return r.finish()
}

// restorer builds a State from a snapshot whose runs come one at a time
// (add), as ReadSnapshot decodes them, so that no run is held twice, as
// decoded and as restored (issue 27: a boot's peak memory). The rest
// comes after: a snapshot's body holds the runs' attempt histories, their
// deferred and paused marks, after the runs, and the derived structures
// (the ready queue, mutexes, counts) depend on them, so finish rebuilds
// them, run by run in the snapshot's order, as Restore always did.
type restorer struct {
	s    *State
	snap *Snapshot // all but its Runs, once finish is called
	runs []*Run    // restored so far, in the snapshot's order
}

// newRestorer restores snap's runs into a new State; n, the number of
// runs expected, sizes what holds them.
func newRestorer(snap *Snapshot, n int) *restorer {
	s := New()
	s.Runs = make(map[string]*Run, n)
	return &restorer{s: s, snap: snap, runs: make([]*Run, 0, n)}
}

// add restores one run, its tasks and their links, from sr, which it does
// not keep (its strings, maps and slices it does), and points its fields
// at their interned copies where that depends on no other run (its
// workflow's name, statuses, names, its params when its workflow's
// defaults): a waiting run costs what it will cost once restored. The
// snapshot's Specs must be decoded.
func (r *restorer) add(sr *SnapRun) error {
	if sr.Spec < 0 || sr.Spec >= len(r.snap.Specs) {
		return fmt.Errorf("replay: snapshot: run %s refers to spec %d", sr.ID, sr.Spec)
	}
	run := restoreRun(sr, r.snap.Specs[sr.Spec].Spec)
	if err := r.s.restoreLinks(run, sr); err != nil {
		return err
	}
	r.intern(run)
	r.runs = append(r.runs, run)
	return nil
}

// intern points run's and its tasks' fields at the state's copies.
func (r *restorer) intern(run *Run) {
	r.s.internRun(run)
	for _, t := range run.Tasks {
		r.s.internTask(t)
	}
}

// finish restores the workflows, schedules, alerts and the runs' marks,
// then rebuilds each run's derived structures, in order. It interns each
// run again: what depends on the runs before it (the params of the
// newest run of its workflow, mutex keys) is known only then.
func (r *restorer) finish() (*State, error) {
	s, snap := r.s, r.snap
	s.NextSeq, s.NextRunSeq = snap.NextSeq, snap.NextRunSeq
	if err := s.restoreWorkflows(snap); err != nil {
		return nil, err
	}
	if err := r.scatter(); err != nil {
		return nil, err
	}
	s.RunList = r.runs[:0]
	for i, run := range r.runs {
		r.intern(run)
		s.Runs[run.ID] = run
		s.runIDs.add(run, s.RunList)
		s.RunList = r.runs[:i+1]
		s.rebuild(run)
	}
	s.restoreAlerts(snap.Alerts)
	return s, nil
}

// restoreWorkflows restores the workflows, their earlier versions, the
// retired names and the schedules.
func (s *State) restoreWorkflows(snap *Snapshot) error {
	// A workflow takes the first spec of its name and version: the
	// workflows' specs are numbered first (copyWorkflows). A later one of the
	// same name and version is a run's of a deleted workflow (a workflow
	// put again after a delete starts over at version 1), not this one's.
	byVersion := map[string]*workflow.Spec{}
	for _, sp := range snap.Specs {
		if key := fmt.Sprintf("%s@%d", sp.Workflow, sp.Version); byVersion[key] == nil {
			byVersion[key] = sp.Spec
		}
	}
	for _, w := range snap.Workflows {
		spec := byVersion[fmt.Sprintf("%s@%d", w.Name, w.Version)]
		if spec == nil {
			return fmt.Errorf("replay: snapshot: workflow %s has no spec for version %d", w.Name, w.Version)
		}
		s.Workflows[w.Name] = &Workflow{Name: w.Name, Version: w.Version, Spec: spec, Source: w.Source,
			File: snap.Files[w.Name], CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	}
	if err := restorePast(s, snap); err != nil {
		return err
	}
	for name, v := range snap.Retired {
		s.Retired[name] = v
	}
	for i := range snap.Schedules {
		sc := snap.Schedules[i]
		s.Schedules[sc.Workflow] = &sc
	}
	return nil
}

// scatter puts the snapshot's attempt histories, deferred and paused
// marks (gatherAttempts) into the restored runs and tasks.
func (r *restorer) scatter() error {
	snap := r.snap
	for _, a := range snap.Attempts {
		t := r.task(a.Run, a.Task)
		if t == nil {
			return fmt.Errorf("replay: snapshot: attempts of run %d task %d, which is not there", a.Run, a.Task)
		}
		r.s.own(t)
		t.Attempts = a.Ends
	}
	for _, d := range snap.Deferred {
		t := r.task(d[0], d[1])
		if t == nil {
			return fmt.Errorf("replay: snapshot: deferred task %d of run %d, which is not there", d[1], d[0])
		}
		t.Deferred = true
	}
	for _, p := range snap.Paused {
		switch t := r.task(p[0], p[1]); {
		case p[1] == -1 && p[0] >= 0 && p[0] < len(r.runs):
			r.runs[p[0]].Paused = true
		case t == nil:
			return fmt.Errorf("replay: snapshot: paused task %d of run %d, which is not there", p[1], p[0])
		default:
			t.Paused = true
		}
	}
	return nil
}

// task is the restored task at the positions run and task, or nil.
func (r *restorer) task(run, task int) *Task {
	if run < 0 || run >= len(r.runs) || task < 0 || task >= len(r.runs[run].Tasks) {
		return nil
	}
	return r.runs[run].Tasks[task]
}

func restoreRun(sr *SnapRun, spec *workflow.Spec) *Run {
	run := &Run{ID: sr.ID, Seq: sr.Seq, Workflow: sr.Workflow, Version: sr.Version, Spec: spec, Params: sr.Params,
		Queued: sr.Queued, Status: sr.Status, CreatedAt: sr.CreatedAt, CancelRequested: sr.CancelRequested,
		Paused: sr.Paused, runMore: newRunMore(runMore{Trigger: sr.Trigger, IdemKey: sr.IdemKey, ScheduledAt: sr.ScheduledAt, StartedAt: sr.StartedAt, FinishedAt: sr.FinishedAt})}
	run.Tasks = run.newTasks(len(sr.Tasks))[:len(sr.Tasks)]
	for i, st := range sr.Tasks {
		t := &Task{Run: run, Index: i, SpecIndex: st.SpecIndex, Name: st.Name, Seq: st.Seq, Status: st.Status,
			Attempt: st.Attempt, NotBefore: st.NotBefore, Parent: st.Parent,
			Count: st.Count, Deferred: st.Deferred, Paused: st.Paused,
			taskEnd: &noEnd}
		end := taskEnd{MutexKey: st.MutexKey, Expanded: st.Expanded, Instance: st.Instance, Failures: st.Failures, Interruptions: st.Interruptions, Item: st.Item, Instances: st.Instances,
			PID: st.PID, StartTime: st.StartTime, ExitCode: st.ExitCode, Error: st.Error, Output: st.Output,
			DispatchedAt: st.DispatchedAt, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt, Attempts: st.Attempts}
		if !end.zero() {
			t.taskEnd = new(taskEnd)
			*t.taskEnd = end
		}
		run.Tasks[i] = t
	}
	return run
}

// rebuild recomputes a restored run's derived structures: downstream
// lists, counters, waiting counts, the ready queue, mutex queues and
// holders, active runs.
func (s *State) rebuild(run *Run) {
	s.countRun(run, +1)
	for _, t := range run.Tasks {
		if !t.Status.Terminal() {
			run.active++
		}
		if t.Status == Failed {
			run.failed++
		}
		if t.MutexKey != "" && !t.Status.Terminal() {
			s.mutexPush(t)
		}
		if t.MutexKey != "" && t.AttemptInFlight() {
			s.mutexHeld[t.MutexKey] = t
		}
	}
	s.recountNodes(run)
	s.countWaiting(run)
	for _, t := range run.Tasks {
		if t.Status == Pending && (t.Parent >= 0 || t.waiting == 0) {
			s.ready.push(t)
		}
	}
	if run.Status == RunRunning {
		s.activeRuns[run.Workflow]++
	}
	if run.IdemKey != "" {
		s.idem[run.IdemKey] = run
	}
}
