package api

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The process and Go runtime metrics every Prometheus exporter has, under
// the names of client_golang's process and Go collectors, so that existing
// dashboards and alerts work unchanged. Written by hand like the rest of
// /metrics: smaller and faster than the library (measured in
// BenchmarkMetricsExposition and docs/api.md).

// processStart is the process's start time, read once.
var processStart = sync.OnceValue(func() float64 {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	fields := statFields(stat)
	btime := bootTime()
	if len(fields) < 20 || btime == 0 {
		return 0
	}
	ticks, _ := strconv.ParseFloat(string(fields[19]), 64) // starttime, field 22
	return btime + ticks/100                               // USER_HZ is 100 on Linux
})

// statFields splits /proc/self/stat after the command (which may hold
// spaces), so that fields[0] is field 3, the state.
func statFields(stat []byte) [][]byte {
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
		stat = stat[i+1:]
	}
	return bytes.Fields(stat)
}

func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			t, _ := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return t
		}
	}
	return 0
}

// memory returns the resident and virtual memory in bytes (/proc/self/statm).
func memory() (rss, vsize float64) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, 0
	}
	page := float64(os.Getpagesize())
	size, _ := strconv.ParseFloat(string(f[0]), 64)
	res, _ := strconv.ParseFloat(string(f[1]), 64)
	return res * page, size * page
}

// openFDs counts the process's open file descriptors. It reads the names
// of /proc/self/fd only: O(open files), without a stat of each.
func openFDs() float64 {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		n += len(names)
		if err != nil {
			break
		}
	}
	return float64(n - 1) // less the descriptor reading the folder
}

// runtimeSamples are read with runtime/metrics, which does not stop the
// world (runtime.ReadMemStats does).
var runtimeSamples = []struct{ key, name, typ, help string }{
	{"/memory/classes/heap/objects:bytes", "go_memstats_heap_alloc_bytes", "gauge", "Bytes of allocated heap objects."},
	{"/memory/classes/total:bytes", "go_memstats_sys_bytes", "gauge", "Bytes of memory obtained from the OS."},
	{"/gc/heap/allocs:bytes", "go_memstats_alloc_bytes_total", "counter", "Bytes allocated in the heap, in all."},
	{"/gc/heap/goal:bytes", "go_memstats_next_gc_bytes", "gauge", "Heap size at which the next GC cycle ends."},
	{"/gc/cycles/total:gc-cycles", "go_gc_cycles_total", "counter", "Completed GC cycles."},
	{"/sched/gomaxprocs:threads", "go_sched_gomaxprocs_threads", "gauge", "GOMAXPROCS."},
}

func writeProcessMetrics(w io.Writer) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	rss, vsize := memory()
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	for _, m := range []struct {
		name, typ, help string
		v               float64
	}{
		{"process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.", cpu},
		{"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss},
		{"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", vsize},
		{"process_open_fds", "gauge", "Open file descriptors.", openFDs()},
		{"process_max_fds", "gauge", "The limit of open file descriptors.", float64(lim.Cur)},
		{"process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.", processStart()},
		{"go_goroutines", "gauge", "Goroutines that currently exist.", float64(runtime.NumGoroutine())},
		{"go_threads", "gauge", "OS threads created.", float64(pprof.Lookup("threadcreate").Count())},
	} {
		family(w, m.name, m.typ, m.help)
		sample(w, m.name, "", m.v)
	}
	writeRuntimeMetrics(w)
	writeGCPauses(w)
	family(w, "go_info", "gauge", "Information about the Go environment.")
	sample(w, "go_info", labels("version", runtime.Version()), 1)
}

func writeRuntimeMetrics(w io.Writer) {
	samples := make([]rtmetrics.Sample, len(runtimeSamples))
	for i, s := range runtimeSamples {
		samples[i].Name = s.key
	}
	rtmetrics.Read(samples)
	for i, s := range runtimeSamples {
		var v float64
		switch samples[i].Value.Kind() {
		case rtmetrics.KindUint64:
			v = float64(samples[i].Value.Uint64())
		case rtmetrics.KindFloat64:
			v = samples[i].Value.Float64()
		default:
			continue // not in this Go version
		}
		family(w, s.name, s.typ, s.help)
		sample(w, s.name, "", v)
	}
}

// writeGCPauses writes the GC pause summary (quantiles 0, 0.25, 0.5, 0.75
// and 1 of the recent pauses, as client_golang does).
func writeGCPauses(w io.Writer) {
	var st debug.GCStats
	st.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&st)
	family(w, "go_gc_duration_seconds", "summary", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		sample(w, "go_gc_duration_seconds", labels("quantile", q), st.PauseQuantiles[i].Seconds())
	}
	sample(w, "go_gc_duration_seconds_sum", "", st.PauseTotal.Seconds())
	sample(w, "go_gc_duration_seconds_count", "", float64(st.NumGC))
}
