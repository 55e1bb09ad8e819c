package fuzz

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/wal"
)

// The power-loss disk model.
//
// The WAL owns every fsync, and engine.Config.WALFault sees each of them: the
// hook runs at OpWrite (the frame is in the page cache), at OpSync (in place
// of the segment's fsync) and at OpDirSync (in place of the folder's fsync
// after a segment file was created). diskModel follows them to know, at any
// I/O point, what a power cut would keep:
//
//   - at OpSync the newest segment file (the one the commit fsyncs) is
//     durable up to its current size: its entries, then the zero padding
//     the wal keeps ahead of them (durEnd marks where the entries end);
//     later commits write their entries inside that padding, so what a
//     power cut keeps of them is read from durEnd on, over zeros;
//   - at OpDirSync the list of segment files is durable;
//   - a segment that is no longer the newest is durable whole: every frame
//     in it was fsynced by its own commit before the write that created the
//     next segment;
//   - before an engine.Open, the folder as it stands is durable (it is what
//     survived the previous crash, or nothing; wal.Open fsyncs the tail and
//     the folder at OpOpenSync, whose index is 0: a cut there is an idle
//     one), except the torn tail that
//     wal.Open cuts (with fsyncs) and the first segment it creates in an
//     empty folder (folder fsynced): both are modelled as their result.
//
// At each hook call the wal's writer waits in the hook, so the folder is
// still: the model keeps a copy of it then (seen: the newest segment read
// again, an older one kept from when it was first read or last changed
// size, for after the trim of its padding it never changes; the mark's
// name), and builds every image, and reads the frames written, from that
// copy, never from the live files (a compaction's after-truncate point
// reads the folder's listing, only to drop from the copy the segments the
// truncation removed: snapmodel_test.go). An idle crash (crash, called
// by the harness between I/O points) may come while an append is under
// way: a read of its file could see part of a sector as it was and part
// as written, an image no power cut can leave. Its image is the one a cut
// just after the last hook call leaves (the writes since then all lost,
// as a power cut may lose them).
//
// At the crash step the hook returns errCrash (so nothing more is written:
// the log is poisoned) after building the post-crash image of the folder in
// another directory: each segment's durable entries, plus, chosen by the
// seed, none, all, the sectors before a sector boundary, or any set of the
// sectors of what was written after them since its last fsync (a sector
// not kept reads as the zeros it held), and zeros up to its durable size
// (the padding those writes went into); segment files
// whose creation was not yet made durable by a folder fsync are kept or
// lost (as a prefix in creation order: a journaling file system commits
// creations in order). A disk that leaves garbage in a sector it was
// writing is outside the model: boot refuses such a tail as corruption
// (docs/format.md, "Recovery").

var errCrash = errors.New("power cut (simulated)")

// diskModel tracks what is durable in one engine's wal folder.
type diskModel struct {
	mu      sync.Mutex
	dataDir string
	walDir  string
	durSize map[string]int64 // segment name → durable bytes
	durEnd  map[string]int64 // segment name → where its durable entries end (≤ durSize: zero padding follows)
	durName map[string]bool  // segment names durable in the folder
	steps   int              // hook calls so far
	crashAt int              // crash at this step (0: never, crash() is called instead)
	crashed bool
	// pending is the frame written (OpWrite) whose fsync's hook has not
	// come yet, or 0: a cut between I/O points (idle, or a compaction's
	// step beside an append) does not count it committed.
	pending  uint64
	crashErr error         // a harness failure found while crashing
	crashCh  chan struct{} // closed at the crash
	rng      *rand.Rand    // for the image; used only under mu
	image    string        // where the post-crash data folder goes
	res      crashResult
	hist     [][][]byte // every frame written, index 1 first (truncated ones included)
	seen     walCopy    // the wal folder at the last hook call: what images are built from

	// Compaction (snapmodel_test.go).
	begun, started, released int // background compactions decided, at their start, let run
	gate                     *sync.Cond
	compactSteps             int               // CompactFault I/O steps
	snapDirDurable           bool              // snapshots/ is a durable name in the data folder
	snapDurable              map[string][]byte // the durable listing of snapshots/, with contents
}

// walCopy is a wal folder as the model last saw it, still (at a hook call).
type walCopy struct {
	segs  []segFile         // by first index
	data  map[string][]byte // each segment's bytes
	marks []string          // the paths of the folder's mark files (wal/mark.go)
}

// crashResult describes the crash and its image.
type crashResult struct {
	op           wal.Op
	index        uint64     // frame whose I/O was cut; 0 for an idle crash
	step         int        // hook calls before the crash (the cut one included)
	written      [][][]byte // every frame written before the cut (payloads), index 1 first
	committed    uint64     // frames whose Append returned nil: all before index
	modes        []string   // what the image kept of each unsynced part, for the failure report
	torn         int        // segments whose image ends in a partial or torn frame
	segmentsLost int        // new segment files the image lost
	snapDirLost  bool       // the image lost snapshots/ (never made durable)
}

// newDiskModel snapshots the durable baseline of dataDir before engine.Open.
// hist holds every frame of dataDir's log from index 1 (those compaction
// truncated included).
func newDiskModel(dataDir, image string, crashAt int, rng *rand.Rand, hist [][][]byte) (*diskModel, error) {
	m := &diskModel{dataDir: dataDir, walDir: filepath.Join(dataDir, "wal"),
		durSize: map[string]int64{}, durEnd: map[string]int64{}, durName: map[string]bool{}, crashAt: crashAt, crashCh: make(chan struct{}), rng: rng, image: image,
		hist: append([][][]byte(nil), hist...)}
	m.gate = sync.NewCond(&m.mu)
	m.seen.data = map[string][]byte{}
	m.snapDurable, m.snapDirDurable = readSnapDir(dataDir) // what survived the previous cut; boot fsyncs the data folder
	segs, err := listSegs(m.walDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if len(segs) == 0 {
		first := segName(1) // wal.Open creates it empty and fsyncs the folder
		m.durName[first], m.durSize[first], m.durEnd[first] = true, 0, 0
	}
	for i, s := range segs {
		m.durName[s.name] = true
		m.durSize[s.name], m.durEnd[s.name] = s.size, s.size
		if i == len(segs)-1 {
			data, err := os.ReadFile(filepath.Join(m.walDir, s.name))
			if err != nil {
				return nil, err
			}
			end := validPrefix(data, s.first)
			m.durEnd[s.name] = end
			if !allZero(data[end:]) {
				m.durSize[s.name] = end // the torn tail wal.Open cuts; zero padding it keeps
				if kept := keptEnd(m.walDir, s.name, segs[0].first); kept > 0 {
					// A whole frame whose missing bytes Open writes back
					// (fsynced with the tail at OpOpenSync; a cut before
					// that fsync leaves the frame as it was, which the
					// next boot restores again): durable.
					m.durSize[s.name], m.durEnd[s.name] = max(kept, int64(len(data))), kept
				}
			}
		}
	}
	// What boot starts from, until its first hook call (wal.Open's
	// OpOpenSync) shows the folder as its recovery left it.
	marks, err := filepath.Glob(filepath.Join(m.walDir, markGlob))
	if err == nil {
		err = m.look(segs, marks)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// fault is the engine's WALFault.
func (m *diskModel) fault(op wal.Op, index uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return errCrash
	}
	m.steps++
	if op == wal.OpTruncate {
		index = 0 // not a frame's I/O: every frame written is committed
	}
	segs, marks, err := m.scan()
	if err == nil {
		err = m.observe(segs)
	}
	if err == nil {
		err = m.look(segs, marks)
	}
	if err == nil && op == wal.OpTruncate {
		err = m.mergeSeen() // the frames about to go: the history keeps them
	}
	if err != nil {
		m.crashErr = err
		m.crashLocked(op, index)
		return errCrash
	}
	if m.steps == m.crashAt {
		m.crashLocked(op, index)
		return errCrash
	}
	switch op {
	case wal.OpWrite:
		m.pending = index
	case wal.OpSync:
		m.pending = 0
		newest := segs[len(segs)-1]
		data := m.seen.data[newest.name]
		m.durSize[newest.name], m.durEnd[newest.name] = int64(len(data)), validPrefix(data, newest.first)
	case wal.OpDirSync:
		for _, s := range segs {
			m.durName[s.name] = true
		}
	}
	return nil
}

// observe credits the older segments as durable whole and checks the model.
func (m *diskModel) observe(segs []segFile) error {
	if len(segs) == 0 {
		return fmt.Errorf("disk model: no segment in %s", m.walDir)
	}
	for i, s := range segs {
		if d, ok := m.durSize[s.name]; ok && s.size < d {
			// Zero padding after the entries may go (the wal trims a tail's
			// padding, fsynced, before it rolls to a new segment); entries
			// thought durable may not.
			if e := m.durEnd[s.name]; s.size < e {
				return fmt.Errorf("disk model out of step: segment %s has %d bytes, %d of them entries thought durable", s.name, s.size, e)
			}
			m.durSize[s.name] = s.size
		}
		if i < len(segs)-1 {
			m.durSize[s.name], m.durEnd[s.name] = s.size, s.size // every frame fsynced by its commit
		}
	}
	return nil
}

// look copies the wal folder, still at a hook call, into m.seen: the
// newest segment is read again (its entries are written into its padding),
// an older one only when first seen or when its size changed (the wal
// trims the tail's padding as it rolls; after that it never changes), and
// the mark's name (marks: its file's path).
func (m *diskModel) look(segs []segFile, marks []string) error {
	for i, s := range segs {
		if b, ok := m.seen.data[s.name]; ok && i < len(segs)-1 && int64(len(b)) == s.size {
			continue
		}
		data, err := os.ReadFile(filepath.Join(m.walDir, s.name))
		if err != nil {
			return err
		}
		m.seen.data[s.name] = data
	}
	m.seen.segs = append(m.seen.segs[:0], segs...)
	m.seen.forgetRemoved()
	m.seen.marks = append(m.seen.marks[:0], marks...)
	return nil
}

// forgetRemoved drops the bytes of segments no longer in c.segs (a front
// truncation removed them).
func (c *walCopy) forgetRemoved() {
	if len(c.data) == len(c.segs) {
		return
	}
	keep := make(map[string]bool, len(c.segs))
	for _, s := range c.segs {
		keep[s.name] = true
	}
	for name := range c.data {
		if !keep[name] {
			delete(c.data, name)
		}
	}
}

// write writes the copy into dir, a wal folder.
func (c *walCopy) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, mk := range c.marks {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(mk)), nil, 0o600); err != nil {
			return err
		}
	}
	for _, s := range c.segs {
		if err := os.WriteFile(filepath.Join(dir, s.name), c.data[s.name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// markGlob matches the name of the wal folder's mark file (wal/mark.go).
const markGlob = "newest-*"

// scan lists the wal folder's segments, and its mark files' paths. Only
// the last two segments and those the model has not seen are stat'ed: an
// older segment is whole and never changes again, so its size is the one
// the model recorded.
func (m *diskModel) scan() (segs []segFile, marks []string, err error) {
	des, err := os.ReadDir(m.walDir)
	if err != nil {
		return nil, nil, err
	}
	for _, de := range des {
		if first, ok := segIndex(de.Name()); ok && !de.IsDir() {
			segs = append(segs, segFile{name: de.Name(), first: first, size: -1})
		} else if ok, _ := filepath.Match(markGlob, de.Name()); ok {
			marks = append(marks, filepath.Join(m.walDir, de.Name()))
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	for i := range segs {
		if d, ok := m.durSize[segs[i].name]; ok && i < len(segs)-2 {
			segs[i].size = d
			continue
		}
		fi, err := os.Stat(filepath.Join(m.walDir, segs[i].name))
		if err != nil {
			return nil, nil, err
		}
		segs[i].size = fi.Size()
	}
	return segs, marks, nil
}

// crash cuts the power now, between I/O points (an idle crash), unless the
// crash already happened. An append may be under way: the image is the
// folder as the last hook call saw it (m.seen), with what was not yet
// durable then kept or lost as at any cut; the writes since are lost.
func (m *diskModel) crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return
	}
	m.crashLocked("", 0)
}

func (m *diskModel) crashLocked(op wal.Op, index uint64) {
	m.crashed = true
	m.gate.Broadcast()
	defer close(m.crashCh)
	m.res.op, m.res.index, m.res.step = op, index, m.steps
	if err := m.mergeSeen(); err != nil && m.crashErr == nil {
		m.crashErr = fmt.Errorf("reading the frames written before the crash: %w", err)
	}
	written := m.hist
	m.res.written = written
	m.res.committed = uint64(len(written))
	if index > 0 {
		m.res.committed = index - 1
	}
	if index == 0 && m.pending > 0 {
		// The power goes between an append's I/O points (an idle cut, or a
		// compaction's step beside the append): its frame was written, its
		// fsync's hook not yet called. Only the frames before it are
		// committed.
		m.res.committed = min(m.res.committed, m.pending-1)
	}
	if m.crashErr == nil {
		m.crashErr = m.buildImage()
	}
	if m.crashErr == nil {
		m.crashErr = verifyImage(filepath.Join(m.image, "wal"))
	}
}

// mergeSeen adds the frames of the model's copy of the wal folder to the
// history: the copy is written to a folder beside the image and read as a
// log.
func (m *diskModel) mergeSeen() error {
	dir := m.image + ".seen"
	defer os.RemoveAll(dir)
	if err := m.seen.write(dir); err != nil {
		return err
	}
	return m.mergeLog(dir)
}

// verifyImage checks that the wal folder of an image is one a boot takes
// (a torn tail it cuts or restores, nothing it refuses): an image the wal
// refuses is the model's failure, said as such, since no power cut leaves
// one.
func verifyImage(dir string) error {
	if _, err := wal.VerifyDirFrom(dir, 0, func(uint64, [][]byte) error { return nil }); err != nil {
		return fmt.Errorf("disk model built an image no power cut can leave: %w", err)
	}
	return nil
}

// buildImage writes the post-crash data folder into m.image, from the
// model's copy of the wal folder (m.seen).
func (m *diskModel) buildImage() error {
	dst := filepath.Join(m.image, "wal")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	format, err := os.ReadFile(filepath.Join(m.dataDir, engine.FormatFile))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.image, engine.FormatFile), format, 0o644); err != nil {
		return err
	}
	if err := m.buildSnapImage(); err != nil {
		return err
	}
	// The folder's mark (wal/mark.go) is durable as it stands: it moves
	// with a rename and a folder fsync, between two I/O points, and only
	// to a segment whose name and first entry are durable.
	for _, mk := range m.seen.marks {
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(mk)), nil, 0o600); err != nil {
			return err
		}
	}
	segs := m.seen.segs
	var fresh []segFile // created, not yet made durable by a folder fsync
	for _, s := range segs {
		if !m.durName[s.name] {
			fresh = append(fresh, s)
		}
	}
	keepFresh := 0
	if len(fresh) > 0 {
		keepFresh = m.rng.IntN(len(fresh) + 1)
		m.res.modes = append(m.res.modes, fmt.Sprintf("new segments: %d of %d kept", keepFresh, len(fresh)))
		m.res.segmentsLost += len(fresh) - keepFresh
	}
	for _, s := range segs {
		if !m.durName[s.name] {
			if keepFresh == 0 {
				continue
			}
			keepFresh--
		}
		data := m.seen.data[s.name]
		d := min(m.durSize[s.name], int64(len(data)))
		e := min(m.durEnd[s.name], d)
		out := append([]byte(nil), data[:e]...)
		if tail := data[e:]; len(tail) > 0 && !allZero(tail) {
			// What was written since the fsync is a frame (its bytes end at
			// the last non-zero byte) over zeros: half the time the sectors
			// judged are the frame's, half the time they run on to the
			// file's end (the zeros after the frame).
			if m.rng.IntN(2) == 0 {
				tail = tail[:lastNonZero(tail)+1]
			}
			kept, mode := m.unsynced(tail, e)
			out = append(out, kept...)
			if !allZero(out[validPrefix(out, s.first):]) {
				m.res.torn++ // boot cuts it
			}
			m.res.modes = append(m.res.modes, fmt.Sprintf("%s: %d durable (entries %d) + %s", s.name, d, e, mode))
		}
		if int64(len(out)) < d {
			out = append(out, make([]byte, d-int64(len(out)))...) // the durable padding, under what was lost
		}
		if err := os.WriteFile(filepath.Join(dst, s.name), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sector is the unit a power cut keeps or loses of a write (wal's
// sectorSize): a disk writes a sector whole or not at all, and the page
// cache writes pages back in any order.
const sector = 512

// unsynced picks what a power cut keeps of bytes written but not fsynced,
// tail, which starts at byte at of its file: nothing, all of it, the
// sectors before a sector boundary (the rest reads as the zeros that were
// there, or the file ends there when out is not padded after it), or any
// set of its sectors, each kept or not. A sector not kept holds what it
// held before: zeros (the padding, or past the file's durable end).
func (m *diskModel) unsynced(tail []byte, at int64) ([]byte, string) {
	first := int((at/sector+1)*sector - at) // tail's first sector boundary
	switch m.rng.IntN(4) {
	case 0:
		return nil, fmt.Sprintf("none of %d unsynced bytes", len(tail))
	case 1:
		return tail, fmt.Sprintf("all %d unsynced bytes", len(tail))
	case 2:
		n := 0
		if first < len(tail) {
			n = first + sector*m.rng.IntN((len(tail)-first)/sector+1)
		}
		return tail[:min(n, len(tail))], fmt.Sprintf("the sectors of the first %d of %d unsynced bytes", min(n, len(tail)), len(tail))
	}
	out := append([]byte(nil), tail...)
	lost := 0
	for lo := 0; lo < len(out); {
		hi := min(len(out), first)
		if lo >= first {
			hi = min(len(out), lo+sector)
		}
		if m.rng.IntN(2) == 0 {
			clear(out[lo:hi])
			lost++
		}
		lo = hi
	}
	return out, fmt.Sprintf("%d unsynced bytes, %d of their sectors lost (zeros)", len(tail), lost)
}

// allZero tells whether every byte of b is zero (the wal's padding).
func allZero(b []byte) bool { return lastNonZero(b) < 0 }

// lastNonZero is the index of b's last non-zero byte (-1 if none).
func lastNonZero(b []byte) int {
	i := len(b) - 1
	for i >= 0 && b[i] == 0 {
		i--
	}
	return i
}

// segFile is a segment in a wal folder.
type segFile struct {
	name  string
	first uint64
	size  int64
}

func segName(first uint64) string { return fmt.Sprintf("%020d", first) }

// listSegs lists the segment files (20-digit names) of dir by index.
func listSegs(dir string) ([]segFile, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []segFile
	for _, de := range des {
		name := de.Name()
		first, ok := segIndex(name)
		if de.IsDir() || !ok {
			continue
		}
		info, err := de.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, segFile{name: name, first: first, size: info.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out, nil
}

// segIndex parses a segment file name: exactly 20 digits, not zero.
func segIndex(name string) (uint64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	first, err := strconv.ParseUint(name, 10, 64)
	return first, err == nil && first != 0
}

// validPrefix is the length of the leading whole, valid frames of a segment
// whose first index is first (docs/format.md): where wal.Open cuts a torn
// tail.
func validPrefix(data []byte, first uint64) int64 {
	off := 0
	for index := first; off < len(data); index++ {
		n, k := binary.Uvarint(data[off:])
		if k <= 0 || n == 0 || n > uint64(len(data)-off-k) {
			break
		}
		if !validFrame(data[off+k:off+k+int(n)], index) {
			break
		}
		off += k + int(n)
	}
	return int64(off)
}

func validFrame(f []byte, index uint64) bool {
	_, ok := frameRecords(f, index)
	return ok
}

// frameRecords decodes the frame f, which must be a valid frame for index
// of either version (docs/format.md, "Frame"), into its records (aliasing f).
func frameRecords(f []byte, index uint64) ([][]byte, bool) {
	if len(f) < 12 || f[0] != wal.Version && f[0] != wal.Version1 {
		return nil, false
	}
	body := f[:len(f)-8]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(f[len(body):]) {
		return nil, false
	}
	b := body[1:]
	idx, k := binary.Uvarint(b)
	if k <= 0 || idx != index {
		return nil, false
	}
	b = b[k:]
	count, k := binary.Uvarint(b)
	if k <= 0 || count == 0 || count > uint64(len(b)) {
		return nil, false
	}
	b = b[k:]
	if f[0] == wal.Version {
		if len(b) < 4 || !headerSumOK(f, len(body)-len(b), binary.LittleEndian.Uint32(b)) {
			return nil, false
		}
		b = b[4:]
	}
	recs := make([][]byte, 0, count)
	for i := uint64(0); i < count; i++ {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		recs = append(recs, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return recs, len(b) == 0
}

// headerSumOK checks a version 2 frame's header checksum: the low 32 bits
// of XXH64 of uvarint(len(f)) followed by the frame's first hdr bytes.
func headerSumOK(f []byte, hdr int, want uint32) bool {
	b := binary.AppendUvarint(nil, uint64(len(f)))
	return uint32(xxhash.Sum64(append(b, f[:hdr]...))) == want
}

// mergeLog adds the frames of the wal folder dir (still: the model's copy,
// or the live one with no engine running) to the history (under mu).
func (m *diskModel) mergeLog(dir string) error {
	first, frames, err := readLog(dir)
	if err != nil {
		return err
	}
	if len(frames) == 0 {
		m.hist = m.hist[:0] // an empty log: nothing was ever truncated from it
		return nil
	}
	if first-1 > uint64(len(m.hist)) {
		return fmt.Errorf("disk model: the log starts at index %d, the history knows %d frames: truncated frames were never read", first, len(m.hist))
	}
	m.hist = append(m.hist[:first-1], frames...)
	return nil
}

// setHistory replaces the history by what the boot recovered.
func (m *diskModel) setHistory(hist [][][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hist = append([][][]byte(nil), hist...)
}

// history is every frame written so far, index 1 first. Called with no
// engine running on the folder.
func (m *diskModel) history() ([][][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.mergeLog(m.walDir)
	return m.hist, err
}

// readLog returns the payloads of every frame of a wal folder, in order,
// and the index of the first (compaction truncates the log's front).
func readLog(walDir string) (uint64, [][][]byte, error) {
	var out [][][]byte
	first := uint64(0)
	err := wal.ReplayDir(walDir, 0, func(index uint64, recs [][]byte) error {
		if first == 0 {
			first = index
		}
		if index != first+uint64(len(out)) {
			return fmt.Errorf("frame %d after %d frames from %d", index, len(out), first)
		}
		frame := make([][]byte, len(recs))
		for i, r := range recs {
			frame[i] = append([]byte(nil), r...)
		}
		out = append(out, frame)
		return nil
	})
	if first == 0 {
		first = 1
	}
	return first, out, err
}

// keptEnd is where the bad last entry of segment name ends when wal.Open
// keeps it (its bytes restored: VerifyDirFrom says so), or 0 when Open
// cuts it or refuses. first is the log's first index (after a front
// truncation, from it: VerifyDir from 1 would call the entries before it
// missing).
func keptEnd(walDir, name string, first uint64) int64 {
	torn, err := wal.VerifyDirFrom(walDir, first, func(uint64, [][]byte) error { return nil })
	if err != nil || torn == nil || filepath.Base(torn.Segment) != name {
		return 0
	}
	return torn.KeptEnd
}
