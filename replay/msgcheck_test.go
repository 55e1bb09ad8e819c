package replay

import (
	"runtime"
	"strings"
	"testing"
)

// TestDecodeRefusesLengthsPastTheEnd: a record whose length prefix asks for
// more bytes than it holds is an error, found before any allocation of
// that length (msgpack's decoder would allocate it first: 808 MB here, from
// an input FuzzRecordDecode found).
func TestDecodeRefusesLengthsPastTheEnd(t *testing.T) {
	for _, in := range []string{
		"\x02\x82\xc60000\xa2",                // bin32 of 0x30303030 bytes
		"\x02\x81\xa2id\xdb\xff\xff\xff\xffx", // str32 of 4 GiB
		"\x02\xdd\x7f\xff\xff\xff",            // array32 of 2^31 elements
		"\x02\x81\xa2id\xa2x",                 // fixstr of 2 with 1 left
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decode([]byte(in))
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "left") {
			t.Errorf("%q: %v, want an error saying what is left", in, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%q: decoding allocated %d bytes", in, grew)
		}
	}
}

// TestCheckMsgpackAcceptsEveryRecord: every encoded sample record passes.
func TestCheckMsgpackAcceptsEncodedRecords(t *testing.T) {
	recs := []Record{
		&RunCreated{ID: "r1", Workflow: "w", Version: 1, Params: map[string]string{"k": "v"}, At: -5},
		&TaskFinished{TaskRef: TaskRef{Run: "r1", Task: 3}, Attempt: 2, OK: true, Output: []byte(`{"a":[1,2.5,"x"]}`), At: 1 << 40},
		&RunsPruned{IDs: []string{"a", "b"}, At: 7},
	}
	for _, r := range recs {
		b, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkMsgpack(b[1:]); err != nil {
			t.Errorf("%s: %v", r.Kind(), err)
		}
		if _, err := Decode(b); err != nil {
			t.Errorf("%s: decode: %v", r.Kind(), err)
		}
	}
}
