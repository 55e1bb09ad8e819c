package engine

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// TestDataFolderIsPrivate: nothing the daemon writes (the WAL, snapshots,
// logs, a task's input, the empty input) can be read by another user: folders are 0700 and
// files 0600 whatever the umask allows. The logs hold what tasks print,
// the WAL and the input files params and outputs. (A task's output file is
// the task's, made with its umask, in a folder only the daemon's user may
// enter.)
func TestDataFolderIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	e, err := Open(Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	// t has an input of its own; u's is the empty one.
	command := []string{"sh", "-c", `echo secret; echo '{"k": 1}' > "$ORKWAL_OUTPUT"; sleep 60`}
	put(t, e, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{
		{Name: "t", Executor: "process", Command: command, Inputs: map[string]workflow.Input{"k": {Const: []byte("1")}}},
		{Name: "u", Executor: "process", Command: command}}})
	id := trigger(t, e, "w")
	waitFor(t, e, "the tasks to start", func() bool {
		r, _ := e.Run(id)
		return len(r.Tasks) == 2 && r.Tasks[0].Status == "running" && r.Tasks[1].Status == "running"
	})
	var files []string
	check := func() {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err == nil && fi.Mode().Perm()&0o077 != 0 && !strings.HasSuffix(path, ".output.json") {
				t.Errorf("%s: mode %04o, want no access for group and others", path, fi.Mode().Perm())
			}
			files = append(files, strings.TrimPrefix(path, dir))
			return nil
		})
	}
	check() // the attempt's input file and log exist now
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e, "the cancel", func() bool { return runStatus(e, id) == "cancelled" })
	if err := e.Close(); err != nil { // a clean close writes a snapshot
		t.Fatal(err)
	}
	check()
	for _, want := range []string{"/wal", "/logs", "/snapshots"} {
		if !strings.Contains(strings.Join(files, "\n"), want) {
			t.Errorf("no %s among the files checked: %v", want, files)
		}
	}
	inputs := map[string]bool{}
	for _, f := range files {
		if executors.IsInputFile(filepath.Base(f)) {
			inputs[f] = true
		}
	}
	if strings.Contains(strings.Join(files, "\n"), "input-empty.json") {
		t.Errorf("an input-empty.json among the files: %v; the empty input is content-named like any other", files)
	}
	if len(inputs) != 2 {
		t.Errorf("input files checked %v, want t's and u's (the empty one): %v", inputs, files)
	}
}

// TestSharedDataFolderWarned: a data folder others may enter (made by an
// earlier version, 0755) is used as it is, with a warning (Open calls
// warnIfShared); one only a group may enter is not warned about.
func TestSharedDataFolderWarned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // whatever the umask
	var logs strings.Builder
	warnIfShared(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(logs.String(), "other users may read the data folder") {
		t.Fatalf("no warning in:\n%s", logs.String())
	}
	var none strings.Builder
	os.Chmod(dir, 0o750) // a group may be meant to read it
	warnIfShared(dir, slog.New(slog.NewTextHandler(&none, nil)))
	if none.Len() > 0 {
		t.Fatalf("warned about a folder others cannot enter: %s", none.String())
	}
}
