package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWatchOnATerminalAndPiped drives the real binary: on a pty (a real
// terminal) `watch` draws the run's tasks in place and Ctrl-C stops the
// watching, not the run, saying so; piped, it prints a line per change
// until the run ends.
func TestWatchOnATerminalAndPiped(t *testing.T) {
	bin := buildBinary(t)
	gate, open := cliGate(t)
	defer open()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hold.yaml"), []byte(
		"name: hold\ntasks:\n  a: {command: 'cat "+gate+"'}\n  b: {command: 'true', depends_on: [a]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemonOn(t, bin, t.TempDir(), freeAddr(t), dir)
	id := d.trigger("hold")
	d.waitStatus(id, "running")

	master, tty := openPTY(t)
	term := &lockedBuffer{}
	go io.Copy(term, master)
	cmd := exec.Command(bin, "watch", id, "--addr", d.addr)
	cmd.Env = append(os.Environ(), "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.eventually("the live view", func() bool {
		s := term.String()
		return strings.Contains(s, "hold@1 running") && strings.Contains(s, "a     running") && strings.Contains(s, "attempt 1, ")
	})
	if s := term.String(); !strings.Contains(s, "\x1b[") {
		t.Fatalf("no redraw in place on a terminal:\n%q", s)
	}
	master.Write([]byte{3}) // Ctrl-C, as the terminal sends it
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("watch after Ctrl-C: %v, want exit %d", err, exitInterrupted)
	}
	d.eventually("the goodbye line", func() bool {
		return strings.Contains(term.String(), "stopped watching; run "+id+" goes on. See it again with: orkwal watch "+id)
	})
	if st := d.run(id).Status; st != "running" {
		t.Fatalf("the run is %s after Ctrl-C, want still running", st)
	}

	piped := &lockedBuffer{}
	cmd = exec.Command(bin, "watch", id[:20], "--addr", d.addr)
	cmd.Stdout, cmd.Stderr = piped, piped
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.eventually("the first line", func() bool { return strings.Contains(piped.String(), "a running (attempt 1)") })
	open()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch piped: %v\n%s", err, piped)
	}
	out := piped.String()
	for _, want := range []string{id + "\n", "a success\n", "b success\n", "run " + id + " success\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("piped watch lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("escape sequences when piped:\n%q", out)
	}
}
