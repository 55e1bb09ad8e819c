package executors

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reactor watches every running process started by Process, and moves the
// output of those with a capped log, from one goroutine: the pidfd of each
// child and the read end of its log pipe are registered in one epoll
// instance, and the reactor's goroutine waits for any of them to be ready
// (the epoll instance is itself watched by the Go runtime's poller, so the
// waiting goroutine holds no thread).
//
// A running task thus holds no goroutine: where a goroutine parked on the
// pidfd and another on the pipe cost a few KiB of stack each, thousands of
// running tasks made tens of MiB. What a task holds while it runs is its
// proc (a few hundred bytes), its descriptors and its cappedLog.
//
// The reactor reads a readable pipe into its one buffer and appends that
// to the task's cappedLog (one read per readiness, so a chatty task does
// not starve the others). While a log file is being created its output is
// kept in memory; once that holds maxEarly bytes the reactor stops
// watching the pipe until the file exists (see pause), instead of waiting
// for it. When a pidfd becomes readable the child has
// exited: the reactor reaps it and disarms Stop in one step (reapExited), and keeps
// reading its pipe until EOF or logDrainDelay (members of the group left
// running may hold the pipe open), then closes the pipe and hands the rest
// (completing the log, reading the output file, reporting Finished) to a
// finishing goroutine (see finisher), so that a report function that
// blocks never holds up the other tasks.
//
// Writing the logs is the loop's own work: all output passes through one
// goroutine (one core's worth of copying, where each task's copier could
// run on any core), and a write that stalls on the disk stalls the loop:
// exits and output are then noticed late (the descriptors are
// level-triggered: nothing is lost), and a task that fills its pipe waits,
// as it did behind its own copier. The engine's log on the same disk
// stalls too.
//
// It is used when the kernel gives a pidfd (Linux 5.3); otherwise, or if
// the epoll instance cannot be created or a process not registered, each
// process is awaited by its own goroutines as before (see Process.Start).
type reactor struct {
	epfd int
	file *os.File        // epfd, in the runtime's poller
	rc   syscall.RawConn // of file

	mu    sync.Mutex
	procs fdTable // by descriptor: the pidfd and the pipe of each proc

	// Owned by the loop goroutine.
	buf      []byte  // the one read buffer (copyBufSize)
	draining []*proc // exited, still reading their pipe: by deadline (a FIFO, as every wait is logDrainDelay)
	closing  []int   // descriptors to close once the current batch is handled
	finished bool    // the current batch handed a proc to finish

	finisher *finisher  // runs each exited proc's finishing work
	waitid   waitidFunc // unix.Waitid, but in tests

	// unwatchStep, when set (by tests), is called by unwatch between its
	// two steps, without r.mu: a seam to interleave resume there.
	unwatchStep func(fd int)
}

// proc is a running process watched by the reactor. It and its
// processHandle are all a running process keeps in the daemon's memory
// (issue 27: memory per running task): its job is reduced to finishInfo.
type proc struct {
	pid    int
	pidfd  int // -1 once reaped
	pipe   int // the log pipe's read end; -1 when none or closed
	h      *processHandle
	fin    finishInfo // fin.capped: the log the pipe goes to
	report func(Event)

	// paused is the pipe, while the reactor does not read it because its
	// log is being created (see pause); -1 otherwise. Guarded by r.mu.
	paused int

	done bool      // handed to finish
	exit *procExit // once the child has exited; nil while it runs
}

// procExit is what a proc holds once its child has exited: a running
// process does not carry it (issue 27: memory per running task).
type procExit struct {
	status   syscall.WaitStatus
	waitErr  error
	deadline time.Time // its pipe still open: when it is closed anyway
}

// finishInfo is what the Finished event of a job needs from it, and all
// that a running process keeps of the job.
type finishInfo struct {
	p              *Process // its logger and its cleaned hook; nil in tests
	taskID         string
	attempt        int
	logPath        string
	outputPath     string
	input          *sharedFile // its input, released once it is reported
	maxOutputBytes int64       // of its output file, and of its ORK_OUTPUT line
	// Where its ORK_OUTPUT line is, once its log is complete (see
	// orkOutput): capped.lines, or, with an uncapped log, the log file
	// from fileFrom on.
	capped   *cappedLog
	fileFrom int64
}

// fdTable is the reactor's procs by descriptor: a slice indexed by the
// descriptor's number, 8 bytes a number up to the highest watched so far
// (a process's descriptors are its lowest free numbers: dense), where a
// map took about 29 bytes an entry, two entries a running process (issue
// 27: memory per running task). Guarded by the reactor's mu.
type fdTable []*proc

// get is the proc watching fd, nil if none.
func (t fdTable) get(fd int) *proc {
	if fd < 0 || fd >= len(t) {
		return nil
	}
	return t[fd]
}

// set makes p the proc watching fd (>= 0); nil when it is no longer
// watched.
func (t *fdTable) set(fd int, p *proc) {
	for len(*t) <= fd {
		*t = append(*t, nil)
	}
	(*t)[fd] = p
}

// theReactor is the process-wide reactor, started on first use; nil (with
// the error) when no epoll instance could be created or polled.
var theReactor = sync.OnceValues(newReactor)

func newReactor() (*reactor, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// An epoll instance is itself pollable (readable when one of its
	// descriptors is ready): non-blocking, os.NewFile registers it with
	// the runtime's poller, where the loop parks like any goroutine
	// waiting for I/O. A goroutine blocked in epoll_wait instead would
	// hold a thread, and each wake-up would cost a hand-off of the
	// scheduler's P (about a third more CPU per task, measured).
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	// Only a file in the poller takes a deadline.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("epoll instance not pollable: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("epoll instance: %w", err)
	}
	r := &reactor{epfd: epfd, file: f, rc: rc, buf: make([]byte, copyBufSize), finisher: newFinisher(finisherIdle), waitid: unix.Waitid}
	go r.loop()
	return r, nil
}

// add registers p, whose pidfd is open and whose child is not reaped. On
// error nothing is registered. r.mu is held throughout, so the loop, which
// looks procs up under it, handles none of p's events before add is done.
func (r *reactor) add(p *proc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.paused = -1
	// Level-triggered: a readiness not acted upon is reported again.
	if p.pipe >= 0 {
		if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, p.pipe, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p.pipe)}); err != nil {
			return fmt.Errorf("watch log pipe: %w", os.NewSyscallError("epoll_ctl", err))
		}
	}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, p.pidfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p.pidfd)}); err != nil {
		if p.pipe >= 0 {
			_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, p.pipe, nil)
		}
		return fmt.Errorf("watch pidfd: %w", os.NewSyscallError("epoll_ctl", err))
	}
	r.procs.set(p.pidfd, p)
	if p.pipe >= 0 {
		r.procs.set(p.pipe, p)
	}
	return nil
}

// loop is the reactor's goroutine; it never returns.
func (r *reactor) loop() {
	events := make([]unix.EpollEvent, 128)
	var deadline time.Time // of the file: the first drain deadline
	for {
		if next := r.nextDeadline(); !next.Equal(deadline) {
			deadline = next
			_ = r.file.SetReadDeadline(deadline)
		}
		var n int
		var werr error
		// The runtime's poller watches the epoll instance edge-triggered:
		// park only once epoll_wait finds nothing ready (descriptors are
		// level-triggered inside it, so what was left is found again), and
		// anything that becomes ready later wakes the loop.
		err := r.rc.Read(func(fd uintptr) bool {
			for {
				n, werr = unix.EpollWait(int(fd), events, 0)
				if werr != unix.EINTR {
					break
				}
			}
			return n > 0 || werr != nil
		})
		switch {
		case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
			// The epoll file is never closed: there is no way to go on.
			panic(fmt.Sprintf("orkwal: wait for the reactor: %v", err))
		case werr != nil:
			// Only EBADF, EFAULT or EINVAL, none of which can happen to
			// this epfd and buffer.
			panic(fmt.Sprintf("orkwal: epoll_wait: %v", werr))
		}
		if err == nil {
			for _, ev := range events[:n] {
				r.mu.Lock()
				p := r.procs.get(int(ev.Fd))
				paused := p != nil && p.paused == int(ev.Fd)
				r.mu.Unlock()
				switch {
				case p == nil, paused:
				case int(ev.Fd) == p.pipe:
					r.readPipe(p)
				case int(ev.Fd) == p.pidfd:
					r.exited(p)
				}
			}
		}
		if r.finished {
			// The finishing goroutines run now, on this processor, before
			// the rest of the batch's work and the next wait: a chain's
			// next step waits for their reports.
			r.finished = false
			runtime.Gosched()
		}
		r.expire(time.Now())
		for _, fd := range r.closing {
			unix.Close(fd)
		}
		r.closing = r.closing[:0]
	}
}

// nextDeadline is the drain deadline of the first proc still draining, or
// the zero time.
func (r *reactor) nextDeadline() time.Time {
	for _, p := range r.draining {
		if !p.done {
			return p.exit.deadline
		}
	}
	return time.Time{}
}

// unwatch removes fd from the table, then from the epoll instance; it is
// closed after the current batch, so that its number cannot be reused (by
// a Start meanwhile) while events of the batch may still name it.
//
// The table first: resume, on another goroutine, switches a pipe back
// only if the table still names it under r.mu, so it never finds an entry
// whose descriptor has left the epoll instance (its epoll_ctl would fail,
// and warn of a log incomplete that is not). An event of the batch that
// names fd meanwhile finds no proc and is skipped.
func (r *reactor) unwatch(fd int) {
	r.mu.Lock()
	r.procs.set(fd, nil)
	r.mu.Unlock()
	if r.unwatchStep != nil {
		r.unwatchStep(fd)
	}
	_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	r.closing = append(r.closing, fd)
}

// readPipe does one read of p's pipe: output goes to the log; EOF (every
// writer closed the pipe) or an error ends the copy.
func (r *reactor) readPipe(p *proc) {
	var n int
	var err error
	for {
		n, err = unix.Read(p.pipe, r.buf)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.EAGAIN:
		return // nothing after all
	case n > 0:
		if p.fin.capped.offer(r.buf[:n]) {
			r.pause(p)
		}
		return
	}
	r.unwatch(p.pipe)
	p.pipe = -1
	if p.exit != nil {
		r.finish(p)
	}
}

// pause stops reading p's pipe while its log is being created and holds
// maxEarly bytes of output in memory: the pipe is switched to
// edge-triggered with no event asked for (only a hang-up is reported, once,
// and the loop skips it) until the log's creation is done (see resume).
// The epoll item stays: switching it back allocates nothing, so it cannot
// fail for want of memory. If the switch fails all the same, the reactor
// waits for the creation, as Write does.
func (r *reactor) pause(p *proc) {
	r.mu.Lock()
	err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_MOD, p.pipe, &unix.EpollEvent{Events: unix.EPOLLET, Fd: int32(p.pipe)})
	if err == nil {
		p.paused = p.pipe
	}
	r.mu.Unlock()
	if err != nil || !p.fin.capped.whenCreated(func() { r.resume(p) }) {
		if err != nil {
			p.fin.capped.created()
		}
		r.resume(p) // the creation is done already
	}
}

// resume reads p's pipe again, if the reactor still watches it (it is
// closed once p's drain deadline passes: see expire). Called by the
// log's creation once it is done, on another goroutine than the loop.
func (r *reactor) resume(p *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fd := p.paused
	if fd < 0 {
		return
	}
	p.paused = -1
	if r.procs.get(fd) != p {
		return // closed meanwhile
	}
	// Level-triggered again: what is in the pipe is reported at once.
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
		// Cannot happen to a registered descriptor: the pipe is then
		// read no more, and closed at its drain deadline.
		p.fin.logIncomplete(fmt.Errorf("watch log pipe again: %w", os.NewSyscallError("epoll_ctl", err)))
	}
}

// exited handles a readable pidfd: the child has exited, unless the event
// is stale. One waitid reaps it, and marks it exited (Stop no longer
// signals its group) under the handle's lock (see reapExited).
func (r *reactor) exited(p *proc) {
	status, exited, waitErr := p.h.reapExited(r.waitid, p.pidfd)
	if !exited {
		return
	}
	p.exit = &procExit{status: status, waitErr: waitErr}
	r.unwatch(p.pidfd)
	p.pidfd = -1
	if p.pipe < 0 {
		r.finish(p)
		return
	}
	p.exit.deadline = time.Now().Add(logDrainDelay)
	r.draining = append(r.draining, p)
}

// expire closes the pipes of the exited procs whose drain deadline passed:
// what the rest of their group writes after that is lost. A pipe that is
// paused (its log still being created) gets another logDrainDelay from
// now instead: what the task wrote before its exit is not lost to a slow
// creation.
func (r *reactor) expire(now time.Time) {
	var again []*proc
	i := 0
	for ; i < len(r.draining); i++ {
		p := r.draining[i]
		if p.done {
			continue // its pipe reached EOF in time
		}
		if p.exit.deadline.After(now) {
			break
		}
		r.mu.Lock()
		paused := p.paused >= 0
		r.mu.Unlock()
		if paused {
			p.exit.deadline = now.Add(logDrainDelay) // after every other deadline
			again = append(again, p)
			continue
		}
		r.unwatch(p.pipe)
		p.pipe = -1
		r.finish(p)
	}
	clear(r.draining[:i])
	r.draining = append(r.draining[i:], again...)
	if len(r.draining) == 0 {
		r.draining = nil // let the backing array go
	}
}

// finish hands p, reaped and with its pipe closed, to a finishing
// goroutine (see finisher) that completes the log and reports Finished.
func (r *reactor) finish(p *proc) {
	p.done = true
	r.finisher.run(func() {
		note := p.h.stopNote()
		if p.fin.capped != nil {
			if note != "" {
				p.fin.capped.Write([]byte(note))
			}
			p.fin.logIncomplete(p.fin.capped.finish())
		} else {
			p.fin.logIncomplete(appendNote(p.fin.logPath, note))
		}
		p.fin.report(p.exit.status, p.exit.waitErr, p.report)
	})
	r.finished = true
}

// logIncomplete warns of a log that could not be completed (err != nil).
// It does not change the outcome of the task; the log notes a write error
// itself when it can (see cappedLog.finish).
func (f finishInfo) logIncomplete(err error) {
	if logger := f.logger(); err != nil && logger != nil {
		logger.Warn("task log incomplete", "task", f.taskID, "attempt", f.attempt, "log", f.logPath, "err", err)
	}
}

// logger is the executor's logger, nil when there is none.
func (f finishInfo) logger() *slog.Logger {
	if f.p == nil {
		return nil
	}
	return f.p.cfg.Logger
}
