package replay

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"

	"github.com/cespare/xxhash/v2"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/vmihailenco/msgpack/v5"
)

// DecodeSnapshot checks a snapshot file's header (magic, then version, then
// checksum, each with its own error) and decodes it. Restore builds its
// state; ReadSnapshot does both from a file with less memory.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	if len(data) < snapshotHeader {
		return nil, ErrSnapshotMagic
	}
	h, err := checkHeader(data[:snapshotHeader], int64(len(data)-snapshotHeader))
	if err != nil {
		return nil, err
	}
	body := data[snapshotHeader:]
	if err := checkSum(bytes.NewReader(body), h.sum); err != nil {
		return nil, err
	}
	snap := &Snapshot{}
	if err := msgpack.Unmarshal(body, snap); err != nil {
		return nil, fmt.Errorf("replay: decode snapshot: %w", err)
	}
	snap.Index = h.index
	return snap, nil
}

// snapHeader is what a snapshot file's header says of its body.
type snapHeader struct {
	index uint64 // the WAL index
	n     int64  // the body's length
	sum   uint64 // the body's xxhash64
}

// checkHeader checks a snapshot's header (magic, then version, then the
// body's length, size bytes, which a checksum error reports).
func checkHeader(hdr []byte, size int64) (snapHeader, error) {
	if len(hdr) < snapshotHeader || string(hdr[:8]) != snapshotMagic {
		return snapHeader{}, ErrSnapshotMagic
	}
	if hdr[8] != SnapshotVersion {
		return snapHeader{}, fmt.Errorf("%w %d", ErrSnapshotVersion, hdr[8])
	}
	h := snapHeader{index: binary.LittleEndian.Uint64(hdr[12:]), n: int64(binary.LittleEndian.Uint64(hdr[20:])),
		sum: binary.LittleEndian.Uint64(hdr[28:])}
	if h.n != size {
		return snapHeader{}, ErrSnapshotChecksum
	}
	return h, nil
}

// ReadSnapshot reads the snapshot file r of size bytes, checked as
// DecodeSnapshot checks it, and returns the state Restore would build from
// it, and its WAL index. It reads the file twice, in small pieces: once to
// check its checksum, then to decode it, restoring each run as soon as it
// is decoded (restorer), so that neither the file's bytes nor its runs
// as decoded are ever held at once beside the state: a boot's peak memory
// is about the state's (issue 27). The decoded bytes are summed again, and
// must be those checked: until they are known to be, what they say is
// judged by their sum first (a file written again in place between the
// passes reads as ErrSnapshotChecksum, whatever its decoding made of it),
// and the state is finished (its derived structures built) only then.
func ReadSnapshot(r io.ReaderAt, size int64) (*State, uint64, error) {
	hdr := make([]byte, snapshotHeader)
	if _, err := r.ReadAt(hdr, 0); err != nil {
		if err == io.EOF {
			return nil, 0, ErrSnapshotMagic
		}
		return nil, 0, fmt.Errorf("replay: read snapshot: %w", err)
	}
	h, err := checkHeader(hdr, size-snapshotHeader)
	if err != nil {
		return nil, 0, err
	}
	if err := checkSum(io.NewSectionReader(r, snapshotHeader, h.n), h.sum); err != nil {
		return nil, 0, err
	}
	sum := xxhash.New()
	body := io.TeeReader(io.NewSectionReader(r, snapshotHeader, h.n), sum)
	rs, decErr := decodeBody(bufio.NewReaderSize(body, 64<<10), h.n)
	if _, err := io.Copy(io.Discard, body); err != nil {
		return nil, 0, fmt.Errorf("replay: read snapshot: %w", err)
	}
	if sum.Sum64() != h.sum {
		return nil, 0, fmt.Errorf("%w (the file changed after its check)", ErrSnapshotChecksum)
	}
	if decErr != nil {
		return nil, 0, decErr
	}
	st, err := rs.finish()
	if err != nil {
		return nil, 0, err
	}
	return st, h.index, nil
}

// checkSum reads body and checks that its xxhash64 is want.
func checkSum(body io.Reader, want uint64) error {
	d := xxhash.New()
	if _, err := io.Copy(d, body); err != nil {
		return fmt.Errorf("replay: read snapshot: %w", err)
	}
	if d.Sum64() != want {
		return ErrSnapshotChecksum
	}
	return nil
}

// decodeBody decodes a snapshot's body of n bytes from r into a
// restorer holding its runs, to be finished once the bytes it read are
// known to be those checked. Until then they may be anything (a file
// written again between the passes): a panic in their decoding is
// returned as an error, which their sum then replaces.
func decodeBody(r io.Reader, n int64) (rs *restorer, err error) {
	defer func() {
		if p := recover(); p != nil {
			rs, err = nil, fmt.Errorf("replay: decode snapshot: %v", p)
		}
	}()
	body := &streamedSnapshot{}
	body.Runs = runStream{snap: &body.Snapshot, n: n}
	if err := msgpack.NewDecoder(r).Decode(body); err != nil {
		if body.Runs.err != nil {
			return nil, body.Runs.err
		}
		return nil, fmt.Errorf("replay: decode snapshot: %w", err)
	}
	snap := &body.Snapshot
	rs = body.Runs.restorer
	if rs == nil { // no runs, or their runs came before the specs
		rs = newRestorer(snap, len(snap.Runs))
	}
	for i := range snap.Runs {
		if err := rs.add(&snap.Runs[i]); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// streamedSnapshot is a Snapshot whose body msgpack decodes as it does a
// Snapshot (the same field names and decoders), but for its runs, which
// runStream restores one by one: this Runs, declared before the embedded
// Snapshot, shadows its Runs (msgpack does not inline a shadowed field).
type streamedSnapshot struct {
	Runs     runStream
	Snapshot `msgpack:",inline"`
}

// runStream decodes a snapshot's runs into a restorer, one by one.
type runStream struct {
	snap     *Snapshot // the one being decoded: its Specs, once decoded
	n        int64     // the body's length, a bound on the number of runs
	restorer *restorer
	err      error // a run that did not restore, reported as Restore does
}

// minRunBytes is the least a run takes in a snapshot's body: an array of
// its 16 fields, each one byte at least.
const minRunBytes = 17

// DecodeMsgpack restores each run as it is decoded. orkwal writes Specs
// before Runs, which the runs need; a body written otherwise has its runs
// decoded whole, into the snapshot's Runs, and restored after.
//
// Each run is decoded into the same SnapRun, its tasks into the same
// array and its params into the same map, which a run keeps only as its
// workflow's defaults or a copy: a run as decoded costs no garbage but
// its own strings and slices, which its restored run keeps.
func (rs *runStream) DecodeMsgpack(dec *msgpack.Decoder) error {
	snap := rs.snap
	if len(snap.Specs) == 0 {
		return dec.Decode(&snap.Runs)
	}
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	rs.restorer = newRestorer(snap, int(min(int64(max(n, 0)), rs.n/minRunBytes)))
	var sr SnapRun
	params := map[string]string{}
	for range n {
		clear(params)
		tasks := sr.Tasks[:cap(sr.Tasks)]
		clear(tasks) // its slices were the last run's: msgpack would decode into them
		sr = SnapRun{Params: params, Tasks: tasks[:0]}
		if err := dec.Decode(&sr); err != nil {
			return err
		}
		if defaults, ok := specParams(sr.Params, rs.specOf(&sr)); ok {
			sr.Params = defaults
		} else {
			sr.Params = maps.Clone(sr.Params)
		}
		if rs.err = rs.restorer.add(&sr); rs.err != nil {
			return rs.err
		}
	}
	return nil
}

// specOf is the spec sr refers to, or nil.
func (rs *runStream) specOf(sr *SnapRun) *workflow.Spec {
	if sr.Spec < 0 || sr.Spec >= len(rs.snap.Specs) {
		return nil
	}
	return rs.snap.Specs[sr.Spec].Spec
}
