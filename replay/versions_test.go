package replay

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// versionSpec is workflow w's version v: v tasks in a chain, so that each
// version's graph differs.
func versionSpec(v int) *workflow.Spec {
	spec := &workflow.Spec{Name: "w"}
	for i := 0; i < v; i++ {
		t := &workflow.Task{Name: fmt.Sprintf("t%d", i), Executor: "noop"}
		if i > 0 {
			t.DependsOn = []string{fmt.Sprintf("t%d", i-1)}
		}
		spec.Tasks = append(spec.Tasks, t)
	}
	return spec
}

// putVersions puts versions from..to of w, each with a source of size
// bytes (at least its own text), at time = its version.
func putVersions(t *testing.T, s *State, from, to, size int) {
	t.Helper()
	for v := from; v <= to; v++ {
		src := fmt.Sprintf("name: w # v%d\n", v)
		src += strings.Repeat("#", max(0, size-len(src)))
		mustApply(t, s, &WorkflowPut{Spec: versionSpec(v), Source: src, Version: v, At: int64(v)})
	}
}

func versionNumbers(w *Workflow) []int {
	var out []int
	for _, v := range w.Versions() {
		out = append(out, v.Version)
	}
	return out
}

// TestVersionHistoryIsBounded: re-applying a workflow 25 times keeps its
// newest MaxVersions versions, each with its source, spec and time; a
// snapshot (full or incremental) restores the same history, and the next
// put trims the restored state as it trims the live one.
func TestVersionHistoryIsBounded(t *testing.T) {
	s := New()
	putVersions(t, s, 1, 25, 0)
	w := s.Workflows["w"]
	got := versionNumbers(w)
	if len(got) != MaxVersions || got[0] != 25-MaxVersions+1 || got[len(got)-1] != 25 {
		t.Fatalf("versions kept %v: want the newest %d, 6 to 25", got, MaxVersions)
	}
	v, ok := w.VersionOf(7)
	if !ok || v.At != 7 || !strings.Contains(v.Source, "# v7") || len(v.Spec.Tasks) != 7 {
		t.Fatalf("version 7: %+v %v", v, ok)
	}
	if _, ok := w.VersionOf(5); ok {
		t.Fatal("version 5 is still kept")
	}
	for i, back := range restoredBothWays(t, s, 25) {
		incremental := i == 1
		if got := versionNumbers(back.Workflows["w"]); fmt.Sprint(got) != fmt.Sprint(versionNumbers(w)) {
			t.Fatalf("incremental=%v: restored versions %v, want %v", incremental, got, versionNumbers(w))
		}
		putVersions(t, back, 26, 26, 0)
		live := New()
		putVersions(t, live, 1, 26, 0)
		h1, _ := live.Hash()
		if h2, _ := back.Hash(); h1 != h2 {
			t.Errorf("incremental=%v: snapshot then put differs from replaying every put", incremental)
		}
		if got := versionNumbers(back.Workflows["w"]); got[0] != 7 {
			t.Errorf("incremental=%v: after a put the restored history starts at %d, want 7", incremental, got[0])
		}
	}
}

// TestVersionHistoryByteCap: the earlier versions' sources are kept up to
// MaxPastSourceBytes in all, the newest first; the previous version always
// fits.
func TestVersionHistoryByteCap(t *testing.T) {
	s := New()
	putVersions(t, s, 1, 8, 400<<10)
	w := s.Workflows["w"]
	past := 0
	for _, p := range w.Past {
		past += len(p.Source)
	}
	if got := versionNumbers(w); fmt.Sprint(got) != "[6 7 8]" || past > MaxPastSourceBytes {
		t.Fatalf("versions kept %v (%d bytes before the current): want [6 7 8] (a third 400 KiB source would pass 1 MiB)", got, past)
	}
	putVersions(t, s, 9, 10, MaxPastSourceBytes)
	if got := versionNumbers(s.Workflows["w"]); fmt.Sprint(got) != "[9 10]" {
		t.Fatalf("versions kept %v, want [9 10]: the previous version fits whatever its size", got)
	}
}

// TestVersionHistoryEndsWithItsWorkflow: a deleted workflow's history goes
// with it; put again, the name starts a history of its own (above the
// retired version), and its runs keep their pinned specs.
func TestVersionHistoryEndsWithItsWorkflow(t *testing.T) {
	s := New()
	putVersions(t, s, 1, 3, 0)
	mustApply(t, s, &RunCreated{ID: "r1", Workflow: "w", Version: 3, At: 4}, &WorkflowDeleted{Name: "w", At: 5},
		&WorkflowPut{Spec: versionSpec(1), Source: "again", Version: 4, At: 6})
	if got := versionNumbers(s.Workflows["w"]); fmt.Sprint(got) != "[4]" {
		t.Fatalf("versions after a delete and a put: %v, want [4]", got)
	}
	if n := len(s.Runs["r1"].Spec.Tasks); n != 3 {
		t.Fatalf("run r1 pins %d tasks, want version 3's 3", n)
	}
}

// TestSnapshotBeforeVersionsLoads: a snapshot written before version
// histories existed (testdata/snapshot-before-versions.snap, written by
// the code of 8c5c5c2: w put at versions 1 and 2, a run of each, a workflow
// "gone" put and deleted) loads: each workflow has its current version
// only, runs keep their pinned specs, and the next put starts the history.
func TestSnapshotBeforeVersionsLoads(t *testing.T) {
	data, err := os.ReadFile("testdata/snapshot-before-versions.snap")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := DecodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workflows["w"]
	if got := versionNumbers(w); fmt.Sprint(got) != "[2]" || w.Source != "name: w\n# v2\n" {
		t.Fatalf("w: versions %v, source %q", got, w.Source)
	}
	if n1, n2 := len(s.Runs["r1"].Spec.Tasks), len(s.Runs["r2"].Spec.Tasks); n1 != 1 || n2 != 2 {
		t.Fatalf("runs pin %d and %d tasks, want 1 and 2", n1, n2)
	}
	if s.Retired["gone"] != 1 {
		t.Fatalf("retired: %v", s.Retired)
	}
	mustApply(t, s, &WorkflowPut{Spec: versionSpec(3), Source: "v3", Version: 3, At: 8})
	if got := versionNumbers(s.Workflows["w"]); fmt.Sprint(got) != "[2 3]" {
		t.Fatalf("after a put: versions %v, want [2 3]", got)
	}
}

// TestSnapshotVersionsChecked: a snapshot whose earlier versions name no
// workflow, no spec, or come out of order is refused with the reason.
func TestSnapshotVersionsChecked(t *testing.T) {
	base := New()
	putVersions(t, base, 1, 3, 0)
	for _, c := range []struct {
		name string
		edit func(*Snapshot)
		want string
	}{
		{"unknown workflow", func(s *Snapshot) { s.Versions[0].Workflow = "nope" }, `workflow "nope", which is not there`},
		{"bad spec", func(s *Snapshot) { s.Versions[0].Spec = 99 }, "refers to spec 99"},
		{"not below the current", func(s *Snapshot) { s.Versions[1].Version = 3 }, "out of order"},
		{"out of order", func(s *Snapshot) { s.Versions[0].Version = 2 }, "out of order"},
	} {
		dec, err := DecodeSnapshot(encodeSnap(t, base.Snapshot(3)))
		if err != nil {
			t.Fatal(err)
		}
		c.edit(dec)
		if _, err := Restore(dec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
