package fuzz

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/orkwal/orkwal/wal"
)

// TestCrashLoop is harness 4 of docs/reliability.md: a daemon whose lives
// are shorter than a compaction. The real binary (--compact-bytes 1 MiB,
// --keep-runs 100) first runs 100 runs with 120 KB outputs, so that a
// snapshot holds 12 MB and takes a while to write; then, taking more such
// runs from two clients, so that its log grows fast,
// each of its lives ends with a kill -9 as soon as a snapshot's .tmp file
// appears (a compaction is being written: as a snapshot of a big backlog
// is cut whatever the moment of the kill), or after 3 s. Before
// each boot the harness reads the folder from outside: the bytes of log
// after the newest snapshot, which that boot replays, must stay within
// 2 × --compact-bytes + 1 MiB however many lives (the boot compacts before
// it serves once it replayed --compact-bytes: see docs/format.md). It reports the boots' time (restart to a healthy
// /healthz) and the largest log since a snapshot.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kill -9s it")
	}
	lives, sd := budget(*tortureLives, 30, 100), harnessSeed()
	k := newKill9(t, sd, lives)
	// Retained runs make the state, and so each snapshot, big (up to
	// crashLoopKeep × 120 KB): a compaction takes long enough for the
	// kill to cut it, as on a daemon with a big backlog.
	k.keepRuns, k.retention = crashLoopKeep, "1h"
	k.warmUp(crashLoopKeep)
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Go(func() { k.bigTriggers(rand.New(rand.NewPCG(uint64(sd), uint64(c)))) })
	}
	defer func() { k.stopTr.Store(true); wg.Wait() }()
	var boots []time.Duration
	var since []int64
	lifeMost := int64(0)
	for life := range lives {
		before, last := walSince(t, k.data)
		since = append(since, before)
		d := k.start()
		boots = append(boots, k.healthy(d))
		k.untilCompaction(d, 3*time.Second)
		d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.exited
		k.waitLockFree(d.cmd.Process.Pid)
		lifeMost = max(lifeMost, walAfter(t, k.data, last))
		t.Logf("life %d: booted in %s on %d bytes of log since the newest snapshot", life, boots[life].Round(time.Millisecond), before)
	}
	// A life logs until its log since the snapshot reaches C, begins a
	// compaction and is killed: the next boot replays C, plus the turn
	// that crossed it (up to 16 attempts' 120 KB outputs: 8 running and
	// 8 dispatched ahead, engine/slots.go) and what was
	// logged until the kill; a boot that replays C or more compacts
	// before serving. Without that, every life's log adds up.
	bound := int64(2*k9CompactBytes + crashLoopSlack)
	for i, b := range since {
		if b > bound {
			k.fatalf("boot %d of %d replayed %d bytes of log since the newest snapshot, over %d (2 × --compact-bytes + %d); boots replayed %v and took %v",
				i+1, lives, b, bound, crashLoopSlack, since, boots)
		}
	}
	sorted := slices.Sorted(slices.Values(boots))
	t.Logf("TORTURE crashloop lives=%d max_boot_ms=%d median_boot_ms=%d max_log_since_snapshot=%d bound=%d life_max_bytes=%d",
		lives, sorted[len(sorted)-1].Milliseconds(), sorted[len(sorted)/2].Milliseconds(), slices.Max(since), bound, lifeMost)
}

// crashLoopKeep is TestCrashLoop's --keep-runs; crashLoopSlack its slack
// for what is logged between a compaction's beginning and the kill that
// cuts it (the harness polls for its .tmp file).
const (
	crashLoopKeep  = 100
	crashLoopSlack = 2 << 20
)

// warmUp runs a daemon until n runs of k-big succeeded, so that the
// state (their outputs) makes every snapshot take a while, then kills it.
func (k *kill9) warmUp(n int) {
	d := k.start()
	k.healthy(d)
	for range n {
		if code, body, _ := k.call(d.addr, http.MethodPost, "/workflows/k-big/runs"); code != http.StatusCreated {
			k.fatalf("warm-up trigger: %d %s", code, body)
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		runs, err := k.listRuns(d.addr)
		done := 0
		for _, r := range runs {
			if r.Status == "success" {
				done++
			}
		}
		if err == nil && done >= n {
			break
		}
		if time.Now().After(deadline) {
			k.fatalf("warm-up: %d of %d runs succeeded after 120 s (%v)", done, n, err)
		}
		time.Sleep(50 * time.Millisecond) // polling another process
	}
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
	k.waitLockFree(d.cmd.Process.Pid)
}

// bigTriggers triggers k-big (a 120 KB output each) until stopTr.
func (k *kill9) bigTriggers(rng *rand.Rand) {
	for !k.stopTr.Load() {
		k.call(k.addr.Load().(string), http.MethodPost, "/workflows/k-big/runs")
		time.Sleep(time.Duration(10+rng.IntN(20)) * time.Millisecond) // pacing, not synchronisation
	}
}

// untilCompaction returns as soon as a snapshot .tmp file is created in
// the data folder (inotify: a poll would miss a snapshot written between
// two looks) or after most.
func (k *kill9) untilCompaction(d *daemonProc, most time.Duration) {
	dir := filepath.Join(k.data, "snapshots")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		k.fatalf("snapshots folder: %v", err)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		k.fatalf("inotify: %v", err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		k.fatalf("inotify: %v", err)
	}
	if tmpIn(listNames(dir)) { // created before the watch
		return
	}
	f.SetReadDeadline(time.Now().Add(most))
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			k.alive(d, "the daemon exited during its life")
			return // the deadline: a life without a compaction
		}
		var names []string
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			names = append(names, strings.TrimRight(string(name), "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		if tmpIn(names) {
			return
		}
	}
}

func tmpIn(names []string) bool {
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			return true
		}
	}
	return false
}

// walSince reads a stopped data folder: the bytes of the WAL entries after
// its newest snapshot (what a boot replays), and the log's last index.
func walSince(t *testing.T, dataDir string) (size int64, last uint64) {
	t.Helper()
	if !dirExists(filepath.Join(dataDir, "wal")) {
		return 0, 0 // before the first boot
	}
	var snap uint64
	for _, n := range listNames(filepath.Join(dataDir, "snapshots")) {
		var idx uint64
		if _, err := fmt.Sscanf(n, "snapshot-%020d.snap", &idx); err == nil && strings.HasSuffix(n, ".snap") {
			snap = max(snap, idx)
		}
	}
	size = walAfter(t, dataDir, snap)
	err := wal.ReplayDir(filepath.Join(dataDir, "wal"), snap+1, func(index uint64, _ [][]byte) error {
		last = index
		return nil
	})
	if err != nil && !errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("read the wal: %v", err)
	}
	return size, max(last, snap)
}

// walAfter is the bytes of a stopped data folder's WAL entries after index.
func walAfter(t *testing.T, dataDir string, index uint64) int64 {
	t.Helper()
	var size int64
	err := wal.ReplayDir(filepath.Join(dataDir, "wal"), index+1, func(i uint64, recs [][]byte) error {
		size += wal.EntrySize(i, recs)
		return nil
	})
	if err != nil && !errors.Is(err, wal.ErrCorrupt) { // a frame the kill tore: the boot cuts it
		t.Fatalf("read the wal: %v", err)
	}
	return size
}
