package executors

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// logDrainDelay bounds how long Finished waits, after the task's process
// exited, for the rest of its process group to close the log pipe (the
// capped log only: see cappedLog). It is the Cmd.WaitDelay of the command.
const logDrainDelay = 2 * time.Second

// tailSuffix names the sidecar file that holds the ring of a capped log.
const tailSuffix = ".tail"

// copyBufSize is the size of the pooled buffers that move output from the
// pipe to the log files: a pipe's default capacity, so one read can take
// all that is in the pipe (32 KiB copies about a third slower).
const copyBufSize = 64 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// logMarker is the line put between the head and the tail of a log whose
// output exceeded the cap: omitted bytes were dropped, head and tail kept.
func logMarker(omitted, head, tail int64) string {
	return fmt.Sprintf("\n[orkwal: %d bytes of output omitted; the log keeps the first %d and the last %d bytes]\n",
		omitted, head, tail)
}

// splitCap splits a cap into the head and the tail a log keeps.
func splitCap(maxBytes int64) (head, tail int64) {
	head = maxBytes / 2
	return head, maxBytes - head
}

// cappedLog is the stdout and stderr of one attempt when Job.MaxLogBytes is
// set. Output up to the cap reaches the log file byte for byte; beyond it,
// the log keeps the first half of the cap (the head) and the last half (the
// tail) with the marker of logMarker between them.
//
// The head is written straight to the log file (a follower of the log sees
// it as it comes). The rest goes to a sidecar file, LogPath+".tail", used as
// a ring the size of the tail. finish, called once the process is done,
// appends the ring's content in order to the log (after the marker if some
// output was dropped) and removes the sidecar: the log file is only ever
// appended to, and complete when Finished is reported.
//
// The log file (and its folder) is created on the first byte of output,
// by a goroutine of its own (see create): an attempt that writes nothing
// has no log file. Output that arrives meanwhile is kept in memory. Once
// that holds maxEarly bytes, more output waits for the file: the reactor,
// which hands output to offer, stops reading that task's pipe until the
// file exists (the task then blocks on a full pipe, as it would behind a
// slow disk), and never waits itself, so a burst from one task does not
// hold up the other tasks' output and exits; the copier goroutine of the
// way without the reactor, which calls Write, waits. Why create late:
// creating a file and a folder were half the work of starting a quiet
// task, and on ext4 each creation can take a few hundred microseconds (the
// inode allocator skips recently freed inodes), on the path from one
// task's end to the next one's start.
//
// Memory is bounded and does not depend on the cap: the struct (80 bytes
// for a task that wrote nothing; the part output needs, logWrite, comes
// with its first byte), and while the log is being created the output
// received meanwhile (under maxEarly bytes plus one read, at most
// copyBufSize, in a slice grown by append);
// output is moved through the reactor's one buffer (see reactor), or,
// without the reactor and only while output is being moved, a pooled copy
// buffer (see ReadFrom).
//
// A write error (disk full, log or sidecar not creatable) does not stop
// the task: later output is counted but dropped, finish notes the error in
// the log if it can, and returns it.
type cappedLog struct {
	mu        sync.Mutex // Write may be called from several goroutines
	path      string
	open      func(path string) (*os.File, error) // openLog; tests delay it
	maxBytes  int64                               // the cap: head and tail (splitCap)
	maxOutput int64                               // lines' cap
	crash     *crashPoint                         // a test seam for the ring's writes; nil
	lines     *outputLines                        // sees every byte of output, in order; nil until the first (see take)
	done      bool                                // finish was called

	// *logWrite is nil until the first byte of output (take): a quiet
	// task, as most running tasks are, holds only the fields above
	// (issue 27: memory per running task). Its fields are promoted: read
	// them as the cappedLog's once it is set.
	*logWrite
}

// logWrite is the part of a cappedLog that output needs: the log file, its
// creation, the ring. Guarded by the cappedLog's mu.
type logWrite struct {
	log       *os.File      // opened for appending; nil until created
	creating  chan struct{} // made when create starts, closed when it is done
	early     []byte        // output received while the log is being created
	onCreated func()        // set by whenCreated: called once create is done
	ring      *os.File      // created on the first byte past the head
	headLeft  int64         // head bytes still to write to the log
	headSize  int64
	tailSize  int64 // the ring's size, > 0
	ringBytes int64 // bytes ever given to the ring (its write position)
	ringBase  int64 // the log's length once its head was written
	err       error // the first write error; output is dropped after it
}

// maxEarly bounds the output a cappedLog keeps in memory while its log
// file is being created: once it holds that much, more output waits for
// the file (Write waits; offer tells its caller to stop reading).
const maxEarly = 16 << 10

// newCappedLog returns a cappedLog of maxBytes (> 0) writing to path,
// which it creates (and its folder) on the first byte of output, opened
// for appending as openLog does.
func newCappedLog(path string, maxBytes int64) (*cappedLog, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("log cap %d is not positive", maxBytes)
	}
	return &cappedLog{path: path, open: openLog, maxBytes: maxBytes}, nil
}

// ringPath is the path of the log's ring (its sidecar).
func (c *cappedLog) ringPath() string { return c.path + tailSuffix }

// writing gives c the part that output needs, on its first byte. Called
// with mu held.
func (c *cappedLog) writing() {
	if c.logWrite == nil {
		head, tail := splitCap(c.maxBytes)
		c.logWrite = &logWrite{headLeft: head, headSize: head, tailSize: tail}
	}
}

// earlyBytes is the output kept while the log is being created.
func (c *cappedLog) earlyBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logWrite == nil {
		return 0
	}
	return len(c.early)
}

// Write takes output of the task, first waiting for the log's creation if
// the output kept meanwhile holds maxEarly bytes. It always reports len(p)
// written: a failing log must not make the pipe copier stop, which would
// leave the task blocked on a full pipe or killed by SIGPIPE.
func (c *cappedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.earlyFull() {
		creating := c.creating
		c.mu.Unlock()
		<-creating // create took c.early first: order is kept
		c.mu.Lock()
	}
	c.take(p)
	c.mu.Unlock()
	return len(p), nil
}

// offer takes output of the task like Write, but never waits: it returns
// true when the output kept while the log is being created (p included)
// holds maxEarly bytes or more. The caller must then give no more output
// until the creation is done (see whenCreated). Offers and Writes are
// kept in the order they are given.
func (c *cappedLog) offer(p []byte) (full bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.take(p)
	return c.earlyFull()
}

// whenCreated arranges for f to be called, from another goroutine, once
// the log's creation is done, and returns true; it returns false, and
// never calls f, if no creation is under way. One f at a time.
func (c *cappedLog) whenCreated(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.beingCreated() {
		return false
	}
	c.onCreated = f
	return true
}

// beingCreated: the log's creation started and is not done. Called with
// mu held.
func (c *cappedLog) beingCreated() bool {
	return c.logWrite != nil && c.creating != nil && c.log == nil && c.err == nil && !c.done
}

// earlyFull: the log is being created and the output kept meanwhile holds
// maxEarly bytes or more. Called with mu held.
func (c *cappedLog) earlyFull() bool {
	return c.beingCreated() && len(c.early) >= maxEarly
}

// take writes p to the log, or keeps it until the log is created
// (starting the creation on the first byte). Called with mu held.
func (c *cappedLog) take(p []byte) {
	if len(p) == 0 {
		return // creates no log, and needs none
	}
	if c.done {
		return
	}
	if c.lines == nil {
		c.lines = newOutputLines(c.maxOutput) // a quiet task never has one
	}
	c.lines.feed(p) // before the log: a log that failed still has its output line
	c.writing()
	if c.err != nil {
		return
	}
	if c.log == nil {
		if c.creating == nil {
			c.creating = make(chan struct{})
			go c.create()
		}
		c.early = append(c.early, p...)
		return
	}
	c.put(p)
}

// create creates the log file, then writes to it what was kept meanwhile,
// and calls the function given to whenCreated, if any, before created
// returns.
func (c *cappedLog) create() {
	f, err := c.open(c.path)
	c.mu.Lock()
	if err != nil {
		c.err = err
	} else {
		c.log = f
		c.put(c.early)
	}
	c.early = nil
	onCreated := c.onCreated
	c.onCreated = nil
	c.mu.Unlock()
	if onCreated != nil {
		onCreated()
	}
	close(c.creating)
}

// created waits until the creation of the log, if one started, is done.
func (c *cappedLog) created() {
	c.mu.Lock()
	var creating chan struct{}
	if c.logWrite != nil {
		creating = c.creating
	}
	c.mu.Unlock()
	if creating != nil {
		<-creating
	}
}

// put writes p to the head and the ring; the log is open. Called with mu
// held.
func (c *cappedLog) put(p []byte) {
	if c.headLeft > 0 {
		k := int(min(int64(len(p)), c.headLeft))
		if _, err := c.log.Write(p[:k]); err != nil {
			c.err = fmt.Errorf("write log: %w", err)
			return
		}
		c.headLeft -= int64(k)
		p = p[k:]
	}
	if len(p) > 0 {
		if err := c.writeRing(p); err != nil {
			c.err = err
		}
	}
}

// ReadFrom copies r to c until EOF or an error of r. io.Copy, thus the
// pipe copier of os/exec, calls it instead of using a buffer of its own (32
// KiB that would stay allocated for the whole life of the task).
//
// When r exposes its descriptor (syscall.Conn: os/exec hands over its pipe,
// an *os.File, in a wrapper that keeps that method), ReadFrom waits for it
// to be readable through the runtime poller and takes a pooled buffer only
// once data is there: a quiet task holds no buffer. Otherwise it reads into
// a pooled buffer held while the read blocks.
func (c *cappedLog) ReadFrom(r io.Reader) (int64, error) {
	if sc, ok := r.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			return c.readFromRaw(rc)
		}
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	var written int64
	for {
		n, err := r.Read(*bp)
		if n > 0 {
			c.Write((*bp)[:n])
			written += int64(n)
		}
		if err == io.EOF {
			return written, nil
		}
		if err != nil {
			return written, err
		}
	}
}

// readFromRaw is ReadFrom over a descriptor: it reads only when the poller
// says there is data, into a buffer taken from the pool for that read.
func (c *cappedLog) readFromRaw(rc syscall.RawConn) (int64, error) {
	var written int64
	for {
		var (
			bp   *[]byte
			n    int
			rerr error
		)
		err := rc.Read(func(fd uintptr) bool {
			bp = copyBufs.Get().(*[]byte)
			for {
				n, rerr = unix.Read(int(fd), *bp)
				if rerr != unix.EINTR {
					break
				}
			}
			if rerr == unix.EAGAIN {
				copyBufs.Put(bp)
				bp = nil
				return false // wait for data without holding a buffer
			}
			return true
		})
		if bp != nil {
			if n > 0 {
				c.Write((*bp)[:n])
				written += int64(n)
			}
			copyBufs.Put(bp)
		}
		switch {
		case err != nil: // the pipe was closed under us (WaitDelay)
			return written, err
		case rerr != nil:
			return written, os.NewSyscallError("read", rerr)
		case n == 0:
			return written, nil // EOF: every writer closed the pipe
		}
	}
}

// finish completes the log, once its creation is done if one started:
// the ring's content, in order, after the marker when output was dropped;
// a note of a write error; then it removes the sidecar and closes the
// files. It must be called once no more Write can come (after cmd.Wait
// returned); later Writes are dropped. A task that wrote nothing has no
// log file, and finish does nothing.
func (c *cappedLog) finish() error {
	c.created()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	c.done = true
	if c.logWrite == nil {
		return nil // nothing written: no log
	}
	if c.log == nil {
		return c.err // the log could not be created
	}
	err := c.err
	if c.ring != nil {
		if err == nil {
			err = c.appendRing()
		}
		if cerr := c.ring.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close log tail: %w", cerr)
		}
		if rerr := os.Remove(c.ringPath()); err == nil && rerr != nil {
			err = fmt.Errorf("remove log tail: %w", rerr)
		}
	}
	if c.err != nil {
		// Best effort: the error may well be the log's own.
		_, _ = fmt.Fprintf(c.log, "\n[orkwal: log incomplete: %v]\n", c.err)
	}
	if cerr := c.log.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close log: %w", cerr)
	}
	return err
}
