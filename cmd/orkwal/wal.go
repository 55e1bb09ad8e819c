package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
	"github.com/urfave/cli/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// walCommand groups the offline tools for a data folder's WAL.
func walCommand() *cli.Command {
	data := &cli.StringFlag{Name: "data", Value: DefaultDataDir, EnvVars: []string{"ORKWAL_DATA"}, Usage: "data folder"}
	return &cli.Command{
		Name:  "wal",
		Usage: "inspect, verify and repair a data folder's write-ahead log (offline)",
		Subcommands: []*cli.Command{
			{Name: "verify", Usage: "check every frame and record; exit 1 on corruption", Flags: []cli.Flag{data}, Action: withoutArguments(walVerify)},
			{Name: "inspect", Usage: "print records as JSON lines", Flags: []cli.Flag{data,
				&cli.Uint64Flag{Name: "from", Value: 1, Usage: "first WAL index"},
				&cli.IntFlag{Name: "limit", Usage: "at most this many records (0 = all)"}}, Action: withoutArguments(walInspect)},
			{Name: "repair", Usage: "cut the log at an index, keeping a copy of what is removed", Flags: []cli.Flag{data,
				&cli.Uint64Flag{Name: "truncate-at", Usage: "first WAL `INDEX` to remove; required", DefaultText: "none"}}, Action: withoutArguments(walRepair)},
			{Name: "compact", Usage: "write a snapshot and truncate the log now (the daemon must be stopped); finished runs are pruned by --retention and --keep-runs: give it the daemon's",
				Flags: append([]cli.Flag{data}, retentionFlags()...), Action: withoutArguments(walCompact)},
		},
	}
}

func walDir(c *cli.Context) string { return engine.Layout(c.String("data")).WAL() }

// walVerify loads the newest valid snapshot and applies every record after
// it, exactly as boot does, without changing anything.
func walVerify(c *cli.Context) error {
	dir := walDir(c)
	if _, err := os.Stat(dir); err != nil {
		return exitf(exitFailure, "no WAL at %s: %v", dir, err)
	}
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
	st, snapIndex, badSnaps, err := engine.CheckSnapshots(c.String("data"), logger)
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	if snapIndex > 0 {
		fmt.Fprintf(c.App.Writer, "snapshot at index %d: %d workflows, %d runs\n", snapIndex, len(st.Workflows), len(st.Runs))
	}
	frames, records := 0, 0
	// Every frame still in the log is checked; those after the snapshot
	// are applied to it, as boot does.
	lastIndex := uint64(0)
	torn, err := wal.VerifyDirFrom(dir, firstIndex(dir), func(index uint64, payloads [][]byte) error {
		frames++
		lastIndex = index
		for i, p := range payloads {
			rec, err := replay.Decode(p)
			if err == nil && index > snapIndex {
				err = st.Apply(rec)
			}
			if err != nil {
				return fmt.Errorf("index %d record %d: %w", index, i, err)
			}
			records++
		}
		return nil
	})
	if err == nil {
		err = engine.LogMeetsSnapshot(firstIndex(dir), lastIndex, snapIndex)
	}
	out := c.App.Writer
	reportBadSnapshots(out, badSnaps, snapIndex)
	if err != nil {
		fmt.Fprintf(out, "CORRUPT after %d good frames: %v\n", frames, err)
		fmt.Fprintln(out, "a boot refuses this folder; `orkwal wal repair --truncate-at INDEX` cuts the log there (a copy is kept)")
		return exitf(exitFailure, "verify failed")
	}
	fmt.Fprintf(out, "ok: %d frames, %d records, %d workflows, %d runs\n", frames, records, len(st.Workflows), len(st.Runs))
	if torn != nil {
		fmt.Fprintf(out, "torn tail (the trace of a crash during a write; the next boot cuts it, or keeps a whole frame as the reason says): %v\n", torn)
	}
	if len(badSnaps) > 0 {
		return exitf(exitFailure, "verify failed: %d corrupt snapshot(s)", len(badSnaps))
	}
	return nil
}

// reportBadSnapshots says which snapshots do not load and what a boot does
// about it: it skips them and starts from the next older one (base, 0 for
// none: the whole log), which loses nothing while the log still holds every
// frame after it (the log check that follows says whether it does).
func reportBadSnapshots(out io.Writer, bad []engine.BadSnapshot, base uint64) {
	for _, b := range bad {
		fmt.Fprintf(out, "CORRUPT snapshot at index %d (%s): %v\n", b.Index, b.Path, b.Err)
	}
	if len(bad) == 0 {
		return
	}
	from := "the whole log (no older snapshot loads)"
	if base > 0 {
		from = fmt.Sprintf("the snapshot at index %d and the log after it", base)
	}
	fmt.Fprintf(out, "a boot skips it (logging an error) and starts from %s; "+
		"once that boots, `orkwal wal compact` (daemon stopped) or the next compaction writes a new snapshot; "+
		"move the corrupt file out of snapshots/ to keep it for inspection\n", from)
}

// walInspect prints one JSON object per record.
func walInspect(c *cli.Context) error {
	enc := json.NewEncoder(c.App.Writer)
	limit, n := c.Int("limit"), 0
	stop := fmt.Errorf("limit reached")
	from := c.Uint64("from")
	if first := firstIndex(walDir(c)); from < first {
		from = first // the log's front was truncated after a snapshot
	}
	_, err := wal.VerifyDirFrom(walDir(c), from, func(index uint64, payloads [][]byte) error {
		if index < c.Uint64("from") {
			return nil
		}
		for i, p := range payloads {
			if limit > 0 && n == limit {
				return stop
			}
			if err := enc.Encode(inspectLine(index, i, p)); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil && err != stop {
		return exitf(exitFailure, "%v", err)
	}
	return nil
}

// inspectRecord is one line of `orkwal wal inspect`.
type inspectRecord struct {
	Index  uint64 `json:"index"`
	Record int    `json:"record"`
	Kind   string `json:"kind,omitempty"`
	Data   any    `json:"data,omitempty"`
	Error  string `json:"error,omitempty"`
}

func inspectLine(index uint64, i int, p []byte) inspectRecord {
	line := inspectRecord{Index: index, Record: i}
	if len(p) == 0 {
		line.Error = "empty record"
		return line
	}
	line.Kind = replay.Kind(p[0]).String()
	var body map[string]any
	if err := msgpack.Unmarshal(p[1:], &body); err != nil {
		line.Error = err.Error()
		return line
	}
	line.Data = printable(body)
	return line
}

// printable turns msgpack bytes into strings where they are text.
func printable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = printable(x)
		}
	case []any:
		for i, x := range v {
			v[i] = printable(x)
		}
	case []byte:
		if utf8.Valid(v) {
			return string(v)
		}
	}
	return v
}

// firstIndex is the index of the log's first entry as boot will see it
// (1 when there is none or the folder cannot be read: the reader that
// follows reports why).
func firstIndex(dir string) uint64 {
	first, _ := wal.FirstIndexDir(dir)
	return max(first, 1)
}

// walCompact writes a snapshot of a stopped daemon's folder and truncates
// its log, pruning finished runs by the retention flags.
func walCompact(c *cli.Context) error {
	if err := checkRetention(c); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
	eng, err := engine.Open(engine.Config{DataDir: c.String("data"), Logger: logger,
		Retention: c.Duration("retention"), KeepRuns: c.Int("keep-runs")})
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	err = eng.Compact()
	if cerr := eng.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return exitf(exitFailure, "compact: %v", err)
	}
	fmt.Fprintln(c.App.Writer, "snapshot written; the log before the previous snapshot was removed")
	return nil
}

// setAside is engine.SetAsideSnapshot; tests make it fail.
var setAside = engine.SetAsideSnapshot

// walRepair is the operator's explicit cut. It takes the data folder's lock,
// so it never runs under a live daemon.
func walRepair(c *cli.Context) error {
	if !c.IsSet("truncate-at") { // not Required: urfave/cli makes that exit 1, with the help
		return usageError(c, fmt.Errorf("--truncate-at INDEX is required: the first index to remove (see orkwal wal verify)"))
	}
	lock, err := wal.AcquireLock(c.String("data"))
	if err != nil {
		return exitf(exitFailure, "%v (stop the daemon first)", err)
	}
	defer lock.Release()
	at := c.Uint64("truncate-at")
	// A snapshot at the cut or after it holds the entries being cut: it is
	// set aside, and boot starts from an older snapshot or the log's start,
	// which must then still meet the log.
	snaps, err := engine.SnapshotIndexes(c.String("data"))
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	var stale []uint64
	base := uint64(0) // the newest snapshot the cut keeps
	for _, idx := range snaps {
		if idx >= at {
			stale = append(stale, idx)
		} else if base == 0 {
			base = idx
		}
	}
	if first := firstIndex(walDir(c)); first > base+1 {
		return exitf(exitFailure, "cutting at index %d would leave nothing to boot from: the log starts at index %d, and the newest snapshot before the cut is at index %d; nothing was changed", at, first, base)
	}
	if err := wal.CheckCut(walDir(c), at); err != nil {
		return exitf(exitFailure, "%v; nothing was changed", err)
	}
	// The snapshots go first: a crash after them leaves the whole log and
	// the older snapshots, a folder boot reads as it did before the repair;
	// the other way round it would leave a log that ends before the
	// newest snapshot, which boot refuses. Either way the same repair run
	// again completes the cut.
	keep := wal.CutFolder(walDir(c), time.Now())
	suffix := "cut-" + strings.TrimPrefix(filepath.Ext(keep), ".cut-")
	for _, idx := range stale {
		kept, err := setAside(c.String("data"), idx, suffix)
		if err != nil {
			return exitf(exitFailure, "%v", err)
		}
		fmt.Fprintf(c.App.Writer, "snapshot at index %d covers the cut entries: set aside as %s\n", idx, kept)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := wal.CutAt(walDir(c), at, keep, logger); err != nil {
		return exitf(exitFailure, "%v", err)
	}
	fmt.Fprintf(c.App.Writer, "cut the log before index %d; the removed bytes are kept in %s\n", at, keep)
	return nil
}
