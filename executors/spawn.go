package executors

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child is a process started by spawn. Its exit is awaited through its
// pidfd: by the reactor (see reactor), or, when that is not available, by
// a goroutine parked on the pidfd in the Go runtime's network poller (see
// awaitExit). Either way a running child holds no OS thread of its own.
type child struct {
	pid   int
	start uint64   // its start time (see ProcStartTime); 0 when unknown
	pidfd int      // -1 when the kernel gave none: awaitExit then blocks a thread in waitid
	file  *os.File // the pidfd in the runtime's poller, made by awaitExit
}

// nullDevice is the daemon's one descriptor of the null device, the stdin
// of every child (and its stdout and stderr when there is no log), opened
// once instead of for every start.
var nullDevice = sync.OnceValues(func() (*os.File, error) {
	f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	return f, nil
})

// spawn starts path with argv in its own process group (pgid == pid), with
// SIGKILL as its parent-death signal, stdin on the null device and stdout
// and stderr on out's child end (the null device if none), and fd3, if
// any, as its descriptor 3. The caller then closes its copy of out's child
// end, whatever the outcome.
func spawn(path string, argv []string, dir string, env []string, out *taskOutput, fd3 *os.File) (*child, error) {
	null, err := nullDevice()
	if err != nil {
		return nil, err
	}
	stdout := out.childFD(null)
	pidfd := -1
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{null.Fd(), stdout, stdout},
		Sys: &syscall.SysProcAttr{
			Setpgid:   true, // own group, pgid == pid, so Stop reaches grandchildren
			Pdeathsig: syscall.SIGKILL,
			PidFD:     &pidfd,
		},
	}
	if fd3 != nil {
		attr.Files = append(attr.Files, fd3.Fd())
	}
	before := bootTick()
	pid, err := syscall.ForkExec(path, argv, attr)
	after := bootTick()
	runtime.KeepAlive(null)
	runtime.KeepAlive(out.child)
	runtime.KeepAlive(fd3)
	if err != nil {
		return nil, spawnError(path, dir, err)
	}
	// The child cannot have been reaped yet (only wait reaps it), so
	// /proc/pid/stat is readable even if it already exited.
	// The pidfd is left blocking: the reactor polls it and asks waitid
	// with WNOHANG (see reapPidfd); only the way without the reactor
	// needs it non-blocking (see awaitExit).
	return &child{pid: pid, start: startTime(pid, before, after), pidfd: pidfd}, nil
}

// spawnError names what ForkExec could not use. Its error does not tell a
// working directory the child could not enter from a program it could not
// run: "fork/exec /usr/bin/sh: no such file or directory" for a workdir
// that is gone would send the user after the wrong file.
func spawnError(path, dir string, err error) error {
	if dir != "" {
		if info, serr := os.Stat(dir); serr != nil {
			return &os.PathError{Op: "workdir", Path: dir, Err: errors.Unwrap(serr)}
		} else if !info.IsDir() {
			return &os.PathError{Op: "workdir", Path: dir, Err: syscall.ENOTDIR}
		}
	}
	return &os.PathError{Op: "fork/exec", Path: path, Err: err}
}

// awaitExit blocks until the child has exited, leaving it waitable (a
// zombie): its pid, and thus its process group id, stays reserved until
// reap. Errors are left to reap, which reports them. It is the way without
// the reactor: the calling goroutine parks on the pidfd in the runtime's
// poller, or, without a pidfd, blocks a thread in waitid.
func (c *child) awaitExit() {
	// Non-blocking: waitid on it then answers EAGAIN until the child
	// exits (Linux 5.10), and os.NewFile registers it with the poller.
	if c.pidfd >= 0 && unix.SetNonblock(c.pidfd, true) == nil {
		c.file = os.NewFile(uintptr(c.pidfd), "pidfd")
		c.pidfd = -1 // c.file owns it
		rc, err := c.file.SyscallConn()
		if err == nil {
			err = rc.Read(func(fd uintptr) bool {
				var info unix.Siginfo
				for {
					err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT, nil)
					switch err {
					case unix.EINTR:
						continue
					case unix.EAGAIN:
						return false // still running: park until the pidfd is readable
					}
					return true
				}
			})
		}
		if err == nil {
			return
		}
	}
	waitExitedNoReap(c.pid)
}

// waitExitedNoReap blocks (an OS thread) until process pid has exited,
// leaving it waitable: the fallback when there is no pollable pidfd.
func waitExitedNoReap(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// reap collects the exit status of the child, which has exited (see
// awaitExit), and closes its pidfd.
func (c *child) reap() (syscall.WaitStatus, error) {
	status, err := reapPID(c.pid)
	if c.file != nil {
		c.file.Close()
	} else if c.pidfd >= 0 {
		unix.Close(c.pidfd)
	}
	return status, err
}

// taskOutput is where a child's stdout and stderr go: nowhere (the null
// device), the log file itself (no cap: the child writes it), or a pipe
// copied into a cappedLog, by the reactor or by a goroutine of its own.
type taskOutput struct {
	child   *os.File // uncapped: the log, the child's stdout and stderr; nil: see pipeW
	pipeW   int      // capped: the pipe's write end, the child's, until spawned; none without capped
	pipeFD  int      // capped: the read end (non-blocking); -1 = none
	pipe    *os.File // capped, without the reactor: pipeFD in the runtime's poller
	capped  *cappedLog
	copied  chan struct{} // capped, without the reactor: closed when the copier returned
	logPath string        // uncapped: the log the child writes to itself
	// The ORK_OUTPUT line is found by capped.lines as output passes, or,
	// uncapped, in the log file from fileFrom on once the task is done;
	// without a log (the output goes to the null device), never. A
	// running process keeps these in its finishInfo, not its taskOutput.
	fileFrom int64 // uncapped: the log's size when the attempt began; -1 capped or no log
}

// openOutput prepares job's output: see taskOutput.
func openOutput(job Job) (*taskOutput, error) {
	if job.LogPath == "" {
		return &taskOutput{pipeFD: -1, fileFrom: -1}, nil
	}
	if job.MaxLogBytes <= 0 {
		f, err := openLog(job.LogPath)
		if err != nil {
			return nil, err
		}
		from, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open log: %w", err)
		}
		return &taskOutput{child: f, pipeFD: -1, logPath: job.LogPath, fileFrom: from}, nil
	}
	capped, err := newCappedLog(job.LogPath, job.MaxLogBytes)
	if err != nil {
		return nil, err
	}
	capped.maxOutput = job.MaxOutputBytes
	// One pipe for stdout and stderr: they interleave as written. Only
	// our end is non-blocking (O_NONBLOCK belongs to each end's file
	// description): the child writes to a blocking pipe as usual.
	// The write end stays a bare descriptor (an *os.File would cost a
	// system call and a finalizer a start), closed once the child holds
	// its own copy (spawned).
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		_ = capped.finish()
		return nil, fmt.Errorf("create log pipe: %w", os.NewSyscallError("pipe2", err))
	}
	// A new pipe's read end has no status flag set: O_NONBLOCK alone is
	// what SetNonblock would make of them, in one call instead of two.
	if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		_ = capped.finish()
		return nil, fmt.Errorf("create log pipe: %w", os.NewSyscallError("fcntl", err))
	}
	return &taskOutput{pipeW: fds[1], pipeFD: fds[0], capped: capped, fileFrom: -1}, nil
}

// childFD is the descriptor of the child's stdout and stderr: the log
// pipe's write end, the uncapped log, or null.
func (o *taskOutput) childFD(null *os.File) uintptr {
	switch {
	case o.capped != nil && o.pipeW >= 0:
		return uintptr(o.pipeW)
	case o.child != nil:
		return o.child.Fd()
	}
	return null.Fd()
}

// spawned is called once the child is running: the child holds its own
// descriptor, so ours is closed.
func (o *taskOutput) spawned() {
	if o.child != nil {
		o.child.Close()
		o.child = nil
	}
	if o.capped != nil && o.pipeW >= 0 {
		unix.Close(o.pipeW)
		o.pipeW = -1
	}
}

// startCopier starts the goroutine that copies the pipe into the capped
// log, the way without the reactor. A quiet child costs it a parked
// goroutine and no buffer (see cappedLog.ReadFrom).
func (o *taskOutput) startCopier() {
	if o.capped == nil {
		return
	}
	o.pipe = os.NewFile(uintptr(o.pipeFD), "|0") // non-blocking: in the poller
	o.pipeFD = -1
	o.copied = make(chan struct{})
	go func() {
		defer close(o.copied)
		_, _ = o.capped.ReadFrom(o.pipe)
	}()
}

// abort releases everything when the child could not be started.
func (o *taskOutput) abort() {
	o.spawned()
	if o.capped != nil {
		unix.Close(o.pipeFD)
		_ = o.capped.finish() // nothing was written: this closes the log
	}
}

// appendNote appends note to an uncapped log, which the child wrote to
// itself (nothing when either is empty).
func appendNote(path, note string) error {
	if path == "" || note == "" {
		return nil
	}
	f, err := openLog(path)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(note); err != nil {
		f.Close()
		return fmt.Errorf("write log: %w", err)
	}
	return f.Close()
}

// finish completes the log once the leader has exited (the way without
// the reactor): it waits for the copier to reach the end of the pipe, at
// most logDrainDelay (other members of the group may hold the pipe open),
// then closes the pipe and completes the capped log, ending it with note
// (see processHandle.stopNote).
func (o *taskOutput) finish(note string) error {
	if o.capped == nil {
		return appendNote(o.logPath, note)
	}
	timer := time.NewTimer(logDrainDelay)
	select {
	case <-o.copied:
	case <-timer.C:
		// Wakes the copier's read with os.ErrDeadlineExceeded.
		_ = o.pipe.SetReadDeadline(time.Now())
		<-o.copied
	}
	timer.Stop()
	o.pipe.Close()
	if note != "" {
		o.capped.Write([]byte(note))
	}
	return o.capped.finish()
}
