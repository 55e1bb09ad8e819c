package fuzz

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDiskFill is harness 5 of docs/reliability.md: a disk that fills and
// empties under load. The real binary runs on a data folder in a 32 MiB
// tmpfs the test mounts (root only: CI runs as root), taking runs of a
// 4-task DAG, of a task that fails once then retries, and of a sleeping
// task from two clients, while the test fills the
// tmpfs to the last byte (a file written until ENOSPC), holds it full for
// 2 s, removes the file and lets it run 2 s, three times. Triggers
// answered 503 meanwhile are not acknowledged. Then it stops triggering
// and checks that every acknowledged run ended success: an attempt whose
// input file or log could not be written ran again once there was room,
// not counted as the task's failure (before: failed for good, "write
// input: no space left on device"), and none was lost. It reports the
// triggers refused, the attempts the daemon could not prepare and the
// recoveries of the WAL.
func TestDiskFill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and fills a tmpfs under it")
	}
	sd := harnessSeed()
	k := newKill9(t, sd, 0)
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=32m,mode=0700"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skip("mounting a tmpfs needs root (CI runs as root): ", err)
		}
		t.Fatalf("mount a tmpfs on %s: %v", mnt, err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	k.data = filepath.Join(mnt, "data")
	k.keepRuns, k.retention = 1000000, "1h" // every run stays to be checked
	d := k.start()
	k.healthy(d)

	var wg sync.WaitGroup
	var refused [2]int
	for c := range 2 {
		wg.Go(func() { refused[c] = k.fillTriggers(rand.New(rand.NewPCG(uint64(sd), uint64(c)))) })
	}
	for cycle := range 3 {
		n := fillUp(t, filepath.Join(mnt, "filler"))
		t.Logf("cycle %d: the disk is full (%d MiB of filler)", cycle, n>>20)
		time.Sleep(2 * time.Second) // the disk stays full for a while: not synchronisation
		if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		k.alive(d, "the daemon exited on a full disk")
	}
	k.stopTr.Store(true)
	wg.Wait()
	k.ackMu.Lock()
	acked := append([]string(nil), k.acked...)
	k.ackMu.Unlock()
	failed := k.waitEnded(d.addr, acked, 120*time.Second)
	if len(failed) > 0 {
		k.fatalf("%d of %d acknowledged runs did not succeed on a disk that filled and emptied: %s", len(failed), len(acked), strings.Join(failed[:min(5, len(failed))], "; "))
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.exited
	if d.err != nil {
		k.fatalf("the daemon's clean stop: %v", d.err)
	}
	daemonLog, _ := os.ReadFile(k.logf.Name())
	t.Logf("TORTURE diskfill cycles=3 acked=%d refused=%d not_prepared=%d wal_recoveries=%d lost=0 failed=0",
		len(acked), refused[0]+refused[1], strings.Count(string(daemonLog), "could not prepare an attempt"),
		strings.Count(string(daemonLog), "WAL recovered"))
}

// fillTriggers triggers k-dag, k-retry and k-sleep until stopTr, records
// each 201 as acknowledged and returns how many were refused (503: the WAL
// is full). Their tasks write nothing in the data folder themselves (their
// ledger is outside the tmpfs): a task's own write that finds the disk full
// is the task's to handle (one that writes ORKWAL_OUTPUT, ignores the
// error and exits 0 fails with "output is not valid JSON").
func (k *kill9) fillTriggers(rng *rand.Rand) (refused int) {
	for !k.stopTr.Load() {
		name := []string{"k-dag", "k-retry", "k-sleep"}[rng.IntN(3)]
		code, body, _ := k.call(k.addr.Load().(string), http.MethodPost, "/workflows/"+name+"/runs")
		var r struct{ ID string }
		switch {
		case code == http.StatusCreated && json.Unmarshal(body, &r) == nil && r.ID != "":
			k.ackMu.Lock()
			k.acked = append(k.acked, r.ID)
			k.ackMu.Unlock()
		case code == http.StatusServiceUnavailable:
			refused++
		default:
			k.t.Errorf("trigger %s: %d %s", name, code, body)
		}
		time.Sleep(time.Duration(20+rng.IntN(40)) * time.Millisecond) // pacing, not synchronisation
	}
	return refused
}

// fillUp writes path until the file system has no room left and returns
// its size.
func fillUp(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return 0
		}
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	var n int64
	for len(chunk) > 0 {
		w, err := f.Write(chunk)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			chunk = chunk[:len(chunk)/2] // down to the last byte
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// waitEnded polls the runs until each has ended, and returns those that
// did not succeed, with their tasks' errors.
func (k *kill9) waitEnded(addr string, ids []string, most time.Duration) []string {
	deadline := time.Now().Add(most)
	for {
		var pending, failed []string
		for _, id := range ids {
			code, body, _ := k.call(addr, http.MethodGet, "/runs/"+id)
			var r runView
			if code != http.StatusOK || json.Unmarshal(body, &r) != nil {
				failed = append(failed, id+": GET /runs/"+id+": "+string(body))
				continue
			}
			switch r.Status {
			case "success":
			case "failed", "cancelled":
				why := r.Status
				for _, tv := range r.Tasks {
					if tv.Error != "" {
						why += ", " + tv.Name + ": " + tv.Error
					}
				}
				failed = append(failed, id+" ("+r.Workflow+"): "+why)
			default:
				pending = append(pending, id)
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			return append(failed, pending...)
		}
		ids = pending
		time.Sleep(100 * time.Millisecond) // polling another process
	}
}
