package executors

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/internal/benchtest"
)

// BenchmarkProcessSlots: 2,000 `true` tasks with a capped log, 2 slots,
// each task started from its predecessor's Finished report (on the
// finishing goroutine, as the engine's reporter starts a slot's next
// task), beside bare os/exec spawns from 2 goroutines in the same
// iteration: the executor's CPU a task (RUSAGE_SELF, the children's own
// not counted), the bare loop's, and the wall-time ratio. No engine, no
// WAL: the executor's own part of BenchmarkProcessVsBare/concurrency=2.
//
//	go test -run '^$' -bench BenchmarkProcessSlots -benchtime 3x ./executors/
func BenchmarkProcessSlots(b *testing.B) {
	const n, conc = 2000, 2
	dir := b.TempDir()
	p := NewProcess(ProcessConfig{})
	var bare, exe benchtest.Cost
	for i := range b.N {
		var next atomic.Int64
		done := make(chan struct{}, conc)
		var start func()
		start = func() {
			k := next.Add(1) - 1
			if k >= n {
				done <- struct{}{}
				return
			}
			job := Job{
				RunID: "r", TaskID: fmt.Sprintf("t%d", k), Attempt: 1, ParallelCount: 1,
				Command:     []string{"true"},
				LogPath:     filepath.Join(dir, "logs", fmt.Sprintf("%d.%d.log", i, k)),
				Scratch:     filepath.Join(dir, "work", fmt.Sprintf("%d.%d", i, k)),
				MaxLogBytes: 10 << 20,
			}
			if _, err := p.Start(job, func(ev Event) {
				if ev.Kind != Finished {
					return
				}
				if !ev.OK {
					b.Errorf("Finished = %+v", ev)
				}
				start()
			}); err != nil {
				b.Error(err)
				done <- struct{}{}
			}
		}
		bare.Add(benchtest.BareSpawns(b, n/2, conc))
		exe.Add(benchtest.Measure(func() {
			for range conc {
				start()
			}
			for range conc {
				<-done
			}
		}))
		bare.Add(benchtest.BareSpawns(b, n/2, conc))
	}
	per := float64(n * b.N)
	perTask := func(d time.Duration) float64 { return float64(d.Microseconds()) / per }
	b.ReportMetric(perTask(exe.Self), "executor-cpu-µs/task")
	b.ReportMetric(perTask(bare.Self), "bare-cpu-µs/task")
	b.ReportMetric(perTask(exe.Children), "executor-child-cpu-µs/task")
	b.ReportMetric(bare.Wall.Seconds()/exe.Wall.Seconds(), "ratio")
}
