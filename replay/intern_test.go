package replay

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/orkwal/orkwal/replay/workflow"
)

// Issue 27, item 4: a waiting run holds only what is its own.

func waitingSpec() *workflow.Spec {
	return &workflow.Spec{Name: "load", Params: map[string]string{"n": "0"},
		Tasks: []*workflow.Task{{Name: "t", Executor: "noop", Delay: time.Hour}}}
}

func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// decoded is r after a trip through the log's encoding, as replay sees
// it: its strings and maps are its own.
func decoded(t *testing.T, r Record) Record {
	t.Helper()
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// checkShared: the runs' repeated values are the state's one copy, and
// their waiting tasks share the empty task end.
func checkShared(t *testing.T, s *State, how string) {
	t.Helper()
	spec := s.Workflows["load"].Spec
	r1, r2, r3, r4 := s.Runs["r1"], s.Runs["r2"], s.Runs["r3"], s.Runs["r4"]
	switch {
	case !sameMap(r1.Params, spec.Params) || !sameMap(r2.Params, spec.Params):
		t.Errorf("%s: runs with the default params hold their own copy", how)
	case !sameMap(r3.Params, r4.Params) || sameMap(r3.Params, spec.Params):
		t.Errorf("%s: runs with the same other params do not share them", how)
	case !sameString(r2.Workflow, spec.Name) || !sameString(r2.Tasks[0].Name, spec.Tasks[0].Name):
		t.Errorf("%s: a run's workflow or task name is a copy", how)
	case !sameString(string(r2.Status), string(RunPending)) || !sameString(string(r2.Tasks[0].Status), string(Pending)):
		t.Errorf("%s: a status is a copy", how)
	case !sameString(r2.Trigger, "api"):
		t.Errorf("%s: the trigger is a copy", how)
	case r2.Tasks[0].taskEnd != &noEnd || r2.runMore != sharedRunMore["api"]:
		t.Errorf("%s: a waiting task has a task end of its own, or its run an origin", how)
	case r2.Tasks[0].NotBefore == 0:
		t.Errorf("%s: the task does not wait on its delay", how)
	}
}

// TestWaitingRunsShareWhatRepeats: runs made from decoded records (as on
// boot) and restored from a snapshot share their params when equal to the
// defaults or to the previous run's, their names, statuses and trigger;
// their waiting tasks have no attempt fields of their own. Values are
// unchanged: the restored state hashes as the live one.
func TestWaitingRunsShareWhatRepeats(t *testing.T) {
	s := New()
	mustApply(t, s, decoded(t, &WorkflowPut{Spec: waitingSpec(), At: 1}))
	for i, p := range []map[string]string{{"n": "0"}, {"n": "0"}, {"n": "7"}, {"n": "7"}} {
		mustApply(t, s, decoded(t, &RunCreated{ID: fmt.Sprintf("r%d", i+1), Workflow: "load", Version: 1, Params: p, Trigger: "api", At: 2}))
	}
	checkShared(t, s, "live")
	back := restoreSnap(t, s.Snapshot(1))
	checkShared(t, back, "restored")
	if a, b := hashOf(t, s), hashOf(t, back); a != b {
		t.Errorf("restored state hashes %x, live %x", b, a)
	}
}

func hashOf(t *testing.T, s *State) uint64 {
	t.Helper()
	h, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestTaskEndIsOwnedOnWrite: a dispatch gives the task its own task end,
// and its run its own runMore, and leaves the shared ones as they were; a
// write that reaches a shared one (a bug) fails the next Apply instead of
// showing in every waiting task or run.
func TestTaskEndIsOwnedOnWrite(t *testing.T) {
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: diamond(), At: 1}, &RunCreated{ID: "r", Workflow: "diamond", Version: 1, At: 2},
		&TaskDispatched{TaskRef: TaskRef{Run: "r"}, Attempt: 1, At: 3},
		&TaskStarted{TaskRef: TaskRef{Run: "r"}, Attempt: 1, PID: 42, At: 4})
	a, b := s.Runs["r"].Tasks[0], s.Runs["r"].Tasks[1]
	if a.taskEnd == &noEnd || a.PID != 42 || a.DispatchedAt != 3 {
		t.Fatalf("dispatched task: own end %v, pid %d, dispatched at %d", a.taskEnd != &noEnd, a.PID, a.DispatchedAt)
	}
	if b.taskEnd != &noEnd || b.PID != 0 || !noEnd.zero() {
		t.Fatalf("a waiting task sees pid %d; shared end zero: %v", b.PID, noEnd.zero())
	}
	mustApply(t, s, &RunCreated{ID: "w", Workflow: "diamond", Version: 1, At: 5})
	if r, w := s.Runs["r"], s.Runs["w"]; r.runMore.shared || r.StartedAt != 3 || w.runMore != sharedRunMore[""] || w.StartedAt != 0 {
		t.Fatalf("started run's more shared: %v (started at %d); waiting run's shared: %v", r.runMore.shared, r.StartedAt, w.runMore == sharedRunMore[""])
	}
	noEnd.Error = "written by mistake"
	err := s.Apply(&TaskFinished{TaskRef: TaskRef{Run: "r"}, Attempt: 1, OK: true, At: 5})
	if !errors.Is(err, errNoEnd) || b.Error != "" {
		t.Fatalf("apply after a write to the shared end: %v; waiting task's error %q", err, b.Error)
	}
	sharedRunMore[""].FinishedAt = 7
	err = s.Apply(&RunCancelRequested{ID: "w", At: 6})
	if !errors.Is(err, errNoEnd) || sharedRunMore[""].FinishedAt != 0 {
		t.Fatalf("apply after a write to a shared runMore: %v", err)
	}
}

// TestRunsShareTheirVersionsLinks: the runs of a workflow version share
// its tasks' dependencies; a snapshot whose recorded dependencies differ
// from the spec's keeps them for that run, and one naming a task out of
// range, or a task whose definition is, is refused with the run and
// task, not a panic.
func TestRunsShareTheirVersionsLinks(t *testing.T) {
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: diamond(), At: 1},
		&RunCreated{ID: "r1", Workflow: "diamond", Version: 1, At: 2}, &RunCreated{ID: "r2", Workflow: "diamond", Version: 1, At: 2})
	d1, d2 := s.Runs["r1"].Tasks[3], s.Runs["r2"].Tasks[3]
	if d1.links != d2.links || !reflect.DeepEqual(d1.Deps(), []int{1, 2}) || !reflect.DeepEqual(s.Runs["r1"].Tasks[0].downstream(), []int{1, 2}) {
		t.Fatalf("links: shared %v, deps of d %v", d1.links == d2.links, d1.Deps())
	}
	snap := s.Snapshot(1)
	snap.flatten()
	snap.Runs[1].Tasks[3].Deps = []int{1} // r2's d waits on b only
	back, err := Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Runs["r2"].Tasks[3].Deps(); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("recorded deps not kept: %v", got)
	}
	if got := back.Runs["r2"].Tasks[2].downstream(); len(got) != 0 {
		t.Errorf("c's downstream with the recorded deps: %v", got)
	}
	if got := back.Runs["r1"].Tasks[3].Deps(); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("r1's deps: %v", got)
	}
	snap.Runs[1].Tasks[3].Deps = []int{9}
	if _, err := Restore(snap); err == nil {
		t.Fatal("a dependency out of range restored")
	}
	snap.Runs[1].Tasks[3].Deps, snap.Runs[1].Tasks[3].SpecIndex = []int{1, 2}, 9
	if _, err := Restore(snap); err == nil {
		t.Fatal("a task of a definition out of range restored")
	}
}

// TestWaitingRunBytes: the state's own heap per waiting one-task run (its
// id, which the record brings, aside) is within the 512 B; it
// was about 1,130 B.
func TestWaitingRunBytes(t *testing.T) {
	const n = 20000
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: waitingSpec(), At: 1})
	ids := make([]string, n+1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("0194a3b2-7c1d-7e2f-8a9b-%012d", i)
	}
	create := func(from, to int) {
		for i := from; i < to; i++ {
			mustApply(t, s, &RunCreated{ID: ids[i], Workflow: "load", Version: 1, Params: map[string]string{"n": "0"}, Trigger: "api", At: 2})
		}
	}
	create(0, 1000)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	create(1000, n+1000)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(s)
	if per := float64(m1.HeapAlloc-m0.HeapAlloc) / n; per > 512 {
		t.Errorf("%.0f B per waiting run, want at most 512", per)
	} else {
		t.Logf("%.0f B per waiting run", per)
	}
}
