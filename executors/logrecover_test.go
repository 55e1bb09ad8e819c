package executors

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

const interruptedLost = "\n[orkwal: attempt interrupted: the daemon stopped; its last %d bytes of output are lost]\n"

// crashCapped writes out to a capped log at path in chunks, the first
// once alone (so that the writes to the ring do not depend on when the log
// file gets created), through the crash point crash (nil: none), then
// stops as a crash of the daemon would: the files are closed, finish never
// runs. It returns the first write error (errCrash when crash struck).
func crashCapped(t *testing.T, path string, out []byte, maxBytes, chunk int64, crash *crashPoint) error {
	t.Helper()
	c, err := newCappedLog(path, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	c.crash = crash
	for p := out; len(p) > 0; {
		k := min(int64(len(p)), chunk)
		c.Write(p[:k])
		c.created()
		p = p[k:]
	}
	if c.log != nil {
		c.log.Close()
	}
	if c.ring != nil {
		c.ring.Close()
	}
	return c.err
}

// interruptCapped is crashCapped with no crash point: the output all
// reached the files.
func interruptCapped(t *testing.T, path string, out []byte, maxBytes int64) {
	t.Helper()
	if err := crashCapped(t, path, out, maxBytes, 7, nil); err != nil {
		t.Fatal(err)
	}
}

// recovered is the log RecoverLog makes of the output out of an attempt
// logging under maxBytes (after prefix, there before), whose last lost
// bytes given to the ring (the stored part of its last write) did not
// reach it.
func recovered(prefix string, out []byte, maxBytes, lost int64) string {
	head, tail := splitCap(maxBytes)
	if lost == 0 {
		return prefix + string(wantCapped(out, maxBytes)) + interruptedNote
	}
	pos := int64(len(out)) - head // P: bytes given to the ring
	from, to := max(0, pos-tail), pos-lost
	b := bytes.NewBufferString(prefix)
	b.Write(out[:head])
	if from > 0 {
		b.WriteString(logMarker(from, head, to-from))
	}
	b.Write(out[head+from : head+to])
	fmt.Fprintf(b, interruptedLost, lost)
	return b.String()
}

// ringOp is one write of a capped log to its ring file, in the order they
// happen: the header of a write of the output's bytes from..to, or a
// part of its bytes (n of them).
type ringOp struct {
	header   bool
	from, to int64
	n        int64
}

// ringOps lists the writes to the ring file of out written in chunks of
// chunk bytes under maxBytes (docs/format.md: a header, then the bytes,
// in two parts when they wrap).
func ringOps(size, maxBytes, chunk int64) []ringOp {
	head, tail := splitCap(maxBytes)
	var ops []ringOp
	for from := int64(0); from < size; from += chunk {
		to := min(from+chunk, size)
		if to <= head {
			continue
		}
		from := max(from, head)
		stored := min(to-from, tail)
		ops = append(ops, ringOp{header: true, from: from, to: to})
		at := (to - head - stored) % tail
		first := min(stored, tail-at)
		ops = append(ops, ringOp{from: from, to: to, n: first})
		if first < stored {
			ops = append(ops, ringOp{from: from, to: to, n: stored - first})
		}
	}
	return ops
}

// TestRingWriteCrash: a crash of the daemon at any write to the ring file
// (the header, the bytes, each part of bytes that wrap; none, part or all
// of that write done) leaves a ring from which RecoverLog makes exactly
// the log the output up to the last whole write to the ring would have
// made, and says how many bytes of a write it left out. With the version
// 1 ring, whose position was rewritten after the bytes, a crash between
// the two showed the last write's bytes in place of the oldest ones, the
// marker counting them wrong.
func TestRingWriteCrash(t *testing.T) {
	t.Parallel()
	const maxBytes = 100 // head 50, tail 50
	const prefix = "previous attempt\n"
	_, tail := splitCap(maxBytes)
	for _, size := range []int64{60, 149, 333} {
		for _, chunk := range []int64{7, 50, 64, 130} {
			t.Run(fmt.Sprintf("%d bytes in %d", size, chunk), func(t *testing.T) {
				out := pattern(uint64(size*chunk), size)
				ops := ringOps(size, maxBytes, chunk)
				dir := t.TempDir()
				for i, op := range ops {
					budgets := []int64{0, 1, op.n / 2, op.n - 1, op.n}
					if op.header {
						budgets = []int64{0, ringHeaderSize} // a crash does not tear 56 bytes
					}
					for _, budget := range slices.Compact(budgets) {
						path := filepath.Join(dir, fmt.Sprintf("%d-%d", i, budget), "1.log")
						writeFile(t, "", path, prefix)
						crash := &crashPoint{at: i + 1, bytes: int(budget)}
						if err := crashCapped(t, path, out, maxBytes, chunk, crash); !errors.Is(err, errCrash) {
							t.Fatalf("write %d: the crash did not strike: %v", i+1, err)
						}
						if len(crash.ops) != i+1 {
							t.Fatalf("the ring was written %d times before the crash, want %d", len(crash.ops), i+1)
						}
						// What the disk holds: the output before this write,
						// and this write whole or not.
						var want string
						switch last := ops[i]; {
						case op.header && budget == 0:
							want = recovered(prefix, out[:op.from], maxBytes, 0)
						case budget == op.n && (i+1 == len(ops) || ops[i+1].header):
							want = recovered(prefix, out[:op.to], maxBytes, 0)
						default:
							want = recovered(prefix, out[:last.to], maxBytes, min(last.to-last.from, tail))
						}
						if err := RecoverLog(path); err != nil {
							t.Fatal(err)
						}
						if got := readFileString(t, path); got != want {
							t.Fatalf("crash at write %d (%+v) after %d bytes: recovered\n%q, want\n%q", i+1, op, budget, got, want)
						}
					}
				}
				// No crash: the writes are those listed.
				crash := &crashPoint{}
				path := filepath.Join(dir, "whole", "1.log")
				if err := crashCapped(t, path, out, maxBytes, chunk, crash); err != nil || len(crash.ops) != len(ops) {
					t.Fatalf("%d writes to the ring (%v), want %d", len(crash.ops), err, len(ops))
				}
			})
		}
	}
}

// TestRecoverLogCompletesAnInterruptedLog: the log of an attempt that a
// crash interrupted is completed at boot from the ring beside it, as the
// attempt's end would have (head, marker, tail in order), followed by a
// line saying it was interrupted. Before, boot removed the ring: the log
// kept its head only, losing the end of the output, where the reason of a
// failure usually is.
func TestRecoverLogCompletesAnInterruptedLog(t *testing.T) {
	t.Parallel()
	const c = 100
	for _, size := range []int64{1, c / 2, c/2 + 1, c - 1, c, c + 1, 3*c + 17, 100 * c} {
		t.Run(strconv.FormatInt(size, 10), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "logs", "1.log")
			out := seqOutput(1, int(size))[:size]
			interruptCapped(t, path, out, c)
			if err := RecoverLog(path); err != nil {
				t.Fatal(err)
			}
			if got, want := readFileString(t, path), recovered("", out, c, 0); got != want {
				t.Fatalf("recovered log\n%q, want\n%q", got, want)
			}
			if _, err := os.Stat(path + tailSuffix); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the ring is still there: %v", err)
			}
		})
	}
	t.Run("no output", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "logs", "1.log")
		if err := RecoverLog(path); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a log was made for an attempt that wrote nothing: %v", err)
		}
	})
	t.Run("ring unreadable", func(t *testing.T) {
		// A power cut can leave the ring's header unwritten: the head is
		// kept, and the note says the end is lost.
		path := filepath.Join(t.TempDir(), "logs", "1.log")
		out := seqOutput(1, 3*c)[:3*c]
		interruptCapped(t, path, out, c)
		if err := os.WriteFile(path+tailSuffix, make([]byte, ringHeaderSize+c/2), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := RecoverLog(path); err != nil {
			t.Fatal(err)
		}
		want := string(out[:c/2]) + "\n[orkwal: attempt interrupted: the daemon stopped; the end of its output is lost (its header does not read back)]\n"
		if got := readFileString(t, path); got != want {
			t.Fatalf("log with an unreadable ring: %q, want %q", got, want)
		}
		if _, err := os.Stat(path + tailSuffix); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the unreadable ring is still there: %v", err)
		}
	})
}
