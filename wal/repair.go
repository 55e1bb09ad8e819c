package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxLookahead bounds how many later indexes the torn-tail check looks for.
const maxLookahead = 1 << 20

// tailEnd is where the last segment of a folder ends once repairTail is
// done: the index of its last entry (its first index - 1 when it is empty),
// where its entries end, and its size in bytes (larger when zero padding
// follows the entries; never smaller).
type tailEnd struct {
	last  uint64
	bytes int
	size  int
}

// repairTail applies recovery step 1 (see the package doc) to the last
// segment of dir, after checking the segments against the folder's mark
// (checkMark). It returns the number of torn bytes cut (0 when the tail
// was whole; zero padding after them not counted) and where the tail now
// ends (the zero tailEnd when dir holds no segment), so that Open reads
// the tail once.
func repairTail(dir string, mark uint64, logger *slog.Logger) (int64, tailEnd, error) {
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		if err == nil {
			err = checkMark(dir, segs, mark, 0)
		}
		return 0, tailEnd{}, err
	}
	last := segs[len(segs)-1]
	data, err := os.ReadFile(last.path)
	if err != nil {
		return 0, tailEnd{}, fmt.Errorf("wal: read %s: %w", last.path, err)
	}
	var good int64
	end := tailEnd{last: last.first - 1}
	scanErr := scanSegment(last.path, data, last.first, func(e entry) error {
		good = e.offset + e.size
		end.last = e.index
		return nil
	})
	end.bytes, end.size = int(good), len(data)
	var ce *CorruptError
	if scanErr != nil && !errors.As(scanErr, &ce) {
		return 0, tailEnd{}, scanErr
	}
	var verdict tailVerdict
	if ce != nil {
		verdict = judgeTail(data, int(good), ce.Index, versionBefore(segs, data, int(good)))
		if !verdict.torn && verdict.keep == nil {
			ce.Reason += "; not a torn write: " + verdict.reason
			return 0, tailEnd{}, ce
		}
		if verdict.keep != nil {
			end.last = ce.Index // the entry is kept
		}
	}
	if err := checkMark(dir, segs, mark, end.last); err != nil {
		return 0, tailEnd{}, err // before anything is changed
	}
	switch {
	case ce == nil:
		return 0, end, nil
	case verdict.keep != nil:
		k := verdict.keep
		if err := restoreBytes(last.path, int64(k.at), k.patch); err != nil {
			return 0, tailEnd{}, err
		}
		logger.Warn("wal: restored "+k.what+" of the last entry: its frame is whole (a torn write that lost those bytes, or a damaged byte)",
			"segment", last.path, "offset", good, "index", ce.Index)
		end.bytes, end.size = k.end, max(end.size, k.end)
		return 0, end, nil
	}
	end.size = int(good) // what follows is cut
	if err := cutTail(last.path, data, good); err != nil {
		return 0, tailEnd{}, err
	}
	pruneBroken(dir, logger)
	if err := syncDir(dir); err != nil {
		return 0, tailEnd{}, err
	}
	cut := int64(len(trimZeros(data[good:]))) // the torn bytes, not the padding after them
	logger.Warn("wal: cut torn tail", "segment", last.path, "offset", good,
		"index", ce.Index, "bytes", cut, "reason", ce.Reason)
	return cut, end, nil
}

// restoreBytes writes bytes of a kept entry back at off. It does not fsync:
// repairTail's only caller, Open, fsyncs the same file (the tail) in
// openSegments before it returns, so before anything is read from the log
// or acknowledged; a power cut before that fsync leaves the bytes as they
// were, and the next boot judges and restores them again alike.
func restoreBytes(path string, off int64, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open %s to restore the last entry's bytes: %w", path, err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		f.Close()
		return fmt.Errorf("wal: restore the last entry's bytes at %d in %s: %w", off, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("wal: close %s after restoring the last entry's bytes: %w", path, err)
	}
	return nil
}

// laterFrameExists reports whether any whole, checksum-valid frame with an
// index in [index, index+maxLookahead) starts anywhere in b after its first
// byte. If so, the bad bytes before it are not a torn tail but corruption of
// records that were once acknowledged.
func laterFrameExists(b []byte, index uint64) bool {
	for off := 1; off < len(b); off++ {
		if plausibleFrameAt(b[off:], index) {
			return true
		}
	}
	return false
}

// plausibleFrameAt cheaply filters before the checksum is computed.
func plausibleFrameAt(b []byte, index uint64) bool {
	n, k := binary.Uvarint(b)
	if k <= 0 || n < minFrame || n > uint64(len(b)-k) || b[k] != Version && b[k] != Version1 {
		return false
	}
	idx, m := binary.Uvarint(b[k+1:])
	if m <= 0 || idx < index || idx >= index+maxLookahead {
		return false
	}
	_, _, err := decodeFrame(b[k : k+int(n)])
	return err == nil
}

// KeepBroken is how many .broken copies of cut torn tails a folder keeps:
// every crash during a write leaves one, and a daemon that keeps crashing
// must not fill the disk with them. The oldest go first.
const KeepBroken = 8

// pruneBroken removes all but the newest KeepBroken .broken copies in dir.
func pruneBroken(dir string, logger *slog.Logger) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.broken-*"))
	if len(paths) <= KeepBroken {
		return
	}
	stamp := func(p string) int64 {
		_, n, _ := strings.Cut(filepath.Base(p), ".broken-")
		v, _ := strconv.ParseInt(n, 10, 64)
		return v
	}
	sort.Slice(paths, func(i, j int) bool { return stamp(paths[i]) < stamp(paths[j]) })
	for _, p := range paths[:len(paths)-KeepBroken] {
		if err := os.Remove(p); err != nil {
			logger.Warn("wal: could not remove an old torn-tail copy", "file", p, "err", err)
		}
	}
}

// trimZeros is b without its trailing zero bytes.
func trimZeros(b []byte) []byte {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return b[:n]
}

// cutTail keeps data[good:] in a .broken copy, less the zero padding after
// the torn bytes, then truncates the segment (padding included: the next
// write pads it again).
func cutTail(path string, data []byte, good int64) error {
	broken := fmt.Sprintf("%s.broken-%d", path, time.Now().UnixNano())
	if err := writeFileSync(broken, trimZeros(data[good:])); err != nil {
		return fmt.Errorf("wal: keep torn tail of %s: %w", path, err)
	}
	// The copy's name is durable before the bytes it keeps are cut.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open %s to cut its tail: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(good); err != nil {
		return fmt.Errorf("wal: truncate %s at %d: %w", path, good, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync %s after cut: %w", path, err)
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SyncDir fsyncs a folder so that file creations, renames and removals in
// it are durable.
func SyncDir(dir string) error { return syncDir(dir) }

// syncDir fsyncs a folder; tests record its calls.
var syncDir = fsyncDir

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: open folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: fsync folder %s: %w", dir, err)
	}
	return nil
}
