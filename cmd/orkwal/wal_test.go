package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// makeSnapshotted is makeData, closed cleanly: a snapshot at its last
// index. It returns the folder and its snapshots' indexes.
func makeSnapshotted(t *testing.T) (string, []uint64) {
	t.Helper()
	dir := makeData(t)
	snaps, err := engine.SnapshotIndexes(dir)
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshot in the data folder: %v %v", snaps, err)
	}
	return dir, snaps
}

// walCLI runs `orkwal wal ...` in-process and returns stdout and exit code.
func walCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	err := app.Run(append([]string{"orkwal", "wal"}, args...))
	var ee *exitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String() + err.Error(), ee.code
	}
	return out.String() + err.Error(), 1
}

// makeData writes a data folder with a few finished runs and a small
// segment size, so the log spans several segments.
func makeData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	eng := startNoop(t, dir)
	spec := &workflow.Spec{Name: "w", Tasks: []*workflow.Task{{Name: "a", Executor: "noop"}}}
	if _, _, err := eng.PutWorkflow(spec, ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := eng.Trigger("w", nil, "test"); err != nil {
			t.Fatal(err)
		}
	}
	eng.Close()
	return dir
}

// startNoop opens and starts an engine on dir with 512-byte segments and
// the noop executor.
func startNoop(t *testing.T, dir string) *engine.Engine {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet, SegmentSize: 512,
		Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start()
	return eng
}

// flipInFrame corrupts the frame at index (not in the last segment).
func flipInFrame(t *testing.T, dir string, index uint64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	for i, seg := range segs[:len(segs)-1] {
		first, _ := strconv.ParseUint(filepath.Base(seg), 10, 64)
		next, _ := strconv.ParseUint(filepath.Base(segs[i+1]), 10, 64)
		if index >= first && index < next {
			data, _ := os.ReadFile(seg)
			data[len(data)-3] ^= 0xff // inside the segment's last frame
			os.WriteFile(seg, data, 0o644)
			return
		}
	}
	t.Fatalf("no segment holds index %d", index)
}

func TestWalVerifyInspectRepair(t *testing.T) {
	dir := makeData(t)
	out, code := walCLI(t, "verify", "--data", dir)
	if code != 0 || !strings.Contains(out, "ok:") || !strings.Contains(out, "1 workflows, 20 runs") {
		t.Fatalf("verify of a good log: %d %s", code, out)
	}

	out, code = walCLI(t, "inspect", "--data", dir, "--limit", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first inspectRecord
	if code != 0 || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil ||
		first.Index != 1 || first.Kind != "workflow_put" {
		t.Fatalf("inspect: %d %q", code, out)
	}

	// Corrupt the last frame of the first segment.
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	second, _ := strconv.ParseUint(filepath.Base(segs[1]), 10, 64)
	bad := second - 1
	flipInFrame(t, dir, bad)
	out, code = walCLI(t, "verify", "--data", dir)
	want := "index " + strconv.FormatUint(bad, 10)
	if code != 1 || !strings.Contains(out, "CORRUPT") || !strings.Contains(out, want) || !strings.Contains(out, segs[0]) {
		t.Fatalf("verify of a corrupt log: %d %s; want exit 1 naming %s and %s", code, out, segs[0], want)
	}
	if _, err := engine.Open(engine.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); !errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("boot on a corrupt log: %v, want refusal", err)
	}

	out, code = walCLI(t, "repair", "--data", dir, "--truncate-at", strconv.FormatUint(bad, 10))
	if code != 0 || !strings.Contains(out, ".cut-") {
		t.Fatalf("repair: %d %s", code, out)
	}
	if out, code = walCLI(t, "verify", "--data", dir); code != 0 {
		t.Fatalf("verify after repair: %d %s", code, out)
	}
	eng, err := engine.Open(engine.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("boot after repair: %v", err)
	}
	defer eng.Close()
	if out, code = walCLI(t, "repair", "--data", dir, "--truncate-at", "2"); code != 1 || !strings.Contains(out, "in use by pid") {
		t.Fatalf("repair under a live daemon: %d %s, want refusal", code, out)
	}
}

func TestWalToolsAfterCompaction(t *testing.T) {
	dir := makeData(t) // closed cleanly: a snapshot was written
	for i := 0; i < 2; i++ {
		if out, code := walCLI(t, "compact", "--data", dir); code != 0 {
			t.Fatalf("compact: %d %s", code, out)
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		eng.Start()
		eng.Trigger("w", nil, "test")
		eng.Close()
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	if filepath.Base(segs[0]) == "00000000000000000001" {
		t.Fatal("the log was never truncated")
	}
	out, code := walCLI(t, "verify", "--data", dir)
	if code != 0 || !strings.Contains(out, "snapshot at index") || !strings.Contains(out, "ok:") {
		t.Fatalf("verify after compaction: %d %s", code, out)
	}
	if out, code = walCLI(t, "inspect", "--data", dir, "--limit", "1"); code != 0 || !strings.Contains(out, `"index"`) {
		t.Fatalf("inspect after compaction: %d %s", code, out)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, _ := engine.Open(engine.Config{DataDir: dir, Logger: quiet})
	defer eng.Close()
	if out, code := walCLI(t, "compact", "--data", dir); code != 1 || !strings.Contains(out, "in use by pid") {
		t.Fatalf("compact under a live daemon: %d %s", code, out)
	}
}

// TestWalRepairBelowASnapshot: a cut below the newest snapshot's index sets
// that snapshot aside, so boot replays the log up to the cut and the runs
// recorded afterwards survive the next boot (with the snapshot left in
// place they would reuse indexes it covers, and be skipped).
func TestWalRepairBelowASnapshot(t *testing.T) {
	dir, snaps := makeSnapshotted(t)
	at := snaps[0] - 3
	out, code := walCLI(t, "repair", "--data", dir, "--truncate-at", strconv.FormatUint(at, 10))
	if code != 0 || !strings.Contains(out, "set aside as") {
		t.Fatalf("repair: %d %s", code, out)
	}
	if left, _ := engine.SnapshotIndexes(dir); len(left) != 0 {
		t.Fatalf("snapshots at or after the cut still in place: %v", left)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func() *engine.Engine {
		t.Helper()
		eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet,
			Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
		if err != nil {
			t.Fatalf("boot after repair: %v", err)
		}
		return eng
	}
	eng := open()
	eng.Start()
	id, err := eng.Trigger("w", nil, "after the cut")
	if err != nil {
		t.Fatal(err)
	}
	eng.Close()
	eng = open()
	defer eng.Close()
	if _, err := eng.Run(id); err != nil {
		t.Fatalf("the run triggered after the repair was lost: %v", err)
	}
}

// TestBootRefusesALogShorterThanTheSnapshot: a wal folder that lost entries
// a snapshot covers (here: deleted) is refused at boot, naming both.
func TestBootRefusesALogShorterThanTheSnapshot(t *testing.T) {
	dir := makeData(t)
	if err := os.RemoveAll(filepath.Join(dir, "wal")); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet})
	if err == nil {
		eng.Close()
		t.Fatal("boot accepted an empty log beside a snapshot")
	}
	if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), "the log ends at index 0, before the snapshot's") {
		t.Fatalf("boot error %v, want the log's end and the snapshot named", err)
	}
	if out, code := walCLI(t, "verify", "--data", dir); code != 1 || !strings.Contains(out, "before the snapshot's") {
		t.Fatalf("verify: %d %s", code, out)
	}
}

// TestWalRepairRefusedChangesNothing: a cut the log cannot take (past its
// end) is refused before anything moves: the snapshots it would set aside
// stay in place.
func TestWalRepairRefusedChangesNothing(t *testing.T) {
	dir, before := makeSnapshotted(t)
	out, code := walCLI(t, "repair", "--data", dir, "--truncate-at", strconv.FormatUint(before[0]+100, 10))
	if code != 1 || !strings.Contains(out, "past the end") || !strings.Contains(out, "nothing was changed") {
		t.Fatalf("repair past the end: %d %s", code, out)
	}
	if after, _ := engine.SnapshotIndexes(dir); !reflect.DeepEqual(after, before) {
		t.Fatalf("snapshots %v after a refused repair, want %v", after, before)
	}
}

// TestWalRepairSetsSnapshotsAsideBeforeCutting: the repair stopped where a
// crash could stop it, at setting a snapshot aside, has not cut the log
// yet: the folder still boots, to the state it held (cut first, the log
// would end before the snapshot still in place, which boot refuses).
func TestWalRepairSetsSnapshotsAsideBeforeCutting(t *testing.T) {
	dir, snaps := makeSnapshotted(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hash := func() uint64 {
		t.Helper()
		eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet})
		if err != nil {
			t.Fatalf("boot: %v", err)
		}
		defer eng.Close()
		h, err := eng.StateHash()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := hash()
	setAside = func(string, uint64, string) (string, error) { return "", errors.New("injected: stopped here") }
	defer func() { setAside = engine.SetAsideSnapshot }()
	out, code := walCLI(t, "repair", "--data", dir, "--truncate-at", strconv.FormatUint(snaps[0]-3, 10))
	if code != 1 || !strings.Contains(out, "stopped here") {
		t.Fatalf("repair with a failing set-aside: %d %s", code, out)
	}
	if after := hash(); after != before {
		t.Fatal("the folder boots to another state after the interrupted repair")
	}
}

// TestWalCompactPrunesByItsFlags: `wal compact` prunes finished runs by
// the --keep-runs and --retention it is given, as the daemon's compactions
// do; it used the engine's defaults, and so pruned runs a daemon started
// with a longer retention keeps. A setting that cannot work is refused
// before the folder is opened.
func TestWalCompactPrunesByItsFlags(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func() *engine.Engine {
		eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet, Clock: pastClock(2 * time.Hour),
			Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := open()
	eng.Start()
	if _, _, err := eng.PutWorkflow(&workflow.Spec{Name: "w", Tasks: []*workflow.Task{{Name: "a", Executor: "noop"}}}, ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		id, err := eng.Trigger("w", nil, "test")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := eng.WaitRun(t.Context(), id); err != nil || r.Status != "success" {
			t.Fatalf("run %s: %s, %v", id, r.Status, err)
		}
	}
	eng.Close()
	runs := func() int {
		eng := open()
		defer eng.Close()
		return len(eng.Runs(engine.RunFilter{Workflow: "w"}))
	}
	if out, code := walCLI(t, "compact", "--data", dir, "--keep-runs", "0"); code != 2 || !strings.Contains(out, "--keep-runs must be at least 1") {
		t.Fatalf("compact --keep-runs 0: %d %s, want a usage error", code, out)
	}
	if n := runs(); n != 6 {
		t.Fatalf("%d runs after a refused compact, want 6", n)
	}
	// compact runs wal compact with flags and checks how many runs are left.
	compact := func(want int, flags ...string) {
		t.Helper()
		if out, code := walCLI(t, append([]string{"compact", "--data", dir}, flags...)...); code != 0 {
			t.Fatalf("compact %v: %d %s", flags, code, out)
		}
		if n := runs(); n != want {
			t.Fatalf("%d runs after compact %v (ORKWAL_KEEP_RUNS=%q), want %d", n, flags, os.Getenv("ORKWAL_KEEP_RUNS"), want)
		}
	}
	compact(4, "--keep-runs", "4")
	t.Setenv("ORKWAL_KEEP_RUNS", "2")
	compact(2)
	// The runs ended two hours ago (by the wall clock wal compact reads).
	compact(2, "--retention", "3h")
	compact(0, "--retention", "1h")
}

// pastClock is the wall clock, d ago.
type pastClock time.Duration

func (c pastClock) Now() time.Time                         { return time.Now().Add(-time.Duration(c)) }
func (c pastClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// TestWalRepairWithoutTruncateAt: the missing flag printed the whole help
// and 'Required flag "truncate-at" not set', exit 1 (a failure, not a usage
// error), and the help showed "(default: 0)" for a flag that has none.
func TestWalRepairWithoutTruncateAt(t *testing.T) {
	dir, before := makeSnapshotted(t)
	out, code := walCLI(t, "repair", "--data", dir)
	if code != exitUsage || !strings.HasPrefix(out, "wal repair: --truncate-at INDEX is required") {
		t.Fatalf("repair without --truncate-at: exit %d, output %q", code, out)
	}
	if after, _ := engine.SnapshotIndexes(dir); !reflect.DeepEqual(after, before) {
		t.Fatalf("snapshots %v after a refused repair, want %v", after, before)
	}
	if help, _ := walCLI(t, "repair", "--help"); strings.Contains(help, "default: 0") {
		t.Fatalf("help: %s", help)
	}
}

// TestWalVerifyCorruptNewestSnapshot: a newest snapshot that does not load
// is corruption: verify exits 1, names the file and says what a boot does
// (it starts from the older snapshot or the whole log, which it does, with
// every run). Before, verify printed the error and exited 0.
func TestWalVerifyCorruptNewestSnapshot(t *testing.T) {
	dir, snaps := makeSnapshotted(t)
	matches, _ := filepath.Glob(filepath.Join(dir, "snapshots", "snapshot-*"+strconv.FormatUint(snaps[0], 10)+".snap"))
	if len(matches) != 1 || len(snaps) != 1 {
		t.Fatalf("want one snapshot file, found %v (indexes %v)", matches, snaps)
	}
	data, _ := os.ReadFile(matches[0])
	data[len(data)-1] ^= 0xff // in its body: the checksum fails
	if err := os.WriteFile(matches[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := walCLI(t, "verify", "--data", dir)
	if code != 1 || !strings.Contains(out, "CORRUPT snapshot at index "+strconv.FormatUint(snaps[0], 10)) ||
		!strings.Contains(out, matches[0]) || !strings.Contains(out, "a boot skips it") || !strings.Contains(out, "starts from the whole log") {
		t.Fatalf("verify of a corrupt newest snapshot: exit %d\n%s", code, out)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatalf("boot after verify said it starts from the log: %v", err)
	}
	defer eng.Close()
	if runs := len(eng.Runs(engine.RunFilter{})); runs != 20 {
		t.Fatalf("boot from the log: %d runs, want 20", runs)
	}
}

// TestBootRefusesALostNewestSegment: the newest segment after a snapshot,
// deleted or zeroed in the folder a kill left (every acknowledged frame in
// it), is refused at boot and by verify, naming the segment, instead of a
// boot that silently rolls back the runs it held (issue 21, item 7); a cut
// at the index it started at (`wal repair`) is the operator's way to go
// on without it.
func TestBootRefusesALostNewestSegment(t *testing.T) {
	for _, lose := range []string{"deleted", "zeroed", "emptied"} {
		t.Run(lose, func(t *testing.T) {
			dir, snaps := makeSnapshotted(t)
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			eng := startNoop(t, dir)
			var newest string
			for newest == "" { // runs to their end, until a segment starts after the snapshot
				id, err := eng.Trigger("w", nil, "test")
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err = eng.WaitRun(ctx, id)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
				if first, _ := strconv.ParseUint(filepath.Base(segs[len(segs)-1]), 10, 64); first > snaps[0] {
					newest = segs[len(segs)-1]
				}
			}
			killed := t.TempDir() // what a kill -9 leaves: every acknowledged frame is in the files
			if err := os.CopyFS(killed, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			eng.Close()
			seg := filepath.Join(killed, "wal", filepath.Base(newest))
			switch data, _ := os.ReadFile(seg); lose {
			case "deleted":
				os.Remove(seg)
			case "zeroed":
				os.WriteFile(seg, make([]byte, len(data)), 0o600)
			case "emptied":
				os.WriteFile(seg, nil, 0o600)
			}
			_, err := engine.Open(engine.Config{DataDir: killed, Logger: quiet})
			if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), seg) {
				t.Fatalf("boot on a %s newest segment: %v, want corruption naming %s", lose, err, seg)
			}
			out, code := walCLI(t, "verify", "--data", killed)
			if code != 1 || !strings.Contains(out, seg) || !strings.Contains(out, "entries from index "+strings.TrimLeft(filepath.Base(seg), "0")+" on are missing") {
				t.Fatalf("verify of a %s newest segment: exit %d\n%s", lose, code, out)
			}
			if out, code := walCLI(t, "repair", "--data", killed, "--truncate-at", strings.TrimLeft(filepath.Base(seg), "0")); code != 0 {
				t.Fatalf("repair: exit %d\n%s", code, out)
			}
			eng, err = engine.Open(engine.Config{DataDir: killed, Logger: quiet})
			if err != nil {
				t.Fatalf("boot after the operator's cut: %v", err)
			}
			eng.Close()
		})
	}
}

// TestRunRefusesAFlippedLastRecord: a byte changed in the last record of
// the log (written whole, acknowledged) is not a torn tail: `orkwal run`
// refuses to boot, naming the segment, the offset and why, and says what
// to do (`orkwal wal repair`); the log is unchanged. Before, boot cut it
// with a warning and served without it.
func TestRunRefusesAFlippedLastRecord(t *testing.T) {
	dir := makeData(t)
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	seg := segs[len(segs)-1]
	data, _ := os.ReadFile(seg)
	last, k := 0, 0
	for off := 0; off < len(data); {
		n, m := binary.Uvarint(data[off:])
		last, k = off, m
		off += m + int(n)
	}
	data[last+k+3] ^= 0x01 // inside the last frame's records
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var errOut string
	var code int
	done := make(chan struct{})
	go func() { // a daemon that boots serves until stopped: a guard, not a wait
		_, errOut, code = runCLI(t, "run", "--data", dir, "--addr", "127.0.0.1:0")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("orkwal run booted on a changed last record (cut as a torn tail?) and serves")
	}
	if code != exitFailure {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailure, errOut)
	}
	for _, want := range []string{seg, fmt.Sprintf("offset %d", last), "not a torn write", "orkwal wal repair --data " + dir} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, data) {
		t.Error("the refused boot changed the segment")
	}
}
