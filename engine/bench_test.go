package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/internal/benchtest"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// liveState builds a state with runs×tasks live (pending, some running)
// tasks through Apply, as the engine would have.
func liveState(b *testing.B, runs, tasks int) *replay.State {
	b.Helper()
	spec := &workflow.Spec{Name: "big"}
	for i := 0; i < tasks; i++ {
		t := &workflow.Task{Name: fmt.Sprintf("t%d", i), Executor: "noop"}
		if i > 0 {
			t.DependsOn = []string{fmt.Sprintf("t%d", i-1)}
		}
		spec.Tasks = append(spec.Tasks, t)
	}
	st := replay.New()
	st.Apply(&replay.WorkflowPut{Spec: spec, At: 1})
	for r := 0; r < runs; r++ {
		id := fmt.Sprintf("run-%06d", r)
		st.Apply(&replay.RunCreated{ID: id, Workflow: "big", Version: 1, Params: map[string]string{"k": "v"}, At: 2})
		st.Apply(&replay.TaskDispatched{TaskRef: replay.TaskRef{Run: id}, Attempt: 1, At: 3})
		st.Apply(&replay.TaskStarted{TaskRef: replay.TaskRef{Run: id}, Attempt: 1, PID: 100, At: 4})
	}
	return st
}

// BenchmarkCompactionPause measures the engine loop's pause when a
// compaction starts, with 100,000 live tasks (1,000 runs of 100), for three
// ways in the same run, in turn:
//
//   - old: the loop copies every run and task at once (State.Snapshot)
//     inside its turn;
//   - bg: the loop only begins the snapshot (State.BeginSnapshot) and a
//     background goroutine copies it step by step, each step under the
//     engine's lock (bgCopy, the engine's way at commit 081e8c6), while the
//     loop keeps turning; what a turn changes meanwhile is saved first by
//     Apply;
//   - new: the same, but the loop copies one step after each of its turns
//     itself (Engine.copyStep): it never waits for a copier that holds the
//     lock while it is descheduled.
//
// A simulated loop turns back to back, each turn taking the lock and
// applying 48 records (an attempt interrupted, dispatched again and started,
// on 16 runs in turn). The pause of one snapshot (old-*, bg-*, new-*) is
// its loop's longest pass, lock wait included, from the turn that starts it
// until the copy is complete; a pass is a turn, and for new a turn and the
// step after it. old+encode-*, bg+encode-*, new+encode-* extend the window
// until the snapshot is also encoded in the background, as the engine
// writes it (the encoder competes with the loop for the cores and makes
// garbage, in every way). Turns without a snapshot are the baseline
// (turn-*). p50/p99/max are over b.N snapshots of each kind
// (-benchtime=100x); *-cpu-ms/snap is the process CPU per snapshot,
// encoding included.
//
// Wall time on a shared machine includes waiting for a core; the *-cpu
// figures are the thread CPU time of each old copy and of each step,
// measured apart: the work the design bounds.
func BenchmarkCompactionPause(b *testing.B) {
	const runs, tasks = 1000, 100
	st := liveState(b, runs, tasks)
	e := &Engine{log: quiet, state: st}
	attempt := make([]int, runs)
	for i := range attempt {
		attempt[i] = 1
	}
	next := 0
	turn := func(during func()) time.Duration {
		start := time.Now()
		e.mu.Lock()
		for k := 0; k < 16; k++ {
			r := next % runs
			next++
			ref := replay.TaskRef{Run: fmt.Sprintf("run-%06d", r)}
			a := attempt[r]
			for _, rec := range []replay.Record{&replay.TaskInterrupted{TaskRef: ref, Attempt: a, Clean: true, At: 5},
				&replay.TaskDispatched{TaskRef: ref, Attempt: a + 1, At: 6}, &replay.TaskStarted{TaskRef: ref, Attempt: a + 1, At: 7}} {
				if err := st.Apply(rec); err != nil {
					b.Fatal(err)
				}
			}
			attempt[r] = a + 1
		}
		if during != nil {
			during()
		}
		e.mu.Unlock()
		return time.Since(start)
	}
	// until: the loop turns until done reports, and returns its longest turn.
	until := func(done chan error) time.Duration {
		var longest time.Duration
		for {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				return longest
			default:
				longest = max(longest, turn(nil))
			}
		}
	}
	encode := func(snap *replay.Snapshot, encoded chan error) {
		go func() { encoded <- snap.Encode(io.Discard) }()
	}
	var old, bg, cur, oldEnc, bgEnc, curEnc, base []time.Duration
	var oldCPU, bgCPU, curCPU time.Duration
	var steps int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 10; j++ {
			base = append(base, turn(nil))
		}
		var snap *replay.Snapshot
		encoded := make(chan error)

		// old: copied at once inside a turn.
		cpu0 := benchtest.SelfCPU()
		old = append(old, turn(func() { snap = st.Snapshot(uint64(i)) }))
		encode(snap, encoded)
		oldEnc = append(oldEnc, max(old[i], until(encoded)))
		oldCPU += benchtest.SelfCPU() - cpu0

		// bg: copied by a goroutine, step by step under the lock.
		cpu0 = benchtest.SelfCPU()
		copied := make(chan error)
		start := turn(func() { snap = st.BeginSnapshot(uint64(i)) })
		go func() {
			err := bgCopy(e, snap)
			copied <- err
			if err == nil {
				encode(snap, encoded)
			}
		}()
		bg = append(bg, max(start, until(copied)))
		bgEnc = append(bgEnc, max(bg[i], until(encoded)))
		bgCPU += benchtest.SelfCPU() - cpu0

		// new: the loop copies one step after each turn (as Engine.loop
		// does with Engine.copyStep).
		cpu0 = benchtest.SelfCPU()
		var longest time.Duration
		t0 := time.Now()
		turn(func() { snap = st.BeginSnapshot(uint64(i)) })
		for {
			e.mu.Lock()
			done, err := snap.CopyStep(snapshotStep)
			e.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
			longest = max(longest, time.Since(t0))
			if done {
				break
			}
			t0 = time.Now()
			turn(nil)
		}
		cur = append(cur, longest)
		encode(snap, encoded)
		curEnc = append(curEnc, max(longest, until(encoded)))
		curCPU += benchtest.SelfCPU() - cpu0
		steps += (runs*(tasks+1) + snapshotStep - 1) / snapshotStep
	}
	b.StopTimer()

	// The work under the lock apart from the scheduler: the thread CPU time
	// of each old copy and of each step, one snapshot at a time.
	var oldWork, stepWork []time.Duration
	runtime.LockOSThread()
	for i := 0; i < min(b.N, 20); i++ {
		c0 := benchtest.ThreadCPU()
		st.Snapshot(uint64(i))
		oldWork = append(oldWork, benchtest.ThreadCPU()-c0)
		snap := st.BeginSnapshot(uint64(i))
		for done := false; !done; {
			c0 = benchtest.ThreadCPU()
			done, _ = snap.CopyStep(snapshotStep)
			stepWork = append(stepWork, benchtest.ThreadCPU()-c0)
		}
	}
	runtime.UnlockOSThread()

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	report := func(name string, ds []time.Duration) {
		slices.Sort(ds)
		b.ReportMetric(ms(benchtest.Percentile(ds, 0.50)), name+"-p50-ms")
		b.ReportMetric(ms(benchtest.Percentile(ds, 0.99)), name+"-p99-ms")
		b.ReportMetric(ms(ds[len(ds)-1]), name+"-max-ms")
	}
	report("old", old)
	report("bg", bg)
	report("new", cur)
	report("old+encode", oldEnc)
	report("bg+encode", bgEnc)
	report("new+encode", curEnc)
	report("turn", base)
	report("old-copy-cpu", oldWork)
	report("new-step-cpu", stepWork)
	b.ReportMetric(ms(oldCPU)/float64(b.N), "old-cpu-ms/snap")
	b.ReportMetric(ms(bgCPU)/float64(b.N), "bg-cpu-ms/snap")
	b.ReportMetric(ms(curCPU)/float64(b.N), "new-cpu-ms/snap")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/snap")
	b.ReportMetric(float64(runs*tasks), "tasks")
}

// bgCopy is the engine's former way to copy a begun snapshot (commit
// 081e8c6), kept as the benchmark's baseline: a goroutine copies it step by
// step, each step under the write lock, and lets a waiting loop take the
// lock first between steps.
func bgCopy(e *Engine, snap *replay.Snapshot) error {
	for {
		e.mu.Lock()
		done, err := snap.CopyStep(snapshotStep)
		e.mu.Unlock()
		if err != nil || done {
			return err
		}
		runtime.Gosched()
	}
}

// BenchmarkFanOut20k: one run whose discover task outputs 20,000 items and
// a foreach task runs one noop instance per item; tasks/s through the
// engine, every transition fsynced.
func BenchmarkFanOut20k(b *testing.B) {
	const n = 20000
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	out, _ := json.Marshal(map[string]any{"items": items})
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		ex := &outputs{out: map[string]string{"discover": string(out)}, manual: nil}
		e, err := Open(Config{DataDir: dir, Logger: quiet, MaxConcurrent: 256,
			Executors: map[string]executors.Executor{"process": ex, "noop": executors.Noop{}}})
		if err != nil {
			b.Fatal(err)
		}
		e.Start()
		e.PutWorkflow(&workflow.Spec{Name: "fan", Tasks: []*workflow.Task{
			{Name: "discover", Executor: "process", Command: []string{"x"}},
			{Name: "each", Executor: "noop", DependsOn: []string{"discover"}, Foreach: "discover.items"},
		}}, "")
		start := time.Now()
		id, _ := e.Trigger("fan", nil, "bench")
		for {
			ch := e.Changed()
			if s, _ := e.RunStatus(id); s == "success" {
				break
			}
			<-ch
		}
		b.ReportMetric(n/time.Since(start).Seconds(), "tasks/s")
		e.Close()
	}
}
