package wal

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// segments is the folder of segment files: the tail segment open for
// writing, and the first and last index of the log. It holds no entry in
// memory: a write is one pwrite(2) of the entry at the end of the tail's
// entries, whatever the segment's size. Not safe for concurrent use; Log
// serialises it under wmu.
//
// The tail is padded with zeros ahead of its entries, in steps of padChunk
// up to the segment size (pad): a commit then writes inside the file, and
// its fdatasync (datasync) writes the entry's blocks and nothing else,
// where a write that grows the file also makes the file system allocate
// blocks and write the inode. Measured on this machine's ext4 (2 cores,
// shared disk), 5 rounds of 600 commits interleaved: 200-byte entries
// 0.29 ms per commit growing the file with fsync against 0.21 ms padded
// with fdatasync; 25,000-byte entries 0.53 against 0.28 ms. Readers take
// the first zero byte where an entry would start, followed by zeros only,
// as the end of the entries (entriesEnd). A segment that is not the tail
// has no padding left: it ends with the entry that reached the segment
// size, past the padding, or, when the padding went further (the folder
// was padded with a larger SegmentSize), the roll truncates it (so an
// older version, which reads zeros as a torn tail, never finds them in a
// segment it does not cut).
//
// Why not github.com/tidwall/wal, on which this package was first built:
// tidwall/wal keeps the whole tail segment in one []byte that it grows by
// append inside every write, so a commit sometimes copies up to a segment
// and allocates a larger one, and the garbage collector's assist falls on
// whichever appender holds the write lock. BenchmarkAppendTail measured it
// in the same run, 64 and 256 appenders: its Write took 160-400 µs on
// average with 3 to 12 writes over 2.5 ms per 60,000 appends, and those
// writes were the slowest 0.1% of appends (p99.9 9.7-15.5 ms); one write(2)
// of the entry took 23-47 µs with none over 2.5 ms (p99.9 5.1-7.9 ms, on a
// loaded machine both). Its buffer served only its own Read, which this
// package never used (Replay reads the files), and a front truncation that
// rewrote the kept part of a segment. A folder written by earlier versions
// (through tidwall/wal or not, no padding) opens as it is; an earlier
// version opening a padded folder cuts the tail's padding as a torn tail
// (keeping it in a .broken copy) and goes on.
type segments struct {
	dir    string
	size   int      // SegmentSize: a write to a tail of this many bytes or more starts a new segment
	tail   *os.File // the last segment, opened for writing
	name   string   // its file name
	bytes  int      // where its entries end
	padded int      // its size: [bytes, padded) is zero padding
	step   int      // the padding's step (Options.PadStep)
	noPad  bool     // padding the tail failed: not tried again before the next segment
	first  uint64   // index of the first entry of the first segment
	last   uint64   // index of the last entry written (first-1 when empty)
	start  int      // where in the tail the last write's entry began; -1 if it never got to write it (see undo)
	mark   uint64   // the segment the folder's mark names (mark.go); 0: none
}

// markLast moves the folder's mark (from mark, what Open found) to the
// segment holding the last entry, if that is newer.
func (s *segments) markLast(mark uint64) error {
	segs, err := listSegments(s.dir)
	if err != nil {
		return err
	}
	s.mark = mark
	if want := markFor(segs, s.last); want > mark {
		return s.markNewest(want)
	}
	return nil
}

// markNewest moves the folder's mark to the segment whose first index is
// first.
func (s *segments) markNewest(first uint64) error {
	if err := setMark(s.dir, s.mark, first); err != nil {
		return err
	}
	s.mark = first
	return nil
}

// padChunk is the default step in which the tail's zero padding is
// extended (Options.PadStep). Each extension makes one commit's fdatasync
// write the inode and a step of zeros; 256 KiB measured faster than 64 KiB
// or 1 MiB steps on both entry sizes above (0.207 against 0.227 and 0.222
// ms at 200 bytes).
const padChunk = 256 << 10

// zeroChunk is what pad writes, a step at most. Never written to: it stays
// in the zero pages of the binary's bss.
var zeroChunk [padChunk]byte

// segmentName is the file name of the segment whose first entry is index.
func segmentName(index uint64) string { return fmt.Sprintf("%020d", index) }

// openSegments opens the folder for appending, after repairTail: the last
// segment ends with a whole frame, where end says. An empty folder gets its
// first segment (index 1). The tail segment and the folder are fsynced before it
// returns, and nothing is changed before those fsyncs: they make durable
//   - what an earlier process wrote and never fsynced (it was killed before
//     its own fsyncs: a frame only in the page cache, or a segment whose
//     name is not durable, killed between creating it and the folder
//     fsync), which a power cut after this process acknowledged later
//     frames must not lose;
//   - what repairTail changed (end.repaired: the cut of a torn tail, a
//     kept entry's restored bytes), and the folder changes of this Open
//     (a cut's pruned copies, an earlier version's temporary files
//     removed, this first segment's name): a power cut before them leaves
//     the folder as it was or as changed, each of which the next Open
//     repairs alike (see cutTail, restoreBytes, resolveLegacy).
//
// Every segment before the tail is durable whole: it was the tail of an
// earlier Open, or every frame in it was fsynced by its commit.
func openSegments(dir string, size, step int, fault Fault, end tailEnd) (*segments, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		path := filepath.Join(dir, segmentName(1))
		f, err := createFile(path, os.O_EXCL)
		if err != nil {
			return nil, fmt.Errorf("wal: create %s: %w", path, err)
		}
		f.Close() // its name is made durable with the folder's fsync below
		segs = []segmentFile{{path: path, first: 1}}
		end = tailEnd{}
	}
	tail := segs[len(segs)-1]
	f, err := os.OpenFile(tail.path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", tail.path, err)
	}
	if err := faultAt(fault, OpOpenSync, 0, tail.path); err != nil {
		f.Close()
		return nil, fmt.Errorf("wal: %w: open %s: %w", ErrSync, tail.path, err)
	}
	what := "what an earlier process wrote to it"
	if end.repaired != "" {
		what = end.repaired
	}
	if err := syncFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("wal: %w: %s at open, making durable %s: %w", ErrSync, tail.path, what, err)
	}
	if err := syncDirFor(dir, "the wal folder at open"); err != nil {
		f.Close()
		return nil, err
	}
	return &segments{dir: dir, size: size, tail: f, name: filepath.Base(tail.path), bytes: end.bytes,
		padded: end.size, step: step, first: segs[0].first, last: end.last}, nil
}

// write appends entry (uvarint(len) || frame, the frame at index last+1)
// with one pwrite(2) after the tail's entries, padding the tail first if
// the entry does not fit in its padding (pad). It reports whether it
// started a new segment file, whose name is durable only once the folder
// is fsynced. The entry is not durable until sync.
func (s *segments) write(index uint64, entry []byte) (created bool, err error) {
	s.start = -1
	if index != s.last+1 {
		return false, fmt.Errorf("wal: write of index %d after %d", index, s.last)
	}
	if s.bytes >= s.size {
		// The tail is full. Every frame in it was fsynced by its own
		// commit or by Open, so the old file needs nothing more, unless
		// padding from a larger segment size is left after its entries.
		if err := s.unpad(); err != nil {
			return false, err
		}
		path := filepath.Join(s.dir, segmentName(index))
		f, err := createFile(path, os.O_EXCL)
		if err != nil {
			return false, fmt.Errorf("create segment %s: %w", path, err)
		}
		s.tail.Close()
		s.tail, s.name, s.bytes, s.padded, s.noPad, created = f, filepath.Base(path), 0, 0, false, true
	}
	s.pad(len(entry))
	s.start = s.bytes
	n, err := writeAtN(s.tail, entry, int64(s.bytes))
	s.bytes += n
	s.padded = max(s.padded, s.bytes)
	if err != nil {
		return created, fmt.Errorf("write %s: %w", s.name, err)
	}
	s.last = index
	return created, nil
}

// pad extends the tail's zero padding, by whole padChunks up to the
// segment size, until an entry of n bytes written after the entries fits
// in it. An entry that goes past the segment size grows the file itself:
// it is the tail's last.
//
// Padding only makes commits cheaper: when it cannot be written (a disk
// with less than a padChunk free), the entry grows the file as it would
// without it, and the segment is not padded again. So a nearly full disk
// fails an append only when the entry itself does not fit.
func (s *segments) pad(n int) {
	end := s.bytes + n
	for end > s.padded && s.padded < s.size && !s.noPad {
		k := min(s.step, s.size-s.padded)
		w, err := writeAtN(s.tail, zeroChunk[:k], int64(s.padded))
		s.padded += w
		if err != nil {
			s.noPad = true
		}
	}
}

// undo takes back the last write, which failed (part way, or all of it
// handed to the file and then failed: see OpWrite): the tail is truncated
// to where the write began, so that a later Open, the engine's recovery
// from a full disk above all, neither replays an entry whose append
// failed nor cuts part of one as a torn tail. The truncation is fsynced
// before the append's error is returned, so that a client told of the
// failure never finds the entry after a crash either; when that fsync
// fails, the error is ErrSync (never taken for a full disk: what the disk
// holds is not known). A truncation needs no space. The log is poisoned
// and writes no more.
func (s *segments) undo(index uint64) error {
	if s.start < 0 {
		return nil // it failed before writing anything
	}
	if err := truncate(s.tail, int64(s.start)); err != nil {
		return fmt.Errorf("wal: take back the failed write of index %d in %s: %w", index, s.name, err)
	}
	s.bytes, s.padded, s.last = s.start, s.start, index-1
	if err := dataSync(s.tail); err != nil {
		return fmt.Errorf("%w: %s after taking back the failed write of index %d: %w", ErrSync, s.name, index, err)
	}
	return nil
}

// unpad truncates the tail's padding, fsynced, before it stops being the
// tail: only when a folder padded with a larger segment size left more
// padding than its entries now reach, and at Close. At a roll the fsync
// comes before the next segment is created: a power cut before it leaves
// the padding, in the file that is still the tail (the next Open reads it
// as such); without it a power cut could keep the new segment and lose
// the truncation, leaving padding in a segment that is not the tail,
// which an earlier version reads as corruption in the middle of the log.
func (s *segments) unpad() error {
	if s.padded <= s.bytes {
		return nil
	}
	if err := truncate(s.tail, int64(s.bytes)); err != nil {
		return fmt.Errorf("truncate the padding of %s at offset %d: %w", s.name, s.bytes, err)
	}
	if err := syncFile(s.tail); err != nil {
		// An fsync's failure, whatever its errno: never taken for a full
		// disk that a reopen could get over.
		return fmt.Errorf("%w: %s after truncating its padding at offset %d: %w", ErrSync, s.name, s.bytes, err)
	}
	s.padded = s.bytes
	return nil
}

// padding is how many bytes of zero padding follow the tail's entries.
func (s *segments) padding() int { return s.padded - s.bytes }

// sync makes the tail segment's entries durable (see datasync).
func (s *segments) sync() error { return dataSync(s.tail) }

// before lists the segment files whose entries all come before index: every
// segment but the one holding index and those after it. The tail is never
// among them.
func (s *segments) before(index uint64) ([]segmentFile, error) {
	if index > s.last+1 {
		return nil, fmt.Errorf("wal: truncate front to %d: the log ends at %d", index, s.last)
	}
	segs, err := listSegments(s.dir)
	if err != nil {
		return nil, err
	}
	n := 0
	for n+1 < len(segs) && segs[n+1].first <= index && (s.mark == 0 || segs[n+1].first <= s.mark) {
		n++ // never past the marked segment, which must stay (mark.go)
	}
	return segs[:n+1], nil // segs[n] is the segment that stays first
}

// removeFront removes the segment files of drop (in order, oldest first),
// fsyncing the folder after each removal, so that whatever a crash keeps of
// it is a prefix on any file system: the log still starts at a segment
// boundary, with no gap. It touches no field of segments and may run
// without the Log's write lock (new segments only appear after the tail).
func removeFront(dir string, drop []segmentFile, removing func(string)) error {
	for _, sg := range drop {
		if removing != nil {
			removing(sg.path)
		}
		if err := removeFile(sg.path); err != nil {
			return fmt.Errorf("wal: remove %s: %w", sg.path, err)
		}
		if err := syncDirFor(dir, "after removing "+sg.path); err != nil {
			return err
		}
	}
	return nil
}

func (s *segments) close() error { return s.tail.Close() }

// resolveLegacy finishes what an earlier version's crash left in dir.
// Versions built on tidwall/wal truncated the front by writing the kept
// part of a segment to "<index>.START.TEMP" (fsynced), renaming it to
// "<index>.START", removing the older segments and renaming the .START file
// to "<index>": a .TEMP is meaningless (removed), a .START is complete
// (the older segments go, and it takes its final name). They never
// truncated the back, so an ".END" file is not theirs: refused.
func resolveLegacy(dir string, logger *slog.Logger) error {
	removeStaleTemp(dir, logger)
	start, index, err := legacyStart(dir)
	if err != nil || start == "" {
		return err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	// A power cut at any step below leaves what the next Open (or CutAt)
	// finishes alike: the .START file, with some of the segments it
	// supersedes (removed again), or renamed.
	for _, sg := range segs {
		if sg.first <= index { // the .START holds index and after
			if err := removeFile(sg.path); err != nil {
				return fmt.Errorf("wal: finish an interrupted truncation: remove %s: %w", sg.path, err)
			}
		}
	}
	// The removals are durable before the rename: an old segment that
	// outlived it would overlap the renamed one.
	if err := syncDirFor(dir, "remove the segments "+filepath.Base(start)+" supersedes before its rename"); err != nil {
		return err
	}
	final := filepath.Join(dir, segmentName(index))
	// The rename needs no folder fsync of its own: Open's next one
	// (openSegments', or a cut's before it truncates) makes it durable
	// before the log is served, and CutAt's only change to the file is a
	// truncation fsynced under either name. A power cut that loses it
	// leaves the .START file alone, renamed again by the next Open.
	if err := renameFile(start, final); err != nil {
		return fmt.Errorf("wal: finish an interrupted truncation: rename %s to %s: %w", start, final, err)
	}
	logger.Info("wal: finished a front truncation a crash interrupted", "segment", final)
	return nil
}

// legacyStart returns the path of the "<index>.START" file an earlier
// version's interrupted front truncation left in dir, and its index ("" when
// there is none); an ".END" file is refused (see resolveLegacy).
func legacyStart(dir string) (string, uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasSuffix(name, ".END") && len(name) == 24 {
			return "", 0, &CorruptError{Segment: filepath.Join(dir, name), Reason: "an .END file, which no version of orkwal writes"}
		}
		num, isStart := strings.CutSuffix(name, ".START")
		if !isStart || len(num) != 20 {
			continue
		}
		if index, err := strconv.ParseUint(num, 10, 64); err == nil && index > 0 {
			return filepath.Join(dir, name), index, nil
		}
	}
	return "", 0, nil
}

// resolvedSegments lists dir's segments as resolveLegacy will leave them:
// an interrupted truncation's .START file (read at its own path) replaces
// the segments it supersedes. It changes nothing.
func resolvedSegments(dir string) ([]segmentFile, error) {
	start, index, err := legacyStart(dir)
	if err != nil {
		return nil, err
	}
	segs, err := listSegments(dir)
	if err != nil || start == "" {
		return segs, err
	}
	kept := []segmentFile{{path: start, first: index}}
	for _, sg := range segs {
		if sg.first > index {
			kept = append(kept, sg)
		}
	}
	return kept, nil
}

// removeStaleTemp removes the temporary files of an earlier version's front
// truncation a crash interrupted: tidwall/wal wrote the kept part of a
// segment to "<index>.START.TEMP" (fsync) and renamed it to "<index>.START".
// A .TEMP is meaningless before its rename and would stay for ever (up to a
// segment each: found by the kill -9 torture, 16 MB of them after 300
// kills, when tidwall/wal's Open was relied on to clean up). The removals
// are made durable by openSegments' folder fsync; a power cut before it
// brings some back, removed again by the next Open.
func removeStaleTemp(dir string, logger *slog.Logger) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.TEMP"))
	for _, p := range paths {
		if err := removeFile(p); err != nil {
			logger.Warn("wal: could not remove a truncation's temporary file", "file", p, "err", err)
			continue
		}
		logger.Info("wal: removed a temporary file of an interrupted truncation", "file", p)
	}
}
