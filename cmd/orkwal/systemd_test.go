package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifySocket listens where a daemon's $NOTIFY_SOCKET will point.
func notifySocket(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, path
}

// readNotify returns the next datagram, failing after a generous guard.
func readNotify(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification from the daemon: %v", err)
	}
	return string(buf[:n])
}

// TestSystemdNotify runs the daemon as systemd would with Type=notify and
// WatchdogSec: READY=1 once it serves (the API answers then), WATCHDOG=1
// again and again while its loop turns, STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	bin := buildBinary(t)
	conn, path := notifySocket(t)
	addr := freeAddr(t)
	d := startDaemon(t, bin, t.TempDir(), addr, "NOTIFY_SOCKET="+path, "WATCHDOG_USEC=200000")
	ready := readNotify(t, conn)
	if !strings.Contains(ready, "READY=1") || !strings.Contains(ready, "MAINPID=") {
		t.Fatalf("first notification %q, want READY=1 with MAINPID", ready)
	}
	if code, _ := d.call("GET", "/healthz", ""); code != 200 {
		t.Fatalf("ready but /healthz answers %d", code)
	}
	for i := 0; i < 3; i++ {
		if got := readNotify(t, conn); got != "WATCHDOG=1" {
			t.Fatalf("notification %d after READY: %q, want WATCHDOG=1", i, got)
		}
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	for {
		got := readNotify(t, conn)
		if got == "STOPPING=1" {
			break
		}
		if got != "WATCHDOG=1" {
			t.Fatalf("while stopping: %q", got)
		}
	}
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, d.logs)
	}
}

// logSignal is a slog handler that reports each message on a channel.
type logSignal chan string

func (c logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (c logSignal) Handle(_ context.Context, r slog.Record) error {
	select {
	case c <- r.Message:
	default: // the test reads only the first few: never block the logger
	}
	return nil
}
func (c logSignal) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c logSignal) WithGroup(string) slog.Handler      { return c }

// TestWatchdogStopsWhenTheLoopIsStuck: while the engine's loop does not
// answer, no WATCHDOG=1 is sent (so systemd restarts the daemon); once it
// answers again the notifications resume.
func TestWatchdogStopsWhenTheLoopIsStuck(t *testing.T) {
	conn, path := notifySocket(t)
	t.Setenv("NOTIFY_SOCKET", path)
	n, err := newNotifier()
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	release := make(chan struct{})
	ping := func() error { <-release; return nil }
	logs := make(logSignal, 16)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.watchdog(20*time.Millisecond, ping, stop, slog.New(logs))
	}()
	for i := 0; i < 3; i++ {
		if msg := <-logs; !strings.Contains(msg, "has not answered") {
			t.Fatalf("log %q, want the loop reported stuck", msg)
		}
	}
	conn.SetReadDeadline(time.Now()) // what is there was sent while stuck
	if n, err := conn.Read(make([]byte, 64)); err == nil {
		t.Fatalf("sent %d bytes while the loop was stuck", n)
	}
	close(release)
	if got := readNotify(t, conn); got != "WATCHDOG=1" {
		t.Fatalf("after the loop answered: %q", got)
	}
	close(stop)
	<-done
}

// TestHealthCommand: `orkwal health` (the container's HEALTHCHECK) exits 0
// while the daemon serves and 1 once it is gone.
func TestHealthCommand(t *testing.T) {
	bin := buildBinary(t)
	addr := freeAddr(t)
	d := startDaemon(t, bin, t.TempDir(), addr)
	out, err := exec.Command(bin, "health", "--addr", addr).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("health of a serving daemon: %v %q", err, out)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.cmd.Wait()
	out, err = exec.Command(bin, "health", "--addr", addr).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "unhealthy") {
		t.Fatalf("health of a stopped daemon: %v %q, want exit 1 saying unhealthy", err, out)
	}
}
