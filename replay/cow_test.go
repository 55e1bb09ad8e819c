package replay

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/replay/workflow"
)

// cowSpec exercises every path of Apply that writes a run or a task:
// retries with backoff, a mutex, a foreach and a counted fan-out fed by an
// output (or failing on a bad one), a fixed fan-out with a delay, a cleanup
// task with on_failure: run and on_interrupt: fail, priorities, a schedule.
func cowSpec(name string, cron bool) *workflow.Spec {
	sp := &workflow.Spec{Name: name, Params: map[string]string{"k": "v"}, Tasks: []*workflow.Task{
		{Name: "src", Executor: "noop", Retries: 1, Mutex: "m-{{params.k}}"},
		{Name: "each", Executor: "noop", DependsOn: []string{"src"}, Foreach: "src.items", Retries: 1},
		{Name: "par", Executor: "noop", DependsOn: []string{"src"}, ParallelFrom: "src.n"},
		{Name: "fix", Executor: "noop", DependsOn: []string{"src"}, Parallel: 2, Delay: 5 * time.Second},
		{Name: "cleanup", Executor: "noop", DependsOn: []string{"each", "par"}, OnFailure: "run", OnInterrupt: "fail"},
		{Name: "late", Executor: "noop", DependsOn: []string{"cleanup", "fix"}, Priority: 3, Delay: time.Second},
	}}
	if cron {
		sp.Schedule = &workflow.Schedule{Cron: "* * * * *"}
	}
	return sp
}

// cowRecords drives a state like an engine with random choices and returns
// the records it accepted (a long history that visits every transition),
// and which rare paths it took.
func cowRecords(seed int64, n int) ([]Record, map[string]bool) {
	rng := rand.New(rand.NewSource(seed))
	s := New()
	var recs []Record
	at := int64(1)
	paths := map[string]bool{}
	try := func(r Record) {
		if s.Apply(r) != nil {
			return
		}
		recs = append(recs, r)
		paths[r.Kind().String()] = true
		for _, run := range s.RunList {
			for _, t := range run.Tasks {
				switch {
				case strings.Contains(t.Error, "on_interrupt is fail"):
					paths["on_interrupt fail"] = true
				case strings.HasPrefix(t.Error, "foreach:") || strings.HasPrefix(t.Error, "parallel:"):
					paths["bad fan-out"] = true
				case t.IsNode() && t.Status == Success && len(t.Instances) > 0:
					paths["fan-out"] = true
				}
			}
			if run.Status == RunCancelled && run.StartedAt == run.FinishedAt {
				paths["cancelled before it started"] = true
			}
		}
	}
	outputs := []string{`{"items":[1,2,3],"n":2}`, `{"items":[],"n":0}`, `{"items":5,"n":"x"}`, ``, `{"items":["a"],"n":1}`}
	runs := 0
	wfs := []string{"w0", "w1"}
	try(&WorkflowPut{Spec: cowSpec("w0", false), At: at})
	try(&WorkflowPut{Spec: cowSpec("w1", true), At: at})
	for len(recs) < n {
		at++
		var flight, finished, open []*Task
		var done, live []*Run
		for _, r := range s.RunList {
			if r.Status.Finished() {
				done = append(done, r)
			} else {
				live = append(live, r)
			}
			for _, t := range r.Tasks {
				if t.AttemptInFlight() {
					flight = append(flight, t)
				}
				if t.Status.Terminal() {
					finished = append(finished, t)
				} else {
					open = append(open, t)
				}
			}
		}
		_ = finished
		_ = open
		wf := wfs[rng.Intn(2)]
		switch k := rng.Intn(100); {
		case k < 8:
			if w := s.Workflows[wf]; w != nil {
				runs++
				try(&RunCreated{ID: fmt.Sprintf("r%d", runs), Workflow: wf, Version: w.Version,
					Params: map[string]string{"k": fmt.Sprint(rng.Intn(2))}, IdempotencyKey: fmt.Sprint("idem", rng.Intn(50)), At: at})
			}
		case k < 35:
			var ready []*Task
			s.EachReady(func(t *Task) bool { ready = append(ready, t); return len(ready) < 4 })
			if len(ready) > 0 {
				t := ready[rng.Intn(len(ready))]
				try(&TaskDispatched{TaskRef: TaskRef{Run: t.Run.ID, Task: t.Index}, Attempt: t.Attempt + 1, At: at})
			}
		case k < 45:
			if len(flight) > 0 {
				t := flight[rng.Intn(len(flight))]
				try(&TaskStarted{TaskRef: TaskRef{Run: t.Run.ID, Task: t.Index}, Attempt: t.Attempt, PID: rng.Intn(1000), StartTime: uint64(at), At: at})
			}
		case k < 73:
			if len(flight) > 0 {
				t := flight[rng.Intn(len(flight))]
				try(&TaskFinished{TaskRef: TaskRef{Run: t.Run.ID, Task: t.Index}, Attempt: t.Attempt, OK: rng.Intn(4) > 0,
					ExitCode: rng.Intn(3), Error: fmt.Sprint("e", rng.Intn(3)), Output: []byte(outputs[rng.Intn(len(outputs))]), At: at})
			}
		case k < 79:
			if len(flight) > 0 {
				t := flight[rng.Intn(len(flight))]
				try(&TaskInterrupted{TaskRef: TaskRef{Run: t.Run.ID, Task: t.Index}, Attempt: t.Attempt, Clean: rng.Intn(2) == 0, At: at})
			}
		case k < 83:
			if len(live) > 0 {
				try(&RunCancelRequested{ID: live[rng.Intn(len(live))].ID, At: at})
			}
		case k < 87:
			if len(done) > 0 {
				try(&RunRetried{ID: done[rng.Intn(len(done))].ID, At: at})
			}
		case k < 90:
			if len(done) > 0 {
				ids := []string{done[rng.Intn(len(done))].ID}
				if len(done) > 1 && rng.Intn(2) == 0 {
					ids = append(ids, done[rng.Intn(len(done))].ID)
				}
				try(&RunsPruned{IDs: ids, At: at})
			}
		case k < 92:
			try(&WorkflowPut{Spec: cowSpec(wf, rng.Intn(2) == 0), At: at})
		case k < 93:
			try(&WorkflowDeleted{Name: wf, At: at})
		case k < 98:
			if sc := s.Schedules[wf]; sc != nil && sc.Paused {
				try(&SchedulePaused{Workflow: wf, Paused: false, At: at})
			} else if sc != nil {
				if rng.Intn(3) == 0 {
					try(&CronFired{Workflow: wf, ScheduledAt: at, Skipped: "overlap", At: at})
				} else {
					runs++
					try(&CronFired{Workflow: wf, ScheduledAt: at, RunID: fmt.Sprintf("r%d", runs), Version: s.Workflows[wf].Version,
						Queued: rng.Intn(2) == 0, At: at})
				}
			}
		default:
			if sc := s.Schedules[wf]; sc != nil {
				try(&SchedulePaused{Workflow: wf, Paused: !sc.Paused, At: at})
			}
		}
	}
	return recs, paths
}

func applyAll(t *testing.T, s *State, recs []Record) {
	t.Helper()
	for _, r := range recs {
		if err := s.Apply(r); err != nil {
			t.Fatalf("apply %s: %v", r.Kind(), err)
		}
	}
}

func encodeSnap(t *testing.T, snap *Snapshot) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := snap.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// restoreSnap is the state a boot restores from snap: encoded, then read
// run by run (ReadSnapshot); it must be the state Restore builds from the
// whole snapshot decoded.
func restoreSnap(t *testing.T, snap *Snapshot) *State {
	t.Helper()
	data := encodeSnap(t, snap)
	back, index, err := ReadSnapshot(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Restore(dec)
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := back.Hash()
	if h2, _ := whole.Hash(); h1 != h2 || index != snap.Index {
		t.Fatalf("read run by run: index %d, hash %x; decoded whole: index %d, hash %x", index, h1, dec.Index, h2)
	}
	return back
}

// restoredBothWays is the state a boot restores from a full snapshot of s at
// index, then from an incremental one.
func restoredBothWays(t *testing.T, s *State, index uint64) [2]*State {
	t.Helper()
	full := restoreSnap(t, s.Snapshot(index))
	snap := s.BeginSnapshot(index)
	complete(t, snap, 1)
	return [2]*State{full, restoreSnap(t, snap)}
}

// complete runs a begun snapshot's steps to the end.
func complete(t *testing.T, snap *Snapshot, budget int) {
	t.Helper()
	for i := 0; ; i++ {
		done, err := snap.CopyStep(budget)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		if i > 1e7 {
			t.Fatal("CopyStep never completes")
		}
	}
}

// TestIncrementalSnapshotIsTheStateAtN: for a snapshot begun after every
// prefix of long, varied histories, with the rest of the history applied
// while it is copied (four ways: no step until the end, so that every run
// and task that changed is saved by Apply's touch; one item per record; a
// few items per record; the whole copy first), the encoded snapshot is
// byte for byte the full copy taken at N, and the live state is unharmed.
// A missing touch before a write fails it.
func TestIncrementalSnapshotIsTheStateAtN(t *testing.T) {
	seen := map[string]bool{}
	for seed := int64(1); seed <= 3; seed++ {
		recs, paths := cowRecords(seed, 120)
		for p := range paths {
			seen[p] = true
		}
		checkIncremental(t, fmt.Sprintf("seed %d", seed), recs)
	}
	// A crash loop, which the random histories rarely reach.
	a := TaskRef{Run: "r1", Task: 0}
	loop := []Record{&WorkflowPut{Spec: cowSpec("w0", false), At: 1}, &RunCreated{ID: "r1", Workflow: "w0", Version: 1, At: 2}}
	for i := 1; i <= MaxInterruptions; i++ {
		loop = append(loop, &TaskDispatched{TaskRef: a, Attempt: i, At: int64(2 + i)}, &TaskInterrupted{TaskRef: a, Attempt: i, At: int64(2 + i)})
	}
	c := TaskRef{Run: "r1", Task: 4} // cleanup runs anyway
	loop = append(loop, &TaskDispatched{TaskRef: c, Attempt: 1, At: 10}, &TaskFinished{TaskRef: c, Attempt: 1, OK: true, At: 11},
		&RunRetried{ID: "r1", At: 12}, &TaskDispatched{TaskRef: a, Attempt: 4, At: 13})
	checkIncremental(t, "crash loop", loop)
	if len(seen) != 12+4 {
		t.Fatalf("the histories took only %d of 16 paths (12 record kinds and 4 rare paths): %v", len(seen), seen)
	}
}

func checkIncremental(t *testing.T, name string, recs []Record) {
	t.Helper()
	full := New()
	applyAll(t, full, recs)
	want, _ := full.Hash()
	for cut := 0; cut <= len(recs); cut++ {
		for _, perRecord := range []int{0, 1, 3, 1 << 30} {
			s := New()
			applyAll(t, s, recs[:cut])
			oracle := encodeSnap(t, s.Snapshot(uint64(cut)))
			snap := s.BeginSnapshot(uint64(cut))
			for _, r := range recs[cut:] {
				if perRecord > 0 {
					if _, err := snap.CopyStep(perRecord); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Apply(r); err != nil {
					t.Fatalf("%s, cut %d: apply %s during a snapshot: %v", name, cut, r.Kind(), err)
				}
			}
			complete(t, snap, 7)
			if got := encodeSnap(t, snap); !bytes.Equal(got, oracle) {
				t.Fatalf("%s: snapshot begun at %d (%d items per record) is not the state at %d", name, cut, perRecord, cut)
			}
			if h, _ := s.Hash(); h != want {
				t.Fatalf("%s, cut %d: the live state differs from a replay without snapshot", name, cut)
			}
		}
	}
}

// TestSnapshotBeginIsConstantAndStepsBounded: beginning a snapshot
// allocates the same with 10 runs as with 2,000 (it copies no run), and a
// step of budget b saves at most b runs and tasks.
func TestSnapshotBeginIsConstantAndStepsBounded(t *testing.T) {
	allocs := func(runs int) float64 {
		s := New()
		applyAll(t, s, []Record{&WorkflowPut{Spec: cowSpec("w", false), At: 1}})
		for i := 0; i < runs; i++ {
			applyAll(t, s, []Record{&RunCreated{ID: fmt.Sprint(i), Workflow: "w", Version: 1, At: 2}})
		}
		return testing.AllocsPerRun(20, func() { s.BeginSnapshot(1) })
	}
	if small, big := allocs(10), allocs(2000); small != big {
		t.Fatalf("BeginSnapshot allocates %v times with 10 runs, %v with 2000", small, big)
	}

	s := New()
	applyAll(t, s, []Record{&WorkflowPut{Spec: cowSpec("w", false), At: 1}})
	for i := 0; i < 100; i++ {
		applyAll(t, s, []Record{&RunCreated{ID: fmt.Sprint(i), Workflow: "w", Version: 1, At: 2}})
	}
	snap := s.BeginSnapshot(1)
	steps := 0
	for {
		before := snap.pend.runs.len() + snap.pend.tasks.len()
		done, err := snap.CopyStep(17)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		steps++
		if n := snap.pend.runs.len() + snap.pend.tasks.len() - before; n > 17 {
			t.Fatalf("a step of budget 17 saved %d items", n)
		}
	}
	if items := 100 * (1 + 6); steps < items/17 {
		t.Fatalf("%d items copied in %d steps of 17", items, steps)
	}
	if s.pend != nil {
		t.Fatal("a complete snapshot is still attached to the state")
	}
}

// TestSnapshotSupersededAndIncomplete: a snapshot replaced by a newer one
// reports it and does not encode; neither does one whose copy is not done.
func TestSnapshotSupersededAndIncomplete(t *testing.T) {
	s := New()
	recs, _ := cowRecords(1, 50)
	applyAll(t, s, recs)
	old := s.BeginSnapshot(1)
	if _, err := old.CopyStep(1); err != nil {
		t.Fatal(err)
	}
	if err := old.Encode(&bytes.Buffer{}); err == nil {
		t.Fatal("an incomplete snapshot encoded")
	}
	cur := s.BeginSnapshot(2)
	if _, err := old.CopyStep(1 << 30); !errors.Is(err, ErrSnapshotSuperseded) {
		t.Fatalf("superseded snapshot: %v", err)
	}
	complete(t, cur, 1<<30)
	if !bytes.Equal(encodeSnap(t, cur), encodeSnap(t, s.Snapshot(2))) {
		t.Fatal("the newer snapshot differs from a full copy")
	}
}

func TestChunks(t *testing.T) {
	var a chunks[int]
	for i := 0; i < 100_000; i++ {
		*a.add() = i
		if a.len() != i+1 || *a.at(i) != i || *a.at(i / 2) != i/2 {
			t.Fatalf("chunks: item %d reads %d, item %d reads %d", i, *a.at(i), i/2, *a.at(i / 2))
		}
	}
	for k, c := range a.c {
		if want := min(firstChunk<<min(k, 8), chunkLen); cap(c) != want {
			t.Fatalf("chunk %d holds %d, want %d", k, cap(c), want)
		}
	}
}
