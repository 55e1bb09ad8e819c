package wal

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// CutFolder names the folder where CutAt keeps what it removes from the log
// in dir: "<dir>.cut-<unix nanos>", next to dir.
func CutFolder(dir string, now time.Time) string {
	return fmt.Sprintf("%s.cut-%d", filepath.Clean(dir), now.UnixNano())
}

// CutAt is the operator's explicit cut: it removes every entry with an index
// >= index from the log in dir (which must not be open), after copying what
// it removes into keep, a new folder (see CutFolder). It finds the cut point
// by reading frame boundaries only, so it works on a log whose frames at or
// after index are corrupt.
//
// Steps: finish an earlier version's interrupted front truncation as Open
// would (resolveLegacy), so that the cut is made on the log Open will see;
// move the folder's mark back to the segment that will hold the last entry
// left (mark.go: a cut is how an operator accepts that a marked segment is
// gone); copy the removed tail of the segment holding index and every later
// segment (fsynced); remove the later segments, newest first, fsyncing dir
// after each; truncate the segment holding index (fsync). A crash at any
// step leaves the log whole up to its tail, a prefix of what it was (never
// a gap), and the same cut run again completes it.
func CutAt(dir string, index uint64, keep string, logger *slog.Logger) error {
	if err := CheckCut(dir, index); err != nil {
		return err // refused before anything changed
	}
	if err := resolveLegacy(dir, logger); err != nil {
		return err
	}
	segs, at, off, err := planCut(dir, index)
	if err != nil {
		return err
	}
	// The mark goes back first: a crash after it leaves the whole log with
	// a mark older than its end, which Open accepts (and moves on).
	if mark, err := readMark(dir); err != nil {
		return err
	} else if want := markFor(segs[:at+1], index-1); mark > want {
		if err := setMark(dir, mark, want); err != nil {
			return err
		}
	}
	if err := copyRemoved(segs[at:], off, keep); err != nil {
		return err
	}
	for i := len(segs) - 1; i > at; i-- {
		if err := removeFile(segs[i].path); err != nil {
			return fmt.Errorf("wal: remove %s: %w", segs[i].path, err)
		}
		if err := syncDirFor(dir, "after removing "+segs[i].path); err != nil {
			return err
		}
	}
	if err := truncateFile(segs[at].path, off); err != nil {
		return err
	}
	logger.Warn("wal: cut by operator", "from_index", index, "segment", segs[at].path, "offset", off, "kept", keep)
	return nil
}

// CheckCut tells, changing nothing, whether CutAt(dir, index) can cut:
// the error CutAt would fail with before it changes anything.
func CheckCut(dir string, index uint64) error {
	_, _, _, err := planCut(dir, index)
	return err
}

// planCut lists dir's segments as Open will see them (resolvedSegments)
// and finds the cut at index (see findCut).
func planCut(dir string, index uint64) (segs []segmentFile, at int, off int64, err error) {
	if index < 1 {
		return nil, 0, 0, fmt.Errorf("wal: cut at index %d: indexes start at 1", index)
	}
	if segs, err = resolvedSegments(dir); err != nil {
		return nil, 0, 0, err
	}
	at, off, err = findCut(segs, index)
	return segs, at, off, err
}

// findCut returns the segment holding index and the byte offset of its entry,
// walking length prefixes only. index may be one past the last entry of a
// segment's valid prefix (cutting the corrupt rest).
func findCut(segs []segmentFile, index uint64) (int, int64, error) {
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].first <= index {
			continue
		}
		if index < s.first {
			return 0, 0, fmt.Errorf("wal: index %d is before the log's first segment (index %d)", index, s.first)
		}
		data, err := os.ReadFile(s.path)
		if err != nil {
			return 0, 0, fmt.Errorf("wal: read %s: %w", s.path, err)
		}
		off, err := offsetOf(data, s.first, index)
		if err != nil {
			return 0, 0, fmt.Errorf("wal: %s: %w", s.path, err)
		}
		return i, off, nil
	}
	return 0, 0, fmt.Errorf("wal: log has no segments")
}

func offsetOf(data []byte, first, index uint64) (int64, error) {
	var off int64
	for i := first; i < index; i++ {
		if entriesEnd(data[off:]) {
			return 0, fmt.Errorf("index %d is past the end of the log (last index %d)", index, i-1)
		}
		n, k := uvarint(data[off:])
		if k <= 0 || n == 0 || n > uint64(len(data))-uint64(off)-uint64(k) {
			return 0, fmt.Errorf("entry %d at offset %d has a broken length; cut at %d or earlier", i, off, i)
		}
		off += int64(k) + int64(n)
	}
	return off, nil
}

// copyRemoved writes what a cut removes into the folder keep, fsynced.
func copyRemoved(segs []segmentFile, off int64, keep string) error {
	if err := mkdirAll(keep); err != nil {
		return fmt.Errorf("wal: create %s: %w", keep, err)
	}
	for i, s := range segs {
		from := int64(0)
		if i == 0 {
			from = off
		}
		if err := copyFrom(s.path, from, filepath.Join(keep, filepath.Base(s.path))); err != nil {
			return fmt.Errorf("wal: keep a copy of %s: %w", s.path, err)
		}
	}
	if err := syncDirFor(keep, "the copies of what the cut removes"); err != nil {
		return err
	}
	return syncDirFor(filepath.Dir(keep), "the name of "+keep)
}

func copyFrom(src string, from int64, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := in.Seek(from, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	return writeFileSync(dst, data)
}

func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open %s: %w", path, err)
	}
	defer f.Close()
	if err := truncate(f, size); err != nil {
		return fmt.Errorf("wal: truncate %s at offset %d: %w", path, size, err)
	}
	if err := syncFile(f); err != nil {
		return fmt.Errorf("wal: %w: %s after truncating it at offset %d: %w", ErrSync, path, size, err)
	}
	return nil
}
