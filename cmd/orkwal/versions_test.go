package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/executors"
)

// TestVersionsCommand: orkwal versions lists a workflow's versions kept,
// newest first with the current one marked, and prints one version's
// source as applied (what rolling back with orkwal apply needs); an
// unknown workflow or version exits 3, a bad version 1.
func TestVersionsCommand(t *testing.T) {
	url := cliDaemon(t, executors.Noop{})
	v1 := "name: w\ntasks:\n  a: {executor: noop}\n# one\n"
	v2 := "name: w\ntasks:\n  a: {executor: noop}\n  b: {executor: noop, depends_on: [a]}\n# two\n"
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "w.yaml", v1))
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "w.yaml", v2))
	out, _ := mustCLI(t, exitOK, "versions", "--addr", url, "w")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "2 ") || !strings.HasSuffix(lines[1], "current") ||
		!strings.HasPrefix(lines[2], "1 ") || strings.Contains(lines[2], "current") {
		t.Fatalf("orkwal versions w:\n%s", out)
	}
	if f := strings.Fields(lines[2]); f[len(f)-1] != "1" || f[len(f)-2] != strconv.Itoa(len(v1)) {
		t.Fatalf("version 1's row %q: want size %d, 1 task", lines[2], len(v1))
	}
	if out, _ := mustCLI(t, exitOK, "versions", "--addr", url, "w", "1"); out != v1 {
		t.Fatalf("orkwal versions w 1 printed %q, want version 1's source %q", out, v1)
	}
	out, _ = mustCLI(t, exitOK, "versions", "--addr", url, "-o", "json", "w", "2")
	var v struct {
		Version int               `json:"version"`
		Current bool              `json:"current"`
		Tasks   []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Version != 2 || !v.Current || len(v.Tasks) != 2 {
		t.Fatalf("-o json: %s (%v)", out, err)
	}
	_, errOut := mustCLI(t, exitNotFound, "versions", "--addr", url, "w", "3")
	if !strings.Contains(errOut, "has no version 3") {
		t.Fatalf("version 3: %s", errOut)
	}
	mustCLI(t, exitNotFound, "versions", "--addr", url, "nope")
	mustCLI(t, exitFailure, "versions", "--addr", url, "w", "0")
}
