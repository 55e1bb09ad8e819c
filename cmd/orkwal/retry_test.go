package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRetryModesAndMark: retry --from reruns a task and its downstream
// tasks, --latest starts a run of the current version, and mark unblocks a
// failed run by hand, shown as such.
func TestRetryModesAndMark(t *testing.T) {
	_, url := processDaemon(t)
	dir := t.TempDir()
	marker, count := filepath.Join(dir, "ok"), filepath.Join(dir, "count")
	file := cliWriteFile(t, "w.yaml", `name: w
params: {p: one}
tasks:
  first: {command: 'echo x >> `+count+`'}
  gate: {command: 'test -f `+marker+`', depends_on: [first]}
  last: {command: 'true', depends_on: [gate]}
`)
	mustCLI(t, exitOK, "apply", "--addr", url, file)
	out, _ := mustCLI(t, exitFailure, "trigger", "--addr", url, "--wait", "w")
	id := strings.SplitN(out, "\n", 2)[0]

	// gate failed, last skipped: mark gate success, last runs.
	out, _ = mustCLI(t, exitOK, "mark", "--addr", url, id, "gate", "success")
	if !strings.Contains(out, "task gate marked success; run "+id) {
		t.Fatalf("mark: %q", out)
	}
	mustCLI(t, exitOK, "watch", "--addr", url, id)
	out, _ = mustCLI(t, exitOK, "show", "--addr", url, id)
	if !strings.Contains(out, "status:   success") || !strings.Contains(out, "marked success by hand") {
		t.Fatalf("show after mark:\n%s", out)
	}

	// --from first reruns first, gate and last, though they succeeded.
	os.WriteFile(marker, nil, 0o600)
	mustCLI(t, exitOK, "retry", "--addr", url, id, "--from", "first", "--wait")
	if data, _ := os.ReadFile(count); strings.Count(string(data), "x") != 2 {
		t.Fatalf("first ran %d times, want 2", strings.Count(string(data), "x"))
	}

	// --latest: a new run of the current version, same params.
	os.WriteFile(file, []byte(strings.Replace(mustRead(t, file), "params: {p: one}", "params: {p: one}\ndescription: v2", 1)), 0o600)
	mustCLI(t, exitOK, "apply", "--addr", url, file)
	out, _ = mustCLI(t, exitOK, "retry", "--addr", url, "--latest", id)
	if !strings.Contains(out, ": ") || strings.Contains(out, "run "+id+":") {
		t.Fatalf("retry --latest answered the old run: %q", out)
	}
	newID := strings.TrimSuffix(strings.Fields(out)[1], ":")
	out, _ = mustCLI(t, exitOK, "show", "--addr", url, newID)
	if !strings.Contains(out, "w@2") || !strings.Contains(out, "trigger:  retry") || !strings.Contains(out, `p="one"`) {
		t.Fatalf("the --latest run:\n%s", out)
	}

	mustCLI(t, exitUsage, "retry", "--addr", url, id, "--latest", "--from", "first")
	mustCLI(t, exitUsage, "mark", "--addr", url, id, "gate", "maybe")
	mustCLI(t, exitFailure, "mark", "--addr", url, id, "gate", "failed") // the run has ended
	mustCLI(t, exitNotFound, "mark", "--addr", url, id, "nope", "success")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
