package main

// Issue 27's acceptance checks from outside: the workloads of its in-process
// benchmarks (engine/bench_perf_test.go BenchmarkProcessVsBare,
// BenchmarkDagu's sequential-100 and runs-50, engine/bench_memory_test.go
// BenchmarkQueuedRunMemory) run by the release binary as a separate
// process, submitted over its HTTP API as a user would, and timed by the
// daemon's own timestamps (GET /runs/{id}: created_at, finished_at, each
// task's dispatched_at, started_at, finished_at), against the same floors
// measured in the same process (internal/benchtest). Peak RSS with 5,000
// running sleeps is BenchmarkDaemonRSS/sleep-5000's, already from outside.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orkwal/orkwal/internal/benchtest"
)

// runTimes is what GET /runs/{id} says of a run's times: the daemon's
// clock as its loop read it for each record (docs/api.md, Run and Task).
type runTimes struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Tasks      []struct {
		Name         string     `json:"name"`
		DispatchedAt *time.Time `json:"dispatched_at"`
		StartedAt    *time.Time `json:"started_at"`
		FinishedAt   *time.Time `json:"finished_at"`
	} `json:"tasks"`
}

// errNotTimed: a run the span cannot be read from.
var errNotTimed = errors.New("run has not succeeded with a finish time")

// daemonSpan is the time the daemon's own timestamps give a workload of
// runs: from the first run's created_at to the last run's finished_at.
// Every run must have succeeded.
func daemonSpan(runs []runTimes) (time.Duration, error) {
	if len(runs) == 0 {
		return 0, errNotTimed
	}
	first, last := runs[0].CreatedAt, time.Time{}
	for _, r := range runs {
		if r.Status != "success" || r.FinishedAt == nil {
			return 0, fmt.Errorf("run %s (%s): %w", r.ID, r.Status, errNotTimed)
		}
		if r.CreatedAt.Before(first) {
			first = r.CreatedAt
		}
		if r.FinishedAt.After(last) {
			last = *r.FinishedAt
		}
	}
	return last.Sub(first), nil
}

// taskPhases adds up the tasks' time from dispatch to the start report and
// from the start report to the finish (the tasks that have all three
// times), and counts them: where a task's time goes, in the daemon's view.
func taskPhases(runs []runTimes) (launch, finish time.Duration, n int) {
	for _, r := range runs {
		for _, t := range r.Tasks {
			if t.DispatchedAt == nil || t.StartedAt == nil || t.FinishedAt == nil {
				continue
			}
			launch += t.StartedAt.Sub(*t.DispatchedAt)
			finish += t.FinishedAt.Sub(*t.StartedAt)
			n++
		}
	}
	return launch, finish, n
}

// times reads the runs ids as the API shows them.
func (d *benchDaemon) times(ids ...string) []runTimes {
	d.b.Helper()
	out := make([]runTimes, len(ids))
	for i, id := range ids {
		code, body := d.call("GET", "/runs/"+id, "")
		if code != 200 {
			d.b.Fatalf("GET /runs/%s: %d %s", id, code, body)
		}
		if err := json.Unmarshal(body, &out[i]); err != nil {
			d.b.Fatalf("GET /runs/%s: %v", id, err)
		}
	}
	return out
}

// span is daemonSpan of the runs ids, adding their tasks' phases to ph.
func (d *benchDaemon) span(ph *phaseSum, ids ...string) time.Duration {
	d.b.Helper()
	runs := d.times(ids...)
	s, err := daemonSpan(runs)
	if err != nil {
		d.b.Fatal(err)
	}
	ph.add(runs)
	return s
}

// phaseSum adds up taskPhases over iterations.
type phaseSum struct {
	launch, finish time.Duration
	n              int
}

func (p *phaseSum) add(runs []runTimes) {
	l, f, n := taskPhases(runs)
	p.launch, p.finish, p.n = p.launch+l, p.finish+f, p.n+n
}

func (p *phaseSum) report(b *testing.B) {
	if p.n > 0 {
		b.ReportMetric(float64(p.launch)/float64(p.n)/1e6, "dispatch-to-started-ms/task")
		b.ReportMetric(float64(p.finish)/float64(p.n)/1e6, "started-to-finished-ms/task")
	}
}

// BenchmarkOutside: issue 27's workloads on the release binary (`make
// build`), a separate process started as `orkwal run --data --workflows`
// with default settings but for what a workload needs, each submitted over
// the API and timed by the daemon's own timestamps:
//
//   - process-2000/concurrency=16, =2: one run of `parallel: 2000` ×
//     ["true"] at --max-concurrent 16 (2), twice a daemon, between two bare
//     loops (benchtest.BareSpawns with as many goroutines), as
//     BenchmarkProcessVsBare does; ratio: tasks/s by the daemon's span over
//     the bare loop's (target ≥ 0.9); cpu-ratio: the bare loop's CPU
//     (its own and its children's) over the daemon's (utime, stime,
//     cutime, cstime of /proc/PID/stat, 10 ms ticks); turns/task and
//     frames/task: the loop's turns and the WAL's fsyncs (/metrics), as the
//     in-process benchmark counts them.
//   - sequential-100, runs-50: BenchmarkDagu's workloads and floors
//     (measureFloor, floorMeter: ratio ≤ 1.1 and ≤ 1.5), the wall time
//     being the daemon's span in place of the client's clock (client-s).
//   - queued/delay, queued/max-active: BenchmarkQueuedRunMemory's shapes;
//     growth of the daemon's VmRSS (/proc/PID/status) and of its Go heap
//     (go_memstats_heap_alloc_bytes of /metrics) over QUEUED (60,000) runs
//     triggered over HTTP after 1,000, each read once the daemon settled
//     (orkwal_memory_settles_total: its memory policy looked at the heap
//     once the loop went quiet, and gave memory back if it had grown; no
//     collection can be forced from outside), and from a fresh daemon's
//     settled RSS (rss-fresh); after a restart on the same data folder,
//     its peak RSS (VmHWM) over a fresh daemon's RSS, and its RSS once
//     settled over a fresh daemon's once settled, per run; the returns
//     the first daemon made. Target ≤ 512 B a run.
//
// Each metric is described in docs/benchmarks.md ("Issue 27 from outside").
//
//	go test -run '^$' -bench BenchmarkOutside -benchtime 1x ./cmd/orkwal/
func BenchmarkOutside(b *testing.B) {
	bin := releaseBinary(b, "linux", runtime.GOARCH)
	for _, conc := range []int{16, 2} {
		b.Run(fmt.Sprintf("process-2000/concurrency=%d", conc), func(b *testing.B) { processOutside(b, bin, conc) })
	}
	for _, w := range daguWorkloads {
		if w.name == "sequential-100" || w.name == "runs-50" {
			b.Run(w.name, func(b *testing.B) { floorOutside(b, bin, w.name, w.spawns, w.workers, w.fsyncs) })
		}
	}
	for _, shape := range []string{"delay", "max-active"} {
		b.Run("queued/"+shape, func(b *testing.B) { queuedOutside(b, bin, shape) })
	}
}

// The daemon's counters of its loop's turns and of its WAL's fsyncs (one a
// frame), in /metrics (docs/api.md, Metrics).
const (
	turnsMetric  = "orkwal_engine_turns_total"
	framesMetric = "orkwal_wal_fsync_seconds_count"
)

// processOutside is BenchmarkOutside/process-2000 at concurrency conc.
func processOutside(b *testing.B, bin string, conc int) {
	const n = 2000
	wfs := writeBenchWorkflows(b, map[string]string{"spawn": fmt.Sprintf(
		"name: spawn\ntasks:\n  t:\n    command: [\"true\"]\n    parallel: %d\n", n)})
	var bare benchtest.Cost
	var span, client, self, children time.Duration
	var turns, frames float64
	var ph phaseSum
	for i := 0; i < b.N; i++ {
		bare.Add(benchtest.BareSpawns(b, n, conc))
		d := startBenchDaemon(b, bin, filepath.Join(b.TempDir(), "data"), wfs, "--max-concurrent", strconv.Itoa(conc))
		pid := d.cmd.Process.Pid
		for range 2 {
			turns0, frames0 := d.metric(turnsMetric), d.metric(framesMetric)
			self0, child0, start := procSelfCPU(b, pid), procChildCPU(b, pid), time.Now()
			id := d.runToEnd("spawn")
			client += time.Since(start)
			self, children = self+procSelfCPU(b, pid)-self0, children+procChildCPU(b, pid)-child0
			turns, frames = turns+d.metric(turnsMetric)-turns0, frames+d.metric(framesMetric)-frames0
			span += d.span(&ph, id)
		}
		d.stop()
		bare.Add(benchtest.BareSpawns(b, n, conc))
	}
	tasks := float64(2 * n * b.N) // of each
	perTask := func(d time.Duration) float64 { return float64(d.Microseconds()) / tasks }
	bareRate := tasks / bare.Wall.Seconds()
	b.ReportMetric(bareRate, "bare-tasks/s")
	b.ReportMetric(tasks/span.Seconds(), "daemon-tasks/s")
	b.ReportMetric(tasks/span.Seconds()/bareRate, "ratio")
	b.ReportMetric(tasks/client.Seconds(), "client-tasks/s")
	b.ReportMetric(tasks/client.Seconds()/bareRate, "client-ratio")
	b.ReportMetric(perTask(self), "daemon-cpu-µs/task")
	b.ReportMetric(perTask(children), "daemon-child-cpu-µs/task")
	b.ReportMetric(perTask(bare.Self), "bare-cpu-µs/task")
	b.ReportMetric(perTask(bare.Children), "bare-child-cpu-µs/task")
	b.ReportMetric(float64(bare.Self+bare.Children)/float64(self+children), "cpu-ratio")
	b.ReportMetric(turns/tasks, "turns/task")
	b.ReportMetric(frames/tasks, "frames/task")
	ph.report(b)
}

// floorOutside is BenchmarkOutside/sequential-100 and /runs-50: the
// workload of BenchmarkDagu's of that name, against the same floor, timed
// by the daemon's span.
func floorOutside(b *testing.B, bin, name string, spawns, workers, fsyncs int) {
	wfs := writeBenchWorkflows(b, map[string]string{"seq100": chainWorkflow("seq100", 100),
		"one": "name: one\ntasks:\n  t: {command: [\"true\"]}\n"})
	dir := b.TempDir()
	d := startBenchDaemon(b, bin, filepath.Join(dir, "data"), wfs)
	var m floorMeter
	var client time.Duration
	var ph phaseSum
	for i := 0; i < b.N; i++ {
		f := measureFloor(b, dir, spawns, workers, fsyncs)
		cpu0, start := procTotalCPU(b, d.cmd.Process.Pid), time.Now()
		var ids []string
		if name == "runs-50" {
			ids = d.runsAtOnce("one", 50)
		} else {
			ids = []string{d.runToEnd("seq100")}
		}
		client += time.Since(start)
		cpu := procTotalCPU(b, d.cmd.Process.Pid) - cpu0
		m.add(f, d.span(&ph, ids...), cpu)
	}
	m.report(b, spawns)
	b.ReportMetric(client.Seconds()/float64(b.N), "client-s")
	b.ReportMetric(float64(client)/float64(m.floorWall), "client-ratio")
	ph.report(b)
}

// chainWorkflow is a workflow of n `true` tasks, each depending on the one
// before.
func chainWorkflow(name string, n int) string {
	var w strings.Builder
	fmt.Fprintf(&w, "name: %s\ntasks:\n  t0: {command: [\"true\"]}\n", name)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&w, "  t%d: {command: [\"true\"], depends_on: [t%d]}\n", i, i-1)
	}
	return w.String()
}

// queuedWorkflows are BenchmarkQueuedRunMemory's shapes as workflow files:
// each run waits on a delay, or behind the first run, whose task sleeps
// for an hour. Both declare a param, given its default at every trigger.
var queuedWorkflows = map[string]string{
	"delay":      "name: load\nparams: {n: \"0\"}\ntasks:\n  t: {command: [\"true\"], delay: 1h}\n",
	"max-active": "name: load\nparams: {n: \"0\"}\nmax_active_runs: 1\ntasks:\n  t: {command: [sleep, \"3600\"]}\n",
}

// queuedOutside is BenchmarkOutside/queued/<shape>.
func queuedOutside(b *testing.B, bin, shape string) {
	n := benchtest.QueuedRuns()
	wfs := writeBenchWorkflows(b, map[string]string{"load": queuedWorkflows[shape]})
	bound := []string{"--max-pending-runs", "1000000", "--max-pending-runs-per-workflow", "1000000"} // the default bound is 50,000 a workflow
	var rss, fromFresh, heap, boot, settledBoot, returns float64
	for i := 0; i < b.N; i++ {
		data := filepath.Join(b.TempDir(), "data")
		d := startBenchDaemon(b, bin, data, wfs, bound...)
		pid := d.cmd.Process.Pid
		fresh := procKiB(b, pid, "VmRSS")
		d.settle() // the boot's
		freshSettled := procKiB(b, pid, "VmRSS")
		d.triggerMany("load", 1000)
		d.settle()
		r0, h0 := procKiB(b, pid, "VmRSS"), d.metric("go_memstats_heap_alloc_bytes")
		d.triggerMany("load", n)
		d.settle()
		r1, h1 := procKiB(b, pid, "VmRSS"), d.metric("go_memstats_heap_alloc_bytes")
		returns += d.metric(returnsMetric)
		d.mustWait()
		d.stop()
		d2 := startBenchDaemon(b, bin, data, wfs, bound...)
		boot += (procKiB(b, d2.cmd.Process.Pid, "VmHWM") - fresh) * 1024 / float64(n+1000)
		d2.settle()
		settledBoot += (procKiB(b, d2.cmd.Process.Pid, "VmRSS") - freshSettled) * 1024 / float64(n+1000)
		d2.stop()
		rss += (r1 - r0) * 1024 / float64(n)
		fromFresh += (r1 - freshSettled) * 1024 / float64(n+1000)
		heap += (h1 - h0) / float64(n)
	}
	per := func(v float64) float64 { return v / float64(b.N) }
	b.ReportMetric(per(rss), "rss-B/run")
	b.ReportMetric(per(fromFresh), "rss-fresh-B/run")
	b.ReportMetric(per(heap), "heap-B/run")
	b.ReportMetric(per(boot), "boot-peak-B/run")
	b.ReportMetric(per(settledBoot), "boot-settled-B/run")
	b.ReportMetric(per(returns), "returns")
	b.ReportMetric(per(rss)/512, "ratio")
	b.ReportMetric(float64(n), "runs")
}

// settle waits until the daemon's memory policy looked at its heap after
// the last commit (and gave memory back if the heap had grown): its sign
// that it settled. A settle already counted when settle begins is not
// waited for, so that settle times out (loudly) rather than read too soon.
func (d *benchDaemon) settle() {
	d.b.Helper()
	n := d.metric(settlesMetric)
	d.until("the daemon's settle", time.Minute, 50*time.Millisecond,
		func() bool { return d.metric(settlesMetric) > n })
}

// triggerMany triggers n runs of workflow name from 32 API clients and
// returns once every trigger was answered 201.
func (d *benchDaemon) triggerMany(name string, n int) {
	d.b.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	per := (n + 31) / 32
	for c := 0; c < n; c += per {
		wg.Go(func() {
			for range min(per, n-c) {
				if code, body := d.call("POST", "/workflows/"+name+"/runs", ""); code != 201 {
					mu.Lock()
					failed = fmt.Errorf("trigger %s: %d %s", name, code, body)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		d.b.Fatal(failed)
	}
}

// mustWait fails the benchmark when more than one run of the queued
// workload is running: every run but the first must wait.
func (d *benchDaemon) mustWait() {
	d.b.Helper()
	_, body := d.call("GET", "/runs?status=running&limit=10", "")
	var running []struct{ ID string }
	json.Unmarshal(body, &running)
	if len(running) > 1 {
		d.b.Fatalf("%d runs running, want at most 1: the runs must wait", len(running))
	}
}

// metric is the value of a sample without labels in the daemon's /metrics.
func (d *benchDaemon) metric(name string) float64 {
	d.b.Helper()
	code, body := d.call("GET", "/metrics", "")
	v, ok := metricValue(body, name)
	if code != 200 || !ok {
		d.b.Fatalf("GET /metrics: %d, no sample %s", code, name)
	}
	return v
}

// metricValue finds the sample `name value` (no labels) in a Prometheus
// text exposition.
func metricValue(text []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}

// procSelfCPU is utime+stime of process pid; procChildCPU, the cutime and
// cstime of the children it has waited for (/proc/PID/stat, 10 ms ticks).
func procSelfCPU(b *testing.B, pid int) time.Duration {
	return time.Duration(procTicks(b, pid, 11, 12)) * 10 * time.Millisecond
}

func procChildCPU(b *testing.B, pid int) time.Duration {
	return time.Duration(procTicks(b, pid, 13, 14)) * 10 * time.Millisecond
}
