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

// TestExecPython: --python (as run's, ORKWAL_PYTHON alike) is the
// interpreter of exec's python tasks that name none. The one given records
// each argv it gets, answers the sys.executable question with its own
// path, and hands the task over to the real one.
func TestExecPython(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "argv")
	fake := filepath.Join(dir, "fakepython")
	os.WriteFile(fake, []byte(`#!/bin/sh
echo "$*" >> '`+record+`'
if [ "$1" = -c ]; then echo "$0"; exit 0; fi
exec /usr/bin/python3 "$@"
`), 0o755)
	os.WriteFile(filepath.Join(dir, "tasks.py"), []byte("def hello():\n    return {'said': 'hi'}\n"), 0o644)
	file := filepath.Join(dir, "py.yaml")
	os.WriteFile(file, []byte("name: py\ntasks:\n  hello: {executor: python, file: tasks.py, function: hello}\n"), 0o644)

	for _, args := range [][]string{{"exec", "--python", fake, file}, {"exec", file}} {
		os.Remove(record)
		if args[1] != "--python" {
			t.Setenv("ORKWAL_PYTHON", fake)
		}
		out, _ := mustCLI(t, exitOK, args...)
		if !strings.Contains(out, " success") {
			t.Errorf("%v: output:\n%s", args, out)
		}
		got, err := os.ReadFile(record)
		if err != nil {
			t.Fatalf("%v: the interpreter given never ran: %v", args, err)
		}
		// It is asked for sys.executable, then runs the task's runner.
		lines := strings.Split(strings.TrimSpace(string(got)), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "-c ") || !strings.Contains(lines[1], "runner") {
			t.Errorf("%v: the interpreter given got:\n%s", args, got)
		}
	}
}
