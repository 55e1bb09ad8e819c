package wal

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// CutAt is the operator's explicit cut: it removes every entry with an index
// >= index from the log in dir (which must not be open), after copying what
// it removes into a new folder "<dir>.cut-<unix nanos>" next to dir. It
// finds the cut point by reading frame boundaries only, so it works on a log
// whose frames at or after index are corrupt. It returns the copy's folder.
//
// Steps: copy the removed tail of the segment holding index and every later
// segment (fsynced); truncate that segment (fsync); remove the later segments;
// fsync dir.
func CutAt(dir string, index uint64, logger *slog.Logger) (string, error) {
	if index < 1 {
		return "", fmt.Errorf("wal: cut at index %d: indexes start at 1", index)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return "", err
	}
	at, off, err := findCut(segs, index)
	if err != nil {
		return "", err
	}
	keep := fmt.Sprintf("%s.cut-%d", filepath.Clean(dir), time.Now().UnixNano())
	if err := copyRemoved(segs[at:], off, keep); err != nil {
		return "", err
	}
	if err := truncateFile(segs[at].path, off); err != nil {
		return "", err
	}
	for _, s := range segs[at+1:] {
		if err := os.Remove(s.path); err != nil {
			return "", fmt.Errorf("wal: remove %s: %w", s.path, err)
		}
	}
	if err := syncDir(dir); err != nil {
		return "", err
	}
	logger.Warn("wal: cut by operator", "from_index", index, "segment", segs[at].path, "offset", off, "kept", keep)
	return keep, nil
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
	if err := os.MkdirAll(keep, 0o755); err != nil {
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
	if err := syncDir(keep); err != nil {
		return err
	}
	return syncDir(filepath.Dir(keep))
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
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("wal: truncate %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync %s: %w", path, err)
	}
	return nil
}
