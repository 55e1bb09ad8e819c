package fuzz

import (
	"bytes"
	"testing"

	"github.com/orkwal/orkwal/replay"
)

// checkIncrementalSnapshot begins an incremental snapshot after the first
// cut records, applies the rest while it is copied in steps whose sizes
// come from the fuzzed bytes (their top 3 bits; none with no bytes),
// completes it, and checks that it encodes to the very bytes of a full copy
// taken at cut: a write in Apply that does not save the old value first
// shows up here.
func checkIncrementalSnapshot(t *testing.T, recs []replay.Record, cut int, steps []byte) {
	t.Helper()
	st := replay.New()
	for _, r := range recs[:cut] {
		st.Apply(r)
	}
	var want, got bytes.Buffer
	if err := st.Snapshot(uint64(cut)).Encode(&want); err != nil {
		t.Fatal(err)
	}
	snap := st.BeginSnapshot(uint64(cut))
	for i, r := range recs[cut:] {
		if len(steps) > 0 {
			if n := int(steps[i%len(steps)] >> 5); n > 0 {
				if _, err := snap.CopyStep(n); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := st.Apply(r); err != nil {
			t.Fatalf("%s rejected while a snapshot is copied: %v", r.Kind(), err)
		}
	}
	for done := false; !done; {
		var err error
		if done, err = snap.CopyStep(3); err != nil {
			t.Fatal(err)
		}
	}
	if err := snap.Encode(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("incremental snapshot begun at %d differs from the full copy at %d", cut, cut)
	}
}
