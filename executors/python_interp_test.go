package executors

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPythonInterpreterResolvedOnce: the interpreter was looked up through
// PATH and started through it at every attempt; behind a version manager's
// shim that cost most of a second per task. It is resolved once to the
// binary the shim runs (and the daemon log says which), and again when the
// shim changes on disk. --python (PythonConfig.Interpreter) names it.
// Not parallel: it puts a shim first in PATH.
func TestPythonInterpreterResolvedOnce(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	shim := "#!/bin/sh\necho called >> " + calls + "\nexec " + testInterpreter() + " \"$@\"\n"
	for _, name := range []string{"python3", "mypython"} {
		writeFile(t, bin, name, shim)
		os.Chmod(filepath.Join(bin, name), 0o755)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var logs syncBuffer
	for _, configured := range []string{"", "mypython"} {
		os.Remove(calls)
		p := NewPython(PythonConfig{RunnerDir: t.TempDir(), Interpreter: configured, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		run := func() {
			t.Helper()
			job := newPythonJob(t, "attempt", "")
			job.Python.Interpreter = ""
			_, events := startPython(t, p, job)
			expectStarted(t, job, events)
			expectOK(t, expectFinished(t, job, events), `{"ork": 1, "orkwal": 1}`)
		}
		for i := 0; i < 3; i++ {
			run()
		}
		if n := countLines(calls); n != 1 {
			t.Errorf("interpreter %q: the shim ran %d times for 3 attempts, want once (to resolve it)", configured, n)
		}
		if !strings.Contains(logs.String(), "runs="+testInterpreter()) {
			t.Errorf("the log does not name the interpreter that runs:\n%s", logs.String())
		}
		name := "python3"
		if configured != "" {
			name = configured
		}
		writeFile(t, bin, name, shim+"# upgraded\n")
		run()
		if n := countLines(calls); n != 2 {
			t.Errorf("interpreter %q: the shim ran %d times after it changed, want 2 (resolved again)", configured, n)
		}
	}
	if !strings.Contains(logs.String(), "changed on disk") {
		t.Errorf("the log does not say the interpreter was resolved again:\n%s", logs.String())
	}
}

func countLines(path string) int {
	data, _ := os.ReadFile(path)
	return strings.Count(string(data), "\n")
}
