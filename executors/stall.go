package executors

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stallWatch tells a goroutine parked on it that the reactor's loop has
// spent too long finishing an exit itself (see reactor.finishBatch): a
// timerfd, armed before that finish and disarmed after it, in the
// runtime's poller. Arming and disarming it are a system call each and
// wake no thread: a runtime timer armed for the same purpose woke the
// poller's thread (to sleep until the new timer) at every exit, which
// cost as much as handing the exit to a parked goroutine.
type stallWatch struct {
	fd int
	rc syscall.RawConn // of fd, in the runtime's poller
}

func newStallWatch() (*stallWatch, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	return &stallWatch{fd: fd, rc: rc}, nil
}

// arm has the watch fire once d has passed, unless disarmed before; nil
// (a hand-driven reactor's) never fires.
func (w *stallWatch) arm(d time.Duration) {
	if w != nil {
		w.set(unix.NsecToTimespec(int64(d)))
	}
}

// disarm cancels the firing armed, and one that fired but was not yet
// seen by wait.
func (w *stallWatch) disarm() {
	if w != nil {
		w.set(unix.Timespec{})
	}
}

func (w *stallWatch) set(value unix.Timespec) {
	// Fails only for a bad descriptor or value, neither possible here.
	_ = unix.TimerfdSettime(w.fd, 0, &unix.ItimerSpec{Value: value}, nil)
}

// wait parks the calling goroutine until the watch fires.
func (w *stallWatch) wait() {
	var ticks [8]byte
	err := w.rc.Read(func(fd uintptr) bool {
		_, err := unix.Read(int(fd), ticks[:])
		return err != unix.EAGAIN
	})
	if err != nil {
		// The timerfd is never closed: there is no way to go on.
		panic(fmt.Sprintf("orkwal: wait for the reactor's stall watch: %v", err))
	}
}
