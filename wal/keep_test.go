package wal

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// TestAppendKeepsNoRecords: once Append returns, the log holds no reference
// to the records it was handed: a caller may reuse their bytes at once (the
// engine encodes every frame into one buffer it keeps, see engine's
// frameEncoder). Each caller writes its records into a buffer of its own,
// appends, and scribbles over the buffer before its next append; the log
// must hold what each append was given, both read back live and after a
// reopen. Several callers at once make the log gather appends into shared
// frames, the path where records wait in the queue for another goroutine.
func TestAppendKeepsNoRecords(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentSize: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	const callers, each = 4, 50
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64)
			for i := range each {
				buf = fmt.Appendf(buf[:0], "caller %d record %d", c, i)
				if _, err := l.Append([][]byte{buf}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[string(buf)] = true
				mu.Unlock()
				copy(buf, bytes.Repeat([]byte{'x'}, len(buf)))
			}
		}()
	}
	wg.Wait()
	check := func(l *Log, when string) {
		t.Helper()
		got := map[string]bool{}
		err := l.Replay(1, func(_ uint64, records [][]byte) error {
			for _, r := range records {
				got[string(r)] = true
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for r := range got {
			if !want[r] {
				t.Errorf("%s: the log holds %q, which no append was given", when, r)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: the log holds %d distinct records, want %d", when, len(got), len(want))
		}
	}
	check(l, "live")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, Options{SegmentSize: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check(l, "after a reopen")
}
