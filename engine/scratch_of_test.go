package engine

import (
	"testing"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// TestScratchOfIsTheJobsScratch: an attempt in flight keeps no scratch
// path; the one scratchOf makes when the attempt ends is the one its job
// was given (executors.Job.Scratch), instances ("p[1]") included, and
// none for the kinds that write no files.
func TestScratchOfIsTheJobsScratch(t *testing.T) {
	e := openEngine(t, t.TempDir(), executors.Noop{}, 4)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "s", Tasks: []*workflow.Task{
		{Name: "p", Executor: "process", Command: []string{"true"}, Parallel: 3},
		{Name: "n", Executor: "noop"}}})
	id := trigger(t, e, "s")
	waitFor(t, e, "the run's end", func() bool { s, _ := e.RunStatus(id); return s == "success" })
	e.mu.RLock()
	defer e.mu.RUnlock()
	seen := 0
	for _, task := range e.state.Runs[id].Tasks {
		if task.IsNode() {
			continue
		}
		s := e.prepare(task, 0)
		want := s.job.Scratch
		if task.Name == "n" {
			want = ""
		}
		if got := e.scratchOf(s.att); got != want || want == "" && task.Name != "n" {
			t.Errorf("%s: scratchOf %q, its job's scratch %q", task.Key(), got, s.job.Scratch)
		}
		seen++
	}
	if seen != 4 {
		t.Fatalf("%d attempts checked, want 4 (3 instances and n)", seen)
	}
}
