package replay

import (
	"errors"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// diamond: a → (b, c) → d
func diamond() *workflow.Spec {
	return &workflow.Spec{Name: "diamond", Tasks: []*workflow.Task{
		{Name: "a", Executor: "noop"},
		{Name: "b", Executor: "noop", DependsOn: []string{"a"}},
		{Name: "c", Executor: "noop", DependsOn: []string{"a"}},
		{Name: "d", Executor: "noop", DependsOn: []string{"b", "c"}},
	}}
}

func mustApply(t *testing.T, s *State, recs ...Record) {
	t.Helper()
	for _, r := range recs {
		if err := s.Apply(r); err != nil {
			t.Fatalf("apply %s: %v", r.Kind(), err)
		}
	}
}

func readyNames(s *State) []string {
	var out []string
	s.EachReady(func(t *Task) bool { out = append(out, t.Run.ID+"/"+t.Name); return true })
	return out
}

func run1(s *State, t *testing.T) *Run {
	mustApply(t, s, &WorkflowPut{Spec: diamond(), At: 1}, &RunCreated{ID: "r1", Workflow: "diamond", Version: 1, At: 2})
	return s.Runs["r1"]
}

func finish(ref int, ok bool, at int64) []Record {
	tr := TaskRef{Run: "r1", Task: ref}
	return []Record{
		&TaskDispatched{TaskRef: tr, Attempt: 1, At: at},
		&TaskStarted{TaskRef: tr, Attempt: 1, PID: 42, At: at},
		&TaskFinished{TaskRef: tr, Attempt: 1, OK: ok, At: at + 1},
	}
}

func TestDiamondSucceedsInDependencyOrder(t *testing.T) {
	s := New()
	r := run1(s, t)
	if got := readyNames(s); len(got) != 1 || got[0] != "r1/a" {
		t.Fatalf("ready after create: %v, want [r1/a]", got)
	}
	mustApply(t, s, finish(0, true, 10)...)
	if got := readyNames(s); len(got) != 2 || got[0] != "r1/b" || got[1] != "r1/c" {
		t.Fatalf("ready after a: %v, want [r1/b r1/c]", got)
	}
	mustApply(t, s, finish(1, true, 20)...)
	if got := readyNames(s); len(got) != 1 {
		t.Fatalf("d must wait for c: ready %v", got)
	}
	mustApply(t, s, finish(2, true, 30)...)
	mustApply(t, s, finish(3, true, 40)...)
	if r.Status != RunSuccess || r.StartedAt != 10 || r.FinishedAt != 41 {
		t.Fatalf("run %s started %d finished %d, want success 10 41", r.Status, r.StartedAt, r.FinishedAt)
	}
}

func TestFailureSkipsDownstreamAndFailsRun(t *testing.T) {
	s := New()
	r := run1(s, t)
	mustApply(t, s, finish(0, true, 10)...)
	mustApply(t, s, finish(1, false, 20)...)
	if r.Tasks[3].Status != Skipped {
		t.Fatalf("d is %s, want skipped", r.Tasks[3].Status)
	}
	if r.Status != RunRunning {
		t.Fatalf("run is %s while c still runs", r.Status)
	}
	mustApply(t, s, finish(2, true, 30)...)
	if r.Status != RunFailed || r.FinishedAt != 31 {
		t.Fatalf("run %s at %d, want failed at 31", r.Status, r.FinishedAt)
	}
}

func TestInterruptedTaskRunsAgainThenCrashLoopFails(t *testing.T) {
	s := New()
	r := run1(s, t)
	a := TaskRef{Run: "r1", Task: 0}
	for i := 1; i < MaxInterruptions; i++ {
		mustApply(t, s, &TaskDispatched{TaskRef: a, Attempt: i, At: 10}, &TaskInterrupted{TaskRef: a, Attempt: i, At: 11})
		if r.Tasks[0].Status != Pending || readyNames(s)[0] != "r1/a" {
			t.Fatalf("after interruption %d: %s, want pending and ready", i, r.Tasks[0].Status)
		}
	}
	mustApply(t, s, &TaskDispatched{TaskRef: a, Attempt: MaxInterruptions, At: 20},
		&TaskInterrupted{TaskRef: a, Attempt: MaxInterruptions, At: 21})
	if r.Tasks[0].Status != Failed || r.Status != RunFailed {
		t.Fatalf("crash loop: task %s run %s, want failed failed", r.Tasks[0].Status, r.Status)
	}
}

// TestUnstartedInterruptionsDoNotCount: an attempt whose start was never
// recorded, interrupted by crash after crash, never fails its task (it
// never ran); an attempt that started counts, and a record of an earlier
// version (no unstarted key, as above) counts as it did.
func TestUnstartedInterruptionsDoNotCount(t *testing.T) {
	s := New()
	r := run1(s, t)
	a := TaskRef{Run: "r1", Task: 0}
	n := 1
	for ; n <= 2*MaxInterruptions; n++ {
		mustApply(t, s, &TaskDispatched{TaskRef: a, Attempt: n, At: 10}, &TaskInterrupted{TaskRef: a, Attempt: n, Unstarted: true, At: 11})
	}
	if task := r.Tasks[0]; task.Status != Pending || task.Interruptions != 0 {
		t.Fatalf("after %d unstarted interruptions: %s with %d interruptions, want pending with 0", n-1, task.Status, task.Interruptions)
	}
	for i := 1; i <= MaxInterruptions; i++ {
		mustApply(t, s, &TaskDispatched{TaskRef: a, Attempt: n, At: 20}, &TaskStarted{TaskRef: a, Attempt: n, PID: 42, At: 20})
		if err := s.Apply(&TaskInterrupted{TaskRef: a, Attempt: n, Unstarted: true, At: 21}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("an unstarted interruption of a running task: %v, want ErrInvalid", err)
		}
		mustApply(t, s, &TaskInterrupted{TaskRef: a, Attempt: n, At: 21})
		n++
	}
	if r.Tasks[0].Status != Failed || r.Tasks[0].Interruptions != MaxInterruptions {
		t.Fatalf("after %d started interruptions: %s, want failed", MaxInterruptions, r.Tasks[0].Status)
	}
}

// TestNotRunAttemptRunsAgain: an attempt the daemon could not prepare
// goes back to pending with the reason and the engine's not_before,
// spending no retry and counting no interruption, and the counts by
// status follow it (they kept it dispatched before: /metrics counted a
// task in flight that was waiting).
func TestNotRunAttemptRunsAgain(t *testing.T) {
	s := New()
	r := run1(s, t)
	a := TaskRef{Run: "r1", Task: 0}
	mustApply(t, s, &TaskDispatched{TaskRef: a, Attempt: 1, At: 10},
		&TaskInterrupted{TaskRef: a, Attempt: 1, Clean: true, NotRun: true, Reason: "write input: no space left on device", NotBefore: 1010, At: 10})
	task := r.Tasks[0]
	if task.Status != Pending || task.NotBefore != 1010 || task.Error != "write input: no space left on device" ||
		task.Failures != 0 || task.Interruptions != 0 {
		t.Fatalf("after an attempt not run: %+v", task)
	}
	if got := s.TaskCounts(); got[Pending] != 4 || got[Dispatched] != 0 {
		t.Fatalf("task counts %v, want the 4 tasks pending", got)
	}
	if h := task.Attempts; len(h) != 1 || h[0].Error != "write input: no space left on device" {
		t.Fatalf("attempt history %+v, want the attempt with why it did not start", h)
	}
}

func TestInvalidRecordsAreRejectedWithoutChange(t *testing.T) {
	s := New()
	run1(s, t)
	before, _ := s.Hash()
	a := TaskRef{Run: "r1", Task: 0}
	d := TaskRef{Run: "r1", Task: 3}
	for name, rec := range map[string]Record{
		"unknown workflow":       &RunCreated{ID: "r2", Workflow: "nope", Version: 1},
		"stale version":          &RunCreated{ID: "r2", Workflow: "diamond", Version: 7},
		"duplicate run":          &RunCreated{ID: "r1", Workflow: "diamond", Version: 1},
		"dispatch not ready":     &TaskDispatched{TaskRef: d, Attempt: 1},
		"dispatch wrong attempt": &TaskDispatched{TaskRef: a, Attempt: 2},
		"finish not in flight":   &TaskFinished{TaskRef: a, Attempt: 1, OK: true},
		"unknown run":            &TaskFinished{TaskRef: TaskRef{Run: "zz"}, Attempt: 1},
		"task out of range":      &TaskStarted{TaskRef: TaskRef{Run: "r1", Task: 9}, Attempt: 1},
		"delete unknown":         &WorkflowDeleted{Name: "nope"},
		"put without spec":       &WorkflowPut{},
	} {
		if err := s.Apply(rec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
		if after, _ := s.Hash(); after != before {
			t.Errorf("%s: state changed by a rejected record", name)
		}
	}
}

func TestTerminalTaskNeverChanges(t *testing.T) {
	s := New()
	run1(s, t)
	mustApply(t, s, finish(0, true, 10)...)
	a := TaskRef{Run: "r1", Task: 0}
	for _, rec := range []Record{
		&TaskFinished{TaskRef: a, Attempt: 1, OK: false},
		&TaskDispatched{TaskRef: a, Attempt: 2},
		&TaskInterrupted{TaskRef: a, Attempt: 1},
	} {
		if err := s.Apply(rec); err == nil {
			t.Fatalf("%s applied to a succeeded task", rec.Kind())
		}
	}
}

func TestWorkflowVersionsAndPinning(t *testing.T) {
	s := New()
	r := run1(s, t)
	v2 := diamond()
	v2.Tasks = v2.Tasks[:1]
	mustApply(t, s, &WorkflowPut{Spec: v2, At: 5})
	if w := s.Workflows["diamond"]; w.Version != 2 || w.CreatedAt != 1 || w.UpdatedAt != 5 {
		t.Fatalf("workflow after second put: %+v", w)
	}
	if len(r.Spec.Tasks) != 4 {
		t.Fatal("a run must keep the version it pinned")
	}
	mustApply(t, s, &WorkflowDeleted{Name: "diamond"})
	if _, ok := s.Runs["r1"]; !ok || s.Workflows["diamond"] != nil {
		t.Fatal("delete must drop the workflow and keep its runs")
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	recs := []Record{
		&WorkflowPut{Spec: diamond(), Source: "name: diamond", At: 1},
		&WorkflowDeleted{Name: "x", At: 2},
		&RunCreated{ID: "r", Workflow: "w", Version: 3, Params: map[string]string{"k": "v"}, Trigger: "api", At: 3},
		&TaskDispatched{TaskRef: TaskRef{Run: "r", Task: 2}, Attempt: 1, At: 4},
		&TaskStarted{TaskRef: TaskRef{Run: "r", Task: 2}, Attempt: 1, PID: 9, StartTime: 77, At: 5},
		&TaskFinished{TaskRef: TaskRef{Run: "r", Task: 2}, Attempt: 1, OK: true, Output: []byte(`{"a":1}`), At: 6},
		&TaskInterrupted{TaskRef: TaskRef{Run: "r", Task: 1}, Attempt: 2, At: 7},
	}
	for _, r := range recs {
		b, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", r.Kind(), err)
		}
		b2, _ := Encode(back)
		if string(b) != string(b2) {
			t.Fatalf("%s does not round-trip", r.Kind())
		}
	}
	if _, err := Decode([]byte{99, 0x80}); err == nil {
		t.Fatal("unknown kind decoded")
	}
}

// TestHashIgnoresMapOrder: the state's hash encoded each workflow's spec
// with msgpack, whose SetSortMapKeys sorts only maps of strings and of
// interfaces: a spec with two inputs or types hashed to a different value
// from one call to the next, so a live state and its replay could differ
// by hash alone.
func TestHashIgnoresMapOrder(t *testing.T) {
	tk := &workflow.Task{Name: "a", Executor: "noop", Inputs: map[string]workflow.Input{
		"x": {Const: []byte("1")}, "y": {Const: []byte("2")}, "z": {Const: []byte("3")}, "w": {Const: []byte("4")}}}
	spec := &workflow.Spec{Name: "w", Tasks: []*workflow.Task{tk},
		Types: map[string][]byte{"A": []byte(`"int"`), "B": []byte(`"str"`), "C": []byte(`"float"`)}}
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: spec, At: 1})
	want, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if got, _ := s.Hash(); got != want {
			t.Fatalf("hash %d of one state: %x, then %x", i, want, got)
		}
	}
}

// TestWorkflowPutVersions: a put records its version, above every version
// the name had (deleted ones included), and Apply refuses one that is not;
// records of earlier versions (no version) replay as they were written:
// previous + 1, or 1 after a delete, with the runs that pinned it.
func TestWorkflowPutVersions(t *testing.T) {
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: diamond(), At: 1}, &WorkflowPut{Spec: diamond(), At: 2},
		&WorkflowDeleted{Name: "diamond", At: 3}, &WorkflowPut{Spec: diamond(), At: 4},
		&RunCreated{ID: "r1", Workflow: "diamond", Version: 1, At: 5})
	if w := s.Workflows["diamond"]; w.Version != 1 || s.LastVersion("diamond") != 2 {
		t.Fatalf("old records: version %d, last %d; want 1 (as written then), last 2", w.Version, s.LastVersion("diamond"))
	}
	if err := s.Apply(&WorkflowPut{Spec: diamond(), Version: 2, At: 6}); err == nil {
		t.Fatal("a put whose version the name already had was applied")
	}
	mustApply(t, s, &WorkflowPut{Spec: diamond(), Version: 3, File: "/w/d.yaml", At: 7})
	if w := s.Workflows["diamond"]; w.Version != 3 || w.File != "/w/d.yaml" {
		t.Fatalf("put: version %d file %q", w.Version, w.File)
	}
}
