package executors

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestProcessHold: a held process is spawned (Started, with the pid the
// program then has) but its program runs only once the hold says true;
// false ends it without running the program (exit 125).
func TestProcessHold(t *testing.T) {
	t.Parallel()
	for _, run := range []bool{true, false} {
		marker := filepath.Join(t.TempDir(), "ran")
		job := newTestJob(t, "sh", "-c", `echo "$$" > "$1"`, "task", marker)
		hold := make(chan bool, 1)
		job.Hold = hold
		_, events := startJob(t, job)
		started := expectStarted(t, job, events)
		hold <- run
		fin := expectFinished(t, job, events)
		got, err := os.ReadFile(marker)
		switch {
		case run && (!fin.OK || err != nil):
			t.Fatalf("released: finished %+v, marker %q %v: want the program run", fin, got, err)
		case run && string(got) != strconv.Itoa(started.PID)+"\n":
			t.Fatalf("released: the program ran as pid %q, Started said %d", got, started.PID)
		case !run && (fin.OK || fin.ExitCode != 125 || err == nil):
			t.Fatalf("held back: finished %+v, marker %q: want exit 125 and the program never run", fin, got)
		}
	}
}
