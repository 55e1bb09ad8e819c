package wal

import (
	"fmt"
	"os"
)

// The folder changes this package makes outside an append's own write and
// fdatasync, and the fsyncs that make them durable, go through the
// functions below: Open's recovery (resolveLegacy, repairTail, openSegments,
// the mark), a new segment's creation and unpad, TruncateFront's removals
// and CutAt. Each calls ioHook
// first, so that a test can log their sequence and fail any of them in its
// place (fsio_test.go checks that every change is made durable before Open
// returns, in the order the comments at each step argue). An append's write,
// padding, fdatasync and undo keep their own fault points (Options.Fault,
// padWrite, undoSync).

// ioKind names a folder change or an fsync, for ioHook.
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
)

// ioCall is one call, as ioHook sees it.
type ioCall struct {
	kind ioKind
	path string
	from string // ioRename: the old name
	off  int64  // ioWrite: where; ioTruncate: the new size
}

func (c ioCall) String() string {
	switch c.kind {
	case ioRename:
		return fmt.Sprintf("rename %s -> %s", c.from, c.path)
	case ioWrite, ioTruncate:
		return fmt.Sprintf("%s %s @%d", c.kind, c.path, c.off)
	}
	return fmt.Sprintf("%s %s", c.kind, c.path)
}

// ioHook, when set (tests only), is called before each call below and may
// return an error, which the call then returns in place of doing anything.
var ioHook func(ioCall) error

// doIO runs do unless ioHook fails c.
func doIO(c ioCall, do func() error) error {
	if ioHook != nil {
		if err := ioHook(c); err != nil {
			return err
		}
	}
	return do()
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
	return doIO(ioCall{kind: ioWrite, path: f.Name(), off: off}, func() error {
		_, err := f.WriteAt(b, off)
		return err
	})
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

// SyncDir fsyncs a folder so that file creations, renames and removals in
// it are durable.
func SyncDir(dir string) error { return syncDir(dir) }

// syncDir fsyncs a folder; tests replace it where folder fsyncs would only
// cost time.
var syncDir = fsyncDir

func fsyncDir(dir string) error {
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

// syncDirFor is syncDir at a step of recovery or repair: its failure is
// ErrSync (fatal: never retried), saying what the fsync was for.
func syncDirFor(dir, what string) error {
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("wal: %w: %s: %w", ErrSync, what, err)
	}
	return nil
}
