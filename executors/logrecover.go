package executors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/orkwal/orkwal/wal"
)

// The log of an attempt a crash interrupted is completed at boot, before
// the engine records the interruption, in steps that can each be cut by
// another crash or a power cut, and are all redone at the next boot until
// the record is durable (docs/format.md, Task logs, gives what the disk
// can hold after each):
//
//  1. fsync the log: what the attempt wrote, as the kernel holds it, is
//     durable.
//  2. make the completion's source durable at LogPath+".tail": a ring
//     that reads back is fsynced as it is; otherwise (no ring, an empty
//     one, or one that does not read back) a recovery record, the log's
//     length and the line to append, is written to LogPath+".tail.tmp",
//     fsynced, and renamed over LogPath+".tail".
//  3. fsync the log's folder.
//  4. cut the log to the base (the ring's E, or the record's length),
//     append the completion (from the ring, or the record's line), fsync
//     the log.
//
// From step 3 on, LogPath+".tail" is durable and no step changes it, so
// step 4 appends the same bytes at the same place however often it is
// redone: a crash anywhere leaves the log either before its completion
// (then redone) or complete. The engine then records the attempt as
// interrupted and calls EndLogRecovery, which removes LogPath+".tail":
// the attempt is no longer in flight, and RecoverLog is never called for
// it again.

// The recovery record (LogPath+".tail" when the log has no ring to be
// completed from):
//
//	offset size
//	0      8    magic "orkrcvr1"
//	8      8    the log's length before the line (little-endian uint64)
//	16     4    n, the line's length (little-endian uint32)
//	20     4    CRC-32C of bytes 0 to 19 and of the line
//	24     n    the line
const (
	recordMagic  = "orkrcvr1"
	recordHeader = 24
	recordMax    = 4 << 10 // no line is longer
	tmpSuffix    = ".tmp"  // of the record being written
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

// RecoverLog completes the log at path of an attempt that a crash of the
// daemon interrupted, as finish would have (the ring beside it, its bytes
// in order after the marker when output was dropped), then appends the
// line "[orkwal: attempt interrupted: the daemon stopped]", in the steps
// above. It can be called again until EndLogRecovery is: the log is
// completed once. A ring whose header does not read back is not used, and
// the line says the end of the output is lost; a ring whose last write did
// not complete is used without it, and the line says how many bytes are
// lost. Nothing is done when there is no log (the attempt wrote nothing).
// The attempt's processes must be gone.
func RecoverLog(path string) error { return recoverLog(path, nil) }

// EndLogRecovery removes what RecoverLog kept beside the log at path, once
// the attempt's interruption is durable. Missing files are no error.
func EndLogRecovery(path string) error {
	for _, name := range []string{path + tailSuffix, path + tailSuffix + tmpSuffix} {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove log tail: %w", err)
		}
	}
	return nil
}

const interruptedNote = "\n[orkwal: attempt interrupted: the daemon stopped]\n"

// recovery is one RecoverLog: the log, the source of its completion, and
// the test seam crash (nil: none).
type recovery struct {
	path  string
	log   *os.File
	crash *crashPoint
}

func recoverLog(path string, crash *crashPoint) error {
	log, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return EndLogRecovery(path) // nothing to complete, nothing appended
	}
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	r := &recovery{path: path, log: log, crash: crash}
	err = r.run()
	if cerr := log.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close log: %w", cerr)
	}
	return err
}

// run does the steps; the completion's source is open meanwhile.
func (r *recovery) run() error {
	if err := r.sync(r.log, "fsync log"); err != nil { // 1
		return err
	}
	src, err := r.source() // 2
	if err != nil {
		return err
	}
	if src.ring != nil {
		defer src.ring.Close()
	}
	if err := r.syncDir(); err != nil { // 3
		return err
	}
	return r.complete(src) // 4
}

// source is where a log's completion comes from: a ring (its view, the
// log's length before it, and the line after it) or a record's line.
type source struct {
	ring *os.File
	view ringView
	base int64
	line string
}

// source opens the ring beside the log, fsyncs it if it reads back, and
// returns it; otherwise it writes the recovery record, or reads the one
// an earlier try wrote.
func (r *recovery) source() (source, error) {
	ringPath := r.path + tailSuffix
	ring, err := os.Open(ringPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return source{}, fmt.Errorf("open log tail: %w", err)
	}
	line := interruptedNote
	if err == nil {
		if src, ok := readRecord(ring); ok {
			ring.Close()
			return src, nil
		}
		view, base, lost, rerr := readRing(ring)
		switch {
		case rerr == nil:
			if lost > 0 {
				line = fmt.Sprintf("\n[orkwal: attempt interrupted: the daemon stopped; its last %d bytes of output are lost]\n", lost)
			}
			if err := r.sync(ring, "fsync ring"); err != nil {
				ring.Close()
				return source{}, err
			}
			return source{ring: ring, view: view, base: base, line: line}, nil
		case !errors.Is(rerr, errRingEmpty):
			line = fmt.Sprintf("\n[orkwal: attempt interrupted: the daemon stopped; the end of its output is lost (%v)]\n", rerr)
		}
		ring.Close()
	}
	if len(line) > recordMax {
		line = line[:recordMax-2] + "]\n"
	}
	fi, err := r.log.Stat()
	if err != nil {
		return source{}, fmt.Errorf("stat log: %w", err)
	}
	src := source{base: fi.Size(), line: line}
	return src, r.writeRecord(src)
}

// readRecord reads the recovery record an earlier try wrote at f, if f
// is one.
func readRecord(f *os.File) (source, bool) {
	b := make([]byte, recordHeader+recordMax)
	n, _ := f.ReadAt(b, 0)
	b = b[:n]
	le := binary.LittleEndian
	if n < recordHeader || string(b[:8]) != recordMagic {
		return source{}, false
	}
	size := int(le.Uint32(b[16:]))
	if size > n-recordHeader {
		return source{}, false
	}
	sum := crc32.Update(crc32.Checksum(b[:20], castagnoli), castagnoli, b[recordHeader:recordHeader+size])
	if sum != le.Uint32(b[20:]) {
		return source{}, false
	}
	return source{base: int64(le.Uint64(b[8:])), line: string(b[recordHeader : recordHeader+size])}, true
}

// writeRecord writes src's record to LogPath+".tail.tmp", fsyncs it and
// renames it over LogPath+".tail".
func (r *recovery) writeRecord(src source) error {
	le := binary.LittleEndian
	b := make([]byte, recordHeader, recordHeader+len(src.line))
	copy(b, recordMagic)
	le.PutUint64(b[8:], uint64(src.base))
	le.PutUint32(b[16:], uint32(len(src.line)))
	b = append(b, src.line...)
	le.PutUint32(b[20:], crc32.Update(crc32.Checksum(b[:20], castagnoli), castagnoli, b[recordHeader:]))
	tmp := r.path + tailSuffix + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write recovery record: %w", err)
	}
	err = r.writeAt(f, b)
	if err == nil {
		err = r.sync(f, "fsync record")
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = r.op("rename record")
	}
	if err == nil {
		err = os.Rename(tmp, r.path+tailSuffix)
	}
	if err != nil {
		return fmt.Errorf("write recovery record: %w", err)
	}
	return nil
}

// complete cuts the log to src's base (extending it with zero bytes if a
// power cut left it shorter), appends the completion and fsyncs the log.
func (r *recovery) complete(src source) error {
	if err := r.op("truncate log"); err != nil {
		return err
	}
	if err := r.log.Truncate(src.base); err != nil {
		return fmt.Errorf("cut log: %w", err)
	}
	var w io.Writer = r.log
	if r.crash != nil {
		w = crashWriter{w, r.crash}
	}
	if src.ring != nil {
		if err := src.view.appendTo(w, src.ring); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, src.line); err != nil {
		return fmt.Errorf("write log: %w", err)
	}
	return r.sync(r.log, "fsync log")
}

// op passes the operation name to the test seam, if any.
func (r *recovery) op(name string) error {
	if r.crash == nil {
		return nil
	}
	return r.crash.op(name)
}

func (r *recovery) sync(f *os.File, name string) error {
	if err := r.op(name); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (r *recovery) writeAt(f *os.File, b []byte) error {
	if r.crash != nil {
		return r.crash.writeAt(f, b, 0)
	}
	_, err := f.WriteAt(b, 0)
	return err
}

// syncDir fsyncs the log's folder: LogPath+".tail" (created, or renamed
// into place) is durable.
func (r *recovery) syncDir() error {
	if err := r.op("fsync folder"); err != nil {
		return err
	}
	if err := wal.SyncDir(filepath.Dir(r.path)); err != nil {
		return fmt.Errorf("fsync log folder: %w", err)
	}
	return nil
}
