package executors

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reaping a child: the reactor reaps an exited child with one waitid on
// its pidfd and reads the exit status from the siginfo that call fills
// (see reapPidfd); the way without the reactor waits without reaping,
// then reaps by pid (see child.awaitExit, reapPID).

// waitidFunc is unix.Waitid's type: the reactor's waitid is unix.Waitid
// but in tests, which count its calls.
type waitidFunc func(idType int, id int, info *unix.Siginfo, options int, rusage *unix.Rusage) error

// si_code of a SIGCHLD siginfo for an exit (waitid with WEXITED reports
// no other): see waitid(2). golang.org/x/sys names none of them.
const (
	cldExited = 1 // exited: si_status is the exit code
	cldKilled = 2 // killed: si_status is the signal
	cldDumped = 3 // killed, and dumped core: si_status is the signal
)

// siStatusOffset is where si_status is in a siginfo: after si_signo,
// si_errno and si_code (three ints), the union of the signal's fields
// starts at the alignment of a pointer (it holds pointers), and a
// SIGCHLD's fields are si_pid, si_uid, then si_status (ints).
const siStatusOffset = (12+unsafe.Sizeof(uintptr(0))-1)&^(unsafe.Sizeof(uintptr(0))-1) + 8

// reapPidfd reaps the child of pidfd (process pid) if it has exited, in
// one waitid (WNOHANG: the reactor's pidfds are blocking), and returns its
// status decoded from the siginfo (see waitStatusOf). exited is false
// while the child runs. An error (ECHILD and the like: nothing to wait
// for) counts as an exit: there is nothing left to wait for; the error is
// the outcome. A kernel that polls pidfds but cannot wait on one (Linux
// 5.3: waitid(P_PIDFD) is 5.4's) answers EINVAL: the child is then reaped
// by its pid (see reapPIDNoHang).
func reapPidfd(waitid waitidFunc, pidfd, pid int) (status syscall.WaitStatus, exited bool, err error) {
	for {
		var info unix.Siginfo
		err := waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOHANG, nil)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, false, nil
		case unix.EINVAL:
			return reapPIDNoHang(pid)
		case nil:
			// With WNOHANG and no exit yet, Linux answers 0 with a zero
			// si_signo (a non-blocking pidfd answers EAGAIN instead).
			if info.Signo == 0 {
				return 0, false, nil
			}
			status, err := waitStatusOf(&info)
			return status, true, err
		}
		return 0, true, os.NewSyscallError("waitid", err)
	}
}

// waitStatusOf is the wait status wait4 would have given for the exit
// that info (filled by waitid) reports: the exit code in bits 8-15, or
// the signal in bits 0-6 and 0x80 if it dumped core.
func waitStatusOf(info *unix.Siginfo) (syscall.WaitStatus, error) {
	raw := (*[unsafe.Sizeof(unix.Siginfo{})]byte)(unsafe.Pointer(info))
	n := *(*int32)(unsafe.Pointer(&raw[siStatusOffset]))
	switch info.Code {
	case cldExited:
		return syscall.WaitStatus(n&0xff) << 8, nil
	case cldKilled:
		return syscall.WaitStatus(n & 0x7f), nil
	case cldDumped:
		return syscall.WaitStatus(n&0x7f | 0x80), nil
	}
	return 0, fmt.Errorf("waitid: unexpected si_code %d (si_status %d)", info.Code, n)
}

// reapPIDNoHang reaps process pid, a child of the daemon, if it has
// exited: until it is reaped its pid names it alone. exited is false while
// it runs; an error counts as an exit, as in reapPidfd.
func reapPIDNoHang(pid int) (status syscall.WaitStatus, exited bool, err error) {
	wpid, status, err := wait4(pid, syscall.WNOHANG)
	if err != nil {
		return 0, true, err
	}
	return status, wpid == pid, nil
}

// reapPID collects the exit status of process pid, a child of the daemon
// that has exited. While the child is a zombie its pid names it alone, so
// waiting by pid is exact.
func reapPID(pid int) (syscall.WaitStatus, error) {
	_, status, err := wait4(pid, 0)
	return status, err
}

// wait4 is syscall.Wait4 on pid with options, retried on EINTR.
func wait4(pid, options int) (wpid int, status syscall.WaitStatus, err error) {
	for {
		wpid, err = syscall.Wait4(pid, &status, options, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, 0, os.NewSyscallError("wait4", err)
	}
	return wpid, status, nil
}
