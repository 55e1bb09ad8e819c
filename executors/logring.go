package executors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The ring file (LogPath+".tail") of a capped log holds the output past the
// log's head, so that the log of an attempt a crash interrupted can be
// completed from it (RecoverLog). It begins with a header, then the ring:
//
//	offset size
//	0      8    magic "orkring2"
//	8      8    H, the head's size (little-endian uint64, as all below)
//	16     8    T, the ring's size, > 0
//	24     8    E, the log's length once its head was written (where the
//	            ring's bytes go)
//	32     8    P, bytes ever given to the ring, its last write included
//	40     8    L, bytes of the last write stored in the ring (≤ T, ≤ P)
//	48     4    CRC-32C of those L bytes
//	52     4    CRC-32C of bytes 0 to 51
//	56     T    the ring: byte k given to it (from 0) is at 56 + (k mod T)
//
// Each write to the ring rewrites the header first, describing that write,
// then puts its bytes: a crash of the daemon (its writes reach the page
// cache in order) leaves the last write either whole, its checksum
// matching, or not, and then recovery leaves out exactly its L bytes,
// the only ones it may have overwritten. Nothing is fsynced while the
// attempt runs: after a power cut the header and the ring hold what the
// disk kept of them (see docs/format.md, Task logs).
//
// Version 1 ("orkring1", written up to commit c5e9179): a 32-byte header of magic, H, T
// and P, P rewritten after each write's bytes; the ring from offset 32.
// Recovery still reads it (a crash may have left one before an upgrade).
const (
	ringMagic      = "orkring2"
	ringHeaderSize = 56
	ringMagicV1    = "orkring1"
	ringHeaderV1   = 32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ringHeader is the header of a version 2 ring.
type ringHeader struct {
	head, tail int64  // H and T
	base       int64  // E
	pos        int64  // P
	last       int64  // L
	sum        uint32 // CRC-32C of the last write's stored bytes
}

// put encodes h into b (ringHeaderSize bytes).
func (h ringHeader) put(b []byte) {
	le := binary.LittleEndian
	copy(b, ringMagic)
	le.PutUint64(b[8:], uint64(h.head))
	le.PutUint64(b[16:], uint64(h.tail))
	le.PutUint64(b[24:], uint64(h.base))
	le.PutUint64(b[32:], uint64(h.pos))
	le.PutUint64(b[40:], uint64(h.last))
	le.PutUint32(b[48:], h.sum)
	le.PutUint32(b[52:], crc32.Checksum(b[:52], castagnoli))
}

var (
	errRingHeader = errors.New("its header does not read back")
	errRingEmpty  = errors.New("empty ring") // created, never written: no byte given to it
)

// parseRingHeader decodes and checks a version 2 header.
func parseRingHeader(b []byte) (ringHeader, error) {
	le := binary.LittleEndian
	if len(b) < ringHeaderSize || string(b[:8]) != ringMagic || le.Uint32(b[52:]) != crc32.Checksum(b[:52], castagnoli) {
		return ringHeader{}, errRingHeader
	}
	h := ringHeader{
		head: int64(le.Uint64(b[8:])), tail: int64(le.Uint64(b[16:])), base: int64(le.Uint64(b[24:])),
		pos: int64(le.Uint64(b[32:])), last: int64(le.Uint64(b[40:])), sum: le.Uint32(b[48:]),
	}
	if h.head < 0 || h.tail <= 0 || h.base < 0 || h.pos < 0 || h.last < 0 || h.last > min(h.tail, h.pos) {
		return ringHeader{}, errRingHeader
	}
	return h, nil
}

// writeRing puts p at the ring's write position, wrapping around: the
// header describing the write, then its bytes. Only the last tailSize
// bytes of p can survive, so only they are written.
func (c *cappedLog) writeRing(p []byte) error {
	if c.ring == nil {
		if err := c.createRing(); err != nil {
			return err
		}
	}
	if skip := int64(len(p)) - c.tailSize; skip > 0 {
		c.ringBytes += skip
		p = p[skip:]
	}
	at := c.ringBytes
	c.ringBytes += int64(len(p))
	var hdr [ringHeaderSize]byte
	ringHeader{head: c.headSize, tail: c.tailSize, base: c.ringBase, pos: c.ringBytes,
		last: int64(len(p)), sum: crc32.Checksum(p, castagnoli)}.put(hdr[:])
	if err := c.ringWriteAt(hdr[:], 0); err != nil {
		return err
	}
	for len(p) > 0 {
		off := at % c.tailSize
		k := min(int64(len(p)), c.tailSize-off)
		if err := c.ringWriteAt(p[:k], ringHeaderSize+off); err != nil {
			return err
		}
		at += k
		p = p[k:]
	}
	return nil
}

// createRing creates the ring file, once the head is written: the log's
// length then is where the ring's bytes go (the log may hold bytes before
// the head: it is opened for appending).
func (c *cappedLog) createRing() error {
	fi, err := c.log.Stat()
	if err != nil {
		return fmt.Errorf("create log tail: %w", err)
	}
	f, err := os.OpenFile(c.ringPath(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create log tail: %w", err)
	}
	c.ring, c.ringBase = f, fi.Size()
	return nil
}

// ringWriteAt writes b at off in the ring file, through the test seam
// c.crash if it is set.
func (c *cappedLog) ringWriteAt(b []byte, off int64) error {
	var err error
	if c.crash != nil {
		err = c.crash.writeAt(c.ring, b, off)
	} else {
		_, err = c.ring.WriteAt(b, off)
	}
	if err != nil {
		return fmt.Errorf("write log tail: %w", err)
	}
	return nil
}

// ringView is what a log's completion takes from a ring: the bytes given
// to it from..to (counted from 0), byte k stored at offset data + (k mod
// tail) of the ring file; the marker first when from > 0 (output was
// dropped), saying the log keeps the first head bytes and the to-from
// after the marker.
type ringView struct {
	data       int64 // the file offset of the ring's first byte
	head, tail int64
	from, to   int64
}

// appendTo appends the view of ring to log: the marker if from > 0, then
// the bytes oldest first.
func (v ringView) appendTo(log io.Writer, ring io.ReaderAt) error {
	if v.from > 0 {
		if _, err := io.WriteString(log, logMarker(v.from, v.head, v.to-v.from)); err != nil {
			return fmt.Errorf("write log: %w", err)
		}
	}
	return v.copyTo(log, ring)
}

// copyTo appends the view's bytes, oldest first, to w.
func (v ringView) copyTo(w io.Writer, ring io.ReaderAt) error {
	start, n := v.from%v.tail, v.to-v.from
	first := min(n, v.tail-start)
	if err := copyRing(w, ring, v.data+start, first); err != nil {
		return err
	}
	return copyRing(w, ring, v.data, n-first)
}

// copyRing appends n bytes of the ring file from off to log.
func copyRing(log io.Writer, ring io.ReaderAt, off, n int64) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	for n > 0 {
		buf := (*bp)[:min(int64(len(*bp)), n)]
		k, err := ring.ReadAt(buf, off)
		if k > 0 {
			if _, werr := log.Write(buf[:k]); werr != nil {
				return fmt.Errorf("write log: %w", werr)
			}
			off += int64(k)
			n -= int64(k)
		}
		if err != nil && !(errors.Is(err, io.EOF) && k == len(buf)) {
			return fmt.Errorf("read log tail: %w", err)
		}
	}
	return nil
}

// appendRing appends the marker (when the ring wrapped) and the ring's
// content, oldest byte first, to the log: finish's completion, from the
// position the writer kept.
func (c *cappedLog) appendRing() error {
	return ringView{data: ringHeaderSize, head: c.headSize, tail: c.tailSize,
		from: max(0, c.ringBytes-c.tailSize), to: c.ringBytes}.appendTo(c.log, c.ring)
}

// readRing reads the header of the ring file of an interrupted attempt and
// returns what its log's completion takes from it: the view, the log's
// length where it goes, and the bytes of the last write that did not
// reach the ring (left out). An error means the ring does not read back.
func readRing(ring *os.File) (v ringView, base, lost int64, err error) {
	fi, err := ring.Stat()
	if err != nil {
		return ringView{}, 0, 0, err
	}
	if fi.Size() == 0 {
		return ringView{}, 0, 0, errRingEmpty
	}
	var b [ringHeaderSize]byte
	n, err := ring.ReadAt(b[:], 0)
	if n >= len(ringMagicV1) && string(b[:len(ringMagicV1)]) == ringMagicV1 {
		v, err := readRingV1(b[:n], fi.Size())
		return v, v.head, 0, err
	}
	if n < ringHeaderSize {
		return ringView{}, 0, 0, fmt.Errorf("%w: %v", errRingHeader, err)
	}
	h, err := parseRingHeader(b[:])
	if err != nil {
		return ringView{}, 0, 0, err
	}
	v = ringView{data: ringHeaderSize, head: h.head, tail: h.tail, from: max(0, h.pos-h.tail), to: h.pos}
	if !lastWriteWhole(ring, v, h) {
		lost = h.last
		v.to -= lost
	}
	// Every ring offset the view reads was written by a write that
	// completed (when it reads past T bytes, every offset was): the file
	// holds them unless a power cut lost them.
	need := min(v.to, h.tail)
	if v.from == v.to {
		need = 0 // the lost write held the ring's T bytes
	}
	if stored := fi.Size() - ringHeaderSize; stored < need || stored > h.tail {
		return ringView{}, 0, 0, fmt.Errorf("its %d bytes do not hold the %d its header says", max(stored, 0), need)
	}
	return v, h.base, lost, nil
}

// lastWriteWhole reports whether the last write's bytes, the last L of the
// view, are in the ring: their checksum matches the header's.
func lastWriteWhole(ring io.ReaderAt, v ringView, h ringHeader) bool {
	v.from = h.pos - h.last
	sum := crc32.New(castagnoli)
	return v.copyTo(sum, ring) == nil && sum.Sum32() == h.sum
}

// readRingV1 reads a version 1 ring (header b, file of size bytes). Its
// position may lag the last write by one (a crash between the write and
// the position's): bytes past it in a ring that never wrapped are taken
// all the same; in one that wrapped, the last write may show in the place
// of the oldest bytes.
func readRingV1(b []byte, size int64) (ringView, error) {
	if len(b) < ringHeaderV1 {
		return ringView{}, errRingHeader
	}
	le := binary.LittleEndian
	head, tail, pos := int64(le.Uint64(b[8:])), int64(le.Uint64(b[16:])), int64(le.Uint64(b[24:]))
	stored := size - ringHeaderV1
	if tail <= 0 || head < 0 || pos < 0 || stored > tail || pos > tail && stored != tail {
		return ringView{}, errRingHeader
	}
	if pos = max(pos, stored); pos <= tail {
		return ringView{data: ringHeaderV1, head: head, tail: tail, to: stored}, nil
	}
	return ringView{data: ringHeaderV1, head: head, tail: tail, from: pos - tail, to: pos}, nil
}
