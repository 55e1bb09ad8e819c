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
// follows the entries; never smaller). repaired says what repairTail
// changed in it ("" when nothing), which openSegments' fsync of the tail
// makes durable (its error names it).
type tailEnd struct {
	last     uint64
	bytes    int
	size     int
	repaired string
}

// repairTail applies recovery step 1 (see the package doc) to the last
// segment of dir, after checking the segments against the folder's mark
// (checkMark). It returns the number of torn bytes cut (0 when the tail
// was whole; zero padding after them not counted) and where the tail now
// ends (the zero tailEnd when dir holds no segment), so that Open reads
// the tail once.
//
// It does not fsync the tail nor, after the copies it prunes, the folder:
// its only caller, Open, goes on to openSegments, which fsyncs both before
// Open returns, so before anything is read from the log or appended to it,
// and which changes nothing before those fsyncs. A power cut before them
// leaves the tail as it was or as repaired, and either is judged again
// alike by the next Open (see cutTail and restoreBytes).
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
		end.repaired = fmt.Sprintf("the %s of index %d restored at offset %d", k.what, ce.Index, k.at)
		return 0, end, nil
	}
	end.size = int(good) // what follows is cut
	if err := cutTail(last.path, data, good); err != nil {
		return 0, tailEnd{}, err
	}
	end.repaired = fmt.Sprintf("the cut of its torn tail at offset %d (index %d)", good, ce.Index)
	// The removals are made durable by openSegments' folder fsync; a power
	// cut before it brings some back, pruned at the next cut.
	pruneBroken(dir, logger)
	cut := int64(len(trimZeros(data[good:]))) // the torn bytes, not the padding after them
	logger.Warn("wal: cut torn tail", "segment", last.path, "offset", good,
		"index", ce.Index, "bytes", cut, "reason", ce.Reason)
	return cut, end, nil
}

// restoreBytes writes bytes of a kept entry back at off. It does not fsync
// (see repairTail): a power cut before openSegments' fsync of the tail
// leaves on disk the bytes as they were, or some of the sectors written
// here (a write is atomic per sector at best): the frame is then whole, or
// still misses some of the same bytes, and the next Open judges it and
// restores them again alike (or finds it whole).
func restoreBytes(path string, off int64, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open %s to restore the last entry's bytes: %w", path, err)
	}
	if err := writeAt(f, b, off); err != nil {
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
		if err := removeFile(p); err != nil {
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
// write pads it again). What a power cut leaves at each step, and why the
// next Open handles it:
//
//  1. The copy is written and fsynced: before its fsync, a copy that is
//     missing, partial or empty, and the segment untouched. The next Open
//     judges the same tail, cuts it again into a new copy; the old one is
//     never read, and pruned with the others (pruneBroken).
//  2. The folder is fsynced, so that the copy's name is durable before the
//     bytes it keeps are cut: after it, two copies at worst once the next
//     Open cuts again.
//  3. The segment is truncated, without an fsync of its own: openSegments
//     fsyncs the tail (this file) before Open returns and changes nothing
//     before. A power cut before that fsync leaves the old size, so a torn
//     tail again (the same bytes, or those of them that had reached the
//     disk: never fsynced, never acknowledged), which the next Open judges
//     and cuts as here; or the new size, a tail that ends with a whole
//     frame. Nothing is appended or acknowledged before that fsync, so no
//     new entry can sit after a cut that a power cut undid.
func cutTail(path string, data []byte, good int64) error {
	broken := fmt.Sprintf("%s.broken-%d", path, time.Now().UnixNano())
	if err := writeFileSync(broken, trimZeros(data[good:])); err != nil {
		return fmt.Errorf("wal: keep the torn tail of %s (from offset %d) in %s: %w", path, good, broken, err)
	}
	if err := syncDirFor(filepath.Dir(path), fmt.Sprintf("name %s before cutting %s at offset %d", filepath.Base(broken), path, good)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open %s to cut its tail: %w", path, err)
	}
	defer f.Close()
	if err := truncate(f, good); err != nil {
		return fmt.Errorf("wal: cut the torn tail of %s at offset %d: %w", path, good, err)
	}
	return nil
}

// writeFileSync writes data to a new file at path (replacing one there),
// fsynced. Its name is durable once the caller fsyncs the folder.
func writeFileSync(path string, data []byte) error {
	f, err := createFile(path, os.O_TRUNC)
	if err != nil {
		return err
	}
	if err := writeAt(f, data, 0); err != nil {
		f.Close()
		return err
	}
	if err := syncFile(f); err != nil {
		f.Close()
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	return f.Close()
}
