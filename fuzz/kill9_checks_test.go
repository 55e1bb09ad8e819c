package fuzz

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

// checkRun checks one finished run against its workflow: its status, the
// crash-loop rule, and a ledger line for every task recorded as succeeded.
// It returns the run's tasks (attempt-bearing ones) and whether it failed
// by the crash-loop rule.
func (k *kill9) checkRun(r runView, ledger map[string]int, describe string) (tasks int, crashLoop bool) {
	want, ok := k9Expected[r.Workflow]
	if !ok {
		k.fatalf("run %s of an unknown workflow %q", r.ID, r.Workflow)
	}
	loop := false
	for _, tv := range r.Tasks {
		if tv.Instances > 0 {
			continue // a fan-out node: its instances are the processes
		}
		tasks++
		if strings.Contains(tv.Error, "crash loop") {
			if tv.Interruptions < 3 {
				k.fatalf("run %s task %s failed as a crash loop after %d interruptions", r.ID, tv.Name, tv.Interruptions)
			}
			k.t.Logf("crash loop: %s (%s) attempt %d, %d interruptions: %s", tv.ID, r.Workflow, tv.Attempt, tv.Interruptions, tv.Error)
			loop = true
		}
		if tv.Status == "success" && ledger[tv.ID] == 0 {
			k.fatalf("task %s is recorded as succeeded but never wrote its ledger line (attempt %d)", tv.ID, tv.Attempt)
		}
	}
	switch {
	case r.Status == want:
	case loop && r.Status == "failed":
		return tasks, true // 3 kills in a row hit one task: failing it is the documented rule
	default:
		k.fatalf("run %s of %s ended %s, want %s: %s", r.ID, r.Workflow, r.Status, want, describe)
	}
	return tasks, false
}

// viewOf is the runView of a run of the tail's fold (a pruned run, which
// the API no longer shows).
func viewOf(run *replay.Run) runView {
	v := runView{ID: run.ID, Workflow: run.Workflow, Status: string(run.Status)}
	for _, t := range run.Tasks {
		tv := struct {
			ID            string `json:"id"`
			Name          string `json:"name"`
			Status        string `json:"status"`
			Attempt       int    `json:"attempt"`
			Instances     int    `json:"instances"`
			Interruptions int    `json:"interruptions"`
			Error         string `json:"error"`
		}{ID: t.ID(), Name: t.Key(), Status: string(t.Status), Attempt: t.Attempt, Instances: len(t.Instances),
			Interruptions: t.Interruptions, Error: t.Error}
		if t.IsNode() && tv.Instances == 0 {
			continue // a fan-out over no items: never an attempt
		}
		v.Tasks = append(v.Tasks, tv)
	}
	return v
}

// checkPruned checks the runs retention pruned as they were when pruned
// (the tail captured them) unless GET /runs listed them before: they ended
// as their workflow implies, and their succeeded tasks left ledger lines.
// It returns how many it checked, their tasks and their crash-loop
// failures.
func (k *kill9) checkPruned(retained map[string]bool, ledger map[string]int) (runs, tasks, loops int) {
	for id, run := range k.tail.pruned {
		if retained[id] {
			continue // listed by GET /runs and checked there, pruned since (the clean stop compacts)
		}
		if !run.Status.Finished() {
			k.fatalf("run %s was pruned while %s", id, run.Status)
		}
		n, loop := k.checkRun(viewOf(run), ledger, "(pruned by retention; as it was then)")
		runs++
		tasks += n
		if loop {
			loops++
		}
	}
	return runs, tasks, loops
}

// runEver returns a run the log ever held: in the final fold, or pruned.
func (k *kill9) runEver(id string) *replay.Run {
	if r := k.tail.st.Runs[id]; r != nil {
		return r
	}
	return k.tail.pruned[id]
}

// checkCron checks the schedule's fires across every kill: one second
// apart (none twice, none lost: catchup all reruns what a down daemon
// missed), each with a run of its own that carries its fire time, and
// every cron run made by one fire. It returns the number of fires.
func (k *kill9) checkCron(retained map[string]bool) int {
	fires := k.tail.fires["k-cron"]
	if len(fires) == 0 {
		k.fatalf("cron: the k-cron schedule (@every 1s) never fired")
	}
	byRun := map[string]int64{}
	for i, f := range fires {
		if i > 0 && f.at-fires[i-1].at != int64(time.Second) {
			what := "LOST"
			if f.at <= fires[i-1].at {
				what = "TWICE"
			}
			k.fatalf("cron %s: fire at %s (WAL index %d) follows the fire at %s (index %d); @every 1s with catchup all must fire every second exactly once",
				what, time.Unix(0, f.at).UTC().Format(time.RFC3339Nano), f.index, time.Unix(0, fires[i-1].at).UTC().Format(time.RFC3339Nano), fires[i-1].index)
		}
		if f.run == "" {
			k.fatalf("cron: the fire at %s made no run (%s); overlap allow never skips", time.Unix(0, f.at).UTC(), f.skip)
		}
		if _, dup := byRun[f.run]; dup {
			k.fatalf("cron: run %s was made by two fires", f.run)
		}
		byRun[f.run] = f.at
		r := k.runEver(f.run)
		switch {
		case r == nil:
			k.fatalf("cron: the fire at %s names run %s, which the log never created", time.Unix(0, f.at).UTC(), f.run)
		case r.Trigger != "cron" || r.Workflow != "k-cron" || r.ScheduledAt != f.at:
			k.fatalf("cron: run %s (trigger %s, workflow %s) carries fire time %d, its fire was at %d", r.ID, r.Trigger, r.Workflow, r.ScheduledAt, f.at)
		}
	}
	seen := map[int64]string{}
	count := func(r *replay.Run) {
		if r.Trigger != "cron" {
			return
		}
		if _, ok := byRun[r.ID]; !ok {
			k.fatalf("cron: run %s has no cron_fired record", r.ID)
		}
		if other, ok := seen[r.ScheduledAt]; ok && other != r.ID {
			k.fatalf("cron TWICE: runs %s and %s both carry fire time %s", other, r.ID, time.Unix(0, r.ScheduledAt).UTC())
		}
		seen[r.ScheduledAt] = r.ID
	}
	for _, r := range k.tail.st.RunList {
		count(r)
	}
	for _, r := range k.tail.pruned {
		count(r)
	}
	if len(seen) != len(fires) {
		k.fatalf("cron: %d fires, %d cron runs", len(fires), len(seen))
	}
	// The schedule was still firing at the end (not stalled by a kill).
	if last := time.Unix(0, fires[len(fires)-1].at); k.stoppedAt.Sub(last) > 5*time.Second {
		k.fatalf("cron: the last fire was at %s, %s before the daemon was stopped", last.UTC(), k.stoppedAt.Sub(last))
	}
	return len(fires)
}

// checkLedgerRuns: every ledger line (an effect: a task that ran) belongs
// to a run the log holds or held. A line of an unknown run would be an
// effect of work that was never recorded: write-ahead violated.
func (k *kill9) checkLedgerRuns(ledger map[string]int) {
	for task := range ledger {
		run, _, _ := strings.Cut(task, ":")
		if k.runEver(run) == nil {
			k.fatalf("the ledger has a line of task %s, whose run %s the log never recorded (an effect without its record)", task, run)
		}
	}
}

// diskStats are the data folder's sizes seen after every kill and at the
// end.
type diskStats struct {
	maxWAL, maxSnap, maxTotal int64
	maxSnapFiles              int             // snapshot files at once, after a kill
	snaps                     map[string]bool // snapshot files seen
}

func (d *diskStats) String() string {
	return fmt.Sprintf("data folder at most %d bytes (WAL at most %d, largest snapshot %d, at most %d snapshot files at once)",
		d.maxTotal, d.maxWAL, d.maxSnap, d.maxSnapFiles)
}

// diskUsage is one measurement of the data folder.
type diskUsage struct {
	wal, snapshots, logs, work, total int64
	snapFiles, tmpFiles               int
	runFolders                        map[string]string // logs/<run>, work/<run> and work/<run>.* → the run
}

func measure(dataDir string) diskUsage {
	u := diskUsage{runFolders: map[string]string{}}
	filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed while walking: not with a dead or stopped daemon
		}
		rel, _ := filepath.Rel(dataDir, path)
		parts := strings.Split(rel, string(filepath.Separator))
		if d.IsDir() {
			if len(parts) == 2 && (parts[0] == "logs" || parts[0] == "work") {
				u.runFolders[rel] = parts[1]
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		n := info.Size()
		u.total += n
		if run, _, _ := strings.Cut(parts[len(parts)-1], "."); len(parts) == 2 && parts[0] == "work" && uuid.Validate(run) == nil {
			u.runFolders[rel] = run // an attempt's scratch file: <run>.<task>.<attempt>.*
		}
		switch parts[0] {
		case "wal":
			u.wal += n
		case "snapshots":
			u.snapshots += n
			switch {
			case strings.HasSuffix(rel, ".snap"):
				u.snapFiles++
			case strings.HasSuffix(rel, ".tmp"):
				u.tmpFiles++
			}
		case "logs":
			u.logs += n
		case "work":
			u.work += n
		}
		return nil
	})
	return u
}

// checkDisk measures the data folder (the daemon is dead or stopped) and
// checks it against the bound the settings imply, C = --compact-bytes:
//
//   - the WAL holds the frames after the previous snapshot (truncation
//     keeps one snapshot's worth of log): about 2 C, plus one segment (4
//     MiB) for the turn that crosses C and the frame headers, as the README
//     has it (disk ≈ 2 × snapshot + 2 × compact-bytes + 4 MiB + the task
//     logs of retained runs). This is checked after the clean stop only:
//     after a kill the log also holds what was appended since the newest
//     snapshot a compaction completed, and when kills keep landing on
//     compactions (a slow, loaded disk) that grows until one completes (the
//     next boot starts one at once); the largest WAL seen after a kill is
//     reported, not bounded;
//   - snapshots: the newest two (the previous one stays as a fallback); a
//     kill after a rename and before the removal of the oldest leaves a
//     third, and kills that keep landing there more (each completed
//     compaction removes them: reported, not bounded), plus at most one
//     .tmp; at the end two at most and no .tmp, so at most 2 × the largest
//     snapshot;
//   - at the end, logs/ and work/ hold only folders and files of retained
//     runs, and
//     retention keeps at most --keep-runs finished runs per workflow: the
//     task logs are those of retained runs only (nothing leaks from runs
//     pruned by a compaction a kill interrupted).
func (k *kill9) checkDisk(final bool) diskUsage {
	u := measure(k.data)
	if k.disk.snaps == nil {
		k.disk.snaps = map[string]bool{}
	}
	for _, n := range listNames(filepath.Join(k.data, "snapshots")) {
		if strings.HasSuffix(n, ".snap") {
			k.disk.snaps[n] = true
			if fi, err := os.Stat(filepath.Join(k.data, "snapshots", n)); err == nil {
				k.disk.maxSnap = max(k.disk.maxSnap, fi.Size())
			}
		}
	}
	k.disk.maxWAL = max(k.disk.maxWAL, u.wal)
	k.disk.maxTotal = max(k.disk.maxTotal, u.total)
	k.disk.maxSnapFiles = max(k.disk.maxSnapFiles, u.snapFiles)
	walBound, snapFiles, tmpFiles := int64(-1), -1, 1
	when := "after a kill"
	if final {
		walBound, snapFiles, tmpFiles, when = 2*k9CompactBytes+k9Segment, 2, 0, "after the clean stop"
	}
	switch {
	case walBound >= 0 && u.wal > walBound:
		var files []string
		des, _ := os.ReadDir(filepath.Join(k.data, "wal"))
		for _, de := range des {
			if fi, err := de.Info(); err == nil {
				files = append(files, fmt.Sprintf("%s (%d)", de.Name(), fi.Size()))
			}
		}
		k.fatalf("disk bound %s: the WAL holds %d bytes, over %d (--compact-bytes %d): %s", when, u.wal, walBound, k9CompactBytes,
			strings.Join(files, ", "))
	case snapFiles >= 0 && u.snapFiles > snapFiles || u.tmpFiles > tmpFiles:
		k.fatalf("disk bound %s: %d snapshots and %d .tmp files: %v", when, u.snapFiles, u.tmpFiles, listNames(filepath.Join(k.data, "snapshots")))
	}
	if !final {
		return u
	}
	if bound := 2*k.disk.maxSnap + 2*k9CompactBytes + k9Segment + u.logs + u.work + 64<<10; u.total > bound {
		k.fatalf("disk bound after the clean stop: %d bytes, over 2 × %d (snapshot) + 2 × %d + %d + %d (task logs) + %d (scratch) + 64 KiB",
			u.total, k.disk.maxSnap, k9CompactBytes, k9Segment, u.logs, u.work)
	}
	var leaked []string
	for rel, run := range u.runFolders {
		if k.tail.st.Runs[run] == nil {
			leaked = append(leaked, rel)
		}
	}
	if len(leaked) > 0 {
		sort.Strings(leaked)
		k.fatalf("disk bound after the clean stop: %d folders or scratch files of runs that are not retained (pruned or unknown): %v", len(leaked), leaked[:min(len(leaked), 10)])
	}
	perWF := map[string]int{}
	for _, r := range k.tail.st.RunList {
		if !r.Status.Finished() {
			continue // a cron run the clean stop interrupted
		}
		if perWF[r.Workflow]++; perWF[r.Workflow] > k9KeepRuns {
			k.fatalf("retention after the clean stop: more than --keep-runs %d runs of %s retained", k9KeepRuns, r.Workflow)
		}
	}
	return u
}

// checkFolderMatchesTail runs after every kill, on the quiet folder: a copy
// of it, booted the way the daemon boots (torn tail cut, an interrupted
// truncation resolved, the newest snapshot plus the frames after it), must
// be exactly the tail's fold of every frame ever written. The final check
// compares the same two hashes once; checking after every kill names the
// kill after which the folder and the history parted, and keeps both sides.
func (k *kill9) checkFolderMatchesTail(when string) {
	// Kept until the next kill: a failure later in the run can be replayed
	// from the folder as the last boot found it.
	tmp := filepath.Join(k.work, "after-kill")
	os.RemoveAll(tmp)
	for _, sub := range []string{"wal", "snapshots"} {
		if src := filepath.Join(k.data, sub); dirExists(src) {
			if err := os.CopyFS(filepath.Join(tmp, sub), os.DirFS(src)); err != nil {
				k.fatalf("copy %s: %v", src, err)
			}
		}
	}
	st, last, err := bootState(tmp)
	if err != nil {
		k.fatalf("after %s the data folder does not boot: %v", when, err)
	}
	k.tail.mu.Lock()
	defer k.tail.mu.Unlock()
	if k.tail.next-1 != last {
		k.fatalf("after %s the log ends at index %d, the tail has read up to %d (it missed frames, or read some the folder no longer has)", when, last, k.tail.next-1)
	}
	hf, err1 := st.Hash()
	ht, err2 := k.tail.st.Hash()
	if err1 != nil || err2 != nil {
		k.fatalf("hash: %v %v", err1, err2)
	}
	if hf == ht {
		return
	}
	var diff []string
	for id, run := range k.tail.st.Runs {
		if got := st.Runs[id]; got == nil {
			diff = append(diff, fmt.Sprintf("run %s (%s, %s, born at %d, records %v) is missing from the folder",
				id, run.Workflow, run.Status, k.tail.born[id], k.tail.trail[id]))
		} else if got.Status != run.Status {
			diff = append(diff, fmt.Sprintf("run %s is %s in the folder, %s in the fold (records %v)", id, got.Status, run.Status, k.tail.trail[id]))
		}
	}
	for id := range st.Runs {
		if k.tail.st.Runs[id] == nil {
			diff = append(diff, fmt.Sprintf("run %s is in the folder but not in the fold", id))
		}
	}
	sort.Strings(diff)
	where := k.keepEvidence("parted")
	k.fatalf("after %s the data folder boots to state %016x (log ends at %d), the fold of every frame written is %016x: %s%s",
		when, hf, last, ht, strings.Join(diff, "; "), where)
}

// keepEvidence copies, for a failure of the given kind, the data folder,
// the folder as the last kill left it (booted: its torn tail cut) and the
// tail's log of every frame ever written under $TMPDIR, and says where.
func (k *kill9) keepEvidence(kind string) string {
	keep := filepath.Join(os.TempDir(), fmt.Sprintf("orkwal-kill9-%s-%d", kind, k.seed))
	where := ""
	for _, c := range []struct{ src, dst, what string }{
		{k.data, keep, "the data folder"},
		{filepath.Join(k.work, "after-kill"), keep + "-after-kill", "the folder as the last kill left it"},
		{k.tail.archiveDir, keep + "-history", "every frame ever written, as one log (orkwal wal inspect --data)"},
	} {
		os.RemoveAll(c.dst)
		if err := os.CopyFS(c.dst, os.DirFS(c.src)); err == nil {
			where += fmt.Sprintf("; %s is copied to %s", c.what, c.dst)
		}
	}
	return where
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// bootState is the state a daemon booting on dataDir would hold, and the
// log's last index: it repairs the folder (so it must be a copy).
func bootState(dataDir string) (*replay.State, uint64, error) {
	l, err := wal.Open(filepath.Join(dataDir, "wal"), wal.Options{Logger: quiet})
	if err != nil {
		return nil, 0, err
	}
	defer l.Close()
	st, idx, err := engine.LoadSnapshot(dataDir, quiet)
	if err != nil {
		return nil, 0, err
	}
	err = l.Replay(idx+1, func(index uint64, recs [][]byte) error {
		for i, p := range recs {
			r, err := replay.Decode(bytes.Clone(p))
			if err == nil {
				err = st.Apply(r)
			}
			if err != nil {
				return fmt.Errorf("index %d record %d: %w", index, i, err)
			}
		}
		return nil
	})
	return st, l.LastIndex(), err
}
