package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/executors"
)

// TestApplySeveralAllOrNone: apply takes files and folders and records
// them all, or, when any is bad, none, naming every bad one.
func TestApplySeveralAllOrNone(t *testing.T) {
	url := cliDaemon(t, executors.Noop{})
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("flows/a.yaml", "name: a\ntasks:\n  t: {executor: noop}\n")
	write("flows/b.yml", "name: b\ntasks:\n  t: {executor: noop}\n")
	write("flows/notes.txt", "not a workflow")
	c := write("c.yaml", "name: c\ntasks:\n  t: {executor: noop}\n")
	out, _ := mustCLI(t, exitOK, "apply", "--addr", url, filepath.Join(dir, "flows"), c)
	for _, want := range []string{"workflow a: version 1 recorded", "workflow b: version 1 recorded", "workflow c: version 1 recorded"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply: no %q in\n%s", want, out)
		}
	}

	write("flows/a.yaml", "name: a\ndescription: changed\ntasks:\n  t: {executor: noop}\n")
	bad1 := write("bad1.yaml", "name: x\ntasks:\n  t: {comand: x}\n")
	bad2 := write("bad2.yaml", "name: y\ntasks:\n\tt: {executor: noop}\n")
	_, errOut := mustCLI(t, exitFailure, "apply", "--addr", url, filepath.Join(dir, "flows"), bad1, bad2)
	for _, want := range []string{"2 of 4 workflow files invalid, none was applied", "bad1.yaml: tasks.t.comand: unknown key", "bad2.yaml: invalid YAML: a tab"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("bad apply: no %q in\n%s", want, errOut)
		}
	}
	out, _ = mustCLI(t, exitOK, "workflows", "--addr", url)
	if !strings.Contains(out, "a     1") {
		t.Errorf("a was recorded by a refused apply:\n%s", out)
	}
	mustCLI(t, exitFailure, "apply", "--addr", url, t.TempDir()) // a folder without workflows
	mustCLI(t, exitFailure, "apply", "--addr", url, filepath.Join(dir, "missing.yaml"))
}
