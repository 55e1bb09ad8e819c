package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/internal/benchtest"
)

// BenchmarkDagu: Dagu's published workloads on the release binary through
// its API (default --max-concurrent 16; each run waited for with
// GET /runs/{id}?wait), each against its floor measured in the same
// iteration right before it (see floor), and restart-to-re-dispatch of a
// task interrupted by kill -9.
//
// Dagu's figures (no Dagu here): 200 independent `true` steps 2.23 s, 100
// sequential 1.22 s, 50 one-step runs one after another 3.22 s, idle RSS
// ~104 MiB, interrupted run re-executed ~245 s after kill -9. Targets:
// ≤ 0.15 s, ≤ 0.3 s, ≤ 0.25 s, ≤ 15 MiB (BenchmarkDaemonRSS/idle), ≤ 1 s;
// issue 27's: sequential-100 ≤ 1.1× its floor, runs-50 (50 one-task runs
// triggered at once) ≤ 1.5× its floor.
//
//	go test -run '^$' -bench BenchmarkDagu -benchtime 1x ./cmd/orkwal/
func BenchmarkDagu(b *testing.B) {
	bin := releaseBinary(b, "linux", runtime.GOARCH)
	var par strings.Builder
	par.WriteString("name: par200\ntasks:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&par, "  t%d: {command: [\"true\"]}\n", i)
	}
	wfs := writeBenchWorkflows(b, map[string]string{
		"par200": par.String(), "seq100": chainWorkflow("seq100", 100),
		"one":     "name: one\ntasks:\n  t: {command: [\"true\"]}\n",
		"sleeper": "name: sleeper\ntasks:\n  nap: {command: [sleep, \"60\"]}\n",
	})
	for _, w := range daguWorkloads {
		b.Run(w.name, func(b *testing.B) {
			dir := b.TempDir()
			d := startBenchDaemon(b, bin, filepath.Join(dir, "data"), wfs)
			var m floorMeter
			for i := 0; i < b.N; i++ {
				f := measureFloor(b, dir, w.spawns, w.workers, w.fsyncs)
				cpu0 := procTotalCPU(b, d.cmd.Process.Pid)
				start := time.Now()
				w.run(d)
				m.add(f, time.Since(start), procTotalCPU(b, d.cmd.Process.Pid)-cpu0)
			}
			m.report(b, w.spawns)
		})
	}
	b.Run("kill9-redispatch", func(b *testing.B) {
		var total, boot time.Duration
		for i := 0; i < b.N; i++ {
			data := filepath.Join(b.TempDir(), "data")
			d := startBenchDaemon(b, bin, data, wfs)
			id := d.trigger("sleeper")
			d.until("nap running", 20*time.Second, 5*time.Millisecond, func() bool {
				r := d.run(id)
				return len(r.Tasks) == 1 && r.Tasks[0].Status == "running"
			})
			d.kill9()
			d2 := startBenchDaemon(b, bin, data, wfs)
			d2.until("nap re-dispatched", 20*time.Second, time.Millisecond, func() bool {
				r := d2.run(id)
				return len(r.Tasks) == 1 && r.Tasks[0].Attempt == 2 && r.Tasks[0].Status == "running"
			})
			total += time.Since(d2.started)
			boot += d2.healthy.Sub(d2.started)
			code, _ := d2.call("POST", "/runs/"+id+"/cancel", "")
			if code != 200 && code != 202 {
				b.Fatalf("cancel: %d", code)
			}
			d2.stop()
		}
		b.ReportMetric(total.Seconds()/float64(b.N), "s")
		b.ReportMetric(boot.Seconds()/float64(b.N), "to-healthy-s")
	})
}

// daguWorkloads are BenchmarkDagu's spawn workloads and what their floor
// is made of: spawns of `true` from workers goroutines, and the fsyncs the
// workload needs at least, one after another:
//   - a chain of n steps, one per step (a step's completion and the next
//     step's dispatch share one frame);
//   - runs triggered at once, or independent tasks, one: the acceptance
//     records and the first dispatches of all of them fit in one frame;
//   - runs one after another, two per run: its acceptance and dispatch must
//     be durable before its spawn, and its end before the client learns it
//     and triggers the next.
var daguWorkloads = []struct {
	name                    string
	spawns, workers, fsyncs int
	run                     func(d *benchDaemon)
}{
	{"parallel-200", 200, 16, 1, func(d *benchDaemon) { d.runToEnd("par200") }},
	{"sequential-100", 100, 1, 100, func(d *benchDaemon) { d.runToEnd("seq100") }},
	{"runs-50", 50, 1, 1, func(d *benchDaemon) { d.runsAtOnce("one", 50) }},
	{"runs-50-serial", 50, 1, 100, func(d *benchDaemon) {
		for r := 0; r < 50; r++ {
			d.runToEnd("one")
		}
	}},
}

// runsAtOnce triggers n runs of a workflow from n goroutines at once, each
// then waiting for its run's end the way runToEnd does, and returns their
// ids once all have ended.
func (d *benchDaemon) runsAtOnce(name string, n int) []string {
	d.b.Helper()
	type ended struct {
		id  string
		err error
	}
	done := make(chan ended, n)
	for range n {
		go func() {
			id, err := d.runToEndErr(name)
			done <- ended{id, err}
		}()
	}
	ids := make([]string, 0, n)
	for range n {
		e := <-done
		if e.err != nil {
			d.b.Fatalf("%v\n%s", e.err, d.logs)
		}
		ids = append(ids, e.id)
	}
	return ids
}

// runToEndErr is runToEnd for any goroutine: it returns what went wrong
// in place of failing the benchmark.
func (d *benchDaemon) runToEndErr(name string) (string, error) {
	code, body := d.call("POST", "/workflows/"+name+"/runs", "")
	if code != http.StatusCreated {
		return "", fmt.Errorf("trigger %s: %d %s", name, code, body)
	}
	var r struct{ ID, Status string }
	json.Unmarshal(body, &r)
	for range 2 { // a run still active after a minute is a failure
		code, body = d.call("GET", "/runs/"+r.ID+"?wait=60s", "")
		json.Unmarshal(body, &r)
		if code != http.StatusOK || r.Status == "success" || r.Status == "failed" || r.Status == "cancelled" {
			break
		}
	}
	if r.Status != "success" {
		return r.ID, fmt.Errorf("run %s of %s: %d %s", r.ID, name, code, r.Status)
	}
	return r.ID, nil
}

// floor is the least a workload can take on this host, measured in the
// same iteration right before it: a bare Go program's spawns of `true`
// (benchtest.BareSpawns) plus its fsyncs one after another, each timed as
// a plain log does one on the data folder's filesystem (benchtest.FsyncCost:
// a 144-byte write and fsync(2) of a file in the folder that holds the data
// folder, the way the WAL benchmarks' raw baseline does). Its CPU time is the bare program's
// own (RUSAGE_SELF: its goroutines, fork and wait), its children's, and
// the fsyncs' calling thread's.
type floor struct {
	spawns        benchtest.Cost // Self: the bare program's own
	fsync, fsyncC time.Duration  // one fsync: wall, CPU
	fsyncs        int            // the workload's
}

func (f floor) wall() time.Duration { return f.spawns.Wall + time.Duration(f.fsyncs)*f.fsync }

func (f floor) cpu() time.Duration {
	return f.spawns.Self + f.spawns.Children + time.Duration(f.fsyncs)*f.fsyncC
}

// fsyncSamples is how many fsyncs measureFloor times (their mean is the
// figure): enough to average the disk's jitter, few enough to take tens of
// milliseconds.
const fsyncSamples = 50

// measureFloor measures a workload's floor in dir (see floor).
func measureFloor(b *testing.B, dir string, spawns, workers, fsyncs int) floor {
	b.Helper()
	f := floor{fsyncs: fsyncs, spawns: benchtest.BareSpawns(b, spawns, workers)}
	f.fsync, f.fsyncC = benchtest.FsyncCost(b, dir, fsyncSamples)
	return f
}

// floorMeter adds up a workload's iterations against their floors.
type floorMeter struct {
	n                     int
	floor                 floor
	total, cpu, floorWall time.Duration
	floorCPU, fsyncC      time.Duration
}

func (m *floorMeter) add(f floor, wall, cpu time.Duration) {
	m.n++
	m.floor.spawns.Add(f.spawns)
	m.floor.fsync += f.fsync
	m.fsyncC += f.fsyncC
	m.floorWall += f.wall()
	m.floorCPU += f.cpu()
	m.total += wall
	m.cpu += cpu
}

// report gives the means per iteration and the ratios of the totals: the
// workload's wall time over its floor's (ratio) and over the bare spawns
// alone (bare-ratio), its CPU time (the daemon's and its children's, in
// clock ticks of 10 ms) over the floor's (cpu-ratio); and the host's rates
// measured by the floor: spawns/s of the bare program, fsyncs/s.
func (m *floorMeter) report(b *testing.B, spawns int) {
	n := float64(m.n)
	b.ReportMetric(m.total.Seconds()/n, "s")
	b.ReportMetric(m.floor.spawns.Wall.Seconds()/n, "bare-s")
	b.ReportMetric(m.floorWall.Seconds()/n, "floor-s")
	b.ReportMetric(float64(m.total)/float64(m.floorWall), "ratio")
	b.ReportMetric(float64(m.total)/float64(m.floor.spawns.Wall), "bare-ratio")
	b.ReportMetric(m.cpu.Seconds()/n, "cpu-s")
	b.ReportMetric(m.floorCPU.Seconds()/n, "floor-cpu-s")
	b.ReportMetric(float64(m.cpu)/float64(m.floorCPU), "cpu-ratio")
	b.ReportMetric(float64(m.floor.fsync.Microseconds())/1000/n, "fsync-ms")
	b.ReportMetric(n*float64(spawns)/m.floor.spawns.Wall.Seconds(), "spawns/s")
	b.ReportMetric(n/m.floor.fsync.Seconds(), "fsyncs/s")
	b.ReportMetric(float64(m.floor.spawns.Children.Microseconds())/1000/(n*float64(spawns)), "child-cpu-ms/spawn")
	b.ReportMetric(float64(runtime.NumCPU()), "cpus")
}

// procTotalCPU is the CPU time of process pid and of its children it has
// waited for (utime, stime, cutime and cstime of /proc/PID/stat, in clock
// ticks of 10 ms).
func procTotalCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	return time.Duration(procTicks(b, pid, 11, 12, 13, 14)) * 10 * time.Millisecond
}
