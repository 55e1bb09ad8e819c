package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
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
// compaction starts: the copy of the state taken under the lock
// (replay.State.Snapshot), with 100,000 live tasks. Encoding and writing
// happen outside the lock and are reported separately for scale.
func BenchmarkCompactionPause(b *testing.B) {
	st := liveState(b, 1000, 100)
	var pauses []time.Duration
	var encode, cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, cpu0 := time.Now(), cpuTime()
		snap := st.Snapshot(uint64(i))
		pauses = append(pauses, time.Since(start))
		cpu += cpuTime() - cpu0
		if i == 0 {
			start = time.Now()
			snap.Encode(io.Discard)
			encode = time.Since(start)
		}
	}
	sort.Slice(pauses, func(i, j int) bool { return pauses[i] < pauses[j] })
	p99 := pauses[len(pauses)*99/100]
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-pause-ms")
	b.ReportMetric(float64(pauses[len(pauses)-1].Microseconds())/1000, "max-pause-ms")
	b.ReportMetric(float64(encode.Microseconds())/1000, "encode-ms(background)")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/pause")
}

// cpuTime is the process's user+system CPU time: on a shared, noisy machine
// it shows what the code costs apart from waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
