package wal

import (
	"errors"
	"fmt"
	"os"
)

// The one seam for fault injection: every change this package makes to a
// log's folder or its files (the lock file aside: lock.go), every fsync,
// and every fault point (Options.Fault: an append's, Open's tail fsync,
// TruncateFront's) go through doIO, which calls ioHook first. So a test
// can log any sequence of calls (Open's recovery, an append's write,
// padding, fdatasync and take-back, a segment's creation, the mark,
// TruncateFront, CutAt) and fail any of them in its place: fsio_test.go
// checks that every change is made durable before Open returns, in the
// order the comments at each step argue. Options.Fault is how other
// packages (the engine's tests, the power-loss harness) reach the same
// seam: it is the work of the ioStep calls (faultAt), which ioHook sees
// too.

// ioKind names a change to a folder or a file, an fsync, or a fault
// point, for ioHook.
type ioKind string

const (
	ioMkdir    ioKind = "mkdir"    // a folder created (path)
	ioCreate   ioKind = "create"   // a file created (path)
	ioWrite    ioKind = "write"    // bytes written to a file (path, at off)
	ioTruncate ioKind = "truncate" // a file truncated (path, to off bytes)
	ioRemove   ioKind = "remove"   // a file removed (path)
	ioRename   ioKind = "rename"   // a file renamed (from, to path)
	ioSync     ioKind = "fsync"    // a file's fsync (path)
	ioDirSync  ioKind = "dirsync"  // a folder's fsync (path)
	ioDataSync ioKind = "datasync" // a file's fdatasync (path): an append's, or its take-back's
	ioStep     ioKind = "step"     // a fault point (op, index; path: its file or folder): Options.Fault
)

// ioCall is one call, as ioHook sees it.
type ioCall struct {
	kind  ioKind
	path  string
	from  string // ioRename: the old name
	off   int64  // ioWrite: where; ioTruncate: the new size
	data  []byte // ioWrite: the bytes
	op    Op     // ioStep: the fault point
	index uint64 // ioStep: the frame's index (OpTruncate: the new first index; OpOpenSync: 0)
}

func (c ioCall) String() string {
	switch c.kind {
	case ioRename:
		return fmt.Sprintf("rename %s -> %s", c.from, c.path)
	case ioWrite, ioTruncate:
		return fmt.Sprintf("%s %s @%d", c.kind, c.path, c.off)
	case ioStep:
		return fmt.Sprintf("step %s index %d (%s)", c.op, c.index, c.path)
	}
	return fmt.Sprintf("%s %s", c.kind, c.path)
}

// ioHook, when set (tests only), is called before each call below and may
// return an error, which the call then returns in place of doing anything,
// or errSkipIO.
var ioHook func(ioCall) error

// errSkipIO, returned by ioHook, skips the call, which then succeeds: for
// tests where an fsync would only cost time (noDirSync).
var errSkipIO = errors.New("wal: call skipped by a test")

// doIO runs do unless ioHook fails or skips c.
func doIO(c ioCall, do func() error) error {
	if ioHook != nil {
		if err := ioHook(c); errors.Is(err, errSkipIO) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return do()
}

// faultAt is the fault point op of an append (see Op), at the file or
// folder path: ioHook sees it as an ioStep call, whose work is fault's
// (Options.Fault; nil: none).
func faultAt(fault Fault, op Op, index uint64, path string) error {
	return doIO(ioCall{kind: ioStep, path: path, op: op, index: index}, func() error {
		if fault == nil {
			return nil
		}
		return fault(op, index)
	})
}

func mkdirAll(dir string) error {
	return doIO(ioCall{kind: ioMkdir, path: dir}, func() error { return os.MkdirAll(dir, 0o700) })
}

// createFile creates path for writing (flag adds O_EXCL or O_TRUNC).
func createFile(path string, flag int) (f *os.File, err error) {
	err = doIO(ioCall{kind: ioCreate, path: path}, func() error {
		f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|flag, 0o600)
		return err
	})
	return f, err
}

func writeAt(f *os.File, b []byte, off int64) error {
	_, err := writeAtN(f, b, off)
	return err
}

// writeAtN is writeAt that tells how many bytes it wrote (none when ioHook
// failed the call).
func writeAtN(f *os.File, b []byte, off int64) (n int, err error) {
	err = doIO(ioCall{kind: ioWrite, path: f.Name(), off: off, data: b}, func() error {
		n, err = f.WriteAt(b, off)
		return err
	})
	return n, err
}

func truncate(f *os.File, size int64) error {
	return doIO(ioCall{kind: ioTruncate, path: f.Name(), off: size}, func() error { return f.Truncate(size) })
}

func removeFile(path string) error {
	return doIO(ioCall{kind: ioRemove, path: path}, func() error { return os.Remove(path) })
}

func renameFile(from, to string) error {
	return doIO(ioCall{kind: ioRename, path: to, from: from}, func() error { return os.Rename(from, to) })
}

// syncFile is f's fsync (data and metadata: a truncation's new size too).
func syncFile(f *os.File) error {
	return doIO(ioCall{kind: ioSync, path: f.Name()}, f.Sync)
}

// dataSync is f's fdatasync (see datasync): an append's, or its
// take-back's.
func dataSync(f *os.File) error {
	return doIO(ioCall{kind: ioDataSync, path: f.Name()}, func() error { return datasync(f) })
}

// SyncDir fsyncs a folder so that file creations, renames and removals in
// it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: open folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := doIO(ioCall{kind: ioDirSync, path: dir}, d.Sync); err != nil {
		return fmt.Errorf("wal: fsync folder %s: %w", dir, err)
	}
	return nil
}

// syncDirFor is SyncDir at a step of recovery or repair: its failure is
// ErrSync (fatal: never retried), saying what the fsync was for.
func syncDirFor(dir, what string) error {
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("wal: %w: %s: %w", ErrSync, what, err)
	}
	return nil
}
