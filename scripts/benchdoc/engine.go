package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
)

// Issue 10's benchmarks of the engine, the API and the daemon binary
// (engine/bench_test.go, engine/bench_perf_test.go,
// api/bench_runs_test.go, cmd/orkwal/bench_daemon_test.go).
const (
	fanOutName     = "BenchmarkFanOut20k"
	runsName       = "BenchmarkRunsToCompletion"
	followersName  = "BenchmarkEventFollowers"
	uiPagesName    = "BenchmarkUIPages"
	procName       = "BenchmarkProcessVsBare"
	latencyName    = "BenchmarkLatency50"
	recLogName     = "BenchmarkRecovery/log-1M"
	recSnapName    = "BenchmarkRecovery/snapshot-100k"
	pauseName      = "BenchmarkCompactionPause"
	rssName        = "BenchmarkDaemonRSS/"
	daguName       = "BenchmarkDagu/"
	idleCPUName    = "BenchmarkIdleCPU"
	binarySizeName = "BenchmarkBinarySize/linux-"
	burstsName     = "BenchmarkBacklogBursts/"
	backlogName    = "BenchmarkMetricsBacklog"
	queuedName     = "BenchmarkQueuedRunMemory/"
)

// secs formats seconds.
func secs(s float64) string {
	if math.IsNaN(s) {
		return "–"
	}
	if s < 10 {
		return strconv.FormatFloat(s, 'f', 3, 64) + " s"
	}
	return strconv.FormatFloat(s, 'f', 1, 64) + " s"
}

func mibs(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + " MiB"
}

func msf(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + " ms"
}

func writeEngine(w io.Writer, rs results) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("## Engine, API and daemon (issue 10)")
	p("")
	p("Each figure is from one run of `make bench` on the machine above (a")
	p("benchmark's mean over its iterations, or the median of its runs where it")
	p("ran several times (`-count`, see the notes); the raw output is at the end).")
	p("Where the issue names a baseline it is measured in the same run, except")
	p("Dagu's figures, which are the issue's published numbers (there is no Dagu")
	p("here, and they come from another machine).")
	p("")
	p("Host, measured in this run by the floors of `BenchmarkDagu`: %s.", hostRates(rs))
	p("")
	p("| # | figure | measured | baseline | target | verdict |")
	p("|---|---|---|---|---|---|")
	p("| 1 | noop fan-out, 20,000 foreach instances in one run (`BenchmarkFanOut20k`) | %s tasks/s | – | ≥ 30,000 tasks/s | %s |",
		num(rs.med(fanOutName, "tasks/s")), verdict(rs.med(fanOutName, "tasks/s"), 30_000, true))
	p("| 1 | 10,000 one-task noop runs from 64 concurrent API clients, to completion (`BenchmarkRunsToCompletion`) | %s runs/s | (the triggers alone: %s/s) | ≥ 5,000 runs/s | %s |",
		num(rs.med(runsName, "runs/s")), num(rs.med(runsName, "triggers/s")), verdict(rs.med(runsName, "runs/s"), 5000, true))
	f2 := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	follow := func(kind string) string { // the daemon's CPU beside the wall ratio
		return fmt.Sprintf("daemon CPU: ratio %s, %s µs a task a stream; the reader process: %s ms a run",
			f3(rs.med(followersName, "cpu-ratio"+kind)), f2(rs.med(followersName, "µs/task-stream"+kind)), num(rs.med(followersName, "reader-ms/run"+kind)))
	}
	p("| issue 23 | 5,000-instance noop fan-out with 20 `/events` streams open, each reading every event (API clients, not pages: no page opens such a stream), ratio to none in the same run, median of pairs (`BenchmarkEventFollowers`) | %s (%s tasks/s; %s; %s streams dropped) | no stream: %s tasks/s | – (context: the target is the pages', `?tasks=0` and the run page's) | – |",
		f3(rs.med(followersName, "ratio")), num(rs.med(followersName, "tasks/s-20-pages")), follow(""), num(rs.med(followersName, "dropped")),
		num(rs.med(followersName, "tasks/s-none")))
	p("| issue 23 | the same with 20 streams of run and workflow events only (`?tasks=0`, as the workflows and runs pages follow) (`BenchmarkEventFollowers`) | %s (%s) | no stream | ratio ≥ 0.9 | %s |",
		f3(rs.med(followersName, "ratio-run-events")), follow("-run-events"), verdict(rs.med(followersName, "ratio-run-events"), 0.9, true))
	p("| issue 23 | the same with 20 streams of a run page (`?latest=1&instances=counts`: each task's latest event per write, a fan-out's instances as its counts) (`BenchmarkEventFollowers`) | %s (%s; %s bytes a stream) | no stream | ratio ≥ 0.9 | %s |",
		f3(rs.med(followersName, "ratio-counts")), follow("-counts"), num(rs.med(followersName, "bytes/stream-run-counts")),
		verdict(rs.med(followersName, "ratio-counts"), 0.9, true))
	p("| issue 23 | the same with 20 streams of each task's latest event per write, every instance's (`?latest=1`, what a run page followed before `instances=counts`) (`BenchmarkEventFollowers`) | %s (%s; %s bytes a stream; every event: %s) | no stream | – (context) | – |",
		f3(rs.med(followersName, "ratio-latest")), follow("-latest"), num(rs.med(followersName, "bytes/stream-run-latest")),
		num(rs.med(followersName, "bytes/stream-run")))
	p("| issue 23 | the same pair with no stream on either side: what the machine's noise alone makes of a ratio (`BenchmarkEventFollowers`) | %s (daemon CPU: ratio %s) | – | – (context: how far from 1 the rows above may land by chance) | – |",
		f3(rs.med(followersName, "ratio-noise")), f3(rs.med(followersName, "cpu-ratio-noise")))
	worstPage, worstMs := "", math.NaN()
	for _, page := range []string{"workflows", "runs", "runs-filtered", "run-fanout", "run-fanout-instances", "workflow"} {
		if ms := rs.med(uiPagesName, page+"-drawn-max-ms"); !math.IsNaN(ms) && !(ms <= worstMs) {
			worstPage, worstMs = page, ms
		}
	}
	p("| issue 23 | web page usable (data drawn, from the navigation's start) with 10,000 runs and a 2,000-instance fan-out, the slowest page (`BenchmarkUIPages`) | %s (%s; as the test sees it, Navigate to the data: %s) | – | < 1 s | %s |",
		msf(worstMs), worstPage, msf(rs.med(uiPagesName, worstPage+"-wall-max-ms")), verdict(worstMs, 1000, false))
	for _, conc := range []int{16, 2} {
		name := fmt.Sprintf("%s/concurrency=%d", procName, conc)
		p("| 2 | 2,000 `true` tasks through the engine at concurrency %d, ratio to a bare Go loop in the same run (`%s`) | %s (%s tasks/s; in CPU time, the test process and its children: %s) | bare `exec.Command(\"true\").Run()` × %d goroutines: %s tasks/s | ratio ≥ 0.9 | %s |",
			conc, name, f3(rs.med(name, "ratio")), num(rs.med(name, "engine-tasks/s")),
			f3(rs.med(name, "cpu-ratio")), conc, num(rs.med(name, "bare-tasks/s")),
			verdict(rs.med(name, "ratio"), 0.9, true))
	}
	p("| 3 | trigger → completion of a one-task `true` run at 50 runs/s offered, p99 (`BenchmarkLatency50`) | %s (p50 %s, max %s, %s runs) | – | p99 < 25 ms | %s |",
		msf(rs.med(latencyName, "p99-ms")), msf(rs.med(latencyName, "p50-ms")), msf(rs.med(latencyName, "max-ms")), num(rs.med(latencyName, "runs")),
		verdict(rs.med(latencyName, "p99-ms"), 25, false))
	p("| 4 | recovery: Open → ready, 1,000,000-record log, no snapshot (`BenchmarkRecovery/log-1M`) | %s (%s records/s, CPU %s, log %s) | – | < 2 s | %s |",
		msf(rs.med(recLogName, "open-ms")), num(rs.med(recLogName, "records/s")), msf(rs.med(recLogName, "cpu-ms")), mibs(rs.med(recLogName, "log-MiB")),
		verdict(rs.med(recLogName, "open-ms"), 2000, false))
	p("| 4 | recovery: Open → ready, snapshot of 100,000 tasks (`BenchmarkRecovery/snapshot-100k`) | %s (CPU %s, snapshot %s) | – | < 0.5 s | %s |",
		msf(rs.med(recSnapName, "open-ms")), msf(rs.med(recSnapName, "cpu-ms")), mibs(rs.med(recSnapName, "snapshot-MiB")),
		verdict(rs.med(recSnapName, "open-ms"), 500, false))
	p("| issue 6 | compaction pause of the engine loop, 100,000 live tasks, p99 over snapshots (`BenchmarkCompactionPause`) | %s (p50 %s, max %s; one copy step's CPU: p99 %s) | copy at once under the lock: p99 %s (p50 %s, max %s); copied by a background goroutine (081e8c6): p99 %s (p50 %s, max %s) | p99 < 50 ms | %s |",
		msf(rs.med(pauseName, "new-p99-ms")), msf(rs.med(pauseName, "new-p50-ms")), msf(rs.med(pauseName, "new-max-ms")),
		msf(rs.med(pauseName, "new-step-cpu-p99-ms")), msf(rs.med(pauseName, "old-p99-ms")), msf(rs.med(pauseName, "old-p50-ms")),
		msf(rs.med(pauseName, "old-max-ms")), msf(rs.med(pauseName, "bg-p99-ms")), msf(rs.med(pauseName, "bg-p50-ms")),
		msf(rs.med(pauseName, "bg-max-ms")), verdict(rs.med(pauseName, "new-p99-ms"), 50, false))
	for _, c := range []struct{ shape, label string }{{"delay", "each run waits on a `delay: 1h` task"}, {"max-active", "runs queue behind `max_active_runs: 1`"}} {
		name := burstsName + c.shape
		p("| issue 21 | three bursts of %s triggers in a row, 32 API clients, one workflow, %s (`BenchmarkBacklogBursts/%s`): the third over the first, in CPU time (wall time moves with the shared machine) | %s (CPU %s, %s, %s; wall %s, %s, %s: ratio %s) | issue 21, bursts of 20,000, wall: %s | ≤ 1.3 | %s |",
			num(rs.med(name, "triggers/burst")), c.label, c.shape,
			strconv.FormatFloat(rs.med(name, "cpu-ratio"), 'f', 2, 64), secs(rs.med(name, "cpu-1-s")), secs(rs.med(name, "cpu-2-s")), secs(rs.med(name, "cpu-3-s")),
			secs(rs.med(name, "burst-1-s")), secs(rs.med(name, "burst-2-s")), secs(rs.med(name, "burst-3-s")), strconv.FormatFloat(rs.med(name, "ratio"), 'f', 2, 64),
			map[string]string{"delay": "3.5 s, 6.2 s, 14.3 s (ratio 4.1)", "max-active": "5.5 s, 14.2 s, 23.8 s (ratio 4.3)"}[c.shape],
			verdict(rs.med(name, "cpu-ratio"), 1.3, false))
	}
	p("| issue 21 | `GET /metrics` with %s pending runs, median of 20 (`BenchmarkMetricsBacklog`) | %s (`/healthz` %s, `/workflows` %s, `/summary` %s, `GET /runs?workflow=&status=pending&limit=100` %s, its next page by cursor %s) | issue 21: 60 ms with 30,000, 210 ms with 90,000, no answer within 60 s with 423,000 | < 10 ms | %s |",
		num(rs.med(backlogName, "active-runs")), msf(rs.med(backlogName, "metrics-ms")), msf(rs.med(backlogName, "healthz-ms")), msf(rs.med(backlogName, "workflows-ms")), msf(rs.med(backlogName, "summary-ms")),
		msf(rs.med(backlogName, "runs-ms")), msf(rs.med(backlogName, "runs-cursor-ms")), verdict(rs.med(backlogName, "metrics-ms"), 10, false))
	for _, c := range []struct{ shape, label string }{{"delay", "each waits on a `delay: 1h` task"}, {"max-active", "queued behind `max_active_runs: 1`"}} {
		name := queuedName + c.shape
		p("| issue 27 | memory per waiting one-task run, %s: growth of RSS over %s runs, after a full collection (`BenchmarkQueuedRunMemory/%s`) | %s B (%s of the target; heap %s B; after a restart, heap %s B) | issue 27: about 1.2 KiB | ≤ 512 B | %s |",
			c.label, num(rs.med(name, "runs")), c.shape, num(rs.med(name, "rss-B/run")), times(rs.med(name, "ratio")),
			num(rs.med(name, "heap-B/run")), num(rs.med(name, "boot-heap-B/run")), verdict(rs.med(name, "rss-B/run"), 512, false))
	}
	idleRSS := rs.med(rssName+"idle", "hwm-MiB")
	p("| 5 | daemon peak RSS (VmHWM), idle (`BenchmarkDaemonRSS/idle`) | %s | Dagu idle ~104 MiB | ≤ 15 MiB | %s |",
		mibs(idleRSS), verdict(idleRSS, 15, false))
	for _, c := range []struct {
		n    string
		want float64
	}{{"500", 20}, {"5000", 40}} { // 5,000: issue 27's target (64 MiB before)
		name := rssName + "sleep-" + c.n
		running := rs.med(name, "running")
		note := ""
		if n, _ := strconv.ParseFloat(c.n, 64); !math.IsNaN(running) && running < n {
			note = fmt.Sprintf("; only %s were running", num(running))
		}
		p("| 5 | daemon peak RSS (VmHWM) with %s running `sleep` tasks (`BenchmarkDaemonRSS/sleep-%s`) | %s (all running after %s%s) | – | ≤ %s MiB | %s |",
			num(mustFloat(c.n)), c.n, mibs(rs.med(name, "hwm-MiB")), secs(rs.med(name, "all-running-s")), note, num(c.want),
			verdict(rs.med(name, "hwm-MiB"), c.want, false))
	}
	// The least CPU one `true` process used itself in any baseline (spawned
	// one at a time it is not slowed by its neighbours): n of them need at
	// least n times that over the cores, whoever spawns them.
	childCPU, cpus := math.NaN(), math.NaN()
	for _, n := range []string{"parallel-200", "sequential-100", "runs-50", "runs-50-serial"} {
		if c := rs.med(daguName+n, "child-cpu-ms/spawn"); !math.IsNaN(c) && !(c >= childCPU) {
			childCPU = c
		}
		cpus = rs.med(daguName+n, "cpus")
	}
	writeDagu(w, rs, childCPU, cpus)
	kill9 := rs.med(daguName+"kill9-redispatch", "s")
	p("| 6 | restart after kill -9 → interrupted task re-dispatched (exec of the binary to attempt 2 running) (`BenchmarkDagu/kill9-redispatch`) | %s (%s Dagu's) | Dagu: %s | ≤ %s | %s |",
		secs(kill9), times(kill9/245), secs(245), secs(1), verdict(kill9, 1, false))
	p("| 6 | idle RSS (from 5) | %s (%s Dagu's) | Dagu: ~104 MiB | ≤ 15 MiB | %s |", mibs(idleRSS), times(idleRSS/104), verdict(idleRSS, 15, false))
	cpu := rs.med(idleCPUName, "cpu-ms")
	p("| 7 | idle CPU (utime+stime) over %s with 100 workflows, one on a cron schedule (`BenchmarkIdleCPU`) | %s | – | ~0 (taken as ≤ 20 ms, two clock ticks) | %s |",
		secs(rs.med(idleCPUName, "idle-s")), msf(cpu), verdict(cpu, 20, false))
	for _, arch := range []string{"amd64", "arm64", "arm"} {
		size := rs.med(binarySizeName+arch, "MiB")
		p("| 8 | static binary, linux/%s (`make build`: `CGO_ENABLED=0 go build -trimpath -tags urfave_cli_no_docs -ldflags=\"-s -w -X …\"`%s) | %s | – | ≤ 15 MiB | %s |",
			arch, map[string]string{"arm": ", GOARM=7"}[arch], mibs(size), verdict(size, 15, false))
	}
	p("")
	p("How each is measured:")
	p("")
	p("- **1** `engine/bench_test.go` `BenchmarkFanOut20k`: one run, a task outputs")
	p("  20,000 items and a `foreach` noop task runs one instance per item")
	p("  (`--max-concurrent` 256); every transition is fsynced.")
	p("  `api/bench_runs_test.go` `BenchmarkRunsToCompletion`: 64 goroutines POST")
	p("  10,000 triggers over loopback to the API on a durable engine (default")
	p("  concurrency 16); the clock stops at the commit that ends the last run,")
	p("  seen through `Engine.Changed`.")
	c16, c2 := procName+"/concurrency=16", procName+"/concurrency=2"
	p("- **2** `engine/bench_perf_test.go` `BenchmarkProcessVsBare`: each")
	p("  iteration runs the bare loop, two engine runs (one engine) of")
	p("  `parallel: 2000` of `[\"true\"]` at `--max-concurrent` 16 (or 2), then the")
	p("  bare loop again, so that a drift of the machine's load weighs on both;")
	p("  the real process executor (process group, log pipe, the shared empty")
	p("  input; `true` writes nothing, so no log file is created). The wall")
	p("  ratio moves with the share of the cores other work leaves; the CPU")
	p("  ratio (bare over engine, CPU of the test process and of the `true`")
	p("  processes it reaped, per task) does not. CPU per task in the test")
	p("  process at concurrency 16: engine %s µs, bare loop %s µs (the issue's",
		num(rs.med(c16, "engine-cpu-µs/task")), num(rs.med(c16, "bare-cpu-µs/task")))
	p("  figures before: 1,044 and 686 µs); at concurrency 2: engine %s µs,", num(rs.med(c2, "engine-cpu-µs/task")))
	p("  bare loop %s µs; each `true` process itself: %s µs. Engine turns per",
		num(rs.med(c2, "bare-cpu-µs/task")), num(rs.med(c16, "bare-child-cpu-µs/task")))
	p("  task: %s at 16, %s at 2; WAL frames (fsyncs) per task: %s at 16, at",
		strconv.FormatFloat(rs.med(c16, "turns/task"), 'f', 2, 64), strconv.FormatFloat(rs.med(c2, "turns/task"), 'f', 2, 64),
		strconv.FormatFloat(rs.med(c16, "frames/task"), 'f', 2, 64))
	p("  2: %s. The figures of 1-3 are medians of each benchmark's runs",
		strconv.FormatFloat(rs.med(c2, "frames/task"), 'f', 2, 64))
	p("  (`-count=%d`; a ratio is the median of each run's own ratio).", len(rs.values(c16, "ratio")))
	p("- **3** `BenchmarkLatency50`: a ticker triggers (in-process `Engine.Trigger`)")
	p("  50 times a second for 5 s; each trigger's clock starts before the call and")
	p("  stops at the first commit after which the run has ended.")
	p("- **4** `BenchmarkRecovery`: the log is written directly with `wal` +")
	p("  `replay.Encode` (250,000 finished one-task runs, 4 records each, 1,000")
	p("  records a frame); the snapshot case writes a snapshot of 1,000 pending runs")
	p("  of 100 chained tasks and the log it was taken at. Each iteration opens a")
	p("  fresh copy of the folder (page cache warm).")
	p("- **issue 6** `engine/bench_test.go` `BenchmarkCompactionPause`: 1,000 runs")
	p("  of 100 chained tasks, one running each. A simulated loop turns back to")
	p("  back (each turn takes the lock and applies 48 records on 16 runs); every")
	p("  iteration takes one snapshot in each of three ways: old, a copy of every")
	p("  run and task inside a turn; bg (the way of commit 081e8c6), the turn only")
	p("  begins it and a goroutine copies it in steps of 2,048 runs and tasks,")
	p("  each under the lock; new (the engine's way), the loop itself copies one")
	p("  such step after each of its turns, so it never waits for a copier holding")
	p("  the lock while descheduled. In bg and new, Apply copies first what a turn")
	p("  changes meanwhile. A snapshot's pause is its loop's longest pass, lock")
	p("  wait included, until its copy is complete (for new, a pass is a turn and")
	p("  the step after it): bg p99 %s (p50 %s, max %s), new p99 %s (p50 %s, max %s).",
		msf(rs.med(pauseName, "bg-p99-ms")), msf(rs.med(pauseName, "bg-p50-ms")), msf(rs.med(pauseName, "bg-max-ms")),
		msf(rs.med(pauseName, "new-p99-ms")), msf(rs.med(pauseName, "new-p50-ms")), msf(rs.med(pauseName, "new-max-ms")))
	p("  Turns without a snapshot: p99 %s, max %s. Until the snapshot is also", msf(rs.med(pauseName, "turn-p99-ms")), msf(rs.med(pauseName, "turn-max-ms")))
	p("  encoded in the background (the same encoder in all three; it competes")
	p("  with the loop for the 2 cores), the longest turn is p99 %s for new (bg %s,", msf(rs.med(pauseName, "new+encode-p99-ms")), msf(rs.med(pauseName, "bg+encode-p99-ms")))
	p("  old %s). Wall times include waiting for a core on a shared machine; the", msf(rs.med(pauseName, "old+encode-p99-ms")))
	p("  thread CPU of one step is p50 %s, max %s (old copy: p50 %s). CPU per", msf(rs.med(pauseName, "new-step-cpu-p50-ms")), msf(rs.med(pauseName, "new-step-cpu-max-ms")), msf(rs.med(pauseName, "old-copy-cpu-p50-ms")))
	p("  snapshot, encoding included: new %s, bg %s, old %s.", msf(rs.med(pauseName, "new-cpu-ms/snap")), msf(rs.med(pauseName, "bg-cpu-ms/snap")), msf(rs.med(pauseName, "old-cpu-ms/snap")))
	p("- **5** `cmd/orkwal/bench_daemon_test.go` `BenchmarkDaemonRSS`: the static")
	p("  release binary with `--max-concurrent 5000` and one workflow of")
	p("  `parallel: N` × `exec sleep 120` (120 s, not 30: spawning 5,000 processes")
	p("  on this machine can take longer than 30 s); VmHWM is read from")
	p("  `/proc/PID/status` once the API shows all N instances running, then the")
	p("  run is cancelled.")
	p("- **issue 27** `engine/bench_memory_test.go` `BenchmarkQueuedRunMemory`: a")
	p("  durable engine in the benchmark's process (noop executors) and a one-task")
	p("  workflow with a param; 1,000 runs are triggered in-process, then `QUEUED`")
	p("  (60,000) more, all waiting (on the delay, or behind the first run, whose")
	p("  task never ends). VmRSS and the heap in use are read after `runtime.GC`")
	p("  and `debug.FreeOSMemory` before and after the 60,000; their growth per run")
	p("  is the figure (without the forced collection, the runtime lets the heap")
	p("  grow to twice its live part). Then the engine is closed (a snapshot) and")
	p("  opened again, and the heap of the restored state is divided by all the")
	p("  runs. Before issue 27 (commit 8c5c5c2, the same benchmark in the same")
	p("  session): delay 1,336 B of RSS (heap 1,294 B, after a restart 1,286 B),")
	p("  max-active 1,398 B (heap 1,418 B).")
	p("- **6** `BenchmarkDagu`: the release binary, default `--max-concurrent` 16,")
	p("  driven over its API: each run is triggered (`POST`), then waited for")
	p("  with `GET /runs/{id}?wait=60s`, which answers when the run has ended (a")
	p("  client's way to wait without polling; until 2026-11-23 the bench polled")
	p("  every 1 ms), so the figures include the API round trips. runs-50")
	p("  triggers its 50 runs from 50 goroutines at once, each then waiting for")
	p("  its own; runs-50-serial (the shape of Dagu's figure) one after another.")
	p("  Each spawn workload runs right after its floor, measured in the same")
	p("  iteration: a bare Go program's `exec.Command(\"true\").Run()` doing the")
	p("  same spawns (200 from 16 goroutines; 100 and 50 one after another), plus")
	p("  the fsyncs the workload needs at least, one after another, each timed")
	p("  as a 144-byte write and fsync of a file on the data folder's filesystem")
	p("  (the WAL benchmarks' raw baseline; the mean of 50): one a step of the")
	p("  chain (a step's completion and the next step's dispatch share one")
	p("  frame), one for the 200 independent tasks or the 50 runs triggered at")
	p("  once (their acceptance and first dispatches fit in one frame), two a run")
	p("  for runs one after another (its acceptance before its spawn, its end")
	p("  before the client triggers the next). The ratio is the workload's wall")
	p("  time over its floor's; the CPU ratio, the daemon's CPU time and its")
	p("  children's (`/proc/PID/stat`, 10 ms ticks) over the floor's (the bare")
	p("  program's own, its children's, and the fsyncs' thread's): on a shared")
	p("  machine wall time moves with the neighbours, CPU time less.")
	p("  The CPU time each baseline's `true` processes used themselves (user +")
	p("  system, from wait4): %s each spawned one at a time (sequential-100),", msf(rs.med(daguName+"sequential-100", "child-cpu-ms/spawn")))
	p("  %s each 16 at a time (parallel-200, on %s cores). The least of these,", msf(rs.med(daguName+"parallel-200", "child-cpu-ms/spawn")), num(cpus))
	p("  times the number of processes, over the cores, is a floor no spawner")
	p("  can go under.")
	p("  Each figure is the median of the benchmark's runs (`-count=%d`), each", len(rs.values(daguName+"sequential-100", "s")))
	p("  run with its own daemon and its own baseline.")
	p("  `engine/bench_dagu_test.go` `BenchmarkDaguEngine` runs the same four")
	p("  in-process, without the API, beside the same floors (for profiling;")
	p("  not in the table).")
	p("  Where a step of the chain goes beyond its floor (issue 27; measured")
	p("  2026-11-25 12:15-12:30 UTC at effd2db, load 1-2, with timestamps")
	p("  added for the measurement and removed since, means over 3,000 steps):")
	p("  the exit seen to the finishing goroutine 20 µs (the reactor's wait,")
	p("  read of the log pipe's end, waitid, two epoll removals), finishing")
	p("  13 µs (the output file looked for, the Finished event), the report")
	p("  to the loop's turn 10 µs, the turn 21-25 µs (the finish record, the")
	p("  next step's dispatch, its preparation handed to the launcher), the")
	p("  append 170-180 µs of which fdatasync 163-167 µs (the floor's write")
	p("  and fsync in the same runs: 144-178 µs), the spawn until the exec")
	p("  200-215 µs (os/exec's `Start` in the same runs: 178-213 µs), then the")
	p("  child and its exit noticed, about 420 µs (os/exec's `Wait`: 425-503")
	p("  µs). The engine's own part is thus about 65 µs a step, 7%% of a 880")
	p("  µs step, and the run adds one fsync to the 100 (its acceptance with")
	p("  the first dispatch); the rest of a ratio above 1.08 is the machine's")
	p("  noise (in-process ratios of 1.08-1.17 in consecutive runs, the")
	p("  daemon's 1.15-1.41). Tried and measured in interleaved pairs, without")
	p("  a gain beyond the noise: the loop waiting for a lone process itself")
	p("  (a blocking waitid on its thread, reaping and finishing inline: 8")
	p("  pairs, 1.009× the time); finishing on the reactor's goroutine (35 µs")
	p("  less CPU a task at concurrency 2, but 5%% less throughput: the two")
	p("  slots' spawns serialise on it); a blocking waitid per process instead")
	p("  of the reactor; GOMAXPROCS=1; the log pipe created at the spawn")
	p("  instead of ahead (64 more open descriptors cost a spawn nothing")
	p("  measurable); a pre-zeroed or fallocated log, or `pwritev2(RWF_DSYNC)`,")
	p("  against append and fdatasync (no faster on this disk). Per step the")
	p("  Go runtime's sysmon wakes about 5 times (7-12%% of the process's")
	p("  samples under perf) and the children's dynamic loader spends most of")
	p("  their CPU in CPUID (`init_cpu_features`, `handle_amd`), which traps to")
	p("  the hypervisor on this VM: the floor pays the latter too.")
	p("  kill -9: a")
	p("  `sleep 60` task runs, the daemon gets SIGKILL, a new one starts on the")
	p("  same folder; the clock runs from its exec to the API showing attempt 2")
	p("  running (its boot alone: %s).", secs(rs.med(daguName+"kill9-redispatch", "to-healthy-s")))
	p("- **7** `BenchmarkIdleCPU`: 99 two-task workflows and one with the schedule")
	p("  `0 3 * * *`; after 2 s of settling, utime+stime from `/proc/PID/stat`")
	p("  (10 ms ticks) over the idle time. RSS at the end: %s.", mibs(rs.med(idleCPUName, "rss-MiB")))
	p("- **8** `BenchmarkBinarySize`: the three static builds of `make release` (`make build` with GOOS, GOARCH and GOARM=7).")
	p("- **issue 21** `api/bench_backlog_test.go`: `BenchmarkBacklogBursts` sends three")
	p("  bursts of `BURST` triggers in a row (32 goroutines over loopback, a durable")
	p("  engine) into a workflow whose runs all stay pending, so each burst lands on")
	p("  the backlog of the ones before; each burst's wall time and the process's CPU")
	p("  time (clients and server) over it. `BenchmarkMetricsBacklog` fills a backlog")
	p("  of `ACTIVE` pending runs (in-process triggers, the delay shape), then times")
	p("  20 calls of each endpoint a monitor or the page repeats, over loopback.")
	p("  Before the fix (commit e0a05d3, the same benchmarks on this machine, busier")
	p("  then): bursts of 10,000 took CPU 2.18, 3.25, 5.47 s (delay, ratio 2.51; wall")
	p("  12.8, 17.2, 42.1 s) and 2.98, 5.68, 8.37 s (max-active, ratio 2.81; wall 33.8,")
	p("  63.3, 99.1 s); with 30,000 pending runs `/metrics` took 1,023 ms and a")
	p("  filtered `GET /runs` 89 ms.")
	p("- **issue 23** `api/bench_events_test.go` `BenchmarkEventFollowers`: on one")
	p("  durable engine (over loopback), each iteration runs a 5,000-instance noop")
	p("  fan-out in pairs, with no stream open and with 20 `/events` streams open,")
	p("  a pair for each kind of stream: every event (API clients taking all),")
	p("  `?tasks=0` (what the workflows, runs and workflow pages open),")
	p("  `?latest=1&instances=counts` (what a run page opens, with its run's id:")
	p("  one run at a time here, the same events), `?latest=1` (what it")
	p("  opened before `instances=counts`), and a pair with no stream on either")
	p("  side (the noise a ratio has on this machine); the pair's order alternates")
	p("  from one iteration to the next. Each round starts after a collection")
	p("  (outside its clock: no round is charged the garbage of the one before)")
	p("  and once each of its streams has read its first id line (their setup")
	p("  is not in it). A ratio is the run's tasks/s with the")
	p("  streams over the run's without (\"20 pages cost < 10%% of throughput\":")
	p("  ratio ≥ 0.9), the median over the pairs. The target is judged on the")
	p("  kinds a page opens, `?tasks=0` and `?latest=1&instances=counts`; every")
	p("  event is no page's stream, and `?latest=1` no longer a page's: both are")
	p("  reported beside them. Streams of one filter share one feed")
	p("  (one filter pass and one encoding a write, the same bytes written by each;")
	p("  before it, each stream filtered and copied every batch itself: 0.856")
	p("  `?tasks=0`, 0.815 `?latest=1`, 0.784 every event, at commit dd9b546),")
	p("  and while every stream is `?tasks=0` the engine makes no task event at")
	p("  all (a run page open beside them brings them back).")
	p("  The streams are read by another")
	p("  process, reading and discarding as a browser does before it parses: the")
	p("  wall ratio has it compete for the 2 cores (as a browser on the box would),")
	p("  and the daemon's CPU time (the benchmark process's rusage: engine and HTTP")
	p("  server, from the trigger until the streams are closed, and one write")
	p("  window past the run's end at least in both rounds) is measured apart:")
	p("  its ratio without the streams over with them, and the CPU they add per")
	p("  task per stream. Streams dropped for falling behind are counted (a slow")
	p("  stream is dropped, never waited for). Medians of the benchmark's runs")
	p("  (`-count=%d`, `-benchtime=10x`: 10 pairs of each kind a run).", len(rs.values(followersName, "ratio")))
	p("  `api/bench_ui_test.go` `BenchmarkUIPages`: a daemon with 10,000 finished")
	p("  one-task runs and a finished run of a 2,000-instance fan-out; headless")
	p("  Chromium opens each page three times (the first cold) and the worst")
	p("  counts: from the navigation's start to the page's `orkwal-drawn` mark")
	p("  (its data drawn): workflows %s, runs %s, runs filtered %s, the fan-out's",
		msf(rs.med(uiPagesName, "workflows-drawn-max-ms")), msf(rs.med(uiPagesName, "runs-drawn-max-ms")), msf(rs.med(uiPagesName, "runs-filtered-drawn-max-ms")))
	p("  run %s, with its 2,000 instances listed %s, the workflow %s.",
		msf(rs.med(uiPagesName, "run-fanout-drawn-max-ms")), msf(rs.med(uiPagesName, "run-fanout-instances-drawn-max-ms")), msf(rs.med(uiPagesName, "workflow-drawn-max-ms")))
	p("")
}

func mustFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
