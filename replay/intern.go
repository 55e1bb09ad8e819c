package replay

import (
	"maps"

	"github.com/orkwal/orkwal/replay/workflow"
)

// Interning: a run's strings and params repeat from run to run (its
// workflow's name, the trigger, the statuses, its tasks' names, the
// defaults of its params), and a run made from a decoded record or
// snapshot would hold its own copy of each. The state keeps one copy and
// points every run at it, so that a waiting run costs its own fields only
// (issue 27). The values are equal either way: interning changes no
// state's hash, no snapshot byte and no decision.

// statusNames are the statuses as constants, to replace decoded copies.
var (
	runStatuses  = internTable(RunPending, RunRunning, RunSuccess, RunFailed, RunCancelled)
	taskStatuses = internTable(Pending, Dispatched, Running, Success, Failed, Skipped, Cancelled)
)

func internTable[S ~string](values ...S) map[S]S {
	m := make(map[S]S, len(values))
	for _, v := range values {
		m[v] = v
	}
	return m
}

// intern returns the table's copy of v, or v when it has none.
func intern[S ~string](table map[S]S, v S) S {
	if c, ok := table[v]; ok {
		return c
	}
	return v
}

// internRun points run's repeated fields at the state's copies: its
// workflow's name (which run.Spec carries), its trigger and status, and
// its params when they equal its workflow's defaults or the newest run's
// of that workflow (the state never changes a run's params in place).
func (s *State) internRun(run *Run) {
	if run.Spec != nil && run.Workflow == run.Spec.Name {
		run.Workflow = run.Spec.Name
	}
	run.Status = intern(runStatuses, run.Status)
	run.Params = s.internParams(run)
}

func (s *State) internParams(run *Run) map[string]string {
	p := run.Params
	if len(p) == 0 {
		return p
	}
	if defaults, ok := specParams(p, run.Spec); ok {
		return defaults
	}
	if last := s.NewestRun(run.Workflow); last != nil && maps.Equal(p, last.Params) {
		return last.Params
	}
	return p
}

// specParams returns spec's params, its defaults, when p equals them and
// is not empty.
func specParams(p map[string]string, spec *workflow.Spec) (map[string]string, bool) {
	if len(p) > 0 && spec != nil && maps.Equal(p, spec.Params) {
		return spec.Params, true
	}
	return p, false
}

// internTask points a restored task's name at its spec's, its status and
// mutex key at the state's copies.
func (s *State) internTask(t *Task) {
	if tasks := t.Run.Spec.Tasks; t.SpecIndex >= 0 && t.SpecIndex < len(tasks) && t.Name == tasks[t.SpecIndex].Name {
		t.Name = tasks[t.SpecIndex].Name
	}
	t.Status = intern(taskStatuses, t.Status)
	if t.MutexKey != "" {
		if q := s.mutexes[t.MutexKey]; len(q) > 0 {
			t.MutexKey = q[0].MutexKey
		} else if h := s.mutexHeld[t.MutexKey]; h != nil {
			t.MutexKey = h.MutexKey
		}
	}
}
