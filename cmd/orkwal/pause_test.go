package main

import (
	"strings"
	"testing"
)

// TestPauseResumeCLI: orkwal pause and resume a run and a task, shown by
// orkwal show; the run ends once both are resumed; an ended run or an
// unknown task is refused.
func TestPauseResumeCLI(t *testing.T) {
	_, url := processDaemon(t)
	gate, open := cliGate(t)
	file := cliWriteFile(t, "p.yaml", `name: p
tasks:
  gate: {command: 'cat `+gate+`'}
  after: {command: 'true', depends_on: [gate]}
`)
	mustCLI(t, exitOK, "apply", "--addr", url, file)
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "p")
	id := strings.TrimSpace(out)
	out, _ = mustCLI(t, exitOK, "pause", "--addr", url, id)
	if !strings.Contains(out, "(paused)") {
		t.Fatalf("pause: %q", out)
	}
	if out, _ = mustCLI(t, exitOK, "show", "--addr", url, id); !strings.Contains(out, "(paused)") {
		t.Fatalf("show of a paused run:\n%s", out)
	}
	mustCLI(t, exitOK, "pause", "--addr", url, id, "after")
	mustCLI(t, exitOK, "resume", "--addr", url, id)
	out, _ = mustCLI(t, exitOK, "show", "--addr", url, id)
	if !strings.Contains(out, "pending (paused)") || strings.Contains(out, "running (paused)") {
		t.Fatalf("show with the task paused, the run resumed:\n%s", out)
	}
	mustCLI(t, exitNotFound, "pause", "--addr", url, id, "nope")
	open()
	mustCLI(t, exitOK, "resume", "--addr", url, id, "after")
	mustCLI(t, exitOK, "watch", "--addr", url, id)
	mustCLI(t, exitFailure, "pause", "--addr", url, id) // it ended
}
