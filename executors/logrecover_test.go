package executors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
// failure usually is. The ring stays until EndLogRecovery.
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
			// The ring, or the recovery record when there is none.
			if _, err := os.Stat(path + tailSuffix); err != nil {
				t.Fatalf("the tail after RecoverLog: %v", err)
			}
			if err := EndLogRecovery(path); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + tailSuffix); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the ring after EndLogRecovery: %v", err)
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
	})
}

// recoveryCase is the state a crash left an attempt's log in, before its
// recovery, and the log recovery makes of it.
type recoveryCase struct {
	name  string
	make  func(t *testing.T, path string)
	want  string
	steps []string // the operations of the recovery, in order
}

func recoveryCases() []recoveryCase {
	const c = 100
	const prefix = "previous attempt\n"
	out := pattern(7, 333)
	ringSteps := []string{"fsync log", "fsync ring", "fsync folder", "truncate log", "write", "fsync log"}
	recordSteps := []string{"fsync log", "write", "fsync record", "rename record", "fsync folder", "truncate log", "write", "fsync log"}
	capped := func(out []byte, crash *crashPoint) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			writeFile(t, "", path, prefix)
			if err := crashCapped(t, path, out, c, 7, crash); err != nil && !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
		}
	}
	// The 10th write to the ring crashes after 3 of its bytes.
	var torn *crashPoint
	var tornWrite ringOp
	for i, op := range ringOps(int64(len(out)), c, 7) {
		if op.header && op.from >= c/2+9*7-1 && torn == nil {
			torn, tornWrite = &crashPoint{at: i + 2, bytes: 3}, op
		}
	}
	v1 := binary.LittleEndian.AppendUint64([]byte(ringMagicV1), 12)
	v1 = binary.LittleEndian.AppendUint64(v1, 12)
	v1 = binary.LittleEndian.AppendUint64(v1, 11)
	return []recoveryCase{
		{"ring", capped(out, nil), recovered(prefix, out, c, 0), ringSteps},
		{"ring in its first lap", capped(out[:80], nil), recovered(prefix, out[:80], c, 0), ringSteps},
		{"ring with its last write lost", capped(out, torn), recovered(prefix, out[:tornWrite.to], c, tornWrite.to-tornWrite.from), ringSteps},
		{"head only", capped(out[:30], nil), recovered(prefix, out[:30], c, 0), recordSteps},
		{"empty ring", capped(out, &crashPoint{at: 1}), recovered(prefix, out[:c/2], c, 0), recordSteps},
		{"ring unreadable", func(t *testing.T, path string) {
			capped(out, nil)(t, path)
			writeFile(t, "", path+tailSuffix, "orkring2 torn")
		}, prefix + string(out[:c/2]) + "\n[orkwal: attempt interrupted: the daemon stopped; the end of its output is lost (its header does not read back: EOF)]\n", recordSteps},
		{"ring of version 1", func(t *testing.T, path string) {
			writeFile(t, "", path, "step 1 of 3\n")
			writeFile(t, "", path+tailSuffix, string(v1)+"step 2 of 3")
		}, "step 1 of 3\nstep 2 of 3" + interruptedNote, ringSteps},
		{"crash during finish", func(t *testing.T, path string) {
			// The daemon died appending the ring to the log.
			capped(out, nil)(t, path)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(logMarker(233, 50, 50)[:20])
			f.Close()
		}, recovered(prefix, out, c, 0), ringSteps},
	}
}

// copyFolder copies the files of folder from to folder to.
func copyFolder(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, "", filepath.Join(to, e.Name()), string(data))
	}
}

// TestRecoverLogCrash: a crash at any step of RecoverLog (before an fsync,
// a truncation, a rename, or during a write, none, part or all of it
// done), then RecoverLog again at the next boot, makes the same log as one
// RecoverLog with no crash; a second crash during the second one changes
// nothing either. Before, a crash after the log's completion was appended
// and before the engine's record was durable made the next boot append it
// again: the ring, the marker and the line twice. The steps are those the
// package documents, in that order (the fsync before each step that
// relies on it).
func TestRecoverLogCrash(t *testing.T) {
	t.Parallel()
	for _, tc := range recoveryCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			orig := filepath.Join(dir, "orig")
			tc.make(t, filepath.Join(orig, "1.log"))
			recoverAt := func(name string, crashes ...crashPoint) string {
				path := filepath.Join(dir, name, "1.log")
				copyFolder(t, orig, filepath.Dir(path))
				for i, c := range crashes {
					// A later try may have fewer steps (it reads the
					// record the crashed one wrote): a crash past them
					// does not strike.
					if err := recoverLog(path, &c); !errors.Is(err, errCrash) && (i == 0 || err != nil) {
						t.Fatalf("%s: the crash did not strike: %v", name, err)
					}
				}
				for range 2 {
					if err := RecoverLog(path); err != nil {
						t.Fatal(err)
					}
				}
				return readFileString(t, path)
			}
			clean := &crashPoint{}
			path := filepath.Join(dir, "clean", "1.log")
			copyFolder(t, orig, filepath.Dir(path))
			if err := recoverLog(path, clean); err != nil {
				t.Fatal(err)
			}
			if got := readFileString(t, path); got != tc.want {
				t.Fatalf("recovered log\n%q, want\n%q", got, tc.want)
			}
			if got := slices.Compact(slices.Clone(clean.ops)); !slices.Equal(got, tc.steps) {
				t.Errorf("recovery steps %q, want %q (writes in a row as one)", got, tc.steps)
			}
			if b, err := os.ReadFile(path + tailSuffix); err == nil && strings.HasPrefix(string(b), "orkrcvr1") {
				if fi, err := os.Stat(path + tailSuffix); err != nil || fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("the recovery record: %v, mode %v, want none for group and others", err, fi.Mode())
				}
			}
			n := len(clean.ops)
			for at := 1; at <= n; at++ {
				for _, bytes := range []int{0, 1, 5, 1 << 30} {
					name := fmt.Sprintf("%d-%d", at, bytes)
					if got := recoverAt(name, crashPoint{at: at, bytes: bytes}); got != tc.want {
						t.Fatalf("crash at step %d (%s) after %d bytes: recovered\n%q, want\n%q", at, clean.ops[at-1], bytes, got, tc.want)
					}
					for again := 1; again <= n && bytes == 1; again++ {
						name := fmt.Sprintf("%d-%d-%d", at, bytes, again)
						if got := recoverAt(name, crashPoint{at: at, bytes: 1}, crashPoint{at: again, bytes: 1}); got != tc.want {
							t.Fatalf("crashes at steps %d then %d: recovered\n%q, want\n%q", at, again, got, tc.want)
						}
					}
				}
			}
			if err := EndLogRecovery(path); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{path + tailSuffix, path + tailSuffix + tmpSuffix} {
				if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s after EndLogRecovery: %v", filepath.Base(name), err)
				}
			}
		})
	}
}
