package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// dirSize is the bytes of every file under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// soak pushes tasks through an engine with small compaction and retention
// thresholds and returns the largest data folder size seen and the bound
// of docs/format.md ("The data folder is bounded"), from the settings and
// what the engine measured:
//
//   - 3 snapshots: the newest two, and a third from when the newest is
//     renamed until the oldest is removed;
//   - 2 × the most bytes logged between two compactions' beginnings (at
//     least compact-bytes, more when the log grew faster than a snapshot
//     was written), the log kept behind the previous snapshot;
//   - the most bytes logged while a compaction was under way;
//   - 2 segments and an entry: the segment the truncation keeps whole (its
//     last entry may end past the segment size), and the tail's padding;
//   - FORMAT and LOCK.
func soak(tb testing.TB, runs, tasksPerRun int, report func(done int, size int64)) (maxSize, bound int64) {
	dir := tb.TempDir()
	const compact, segment = 256 << 10, 64 << 10
	e, err := Open(Config{DataDir: dir, Logger: quiet, CompactBytes: compact, KeepRuns: 20, MaxConcurrent: 64, SegmentSize: segment,
		Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	closed := false
	defer func() {
		if !closed {
			e.Close()
		}
	}()
	spec := &workflow.Spec{Name: "soak"}
	for i := 0; i < tasksPerRun; i++ {
		spec.Tasks = append(spec.Tasks, &workflow.Task{Name: fmt.Sprintf("t%d", i), Executor: "noop"})
	}
	if _, _, err := e.PutWorkflow(spec, ""); err != nil {
		tb.Fatal(err)
	}
	var snapMax int64
	for r := 0; r < runs; r++ {
		id, err := e.Trigger("soak", nil, "test")
		if err != nil {
			tb.Fatal(err)
		}
		if r%50 == 49 { // let the engine drain, then measure
			for {
				ch := e.Changed()
				if v, _ := e.Run(id); v.Status == "success" {
					break
				}
				<-ch
			}
			size := dirSize(dir)
			maxSize = max(maxSize, size)
			snapMax = max(snapMax, largestFile(Layout(dir).Snapshots()))
			if report != nil {
				report((r+1)*tasksPerRun, size)
			}
		}
	}
	closed = true
	if err := e.Close(); err != nil { // the loop is done: its fields can be read
		tb.Fatal(err)
	}
	if e.spanMax < compact {
		tb.Fatalf("%d bytes at most between compactions, under compact-bytes %d", e.spanMax, compact)
	}
	small := dirSize(dir) - dirSize(Layout(dir).Snapshots()) - dirSize(filepath.Join(dir, "wal"))
	return maxSize, 3*snapMax + 2*e.spanMax + e.lagMax + 2*segment + e.entryMax + small
}

// largestFile is the size of the largest file in dir.
func largestFile(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, d := range entries {
		if info, err := d.Info(); err == nil && !d.IsDir() {
			n = max(n, info.Size())
		}
	}
	return n
}

// TestDiskStaysBounded: 20,000 tasks with retention keeping 20 runs; the
// data folder never exceeds the bound its settings imply.
func TestDiskStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	maxSize, bound := soak(t, 1000, 20, nil)
	if maxSize > bound {
		t.Fatalf("data folder reached %d bytes, over the bound %d", maxSize, bound)
	}
	t.Logf("20,000 tasks: data folder at most %d bytes, bound %d", maxSize, bound)
}

// BenchmarkSoak runs 200,000 tasks and prints the data folder's size over
// time (make bench).
func BenchmarkSoak(b *testing.B) {
	for i := 0; i < b.N; i++ {
		start := time.Now()
		maxSize, bound := soak(b, 10000, 20, func(done int, size int64) {
			if done%20000 == 0 {
				b.Logf("%7d tasks  %6.1fs  data folder %8d bytes", done, time.Since(start).Seconds(), size)
			}
		})
		b.ReportMetric(float64(maxSize), "max-bytes")
		b.ReportMetric(float64(bound), "bound-bytes")
		b.ReportMetric(200000/time.Since(start).Seconds(), "tasks/s")
		if maxSize > bound {
			b.Fatalf("data folder reached %d bytes, over the bound %d", maxSize, bound)
		}
	}
}
