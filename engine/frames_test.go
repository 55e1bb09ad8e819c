package engine

import (
	"bytes"
	"testing"

	"github.com/orkwal/orkwal/replay"
)

// A frame's records are encoded into one buffer kept from frame to frame
// (issue 27): the payloads are Encode's, a frame of task records takes no
// allocation once the buffer has grown, and a buffer grown past
// maxKeptEncoding by a large record is not kept.
func TestFrameEncoderReusesItsBuffer(t *testing.T) {
	ref := replay.TaskRef{Run: "0b1e6f0e-4d0a-4a8e-9d5e-3b1c2d3e4f50", Task: 3}
	recs := []replay.Record{
		&replay.TaskDispatched{TaskRef: ref, Attempt: 1, At: 1e18},
		&replay.TaskStarted{TaskRef: ref, Attempt: 1, PID: 4242, StartTime: 99, At: 1e18 + 1},
		&replay.TaskFinished{TaskRef: ref, Attempt: 1, OK: true, At: 1e18 + 2},
		&replay.RunCreated{ID: ref.Run, Workflow: "w", Version: 2, At: 1e18}, // not a hot record
	}
	var f frameEncoder
	check := func(payloads [][]byte) {
		t.Helper()
		if len(payloads) != len(recs) {
			t.Fatalf("%d payloads for %d records", len(payloads), len(recs))
		}
		for i, r := range recs {
			want, err := replay.Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(payloads[i], want) {
				t.Fatalf("%s: payload %x, Encode's %x", r.Kind(), payloads[i], want)
			}
		}
	}
	payloads, err := f.encode(recs)
	if err != nil {
		t.Fatal(err)
	}
	check(payloads)
	f.done()
	hot := recs[:3]
	if n := testing.AllocsPerRun(50, func() { f.encode(hot); f.done() }); n != 0 {
		t.Errorf("%.0f allocations a frame of task records, want 0", n)
	}
	payloads, _ = f.encode(recs) // again, in the kept buffer
	check(payloads)
	f.done()
	big := &replay.TaskFinished{TaskRef: ref, Attempt: 1, OK: true, Output: bytes.Repeat([]byte("7"), maxKeptEncoding), At: 1}
	if _, err := f.encode([]replay.Record{big}); err != nil {
		t.Fatal(err)
	}
	f.done()
	if f.buf != nil {
		t.Errorf("a %d-byte buffer kept after a large record", cap(f.buf))
	}
}
