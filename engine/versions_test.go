package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
)

// TestWorkflowVersions: a workflow applied 22 times lists its newest 20
// versions, newest first, each with its time, size and task count; one
// version gives its own source and tasks; a version dropped from the
// history and one never applied are each a not-found that says which. A
// compaction and a restart keep the same history, and a run of a dropped
// version still shows, pinned to its own tasks.
func TestWorkflowVersions(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 4)
	var first string
	for v := 1; v <= replay.MaxVersions+2; v++ {
		spec := flat("w", min(v, 5))
		if _, _, err := e.PutWorkflow(spec, fmt.Sprintf("name: w\n# version %d\n", v)); err != nil {
			t.Fatal(err)
		}
		if v == 1 {
			first = trigger(t, e, "w")
		}
	}
	check := func(e *Engine, when string) {
		t.Helper()
		list, err := e.WorkflowVersions("w")
		if err != nil {
			t.Fatal(err)
		}
		vs := list.Versions
		if list.Current != 22 || len(vs) != replay.MaxVersions || vs[0].Version != 22 || vs[len(vs)-1].Version != 3 {
			t.Fatalf("%s: current %d, %d versions from %d to %d: want 22, the newest 20 (22 to 3)", when, list.Current, len(vs), vs[0].Version, vs[len(vs)-1].Version)
		}
		if vs[19].TaskCount != 3 || vs[19].Size != len("name: w\n# version 3\n") || vs[19].AppliedAt.IsZero() {
			t.Fatalf("%s: version 3 listed as %+v", when, vs[19])
		}
		v4, err := e.WorkflowVersion("w", 4)
		if err != nil || v4.Current || len(v4.Tasks) != 4 || !strings.Contains(v4.Source, "# version 4") {
			t.Fatalf("%s: version 4: %+v, %v", when, v4, err)
		}
		if _, err := e.WorkflowVersion("w", 2); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "version 2 source no longer kept") {
			t.Fatalf("%s: version 2: %v, want not found, no longer kept", when, err)
		}
		if _, err := e.WorkflowVersion("w", 23); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "has no version 23") {
			t.Fatalf("%s: version 23: %v, want not found, no such version", when, err)
		}
		if _, err := e.WorkflowVersions("nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: unknown workflow: %v", when, err)
		}
		run, err := e.Run(first)
		if err != nil || run.Version != 1 || len(run.Tasks) != 1 {
			t.Fatalf("%s: the run of version 1: %+v, %v", when, run, err)
		}
	}
	check(e, "live")
	live, _ := e.StateHash()
	if err := e.Compact(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e2 := openEngine(t, dir, executors.Noop{}, 4)
	defer e2.Close()
	check(e2, "after a compaction and a restart")
	if got, _ := e2.StateHash(); got != live {
		t.Fatalf("state after the restart %x, live %x", got, live)
	}
}
