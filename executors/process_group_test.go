package executors

// A process group's identity across a daemon's restarts: the start time
// read from /proc and KillGroupIfSame, which kills a group only while its
// leader is the process that was started.

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestProcStartTimeOfSelf(t *testing.T) {
	t.Parallel()
	a, err := ProcStartTime(os.Getpid())
	if err != nil || a == 0 {
		t.Fatalf("ProcStartTime(self) = %d, %v", a, err)
	}
	b, err := ProcStartTime(os.Getpid())
	if err != nil || b != a {
		t.Errorf("second ProcStartTime(self) = %d, %v; want %d", b, err, a)
	}
	if _, err := ProcStartTime(-5); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ProcStartTime(-5) error = %v, want not exist", err)
	}
}

func TestParseStatStartTime(t *testing.T) {
	t.Parallel()
	rest := "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21"
	tests := []struct {
		stat    string
		want    uint64
		wantErr bool
	}{
		{stat: "123 (sleep) " + rest, want: 4242},
		{stat: "123 (a) (b c) ) " + rest, want: 4242},
		{stat: "123 (x)" + " " + rest + "\n", want: 4242},
		{stat: "123 sleep " + rest, wantErr: true},
		{stat: "123 (sleep) S 1 2", wantErr: true},
		{stat: "123 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseStatStartTime([]byte(tt.stat))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseStatStartTime(%q) = %d, %v; want %d, error %v", tt.stat, got, err, tt.want, tt.wantErr)
		}
	}
}

// spawnGroupLeader starts `sleep 60` leading its own process group (so
// killing the group cannot reach the test binary) and returns it with its
// start time.
func spawnGroupLeader(t *testing.T) (*exec.Cmd, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	st, err := ProcStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, st
}

// waitSignal reaps cmd and returns the signal that killed it.
func waitSignal(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("Wait = %v, want a signal death", err)
	}
	ws := exitErr.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		t.Fatalf("Wait = %v, want a signal death", err)
	}
	return ws.Signal()
}

func TestKillGroupIfSame(t *testing.T) {
	t.Parallel()
	t.Run("wrong start time spares it", func(t *testing.T) {
		t.Parallel()
		cmd, st := spawnGroupLeader(t)
		killed, err := KillGroupIfSame(cmd.Process.Pid, st+1)
		if killed || err != nil {
			t.Fatalf("KillGroupIfSame(wrong start) = %v, %v", killed, err)
		}
		// Had a SIGKILL been sent, it would be the cause of death, not this TERM.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if sig := waitSignal(t, cmd); sig != syscall.SIGTERM {
			t.Errorf("died of %v, want SIGTERM (KillGroupIfSame must not have signalled)", sig)
		}
	})
	t.Run("right start time kills", func(t *testing.T) {
		t.Parallel()
		cmd, st := spawnGroupLeader(t)
		pid := cmd.Process.Pid
		killed, err := KillGroupIfSame(pid, st)
		if !killed || err != nil {
			t.Fatalf("KillGroupIfSame = %v, %v; want killed", killed, err)
		}
		if sig := waitSignal(t, cmd); sig != syscall.SIGKILL {
			t.Errorf("died of %v, want SIGKILL", sig)
		}
		killed, err = KillGroupIfSame(pid, st)
		if killed || err != nil {
			t.Errorf("KillGroupIfSame after reaping = %v, %v; want false, nil", killed, err)
		}
	})
	t.Run("gone leader: orphaned group members are killed", func(t *testing.T) {
		t.Parallel()
		// What a daemon crash leaves: the leader died (Pdeathsig), a
		// background child of the task lives on in the leader's group.
		cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.Output() // waits for and reaps the leader
		if err != nil {
			t.Fatal(err)
		}
		child, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatal(err)
		}
		childStart, err := ProcStartTime(child)
		if err != nil {
			t.Fatalf("orphan not running: %v", err)
		}
		killed, err := KillGroupIfSame(cmd.Process.Pid, 12345)
		if !killed || err != nil {
			t.Fatalf("KillGroupIfSame(gone leader) = %v, %v; want the orphan killed", killed, err)
		}
		waitGone(t, child, childStart)
	})
	t.Run("refuses dangerous pids", func(t *testing.T) {
		t.Parallel()
		for _, pid := range []int{-1, 0, 1} {
			if killed, err := KillGroupIfSame(pid, 0); killed || err == nil {
				t.Errorf("KillGroupIfSame(%d) = %v, %v; want an error", pid, killed, err)
			}
		}
	})
}
