package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// TestExec: orkwal exec runs one file to its end in an engine of its own,
// prints its tasks' statuses and exits with the run's outcome; its
// temporary data folder is gone afterwards, a given one is kept.
func TestExec(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ok := filepath.Join(dir, "ok.yaml")
	os.WriteFile(ok, []byte(`name: ok
params: {who: x}
tasks:
  a:
    command: "echo 'ORK_OUTPUT:{\"n\": 1}'"
  b:
    command: echo "hello {{params.who}}"
    env: {WHO: "{{params.who}}"}
    depends_on: [a]
`), 0o644)
	out, _ := mustCLI(t, exitOK, "exec", ok, "-p", "who=ci")
	for _, want := range []string{"run ", " success", "NAME", "a ", "b "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary data folder left behind: %v", left)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\ntasks:\n  boom: {command: \"echo broken >&2; exit 3\"}\n  after: {command: \"true\", depends_on: [boom]}\n"), 0o644)
	data := filepath.Join(dir, "data")
	out, _ = mustCLI(t, exitFailure, "exec", "--data", data, "-o", "json", bad)
	var run engine.RunView
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	statuses := map[string]string{}
	for _, task := range run.Tasks {
		statuses[task.Name] = task.Status
	}
	if run.Status != "failed" || statuses["boom"] != "failed" || statuses["after"] != "skipped" {
		t.Errorf("run %s, tasks %v; want failed, boom failed, after skipped", run.Status, statuses)
	}
	if _, err := os.Stat(filepath.Join(data, "wal")); err != nil {
		t.Errorf("the given data folder was not kept: %v", err)
	}
	out, _ = mustCLI(t, exitFailure, "exec", bad)
	if !strings.Contains(out, "boom (attempt 1): exit status 3; the end of its log:\n  broken\n") {
		t.Errorf("a failed task's log is not shown:\n%s", out)
	}
	mustCLI(t, exitFailure, "exec", filepath.Join(dir, "missing.yaml"))
	mustCLI(t, exitUsage, "exec")
}

// TestExecTimeout: --timeout cancels a run that runs too long.
func TestExecTimeout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "slow.yaml")
	os.WriteFile(file, []byte("name: slow\ntasks:\n  s: {command: \"sleep 60\"}\n"), 0o644)
	out, _ := mustCLI(t, exitFailure, "exec", "--timeout", "200ms", "--kill-grace", "1s", file)
	if !strings.Contains(out, "timeout after 200ms: the run was cancelled") || !strings.Contains(out, "cancelled") {
		t.Errorf("output:\n%s", out)
	}
}
