package engine

// In-process versions of BenchmarkDagu's four spawn workloads (see
// cmd/orkwal/bench_dagu_test.go), each against the same floor measured in
// the same iteration: for profiling the engine's overhead over process
// spawning and fsyncs without the daemon and the API in the picture.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/orkwal/orkwal/internal/benchtest"
	"github.com/orkwal/orkwal/replay/workflow"
)

// BenchmarkDaguEngine: parallel-200 (200 independent `true` tasks, default
// concurrency 16), sequential-100 (a chain of 100), runs-50 (50 one-task
// runs triggered at once) and runs-50-serial (one after another), through
// an in-process engine with the real process executor, each against its
// floor measured in the same iteration (the same spawns by a bare Go loop,
// plus the fsyncs the workload needs at least: see BenchmarkDagu in
// cmd/orkwal). CPU time is the test process's and its children's
// (getrusage), for the engine and for the floor alike.
//
//	go test -run '^$' -bench BenchmarkDaguEngine -benchtime 5x ./engine/
func BenchmarkDaguEngine(b *testing.B) {
	par := &workflow.Spec{Name: "par200"}
	for i := 0; i < 200; i++ {
		par.Tasks = append(par.Tasks, &workflow.Task{Name: fmt.Sprintf("t%d", i), Executor: "process", Command: []string{"true"}})
	}
	seq := &workflow.Spec{Name: "seq100"}
	for i := 0; i < 100; i++ {
		t := &workflow.Task{Name: fmt.Sprintf("t%d", i), Executor: "process", Command: []string{"true"}}
		if i > 0 {
			t.DependsOn = []string{fmt.Sprintf("t%d", i-1)}
		}
		seq.Tasks = append(seq.Tasks, t)
	}
	one := &workflow.Spec{Name: "one", Tasks: []*workflow.Task{{Name: "t", Executor: "process", Command: []string{"true"}}}}
	cases := []struct {
		name                    string
		spec                    *workflow.Spec
		runs                    int
		atOnce                  bool
		spawns, workers, fsyncs int
	}{
		{"parallel-200", par, 1, false, 200, 16, 1},
		{"sequential-100", seq, 1, false, 100, 1, 100},
		{"runs-50", one, 50, true, 50, 1, 1},
		{"runs-50-serial", one, 50, false, 50, 1, 100},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			e := processEngine(b, 16)
			defer e.Close()
			if _, _, err := e.PutWorkflow(c.spec, ""); err != nil {
				b.Fatal(err)
			}
			var eng, engCPU, floor, floorCPU, bare time.Duration
			var ph phases
			for i := 0; i < b.N; i++ {
				cpu0 := allCPU()
				bare += benchtest.BareSpawns(b, c.spawns, c.workers).Wall
				fsync, fsyncCPU := benchtest.FsyncCost(b, dir, 50)
				floorCPU += allCPU() - cpu0 - 50*fsyncCPU + time.Duration(c.fsyncs)*fsyncCPU
				floor += time.Duration(c.fsyncs) * fsync
				start, cpu0 := time.Now(), allCPU()
				for _, id := range triggerRuns(b, e, c.spec.Name, c.runs, c.atOnce) {
					ph.add(b, e, id)
				}
				eng += time.Since(start)
				engCPU += allCPU() - cpu0
			}
			floor += bare
			b.ReportMetric(bare.Seconds()/float64(b.N), "bare-s")
			b.ReportMetric(floor.Seconds()/float64(b.N), "floor-s")
			b.ReportMetric(eng.Seconds()/float64(b.N), "engine-s")
			b.ReportMetric(float64(eng)/float64(floor), "ratio")
			b.ReportMetric(float64(engCPU)/float64(floorCPU), "cpu-ratio")
			b.ReportMetric(engCPU.Seconds()/float64(b.N), "engine-cpu-s")
			b.ReportMetric(floorCPU.Seconds()/float64(b.N), "floor-cpu-s")
			ph.report(b)
		})
	}
}

// triggerRuns triggers n runs of workflow name, from n goroutines at once
// or one after another (each waited for before the next), and returns
// their ids once every one has ended in success.
func triggerRuns(b *testing.B, e *Engine, name string, n int, atOnce bool) []string {
	b.Helper()
	ids := make([]string, n)
	errs := make(chan error, n)
	one := func(r int) {
		id, err := e.Trigger(name, nil, "bench")
		if err == nil {
			var v RunView
			if v, err = e.WaitRun(context.Background(), id); err == nil && v.Status != "success" {
				err = fmt.Errorf("run %s: %s", id, v.Status)
			}
		}
		ids[r] = id
		errs <- err
	}
	for r := range n {
		if atOnce {
			go one(r)
		} else {
			one(r)
		}
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// allCPU is the CPU time of the test process and of the children it has
// waited for.
func allCPU() time.Duration { return benchtest.SelfCPU() + benchtest.ChildCPU() }

// phases splits the tasks' time by the timestamps the engine records: from
// dispatch to the start report (the dispatch frame's fsync, the launcher,
// the spawn: fork, exec and the child's setup), and from the start report to
// the finish (the process, its exit noticed, its log closed). Means per
// task, in ms.
type phases struct {
	n              int
	launch, finish time.Duration
}

func (p *phases) add(b *testing.B, e *Engine, id string) {
	v, err := e.Run(id)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range v.Tasks {
		if t.DispatchedAt == nil || t.StartedAt == nil || t.FinishedAt == nil {
			continue
		}
		p.n++
		p.launch += t.StartedAt.Sub(*t.DispatchedAt)
		p.finish += t.FinishedAt.Sub(*t.StartedAt)
	}
}

func (p *phases) report(b *testing.B) {
	if p.n == 0 {
		return
	}
	b.ReportMetric(float64(p.launch)/float64(p.n)/1e6, "dispatch-to-started-ms/task")
	b.ReportMetric(float64(p.finish)/float64(p.n)/1e6, "started-to-finished-ms/task")
}
