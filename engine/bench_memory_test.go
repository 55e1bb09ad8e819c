package engine

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/internal/benchtest"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Issue 27, item 4: what a run waiting in the queue costs in memory.

// queuedTarget is the budget per waiting one-task run, in bytes.
const queuedTarget = 512

// holdExecutor starts work that never ends (until the engine closes): the
// first run of a max_active_runs: 1 workflow holds the slot with it.
type holdExecutor struct{}

func (holdExecutor) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	report(executors.Event{Kind: executors.Started, TaskID: job.TaskID, Attempt: job.Attempt, At: time.Now()})
	return holdHandle{job, report}, nil
}

type holdHandle struct {
	job    executors.Job
	report func(executors.Event)
}

func (h holdHandle) Stop(time.Duration, string) {
	h.report(executors.Event{Kind: executors.Finished, TaskID: h.job.TaskID, Attempt: h.job.Attempt, At: time.Now(), ExitCode: -1, Err: "stopped"})
}

// queuedShapes are one-task workflows whose runs wait: on a delay, or
// behind max_active_runs: 1 (the first run's task holds the slot). Both
// declare a param, given its default at every trigger.
var queuedShapes = []struct {
	name string
	spec func() *workflow.Spec
}{
	{"delay", func() *workflow.Spec {
		return &workflow.Spec{Name: "load", Params: map[string]string{"n": "0"},
			Tasks: []*workflow.Task{{Name: "t", Executor: "noop", Delay: time.Hour}}}
	}},
	{"max-active", func() *workflow.Spec {
		return &workflow.Spec{Name: "load", Params: map[string]string{"n": "0"}, MaxActiveRuns: 1,
			Tasks: []*workflow.Task{{Name: "t", Executor: "hold"}}}
	}},
}

// memoryNow is the heap in use and the process's resident memory after a
// full collection that returns freed memory to the system: what the live
// state holds, without the collector's headroom.
func memoryNow(b *testing.B) (heap, rss uint64) {
	b.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, vmRSS(b)
}

// vmRSS is this process's VmRSS, in bytes.
func vmRSS(b *testing.B) uint64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkQueuedRunMemory: the memory a waiting one-task run costs, as
// the growth of the engine's process over QUEUED (60,000) runs triggered
// in-process after 1,000 warm-up runs, all waiting (queuedShapes). rss-B/run
// is the growth of VmRSS and heap-B/run that of the Go heap in use, each
// after a full collection; ratio is rss-B/run over the target (512 B,
// ≤ 1 is met). boot-heap-B/run is the heap of the same runs after the
// engine is closed and opened again (from its snapshot), over all of them.
// Without the forced collection the runtime lets the heap grow to twice
// its live part (GOGC=100): a daemon's resident memory between
// collections is up to about twice this.
//
//	go test -run '^$' -bench BenchmarkQueuedRunMemory -benchtime 1x ./engine/
func BenchmarkQueuedRunMemory(b *testing.B) {
	n := benchtest.QueuedRuns()
	for _, shape := range queuedShapes {
		b.Run(shape.name, func(b *testing.B) {
			var g queued
			for i := 0; i < b.N; i++ {
				g.add(queuedGrowth(b, shape.spec(), n))
			}
			per := func(v float64) float64 { return v / float64(b.N) }
			b.ReportMetric(per(g.rss), "rss-B/run")
			b.ReportMetric(per(g.heap), "heap-B/run")
			b.ReportMetric(per(g.boot), "boot-heap-B/run")
			b.ReportMetric(per(g.rss)/queuedTarget, "ratio")
			b.ReportMetric(float64(n), "runs")
		})
	}
}

// queued is what queuedGrowth measured, in bytes per run.
type queued struct{ heap, rss, boot float64 }

func (q *queued) add(o queued) { q.heap, q.rss, q.boot = q.heap+o.heap, q.rss+o.rss, q.boot+o.boot }

func queuedEngine(b *testing.B, dir string) *Engine {
	b.Helper()
	e, err := Open(Config{DataDir: dir, Logger: quiet,
		MaxPendingRuns: 1 << 30, MaxPendingRunsPerWorkflow: 1 << 30,
		Executors: map[string]executors.Executor{"noop": executors.Noop{}, "hold": holdExecutor{}}})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// queuedGrowth opens an engine, triggers 1,000 runs of spec and then n
// more, and returns the growth per run of the heap and of VmRSS over the
// n; then the heap per run of the whole state opened again.
func queuedGrowth(b *testing.B, spec *workflow.Spec, n int) queued {
	b.Helper()
	dir := b.TempDir()
	e := queuedEngine(b, dir)
	e.Start()
	if _, _, err := e.PutWorkflow(spec, ""); err != nil {
		b.Fatal(err)
	}
	triggerMany(b, e, spec.Name, 1000)
	h0, r0 := memoryNow(b)
	triggerMany(b, e, spec.Name, n)
	h1, r1 := memoryNow(b)
	if p := os.Getenv("HEAPPROF1"); p != "" {
		f, _ := os.Create(p)
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	e.mu.RLock()
	active := e.state.ActiveRuns(spec.Name)
	e.mu.RUnlock()
	if active > 1 {
		b.Fatalf("%d runs running, want at most 1: the runs must wait", active)
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	e = nil
	h2, _ := memoryNow(b)
	e = queuedEngine(b, dir)
	defer e.Close()
	h3, _ := memoryNow(b)
	if p := os.Getenv("HEAPPROF"); p != "" {
		f, _ := os.Create(p)
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	runtime.KeepAlive(e)
	return queued{heap: (float64(h1) - float64(h0)) / float64(n), rss: (float64(r1) - float64(r0)) / float64(n),
		boot: (float64(h3) - float64(h2)) / float64(n+1000)}
}
