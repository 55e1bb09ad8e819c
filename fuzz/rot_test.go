package fuzz

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/wal"
)

// Bit rot at the tail (issue 21, item 1): in one post-crash image in four,
// the power-loss harness changes one byte of the last acknowledged frame
// when that frame is the last whole entry of the last segment (what a torn
// write would touch, were it not fsynced). The next boot must refuse,
// naming that segment and the entry's offset (the byte is then put back
// and the scenario goes on), or boot and lose nothing acknowledged (which
// verify checks as after any cut). A boot that took the changed frame for
// a torn tail and cut it lost an acknowledged frame: verify reports it.
// Any byte of the entry may change, its length prefix's included (seed
// 83004592190 found a grown prefix cut as a torn write before frames had
// a header checksum: TestPowerLossFindings).

// tailRot is the byte changed in an image.
type tailRot struct {
	path  string // the segment file
	entry int64  // the entry's offset
	at    int64  // the byte changed
	mask  byte   // what it was XORed with
	index uint64
}

// rotTail changes a byte of the last acknowledged frame of image, at
// random, in one image in four; nil when it did not.
func (s *scenario) rotTail(image string, res *crashResult) (*tailRot, error) {
	if s.rng.IntN(4) != 0 {
		return nil, nil
	}
	segs, err := listSegs(filepath.Join(image, "wal"))
	if err != nil || len(segs) == 0 {
		return nil, err
	}
	last := segs[len(segs)-1]
	path := filepath.Join(image, "wal", last.name)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	off, end, index := lastEntry(data, last.first)
	if end == 0 || index > res.committed {
		return nil, nil // no acknowledged frame is the tail's last entry
	}
	at := off + s.rng.IntN(end-off)
	r := &tailRot{path: path, entry: int64(off), at: int64(at), index: index}
	r.mask = byte(1 + s.rng.IntN(255))
	if r.at == r.entry && data[r.at]^r.mask == 0 {
		r.mask ^= 0x80 // never zero the length's first byte: TestTailFlipEveryByte covers that
	}
	s.logf("tail rot: byte %d of frame %d (offset %d of %s) ^ %#x", r.at-r.entry, index, r.entry, last.name, r.mask)
	return r, r.flip()
}

// flip XORs the byte with the mask (twice undoes it).
func (r *tailRot) flip() error {
	f, err := os.OpenFile(r.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, r.at); err != nil {
		return err
	}
	b[0] ^= r.mask
	_, err = f.WriteAt(b, r.at)
	return err
}

// refused checks a boot's refusal of the rotted image: corruption at the
// changed entry, nowhere else.
func (r *tailRot) refused(err error) error {
	var ce *wal.CorruptError
	if !errors.As(err, &ce) {
		return fmt.Errorf("boot on a changed byte of acknowledged frame %d failed, but not as corruption: %w", r.index, err)
	}
	if ce.Segment != r.path || ce.Offset != r.entry || ce.Index != r.index {
		return fmt.Errorf("boot refused at %s offset %d index %d, want the changed frame %d at %s offset %d: %w",
			ce.Segment, ce.Offset, ce.Index, r.index, r.path, r.entry, err)
	}
	return nil
}

// boot opens an engine on dir under a new disk model. When a byte of dir's
// tail was changed (s.rot), a refusal is checked (corruption at that entry)
// and counted, the byte put back, and the boot done again.
func (s *scenario) boot(dir, image string, crashAt, g int, fx *fakeExec) (*diskModel, *engine.Engine, error) {
	open := func() (*diskModel, *engine.Engine, error) {
		model, err := newDiskModel(dir, image, crashAt, rand.New(rand.NewPCG(uint64(s.seed), uint64(g))), s.hist)
		if err != nil {
			return nil, nil, fmt.Errorf("disk model: %w", err)
		}
		e, err := engine.Open(s.config(dir, model, fx))
		return model, e, err
	}
	model, e, err := open()
	rot := s.rot
	s.rot = nil
	switch {
	case rot == nil:
	case err == nil:
		s.st.rotBooted.Add(1)
		s.logf("tail rot: booted (verify checks that nothing acknowledged was lost)")
	default:
		if rerr := rot.refused(err); rerr != nil {
			return model, nil, rerr
		}
		s.st.rotRefused.Add(1)
		s.logf("tail rot: boot refused: %v", err)
		if err := rot.flip(); err != nil {
			return model, nil, err
		}
		model, e, err = open()
	}
	return model, e, err
}

// lastEntry finds the last whole, valid entry of a segment whose first
// index is first: its offset, end and index (end 0 when there is none).
func lastEntry(data []byte, first uint64) (off, end int, index uint64) {
	pos := 0
	for i := first; pos < len(data); i++ {
		n, k := binary.Uvarint(data[pos:])
		if k <= 0 || n == 0 || n > uint64(len(data)-pos-k) || !validFrame(data[pos+k:pos+k+int(n)], i) {
			break
		}
		off, end, index = pos, pos+k+int(n), i
		pos = end
	}
	return off, end, index
}
