package executors

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// noReactorEnv, when set, makes the tests' Process executors take the way
// without the reactor (see TestProcessWithoutReactor).
const noReactorEnv = "ORKWAL_TEST_NO_REACTOR"

// newTestProcess is NewProcess, without the reactor under noReactorEnv.
func newTestProcess(cfg ProcessConfig) *Process {
	p := NewProcess(cfg)
	p.noReactor = os.Getenv(noReactorEnv) != ""
	return p
}

// TestProcessWithoutReactor runs the process executor's tests again, in a
// child test binary, the way without the reactor: the way of a kernel
// without pidfds (before Linux 5.3) or of an epoll instance that could not
// be created.
func TestProcessWithoutReactor(t *testing.T) {
	if os.Getenv(noReactorEnv) != "" {
		t.Skip("already without the reactor")
	}
	if testing.Short() {
		t.Skip("runs the process tests again")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run", "^(TestProcess|TestPythonLogCap)", "-test.count=1")
	cmd.Env = append(os.Environ(), noReactorEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("process tests without the reactor: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("no PASS in the output:\n%s", out)
	}
}

// TestProcessRunningHoldsNoGoroutine: with the reactor, a running child
// holds no goroutine (its pidfd and its log pipe are watched by the
// reactor's one goroutine); without it, one awaits its exit and one copies
// its log. Not parallel: it counts the goroutines of the whole test process.
func TestProcessRunningHoldsNoGoroutine(t *testing.T) {
	if os.Getenv(noReactorEnv) != "" {
		t.Skip("measures both ways itself")
	}
	const n = 64
	for _, tt := range []struct {
		name      string
		noReactor bool
	}{{"reactor", false}, {"without reactor", true}} {
		t.Run(tt.name, func(t *testing.T) {
			p := NewProcess(ProcessConfig{})
			p.noReactor = tt.noReactor
			theReactor() // started once for the process: not a child's
			events := make(chan Event, 2*n)
			before := runtime.NumGoroutine()
			var handles []Handle
			for i := range n {
				job := newTestJob(t, "sleep", "60")
				job.TaskID = fmt.Sprintf("t%d", i)
				job.MaxLogBytes = 1 << 20 // the capped log's pipe too
				h, err := p.Start(job, func(ev Event) { events <- ev })
				if err != nil {
					t.Fatal(err)
				}
				handles = append(handles, h)
			}
			defer func() {
				for _, h := range handles {
					h.Stop(time.Millisecond)
				}
				for range n {
					if ev := nextEvent(t, events); ev.Kind != Finished || ev.Err != "killed by signal: terminated" {
						t.Errorf("event %+v, want Finished by SIGTERM", ev)
					}
				}
			}()
			for range n {
				if ev := nextEvent(t, events); ev.Kind != Started {
					t.Fatalf("event %+v, want Started", ev)
				}
			}
			if tt.noReactor {
				// Both goroutines of each child exist from its Start on.
				if d := runtime.NumGoroutine() - before; d < 2*n {
					t.Errorf("%d running children without the reactor hold %d more goroutines, want at least %d", n, d, 2*n)
				}
				return
			}
			// The goroutines that reported Started end right after: wait
			// for them, no longer than the guard.
			deadline := time.Now().Add(guard)
			for {
				d := runtime.NumGoroutine() - before
				if d <= n/16 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d running children hold %d more goroutines (%d → %d)", n, d, before, before+d)
				}
				runtime.Gosched()
			}
		})
	}
}
