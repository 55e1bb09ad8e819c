package executors

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stallWatch wakes the reactor's standby goroutine when something is
// ready for the loop while the loop's goroutine finishes an exit itself
// (see reactor.finishBatch): an epoll instance of its own, in the
// runtime's poller, that holds the reactor's epoll instance only while
// that finish runs (armed). Arming and disarming it are a system call
// each and wake no thread; the standby is woken only when there is work
// for the loop meanwhile (another exit, output), so that it is done
// beside the finish, as a finishing goroutine of its own allowed. A
// runtime timer armed around the finish instead woke the poller's thread
// at every exit, and a timer still left an exit waiting behind a finish
// that starts the next process.
type stallWatch struct {
	fd     int             // the watch's epoll instance
	target int             // the reactor's epoll instance
	rc     syscall.RawConn // of fd, in the runtime's poller
}

func newStallWatch(target int) (*stallWatch, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stall watch: %w", err)
	}
	return &stallWatch{fd: fd, target: target, rc: rc}, nil
}

// arm has the watch wake its waiter once the reactor's epoll instance has
// anything ready (at once if it has already); false if it could not be
// armed (no memory for the epoll item). A nil watch (a hand-driven
// reactor's) never wakes anyone.
func (w *stallWatch) arm() bool {
	if w == nil {
		return true
	}
	return unix.EpollCtl(w.fd, unix.EPOLL_CTL_ADD, w.target, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.target)}) == nil
}

// disarm undoes arm.
func (w *stallWatch) disarm() {
	if w != nil {
		_ = unix.EpollCtl(w.fd, unix.EPOLL_CTL_DEL, w.target, nil)
	}
}

// wait parks the calling goroutine until the watch is armed and the
// reactor's epoll instance has something ready.
func (w *stallWatch) wait() {
	var ev [1]unix.EpollEvent
	err := w.rc.Read(func(fd uintptr) bool {
		n, err := unix.EpollWait(int(fd), ev[:], 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
	if err != nil {
		// The epoll instance is never closed: there is no way to go on.
		panic(fmt.Sprintf("orkwal: wait for the reactor's stall watch: %v", err))
	}
}
