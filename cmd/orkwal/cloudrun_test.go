package main

import (
	"strings"
	"testing"
)

// TestCloudRunFlags: --cloudrun-project and --cloudrun-region of run and
// exec refuse what is no project or region (usage, exit 2, nothing run);
// a task whose job is a name alone, with neither the task's nor the
// daemon's project, fails naming the fix.
func TestCloudRunFlags(t *testing.T) {
	t.Setenv("GOOGLE_CLOUD_PROJECT", "")
	t.Setenv("ORKWAL_CLOUDRUN_PROJECT", "")
	file := "../../testdata/workflows/cloudrun.yaml"
	for _, args := range [][]string{
		{"exec", "--cloudrun-project", "My Project", file},
		{"exec", "--cloudrun-region", "west", file},
		{"run", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--cloudrun-region", "west"},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "is not a Google Cloud") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
	stdout, stderr, code := runCLI(t, "exec", "--data", t.TempDir(), "--cloudrun-region", "europe-west1", file)
	if code != exitFailure || !strings.Contains(stdout+stderr, "has no project: set the task's project, or the daemon's --cloudrun-project") {
		t.Errorf("no project: exit %d, %s%s", code, stdout, stderr)
	}
}
