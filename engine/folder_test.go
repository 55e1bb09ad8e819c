package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// TestVersionsOnlyGrow: a workflow deleted and put again started over at
// version 1, so "version 1" named two workflows in the history. Versions
// only grow for a name, across restarts and snapshots.
func TestVersionsOnlyGrow(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, executors.Noop{}, 4)
	put(t, e, flat("w", 1))
	put(t, e, flat("w", 2))
	if err := e.DeleteWorkflow("w"); err != nil {
		t.Fatal(err)
	}
	put(t, e, flat("w", 1))
	if w, _ := e.Workflow("w"); w.Version != 3 {
		t.Fatalf("put after delete: version %d, want 3", w.Version)
	}
	if err := e.DeleteWorkflow("w"); err != nil {
		t.Fatal(err)
	}
	live, _ := e.StateHash()
	stopLoop(e)
	if err := e.Compact(); err != nil { // the deleted name's last version is in the snapshot
		t.Fatal(err)
	}
	release(e)
	e2 := openEngine(t, dir, executors.Noop{}, 4)
	defer e2.Close()
	if got, _ := e2.StateHash(); got != live {
		t.Fatal("state after the snapshot differs")
	}
	put(t, e2, flat("w", 2))
	if w, _ := e2.Workflow("w"); w.Version != 4 {
		t.Fatalf("put after delete, a snapshot and a restart: version %d, want 4", w.Version)
	}
}

func writeFolder(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		path := filepath.Join(dir, name)
		if body == "" {
			os.Remove(path)
			continue
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

const folderA = "name: a\ntasks:\n  t: {executor: noop}\n"

// TestFolderIsOneChangeSet: one kind of error (a bad python type) let the
// folder's other files load, and only the first bad file was reported. A
// bad file of any kind keeps the whole folder out, every bad file is
// reported, and the workflows keep the versions they had.
func TestFolderIsOneChangeSet(t *testing.T) {
	e := openEngine(t, t.TempDir(), executors.Noop{}, 4)
	defer e.Close()
	folder := t.TempDir()
	writeFolder(t, folder, map[string]string{"a.yaml": folderA})
	if _, err := e.LoadFolder(folder); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"a.yaml":        "name: a\ntasks:\n  t: {executor: noop}\n  u: {executor: noop}\n", // a good change
		"parse.yaml":    "name: p\ntasks:\n  t: {command: x, depends_on: [nope]}\n",
		"types.yaml":    "name: ty\ntasks:\n  t: {executor: python, module: m, function: f, input_type: {cfg: nosuchtype}}\n",
		"list.yaml":     "name: li\ntypes:\n  L: \"list[int]\"\ntasks:\n  t: {executor: python, module: m, function: f, input_type: L}\n",
		"dup.yaml":      "name: a\ntasks:\n  t: {executor: noop}\n",
		"cron.yaml":     "name: c\nschedule: \"CRON_TZ=Europe/Berlin\"\ntasks:\n  t: {executor: noop}\n",
		"big.yaml":      "name: big\n" + strings.Repeat("#", workflow.MaxBytes) + "\ntasks:\n  t: {executor: noop}\n",
		"ignored.txt":   "not a workflow",
		"zz-good.yml":   "name: z\ntasks:\n  t: {executor: noop}\n",
		"nosuchkey.yml": "name: k\nbogus: 1\ntasks:\n  t: {executor: noop}\n",
	}
	writeFolder(t, folder, bad)
	_, err := e.LoadFolder(folder)
	if !errors.Is(err, ErrFolder) {
		t.Fatalf("load of a bad folder: %v, want ErrFolder", err)
	}
	for _, f := range []string{"parse.yaml", "types.yaml", "list.yaml", "dup.yaml", "cron.yaml", "big.yaml", "nosuchkey.yml"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("the error does not name %s:\n%v", f, err)
		}
	}
	if w, _ := e.Workflow("a"); w.Version != 1 || len(w.Tasks) != 1 {
		t.Errorf("a after a bad load: version %d with %d tasks, want version 1 as it was", w.Version, len(w.Tasks))
	}
	if _, err := e.Workflow("z"); !errors.Is(err, ErrNotFound) {
		t.Errorf("z, a good file of a bad folder, was recorded: %v", err)
	}
	st, _ := e.FolderStatus()
	if st.OK || len(st.Problems) != 7 || st.Files != 9 {
		t.Errorf("status %+v, want not ok with 7 problems of 9 files", st)
	}
	for _, f := range []string{"parse.yaml", "types.yaml", "list.yaml", "dup.yaml", "cron.yaml", "big.yaml", "nosuchkey.yml"} {
		os.Remove(filepath.Join(folder, f))
	}
	change, err := e.LoadFolder(folder)
	if err != nil || len(change.Recorded) != 2 {
		t.Fatalf("load once fixed: %+v, %v; want a and z recorded", change, err)
	}
	if st, _ := e.FolderStatus(); !st.OK || len(st.Problems) != 0 {
		t.Errorf("status once fixed %+v", st)
	}
}

// TestFolderOwnsItsWorkflows: --workflows re-recorded its files at every
// boot (an API version silently replaced; a workflow deleted through the
// API came back). A file manages its workflow: the API may neither replace
// nor delete it, an unchanged file records nothing, a changed one records
// a new version, and ownership holds across a restart, even one whose
// folder does not load.
func TestFolderOwnsItsWorkflows(t *testing.T) {
	data, folder := t.TempDir(), t.TempDir()
	e := openEngine(t, data, executors.Noop{}, 4)
	writeFolder(t, folder, map[string]string{"a.yaml": folderA})
	if _, err := e.LoadFolder(folder); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(folder, "a.yaml")
	refused := func(e *Engine) {
		t.Helper()
		_, _, err := e.PutWorkflow(flat("a", 2), "")
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), file) {
			t.Errorf("API put of a managed workflow: %v, want a conflict naming %s", err, file)
		}
		if err := e.DeleteWorkflow("a"); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), file) {
			t.Errorf("API delete of a managed workflow: %v, want a conflict naming %s", err, file)
		}
		if w, _ := e.Workflow("a"); w.ManagedBy != file {
			t.Errorf("managed_by %q, want %s", w.ManagedBy, file)
		}
	}
	refused(e)
	if change, err := e.LoadFolder(folder); err != nil || len(change.Recorded) != 0 || change.Unchanged != 1 {
		t.Fatalf("reload of an unchanged file: %+v, %v; want nothing recorded", change, err)
	}
	writeFolder(t, folder, map[string]string{"a.yaml": folderA + "description: changed\n"})
	if change, err := e.LoadFolder(folder); err != nil || len(change.Recorded) != 1 || change.Recorded[0].Version != 2 {
		t.Fatalf("reload of a changed file: %+v, %v; want version 2", change, err)
	}
	crash(e)

	// A restart whose folder has a bad file: a keeps its version and its file.
	writeFolder(t, folder, map[string]string{"b.yaml": "name: b\ntasks: [x]\n"})
	e2 := openEngine(t, data, executors.Noop{}, 4)
	if _, err := e2.LoadFolder(folder); !errors.Is(err, ErrFolder) {
		t.Fatalf("load with a bad file: %v", err)
	}
	refused(e2)
	if w, _ := e2.Workflow("a"); w.Version != 2 {
		t.Errorf("a is version %d after the restart, want 2", w.Version)
	}

	// A removed file releases its workflow to the API.
	writeFolder(t, folder, map[string]string{"a.yaml": "", "b.yaml": ""})
	change, err := e2.LoadFolder(folder)
	if err != nil || len(change.Released) != 1 || change.Released[0] != "a" {
		t.Fatalf("load without a.yaml: %+v, %v; want a released", change, err)
	}
	if err := e2.DeleteWorkflow("a"); err != nil {
		t.Fatalf("delete of a released workflow: %v", err)
	}
	e2.Close()
}
