package executors

import (
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// spawnSh starts sh -c script in dir with a pidfd, for the reaping tests.
func spawnSh(t *testing.T, dir, script string, fd3 *os.File) *child {
	t.Helper()
	sh, err := lookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	c, err := spawn(sh, []string{"sh", "-c", script}, dir, os.Environ(), &taskOutput{pipeFD: -1, fileFrom: -1}, fd3)
	if err != nil {
		t.Fatal(err)
	}
	if c.pidfd < 0 {
		t.Skip("no pidfd on this system")
	}
	return c
}

// awaitPidfd blocks until pidfd is readable (its process exited).
func awaitPidfd(t *testing.T, pidfd int) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(guard/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("pidfd not readable within the guard time: %d, %v", n, err)
		}
		return
	}
}

// TestWaitStatusOfIsWait4s: the wait status decoded from waitid's siginfo
// is, bit for bit, the one wait4 gives for the same exit: exit codes 0,
// 1, 3 and 255, death by SIGTERM and SIGKILL, and SIGSEGV with a core
// dump when the system allows one (else without).
func TestWaitStatusOfIsWait4s(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		code   int            // when exited
		sig    syscall.Signal // when killed
	}{
		{script: "exit 0"},
		{script: "exit 1", code: 1},
		{script: "exit 3", code: 3},
		{script: "exit 255", code: 255},
		{script: "kill -TERM $$", sig: syscall.SIGTERM},
		{script: "kill -KILL $$", sig: syscall.SIGKILL},
		{script: "ulimit -c unlimited 2>/dev/null; kill -SEGV $$", sig: syscall.SIGSEGV},
	} {
		c := spawnSh(t, t.TempDir(), tc.script, nil)
		awaitPidfd(t, c.pidfd)
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PIDFD, c.pidfd, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
			t.Fatal(err)
		}
		got, err := waitStatusOf(&info)
		want, werr := c.reap()
		if err != nil || werr != nil {
			t.Fatalf("%q: waitStatusOf %v, wait4 %v", tc.script, err, werr)
		}
		if got != want {
			t.Errorf("%q: status %#x from the siginfo, wait4's %#x", tc.script, uint32(got), uint32(want))
		}
		switch {
		case tc.sig != 0 && (!got.Signaled() || got.Signal() != tc.sig):
			t.Errorf("%q: status %#x, want killed by %v", tc.script, uint32(got), tc.sig)
		case tc.sig == 0 && (!got.Exited() || got.ExitStatus() != tc.code):
			t.Errorf("%q: status %#x, want exit %d", tc.script, uint32(got), tc.code)
		}
	}
}

// TestWaitStatusOfCodes: each si_code of an exit decodes to its status,
// a core dump included (which TestWaitStatusOfIsWait4s sees only where
// the system dumps core), and any other is an error.
func TestWaitStatusOfCodes(t *testing.T) {
	siginfo := func(code, status int32) *unix.Siginfo {
		info := &unix.Siginfo{Signo: int32(syscall.SIGCHLD), Code: code}
		raw := (*[unsafe.Sizeof(unix.Siginfo{})]byte)(unsafe.Pointer(info))
		*(*int32)(unsafe.Pointer(&raw[siStatusOffset])) = status
		return info
	}
	for _, tc := range []struct {
		code, status int32
		want         syscall.WaitStatus
	}{
		{cldExited, 0, 0},
		{cldExited, 42, 42 << 8},
		{cldKilled, int32(syscall.SIGTERM), syscall.WaitStatus(syscall.SIGTERM)},
		{cldDumped, int32(syscall.SIGSEGV), syscall.WaitStatus(syscall.SIGSEGV) | 0x80},
	} {
		got, err := waitStatusOf(siginfo(tc.code, tc.status))
		if err != nil || got != tc.want {
			t.Errorf("si_code %d, si_status %d: %#x, %v; want %#x", tc.code, tc.status, uint32(got), err, uint32(tc.want))
		}
	}
	if st, _ := waitStatusOf(siginfo(cldDumped, int32(syscall.SIGABRT))); !st.CoreDump() || st.Signal() != syscall.SIGABRT {
		t.Errorf("CLD_DUMPED of SIGABRT: %#x, want a core dump of SIGABRT", uint32(st))
	}
	if _, err := waitStatusOf(siginfo(5, 0)); err == nil { // CLD_TRAPPED: never asked for
		t.Error("si_code 5 decoded, want an error")
	}
}

// TestReactorReapsWithOneWaitid: the reactor reaps an exited child with
// one waitid (no WNOWAIT look first, no wait4), which also marks its
// handle exited (Stop then signals nothing); a stale event, the child
// still running, costs one waitid that reaps nothing and marks nothing.
func TestReactorReapsWithOneWaitid(t *testing.T) {
	t.Parallel()
	r := handDrivenReactor(t)
	var calls []int // the options of each waitid
	r.waitid = func(idType, id int, info *unix.Siginfo, options int, rusage *unix.Rusage) error {
		calls = append(calls, options)
		return unix.Waitid(idType, id, info, options, rusage)
	}
	g := startGated(t)
	c, h, p := g.c, g.h, g.p

	r.exited(p) // stale: the child waits for the gate
	if p.exit != nil || h.exited || len(calls) != 1 {
		t.Fatalf("running child: exit %+v, handle exited %v, %d waitid calls; want none, false, 1", p.exit, h.exited, len(calls))
	}
	g.release.Close()
	awaitPidfd(t, c.pidfd)
	r.exited(p)
	if len(calls) != 2 {
		t.Fatalf("%d waitid calls in all, want 2 (one a call of exited)", len(calls))
	}
	for _, o := range calls {
		if o&unix.WNOWAIT != 0 {
			t.Errorf("waitid with WNOWAIT (options %#x): a look before the reap", o)
		}
	}
	if !h.exited {
		t.Error("handle not marked exited: Stop would signal a group whose id may be reused")
	}
	g.checkReaped(t, r)
}

// TestReactorReapsWithoutPidfdWaitid: on a kernel that polls pidfds but
// has no waitid(P_PIDFD) (Linux 5.3: EINVAL), the reactor reaps the child
// by its pid instead, with its exact exit status, and leaves no zombie; a
// stale event, the child still running, reaps nothing and marks nothing.
func TestReactorReapsWithoutPidfdWaitid(t *testing.T) {
	t.Parallel()
	r := handDrivenReactor(t)
	r.waitid = func(idType, id int, info *unix.Siginfo, options int, rusage *unix.Rusage) error {
		if idType == unix.P_PIDFD {
			return unix.EINVAL
		}
		return unix.Waitid(idType, id, info, options, rusage)
	}
	g := startGated(t)
	c, h, p := g.c, g.h, g.p

	r.exited(p) // stale: the child waits for the gate
	if p.exit != nil || h.exited {
		t.Fatalf("running child: exit %+v, handle exited %v; want none, false", p.exit, h.exited)
	}
	g.release.Close()
	awaitPidfd(t, c.pidfd)
	r.exited(p)
	if !h.exited {
		t.Error("handle not marked exited")
	}
	g.checkReaped(t, r)
}

// gated is a child (sh) that waits for its gate to close, then exits 7,
// with the handle and proc the reactor would watch it by.
type gated struct {
	c        *child
	release  *os.File // closing it lets the child exit
	h        *processHandle
	p        *proc
	finished chan Event // p's report
}

func startGated(t *testing.T) *gated {
	t.Helper()
	gate, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	t.Cleanup(func() { release.Close() })
	g := &gated{c: spawnSh(t, "", "read x <&3; exit 7", gate), release: release, finished: make(chan Event, 1)}
	g.h = &processHandle{pid: int32(g.c.pid)}
	g.p = &proc{pid: g.c.pid, pidfd: g.c.pidfd, pipe: -1, h: g.h, fin: finishInfo{taskID: "t"}, report: func(ev Event) { g.finished <- ev }}
	return g
}

// checkReaped checks that the child, handed to r.exited after its exit,
// is reaped (no zombie left) and reported Finished with exit 7, then
// closes the descriptors r kept for closing.
func (g *gated) checkReaped(t *testing.T, r *reactor) {
	t.Helper()
	if _, err := syscall.Wait4(g.c.pid, nil, syscall.WNOHANG, nil); err != syscall.ECHILD {
		t.Errorf("wait4 after exited: %v, want ECHILD (already reaped)", err)
	}
	select {
	case ev := <-g.finished:
		if ev.ExitCode != 7 || ev.Err != "exit status 7" {
			t.Errorf("Finished %+v, want exit 7", ev)
		}
	case <-time.After(guard):
		t.Fatal("no Finished within the guard time")
	}
	for _, fd := range r.closing {
		unix.Close(fd)
	}
}
