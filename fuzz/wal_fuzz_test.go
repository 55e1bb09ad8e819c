package fuzz

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// goodSegment returns the bytes of a real one-segment log of n frames.
func goodSegment(t testing.TB, n int) []byte {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		l.Append([][]byte{{byte(i)}, bytes.Repeat([]byte{'r'}, i)})
	}
	l.Close()
	b, _ := os.ReadFile(filepath.Join(dir, "00000000000000000001"))
	return b
}

func collect(dir string) ([][]byte, error) {
	var out [][]byte
	err := wal.ReplayDir(dir, 1, func(_ uint64, rs [][]byte) error {
		for _, r := range rs {
			out = append(out, append([]byte(nil), r...))
		}
		return nil
	})
	return out, err
}

// FuzzSegment feeds arbitrary bytes as the only segment of a log. Verify and
// Open must never panic; Open either refuses with ErrCorrupt (valid frames
// after a bad one) or repairs the tail so that the log replays cleanly,
// keeps exactly the whole frames Verify saw before the bad bytes, and
// accepts an append.
func FuzzSegment(f *testing.F) {
	good := goodSegment(f, 5)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(append(append([]byte(nil), good...), 0, 0, 0, 0))
	f.Add(append(append([]byte(nil), good[:10]...), good[20:]...))
	f.Add([]byte{})
	f.Add([]byte{0x7f, 1, 1, 1})
	for _, dir := range []string{goldenDir, goldenV1Dir} {
		if golden, err := os.ReadFile(filepath.Join(dir, "00000000000000000001")); err == nil {
			f.Add(golden) // every record kind, in version 2 frames (this version's) and version 1
		}
	}
	f.Fuzz(func(t *testing.T, seg []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000001"), seg, 0o644); err != nil {
			t.Fatal(err)
		}
		var seen [][]byte
		torn, verr := wal.VerifyDir(dir, func(_ uint64, rs [][]byte) error {
			for _, r := range rs {
				seen = append(seen, append([]byte(nil), r...))
			}
			return nil
		})
		l, err := wal.Open(dir, wal.Options{Logger: quiet})
		if err != nil {
			if !errors.Is(err, wal.ErrCorrupt) || verr == nil {
				t.Fatalf("open: %v (verify said %v)", err, verr)
			}
			return
		}
		defer l.Close()
		if verr != nil {
			t.Fatalf("open repaired what verify called corruption: %v", verr)
		}
		got, err := collect(dir)
		if err != nil {
			t.Fatalf("replay after open: %v (torn %v)", err, torn)
		}
		if len(got) != len(seen) {
			t.Fatalf("after repair %d records, verify saw %d whole ones", len(got), len(seen))
		}
		if _, err := l.Append([][]byte{[]byte("x")}); err != nil {
			t.Fatalf("append after repair: %v", err)
		}
	})
}

// FuzzRecordDecode: Decode never panics, and whatever it accepts encodes
// back to bytes that decode to the same encoding.
func FuzzRecordDecode(f *testing.F) {
	for _, r := range sampleRecords() {
		b, _ := replay.Encode(r)
		f.Add(b)
	}
	f.Add([]byte{3, 0xc0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := replay.Decode(b)
		if err != nil {
			return
		}
		enc, err := replay.Encode(r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		r2, err := replay.Decode(enc)
		if err != nil {
			t.Fatalf("decode of own encoding: %v", err)
		}
		enc2, _ := replay.Encode(r2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %x vs %x", enc, enc2)
		}
	})
}
