package wal

import (
	"bytes"
	"fmt"
	"testing"

	tidwall "github.com/tidwall/wal"
)

// tidwallFrames opens dir with github.com/tidwall/wal (v1.2.1, the format
// docs/format.md names) and returns every entry it reads, first to last, and
// its first index.
func tidwallFrames(t *testing.T, dir string) (uint64, [][]byte) {
	t.Helper()
	tl, err := tidwall.Open(dir, nil)
	if err != nil {
		t.Fatalf("tidwall/wal: open: %v", err)
	}
	defer tl.Close()
	first, _ := tl.FirstIndex()
	last, _ := tl.LastIndex()
	var out [][]byte
	for i := first; i <= last && first > 0; i++ {
		b, err := tl.Read(i)
		if err != nil {
			t.Fatalf("tidwall/wal: read %d of %d..%d: %v", i, first, last, err)
		}
		out = append(out, b)
	}
	return first, out
}

// TestTidwallReadsACleanlyClosedLog: a log orkwal wrote and closed (several
// segments, a front truncation, entries of every size class, a reopen in
// between) opens in tidwall/wal, which yields exactly orkwal's frames, one
// per index, from the log's first index to its last: the segment format is
// tidwall/wal's. Of a live log it reads the tail's zero padding as empty
// entries, one per zero byte (what docs/format.md says): Close truncates the
// padding so that a stopped folder holds nothing else. Before, a cleanly
// closed folder kept its padding (256 KiB of empty entries to tidwall/wal).
func TestTidwallReadsACleanlyClosedLog(t *testing.T) {
	dir := t.TempDir()
	var want [][]byte // the frames, by index from 1
	write := func(l *Log, n int) {
		for i := 0; i < n; i++ {
			recs := [][]byte{rec(len(want)), bytes.Repeat([]byte{'x'}, (len(want)*37)%700)}
			index, err := l.Append(recs)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, appendFrame(nil, index, recs))
		}
	}
	l := openT(t, dir, 2048)
	write(l, 30)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, 2048)
	write(l, 30)
	if err := l.TruncateFront(20); err != nil {
		t.Fatal(err)
	}
	write(l, 3)

	first, live := tidwallFrames(t, dir)
	padding := l.segs.padding()
	if padding == 0 {
		t.Fatal("the live tail has no padding: the test shows nothing")
	}
	if n := len(want) - int(first) + 1; len(live) != n+padding {
		t.Fatalf("tidwall/wal read %d entries of the live log, want its %d frames and %d empty ones (the padding)", len(live), n, padding)
	}
	for _, e := range live[len(live)-padding:] {
		if len(e) != 0 {
			t.Fatalf("a padding entry read as %d bytes, want empty", len(e))
		}
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	first, got := tidwallFrames(t, dir)
	if first < 2 || first > 20 {
		t.Fatalf("tidwall/wal's first index %d, want the truncated log's (2..20)", first)
	}
	if len(got) != len(want)-int(first)+1 {
		t.Fatalf("tidwall/wal read %d entries, want the %d frames %d..%d", len(got), len(want)-int(first)+1, first, len(want))
	}
	for i, b := range got {
		index := first + uint64(i)
		if !bytes.Equal(b, want[index-1]) {
			t.Fatalf("entry %d: tidwall/wal read %s, orkwal wrote %s", index, short(b), short(want[index-1]))
		}
	}
	if l := openT(t, dir, 2048); l.LastIndex() != uint64(len(want)) { // and orkwal still opens it
		t.Fatalf("orkwal reopened the log at %d, want %d", l.LastIndex(), len(want))
	} else {
		l.Close()
	}
}

func short(b []byte) string {
	if len(b) > 24 {
		return fmt.Sprintf("%x... (%d bytes)", b[:24], len(b))
	}
	return fmt.Sprintf("%x", b)
}
