package engine

import "github.com/orkwal/orkwal/replay"

// frameEncoder makes a frame's payloads in one buffer kept from frame to
// frame, where each record took an allocation, and the frame a slice
// (issue 27: three records a task). The WAL copies the payloads into its
// own buffer, so they are let go once appended (done). A buffer grown past
// maxKeptEncoding (a large output) is not kept. Loop goroutine (or Open's,
// before the loop starts).
type frameEncoder struct {
	buf      []byte
	payloads [][]byte
}

const maxKeptEncoding = 64 << 10

// encode returns recs' payloads, valid until done.
func (f *frameEncoder) encode(recs []replay.Record) ([][]byte, error) {
	f.buf, f.payloads = f.buf[:0], f.payloads[:0]
	for _, r := range recs {
		start := len(f.buf)
		var err error
		if f.buf, err = replay.AppendEncode(f.buf, r); err != nil {
			f.done()
			return nil, err
		}
		f.payloads = append(f.payloads, f.buf[start:len(f.buf):len(f.buf)])
	}
	return f.payloads, nil
}

// done lets go of the payloads encode returned.
func (f *frameEncoder) done() {
	clear(f.payloads)
	f.payloads = f.payloads[:0]
	if cap(f.buf) > maxKeptEncoding {
		f.buf = nil
	}
}
