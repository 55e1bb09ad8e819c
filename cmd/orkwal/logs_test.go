package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLogsFollowAcrossRetries: logs -f follows the task across its
// attempts until it ends, with a line between two attempts.
func TestLogsFollowAcrossRetries(t *testing.T) {
	_, url := processDaemon(t)
	counter := filepath.Join(t.TempDir(), "n")
	mustCLI(t, exitOK, "apply", "--addr", url, cliWriteFile(t, "flaky.yaml", `name: flaky
tasks:
  t:
    command: 'n=$(cat `+counter+` 2>/dev/null || echo 0); n=$((n+1)); echo $n > `+counter+`; echo "try $n"; [ $n -ge 3 ]'
    retries: 2
    retry_backoff: {initial: 10ms, max: 10ms, factor: 1}
`))
	out, _ := mustCLI(t, exitOK, "trigger", "--addr", url, "flaky")
	id := strings.TrimSpace(out)
	out, _ = mustCLI(t, exitOK, "logs", "-f", "--addr", url, id, "t")
	want := "try 1\n\n--- orkwal: attempt 1 failed: exit status 1; attempt 2 follows ---\n" +
		"try 2\n\n--- orkwal: attempt 2 failed: exit status 1; attempt 3 follows ---\ntry 3\n"
	if out != want {
		t.Fatalf("logs -f:\n%s\nwant:\n%s", out, want)
	}
	// One attempt, as asked.
	if out, _ = mustCLI(t, exitOK, "logs", "-f", "--attempt", "2", "--addr", url, id, "t"); out != "try 2\n" {
		t.Fatalf("logs -f --attempt 2: %q", out)
	}
}
