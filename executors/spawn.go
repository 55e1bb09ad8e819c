package executors

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child is a process started by spawn. Its exit is awaited through a pidfd
// in non-blocking mode, registered with the Go runtime's network poller, so
// a running child holds a parked goroutine, not an OS thread.
type child struct {
	pid   int
	pidfd *os.File // nil when the kernel gave no pidfd: awaitExit then blocks a thread in waitid
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
// and stderr on out's child end (the null device if none). The caller then
// closes its copy of out's child end, whatever the outcome.
func spawn(path string, argv []string, dir string, env []string, out *taskOutput) (*child, error) {
	null, err := nullDevice()
	if err != nil {
		return nil, err
	}
	stdout := null
	if out.child != nil {
		stdout = out.child
	}
	pidfd := -1
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{null.Fd(), stdout.Fd(), stdout.Fd()},
		Sys: &syscall.SysProcAttr{
			Setpgid:   true, // own group, pgid == pid, so Stop reaches grandchildren
			Pdeathsig: syscall.SIGKILL,
			PidFD:     &pidfd,
		},
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	runtime.KeepAlive(null)
	runtime.KeepAlive(stdout)
	if err != nil {
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	c := &child{pid: pid}
	if pidfd >= 0 {
		// Non-blocking: waitid on it then answers EAGAIN until the child
		// exits (Linux 5.10), and os.NewFile registers it with the poller.
		if err := unix.SetNonblock(pidfd, true); err == nil {
			c.pidfd = os.NewFile(uintptr(pidfd), "pidfd")
		} else {
			unix.Close(pidfd)
		}
	}
	return c, nil
}

// awaitExit blocks until the child has exited, leaving it waitable (a
// zombie): its pid, and thus its process group id, stays reserved until
// reap. Errors are left to reap, which reports them.
func (c *child) awaitExit() {
	if c.pidfd != nil {
		rc, err := c.pidfd.SyscallConn()
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
// awaitExit), and closes its pidfd. While the child is a zombie its pid
// names it alone, so waiting by pid is exact.
func (c *child) reap() (syscall.WaitStatus, error) {
	var status syscall.WaitStatus
	var err error
	for {
		_, err = syscall.Wait4(c.pid, &status, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if c.pidfd != nil {
		c.pidfd.Close()
	}
	if err != nil {
		return 0, os.NewSyscallError("wait4", err)
	}
	return status, nil
}

// taskOutput is where a child's stdout and stderr go: nowhere (the null
// device), the log file itself (no cap: the child writes it), or a pipe
// copied into a cappedLog.
type taskOutput struct {
	child  *os.File // the child's end; nil = the null device
	pipe   *os.File // capped: the read end
	capped *cappedLog
	copied chan struct{} // capped: closed when the copier returned
}

// openOutput prepares job's output: see taskOutput.
func openOutput(job Job) (*taskOutput, error) {
	if job.LogPath == "" {
		return &taskOutput{}, nil
	}
	if job.MaxLogBytes <= 0 {
		f, err := openLog(job.LogPath)
		if err != nil {
			return nil, err
		}
		return &taskOutput{child: f}, nil
	}
	capped, err := openCappedLog(job.LogPath, job.MaxLogBytes)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = capped.finish()
		return nil, fmt.Errorf("create log pipe: %w", err)
	}
	// One pipe for stdout and stderr: they interleave as written.
	return &taskOutput{child: pw, pipe: pr, capped: capped}, nil
}

// spawned is called once the child is running: the child holds its own
// descriptor, so ours is closed, and the copier starts. A quiet child costs
// the copier a parked goroutine and no buffer (see cappedLog.ReadFrom).
func (o *taskOutput) spawned() {
	o.closeChildEnd()
	if o.capped != nil {
		o.copied = make(chan struct{})
		go func() {
			defer close(o.copied)
			_, _ = o.capped.ReadFrom(o.pipe)
		}()
	}
}

func (o *taskOutput) closeChildEnd() {
	if o.child != nil {
		o.child.Close()
		o.child = nil
	}
}

// abort releases everything when the child could not be started.
func (o *taskOutput) abort() {
	o.closeChildEnd()
	if o.capped != nil {
		o.pipe.Close()
		_ = o.capped.finish() // nothing was written: this closes the log
	}
}

// finish completes the log once the leader has exited: it waits for the
// copier to reach the end of the pipe, at most logDrainDelay (other
// members of the group may hold the pipe open), then closes the pipe and
// completes the capped log.
func (o *taskOutput) finish() error {
	if o.capped == nil {
		return nil
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
	return o.capped.finish()
}
