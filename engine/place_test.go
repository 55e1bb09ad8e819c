package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

// TestTasksRunInTheirWorkflowsFolder: a task without workdir ran in the
// daemon's working folder, so the README's own example (command:
// ./load.sh) failed unless the daemon was started next to it. A workflow
// loaded from a file runs its process and python tasks in the file's
// folder (as Ork does), with PYTHONPATH set to it; workdir stays relative
// to it; a relative program path (./load.sh, in a string or an argv list)
// is found there.
func TestTasksRunInTheirWorkflowsFolder(t *testing.T) {
	folder := t.TempDir()
	script := "#!/bin/sh\n{ pwd; echo \"$PYTHONPATH\"; } > \"out-$1\"\n"
	for _, path := range []string{"load.sh", "sub/where.sh"} {
		os.MkdirAll(filepath.Join(folder, filepath.Dir(path)), 0o700)
		if err := os.WriteFile(filepath.Join(folder, path), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(folder, "where.py"), []byte(
		"import os, sys\ndef where():\n    open('out-py', 'w').write(os.getcwd() + '\\n' + os.environ['PYTHONPATH'] + '\\n')\n"), 0o600)
	spec, err := workflow.Parse(filepath.Join(folder, "w.yaml"), []byte(`name: w
tasks:
  string: {command: ./load.sh string}
  argv: {command: [./load.sh, argv]}
  sub: {command: [./where.sh, sub], workdir: sub}
  py: {executor: python, file: where.py, function: where}
`))
	e := openDefault(t, spec, err)
	defer e.Close()
	id := trigger(t, e, "w")
	waitFor(t, e, "the run", finished(e, id))
	if r, _ := e.Run(id); r.Status != "success" {
		t.Fatalf("run %s: %+v", r.Status, r.Tasks)
	}
	for out, cwd := range map[string]string{"out-string": folder, "out-argv": folder, "sub/out-sub": filepath.Join(folder, "sub"), "out-py": folder} {
		data, err := os.ReadFile(filepath.Join(folder, out))
		if err != nil {
			t.Errorf("%s: %v (the task did not run in its folder)", out, err)
			continue
		}
		if got := strings.Split(string(data), "\n"); got[0] != cwd || got[1] != folder {
			t.Errorf("%s: ran in %q with PYTHONPATH %q, want %q and %q", out, got[0], got[1], cwd, folder)
		}
	}
}

// openDefault opens an engine with the default executors (real processes,
// python, http) and records spec, which parsed with err.
func openDefault(t *testing.T, spec *workflow.Spec, err error) *Engine {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	put(t, e, spec)
	return e
}
