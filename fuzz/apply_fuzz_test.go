package fuzz

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// spec covers the semantics Apply derives: retries, a foreach fan-out fed
// by an output, a cleanup task, a mutex.
func spec(name string) *workflow.Spec {
	return &workflow.Spec{Name: name, Params: map[string]string{"k": "v"}, Tasks: []*workflow.Task{
		{Name: "a", Executor: "noop", Retries: 1, Mutex: "m-{{params.k}}"},
		{Name: "b", Executor: "noop", DependsOn: []string{"a"}, Foreach: "a.items"},
		{Name: "c", Executor: "noop", DependsOn: []string{"a"}, Parallel: 2},
		{Name: "d", Executor: "noop", DependsOn: []string{"b", "c"}, OnFailure: "run"},
	}}
}

func sampleRecords() []replay.Record {
	ref := replay.TaskRef{Run: "r0", Task: 0}
	return []replay.Record{
		&replay.WorkflowPut{Spec: spec("w0"), At: 1},
		&replay.RunCreated{ID: "r0", Workflow: "w0", Version: 1, At: 2},
		&replay.TaskDispatched{TaskRef: ref, Attempt: 1, At: 3},
		&replay.TaskStarted{TaskRef: ref, Attempt: 1, PID: 7, At: 4},
		&replay.TaskFinished{TaskRef: ref, Attempt: 1, OK: true, At: 5},
		&replay.TaskInterrupted{TaskRef: ref, Attempt: 1, At: 6},
		&replay.WorkflowDeleted{Name: "w0", At: 7},
	}
}

// recordFrom builds a record from a few fuzzed bytes, over a small domain
// (2 workflows, 4 runs, 4 tasks, attempts 1..3) so that many records apply.
func recordFrom(b []byte, at int64) replay.Record {
	pick := func(i, n int) int { return int(b[i%len(b)]) % n }
	ref := replay.TaskRef{Run: fmt.Sprintf("r%d", pick(1, 4)), Task: pick(2, 8)}
	attempt := pick(3, 3) + 1
	outputs := []string{`{"items": [1, 2]}`, `{"items": []}`, `{"items": 5}`, ``}
	switch pick(0, 10) {
	case 0:
		return &replay.WorkflowPut{Spec: spec(fmt.Sprintf("w%d", pick(1, 2))), At: at}
	case 1:
		return &replay.WorkflowDeleted{Name: fmt.Sprintf("w%d", pick(1, 2)), At: at}
	case 2:
		return &replay.RunCreated{ID: ref.Run, Workflow: fmt.Sprintf("w%d", pick(2, 2)), Version: pick(3, 3) + 1, At: at}
	case 3:
		return &replay.TaskDispatched{TaskRef: ref, Attempt: attempt, At: at}
	case 4:
		return &replay.TaskStarted{TaskRef: ref, Attempt: attempt, At: at}
	case 5:
		return &replay.TaskFinished{TaskRef: ref, Attempt: attempt, OK: pick(4, 2) == 0,
			Output: []byte(outputs[pick(5, len(outputs))]), At: at}
	case 6:
		return &replay.RunCancelRequested{ID: ref.Run, At: at}
	case 7:
		return &replay.RunRetried{ID: ref.Run, Expand: true, At: at} // as the engine writes it; earlier versions' records: replay's TestOldRerunOfAFanOutThatFailedToExpandStillReplays, TestRerunWithNothingToReset
	case 8:
		return &replay.RunsPruned{IDs: []string{ref.Run}, At: at}
	}
	return &replay.TaskInterrupted{TaskRef: ref, Attempt: attempt, Clean: pick(4, 2) == 0, At: at}
}

type snapshot map[string]replay.TaskStatus

func statuses(st *replay.State) (snapshot, map[string]replay.RunStatus) {
	ts, rs := snapshot{}, map[string]replay.RunStatus{}
	for _, r := range st.RunList {
		rs[r.ID] = r.Status
		for _, t := range r.Tasks {
			ts[t.ID()] = t.Status
		}
	}
	return ts, rs
}

// FuzzApply: random record sequences never panic, rejected records change
// nothing, terminal states stay terminal, a run ends exactly when all its
// tasks are terminal, replaying the accepted records gives the same state,
// and so do a snapshot then replay, and an incremental snapshot copied
// while the rest is applied.
func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0})
	f.Add([]byte{0, 1, 0, 0, 2, 1, 1, 0, 3, 1, 0, 0, 6, 1, 0, 1, 3, 1, 0, 1, 5, 1, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 3, 0, 4, 0, 5, 0, 4, 1, 6, 0, 0, 0, 7, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		st := replay.New()
		var accepted []replay.Record
		for i := 0; i+4 <= len(b); i += 4 {
			rec := recordFrom(b[i:i+4], int64(i))
			beforeT, beforeR := statuses(st)
			h0, _ := st.Hash()
			if err := st.Apply(rec); err != nil {
				if h1, _ := st.Hash(); h1 != h0 {
					t.Fatalf("rejected %s changed the state", rec.Kind())
				}
				continue
			}
			accepted = append(accepted, rec)
			checkCounts(t, st)
			if _, rerun := rec.(*replay.RunRetried); !rerun {
				checkInvariants(t, st, beforeT, beforeR)
			}
		}
		again := replay.New()
		for _, r := range accepted {
			if err := again.Apply(r); err != nil {
				t.Fatalf("replay rejected %s it accepted live: %v", r.Kind(), err)
			}
		}
		h1, _ := st.Hash()
		if h2, _ := again.Hash(); h1 != h2 {
			t.Fatal("replayed state differs from live state")
		}
		checkSnapshotReplay(t, accepted, len(b)%(len(accepted)+1))
		checkIncrementalSnapshot(t, accepted, len(b)%(len(accepted)+1), nil)
		checkIncrementalSnapshot(t, accepted, len(b)%(len(accepted)+1), b)
	})
}

// checkSnapshotReplay applies the first cut records, takes a snapshot
// through its file encoding, restores it (decoded whole, and read as a
// boot reads it, run by run), then applies the rest to both restored
// states and a full replay: they must agree on every record's acceptance,
// on the final hash and on the ready queue.
func checkSnapshotReplay(t *testing.T, recs []replay.Record, cut int) {
	t.Helper()
	full := replay.New()
	for _, r := range recs[:cut] {
		full.Apply(r)
	}
	var buf bytes.Buffer
	if err := full.Snapshot(uint64(cut)).Encode(&buf); err != nil {
		t.Fatal(err)
	}
	snap, err := replay.DecodeSnapshot(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	restored, err := replay.Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	read, index, err := replay.ReadSnapshot(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if h1, _ := full.Hash(); snap.Index != uint64(cut) || index != uint64(cut) {
		t.Fatalf("snapshot index %d (read: %d), want %d (%x)", snap.Index, index, cut, h1)
	}
	for _, r := range recs[cut:] {
		e1, e2, e3 := full.Apply(r), restored.Apply(r), read.Apply(r)
		if (e1 == nil) != (e2 == nil) || (e1 == nil) != (e3 == nil) {
			t.Fatalf("after a snapshot at %d, %s: full replay %v, restored %v, read %v", cut, r.Kind(), e1, e2, e3)
		}
	}
	h1, _ := full.Hash()
	for _, st := range []*replay.State{restored, read} {
		if h2, _ := st.Hash(); h1 != h2 {
			t.Fatalf("snapshot at %d then replay differs from full replay", cut)
		}
		if a, b := readyOrder(full), readyOrder(st); a != b {
			t.Fatalf("ready queues differ after a snapshot at %d:\n%s\n%s", cut, a, b)
		}
		checkCounts(t, st)
	}
	checkCounts(t, full)
}

// checkCounts: the counts Apply keeps are those a scan of every run finds.
func checkCounts(t *testing.T, st *replay.State) {
	t.Helper()
	runs, tasks, open := map[replay.RunStatus]int{}, map[replay.TaskStatus]int{}, map[string]int{}
	for _, r := range st.RunList {
		runs[r.Status]++
		if !r.Status.Finished() {
			open[r.Workflow]++
		}
		for _, task := range r.Tasks {
			tasks[task.Status]++
		}
	}
	total := 0
	for wf, n := range open {
		total += n
		if got := st.OpenRunsOf(wf); got != n {
			t.Fatalf("open runs of %s: kept %d, scan %d", wf, got, n)
		}
	}
	if got := st.OpenRuns(); got != total {
		t.Fatalf("open runs: kept %d, scan %d", got, total)
	}
	if got := st.RunCounts(); !maps.Equal(nonZero(got), runs) {
		t.Fatalf("runs by status: kept %v, scan %v", got, runs)
	}
	if got := st.TaskCounts(); !maps.Equal(nonZero(got), tasks) {
		t.Fatalf("tasks by status: kept %v, scan %v", got, tasks)
	}
	checkRunOrder(t, st)
}

// checkRunOrder: the run order lists, for every workflow and status (or
// any), the runs a scan of the run list finds, newest first, and starts
// after any of them.
func checkRunOrder(t *testing.T, st *replay.State) {
	t.Helper()
	wfs := map[string]bool{"": true}
	for _, r := range st.RunList {
		wfs[r.Workflow] = true
	}
	statuses := []replay.RunStatus{"", replay.RunPending, replay.RunRunning, replay.RunSuccess, replay.RunFailed, replay.RunCancelled}
	for wf := range wfs {
		for _, status := range statuses {
			var want, got []string
			for i := len(st.RunList) - 1; i >= 0; i-- {
				if r := st.RunList[i]; (wf == "" || r.Workflow == wf) && (status == "" || r.Status == status) {
					want = append(want, r.ID)
				}
			}
			st.EachRunBefore(wf, status, ^uint64(0), func(r *replay.Run) bool { got = append(got, r.ID); return true })
			if !slices.Equal(got, want) {
				t.Fatalf("runs of %q %q: order %v, scan %v", wf, status, got, want)
			}
			if n := st.RunCount(wf, status); n != len(want) {
				t.Fatalf("runs of %q %q: count %d, scan %d", wf, status, n, len(want))
			}
			if newest := st.NewestRun(wf); status == "" && (newest == nil) != (len(want) == 0) || newest != nil && status == "" && newest.ID != want[0] {
				t.Fatalf("newest run of %q: %v, scan %v", wf, newest, want)
			}
			for k, id := range want {
				var after []string
				st.EachRunBefore(wf, status, st.Runs[id].Seq, func(r *replay.Run) bool { after = append(after, r.ID); return true })
				if !slices.Equal(after, want[k+1:]) {
					t.Fatalf("runs of %q %q after %s: %v, want %v", wf, status, id, after, want[k+1:])
				}
			}
		}
	}
}

func nonZero[K comparable](m map[K]int) map[K]int {
	maps.DeleteFunc(m, func(_ K, v int) bool { return v == 0 })
	return m
}

func readyOrder(st *replay.State) string {
	var out []string
	st.EachReady(func(t *replay.Task) bool { out = append(out, t.ID()); return true })
	return strings.Join(out, ",")
}

func checkInvariants(t *testing.T, st *replay.State, beforeT snapshot, beforeR map[string]replay.RunStatus) {
	t.Helper()
	for _, r := range st.RunList {
		if beforeR[r.ID].Finished() && r.Status != beforeR[r.ID] {
			t.Fatalf("finished run %s changed to %s", r.ID, r.Status)
		}
		terminal, failed := 0, 0
		for _, task := range r.Tasks {
			was, ok := beforeT[task.ID()]
			if ok && was.Terminal() && task.Status != was {
				t.Fatalf("terminal task %s changed %s -> %s", task.ID(), was, task.Status)
			}
			if task.Status.Terminal() {
				terminal++
			}
			if task.Status == replay.Failed {
				failed++
			}
		}
		allDone := terminal == len(r.Tasks)
		if allDone != r.Status.Finished() {
			t.Fatalf("run %s is %s with %d of %d tasks terminal", r.ID, r.Status, terminal, len(r.Tasks))
		}
		if r.Status == replay.RunSuccess && failed > 0 || r.Status == replay.RunFailed && failed == 0 {
			t.Fatalf("run %s is %s with %d failed tasks", r.ID, r.Status, failed)
		}
	}
}
