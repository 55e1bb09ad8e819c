package engine

// In-process versions of BenchmarkDagu's three spawn workloads (see
// cmd/orkwal/bench_daemon_test.go), each beside a bare Go loop doing the
// same spawns in the same iteration: for profiling the engine's overhead
// over process spawning without the daemon and the API in the picture.

import (
	"fmt"
	"testing"
	"time"

	"github.com/orkwal/orkwal/replay/workflow"
)

// BenchmarkDaguEngine: parallel-200 (200 independent `true` tasks, default
// concurrency 16), sequential-100 (a chain of 100) and runs-50 (50
// one-task runs one after another), through an in-process engine with the
// real process executor, each beside its bare baseline.
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
		name string
		spec *workflow.Spec
		runs int
		bare func(b *testing.B) time.Duration
	}{
		{"parallel-200", par, 1, func(b *testing.B) time.Duration { return bareSpawn(b, 200, 16) }},
		{"sequential-100", seq, 1, func(b *testing.B) time.Duration { return bareSpawn(b, 100, 1) }},
		{"runs-50", one, 50, func(b *testing.B) time.Duration { return bareSpawn(b, 50, 1) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e := processEngine(b, 16)
			defer e.Close()
			if _, _, err := e.PutWorkflow(c.spec, ""); err != nil {
				b.Fatal(err)
			}
			var bare, eng time.Duration
			var ph phases
			for i := 0; i < b.N; i++ {
				bare += c.bare(b)
				start := time.Now()
				for r := 0; r < c.runs; r++ {
					id, err := e.Trigger(c.spec.Name, nil, "bench")
					if err != nil {
						b.Fatal(err)
					}
					if s := waitRun(b, e, id); s != "success" {
						b.Fatalf("run %s", s)
					}
					ph.add(b, e, id)
				}
				eng += time.Since(start)
			}
			b.ReportMetric(bare.Seconds()/float64(b.N), "bare-s")
			b.ReportMetric(eng.Seconds()/float64(b.N), "engine-s")
			b.ReportMetric(float64(eng-bare)/float64(b.N)/1e6, "overhead-ms")
			ph.report(b)
		})
	}
}

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
