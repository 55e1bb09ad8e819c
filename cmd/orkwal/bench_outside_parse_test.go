package main

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestDaemonSpan: BenchmarkOutside's time of a workload is the daemon's own,
// from the first run's created_at to the last one's finished_at, read to
// the nanosecond from GET /runs/{id}'s answers; a run that has not
// succeeded, or has no finish time, is an error rather than a span.
func TestDaemonSpan(t *testing.T) {
	bodies := []string{
		`{"id": "a", "status": "success", "created_at": "2026-11-25T10:00:00.000000100Z", "finished_at": "2026-11-25T10:00:00.000900100Z",
		  "tasks": [{"name": "t", "dispatched_at": "2026-11-25T10:00:00.000000100Z", "started_at": "2026-11-25T10:00:00.000300100Z", "finished_at": "2026-11-25T10:00:00.000900100Z"}]}`,
		`{"id": "b", "status": "success", "created_at": "2026-11-25T10:00:00.000000050Z", "finished_at": "2026-11-25T10:00:00.001000000Z",
		  "tasks": [{"name": "t", "dispatched_at": "2026-11-25T10:00:00.0005Z"}]}`,
	}
	runs := make([]runTimes, len(bodies))
	for i, body := range bodies {
		if err := json.Unmarshal([]byte(body), &runs[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := daemonSpan(runs)
	if want := 999950 * time.Nanosecond; err != nil || got != want {
		t.Errorf("daemonSpan = %v, %v; want %v", got, err, want)
	}
	launch, finish, n := taskPhases(runs)
	if launch != 300*time.Microsecond || finish != 600*time.Microsecond || n != 1 {
		t.Errorf("taskPhases = %v, %v, %d; want 300µs, 600µs, 1 (b's task has no start)", launch, finish, n)
	}
	runs[1].Status = "failed"
	if _, err := daemonSpan(runs); !errors.Is(err, errNotTimed) {
		t.Errorf("a failed run: %v, want errNotTimed", err)
	}
	runs[1].Status, runs[0].FinishedAt = "success", nil
	if _, err := daemonSpan(runs); !errors.Is(err, errNotTimed) {
		t.Errorf("a run without finished_at: %v, want errNotTimed", err)
	}
	if _, err := daemonSpan(nil); !errors.Is(err, errNotTimed) {
		t.Errorf("no run: %v, want errNotTimed", err)
	}
}

// TestMetricValue: the sample without labels of that exact name, not a
// longer name that starts with it, nor its HELP or TYPE lines.
func TestMetricValue(t *testing.T) {
	text := "# HELP go_memstats_heap_alloc_bytes Bytes.\n# TYPE go_memstats_heap_alloc_bytes gauge\n" +
		"go_memstats_heap_alloc_bytes_total 9\ngo_memstats_heap_alloc_bytes 1.25e+07\n"
	if v, ok := metricValue([]byte(text), "go_memstats_heap_alloc_bytes"); !ok || v != 1.25e7 {
		t.Errorf("got %v, %v; want 1.25e7", v, ok)
	}
	if _, ok := metricValue([]byte(text), "go_goroutines"); ok {
		t.Error("found a metric that is not there")
	}
}
