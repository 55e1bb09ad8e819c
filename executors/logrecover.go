package executors

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// errCrash is what a crashPoint fails with.
var errCrash = errors.New("crash (test)")

// A crashPoint is a test seam that makes the daemon "crash" at its at-th
// operation on the files (from 1; 0: never): a write, of which only the
// first bytes reach the file, or an fsync, a truncation or a rename, which
// does not happen. That operation and every later one fail with errCrash
// and do nothing. It records the operations it was given.
type crashPoint struct {
	at    int
	bytes int
	ops   []string
}

// op is called before an operation: errCrash if it must not happen.
func (c *crashPoint) op(name string) error {
	c.ops = append(c.ops, name)
	if c.at > 0 && len(c.ops) >= c.at {
		return errCrash
	}
	return nil
}

// writeAt writes b at off in f, or the part that a crash lets through.
func (c *crashPoint) writeAt(f *os.File, b []byte, off int64) error {
	if err := c.op("write"); err != nil {
		if len(c.ops) == c.at {
			f.WriteAt(b[:min(len(b), c.bytes)], off)
		}
		return err
	}
	_, err := f.WriteAt(b, off)
	return err
}

// crashWriter writes to w through a crashPoint.
type crashWriter struct {
	w io.Writer
	c *crashPoint
}

func (cw crashWriter) Write(b []byte) (int, error) {
	if err := cw.c.op("write"); err != nil {
		if len(cw.c.ops) == cw.c.at {
			cw.w.Write(b[:min(len(b), cw.c.bytes)])
		}
		return 0, err
	}
	return cw.w.Write(b)
}

const interruptedNote = "\n[orkwal: attempt interrupted: the daemon stopped]\n"

// RecoverLog completes the log at path of an attempt that a crash of the
// daemon interrupted, as finish would have: the ring beside it (a capped
// log's tail; see logring.go), its bytes in order after the marker when
// output was dropped, is appended, then the line
// "[orkwal: attempt interrupted: the daemon stopped]", and the ring is
// removed. A ring whose header does not read back (a power cut can leave
// it unwritten) is removed unread, and the line says its bytes are lost; a
// ring whose last write did not complete is used without it, and the line
// says how many bytes are lost. Nothing is done when there is no log (the
// attempt wrote nothing). A crash during RecoverLog may leave the ring,
// and the next boot appends it again. The attempt's processes must be
// gone.
func RecoverLog(path string) error {
	log, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Remove(path + tailSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove log tail: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	note := interruptedNote
	ring, err := os.Open(path + tailSuffix)
	switch {
	case err == nil:
		note = recoverRing(log, ring)
		ring.Close()
		if rerr := os.Remove(ring.Name()); rerr != nil {
			err = fmt.Errorf("remove log tail: %w", rerr)
		}
	case errors.Is(err, fs.ErrNotExist):
		err = nil
	default:
		err = fmt.Errorf("open log tail: %w", err)
	}
	if _, werr := io.WriteString(log, note); err == nil && werr != nil {
		err = fmt.Errorf("write log: %w", werr)
	}
	if cerr := log.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close log: %w", cerr)
	}
	return err
}

// recoverRing appends the ring of an interrupted attempt to log, if it
// reads back, and returns the line that ends the log.
func recoverRing(log io.Writer, ring *os.File) string {
	v, _, lost, err := readRing(ring)
	if err == nil {
		err = v.appendTo(log, ring)
	}
	switch {
	case err == nil && lost > 0:
		return fmt.Sprintf("\n[orkwal: attempt interrupted: the daemon stopped; its last %d bytes of output are lost]\n", lost)
	case err == nil || errors.Is(err, errRingEmpty):
		return interruptedNote
	}
	return fmt.Sprintf("\n[orkwal: attempt interrupted: the daemon stopped; the end of its output is lost (%v)]\n", err)
}
