package engine

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// Dispatch-ahead (slots.go): with --max-concurrent 1, a two-task workflow
// runs a while b waits, dispatched ahead, for a's slot.

// aheadOfA triggers flat("two", 2) on e (one slot), returns a's started
// job once b is dispatched ahead and its launcher has made it ready.
func aheadOfA(t *testing.T, e *Engine, next func() executors.Job) (string, executors.Job) {
	t.Helper()
	put(t, e, flat("two", 2))
	id := trigger(t, e, "two")
	a := next()
	settle(t, e)
	b := taskView(e, id, "b")
	if a.TaskName != "a" || b.Status != "dispatched" || len(b.WaitingOn) != 1 || !b.Ahead ||
		!strings.HasPrefix(b.WaitingOn[0], "dispatched ahead: waiting for an executor slot (1 of 1 in use)") {
		t.Fatalf("started %s; b is %s %q (ahead %v): want a started, b dispatched ahead", a.TaskName, b.Status, b.WaitingOn, b.Ahead)
	}
	if va := taskView(e, id, "a"); va.Ahead {
		t.Fatalf("a, which holds the slot, says it is dispatched ahead")
	}
	compareRunJSON(t, e, id) // b's "ahead": true, as json.Marshal writes it
	if st := e.Stats(); st.TasksInFlight != 2 || st.SlotsInUse != 1 || st.TasksAhead != 1 {
		t.Fatalf("stats: %d in flight, %d slots in use, %d ahead; want 2, 1, 1", st.TasksInFlight, st.SlotsInUse, st.TasksAhead)
	}
	return id, a
}

// recordsOf lists the kinds of the records about task index task of run
// id, in log order.
func recordsOf(t *testing.T, dir, id string, task int) []string {
	t.Helper()
	var kinds []string
	err := wal.ReplayDir(filepath.Join(dir, "wal"), 1, func(_ uint64, ps [][]byte) error {
		for _, p := range ps {
			r, err := replay.Decode(p)
			if err != nil {
				return err
			}
			if ref, ok := taskRefOf(r); ok && ref.Run == id && ref.Task == task {
				kinds = append(kinds, r.Kind().String())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// taskRefOf is the task a record is about, if it is about one attempt.
func taskRefOf(r replay.Record) (replay.TaskRef, bool) {
	switch r := r.(type) {
	case *replay.TaskDispatched:
		return r.TaskRef, true
	case *replay.TaskStarted:
		return r.TaskRef, true
	case *replay.TaskFinished:
		return r.TaskRef, true
	case *replay.TaskInterrupted:
		return r.TaskRef, true
	}
	return replay.TaskRef{}, false
}

// TestSlotHandOffNeedsNoLoopTurn: when a running attempt ends, the first
// attempt waiting for a slot is spawned by whoever reports the end, with
// the loop stopped (its lock held): no loop turn, no fsync in between.
func TestSlotHandOffNeedsNoLoopTurn(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 1)
	defer e.Close()
	_, a := aheadOfA(t, e, m.next)
	m.none()
	e.mu.RLock() // no turn can decide nor commit anything until this is released
	m.finish(a, true)
	var b executors.Job
	select {
	case b = <-m.jobs:
	case <-time.After(10 * time.Second):
	}
	e.mu.RUnlock()
	if b.TaskName != "b" {
		t.Fatalf("started %q with the loop stopped, want b", b.TaskName)
	}
}

// TestAheadDispatchFailedNeverSpawns: an attempt dispatched ahead whose
// frame's fsync fails never spawns when a slot frees, and what was
// prepared for it is removed.
func TestAheadDispatchFailedNeverSpawns(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	var failing atomic.Bool
	e, err := Open(Config{DataDir: dir, Clock: &fakeClock{}, Logger: quiet, WALFault: failFsyncs(&failing),
		MaxConcurrent: 1, Executors: map[string]executors.Executor{"process": p}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	put(t, e, flat("one", 1))
	trigger(t, e, "one")
	a := p.next()
	<-p.prepared
	failing.Store(true)
	if _, err := e.Trigger("one", nil, "test"); err == nil { // its a would go ahead
		t.Fatal("trigger acknowledged though its frame failed")
	}
	p.finish(a, true) // frees the slot
	e.launcher.wait()
	if n := p.started.Load(); n != 1 {
		t.Fatalf("%d jobs started: the one whose dispatch failed was spawned", n)
	}
	if len(p.prepared) != len(p.aborted) { // none, if the failure came before the preparation
		t.Fatalf("%d prepared, %d aborted after the failed frame: want as many", len(p.prepared), len(p.aborted))
	}
}

// startless is a manual executor whose jobs never report Started.
type startless struct{ *manual }

func (s startless) Start(job executors.Job, report func(executors.Event)) (executors.Handle, error) {
	s.mu.Lock()
	s.reports[job.TaskID] = report
	s.mu.Unlock()
	s.jobs <- job
	return nopHandle{stop: func(reason string) {
		report(executors.Event{Kind: executors.Finished, TaskID: job.TaskID, Attempt: job.Attempt, Err: reason})
	}}, nil
}

// TestAheadStartDeadlineCountsFromItsSlot: an attempt waiting ahead for
// longer than its start_timeout does not fail; its start deadline counts
// from when it gets its slot.
func TestAheadStartDeadlineCountsFromItsSlot(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openStopped(t, dir, startless{m}, 1)
	turned := make(chan struct{}, 100)
	e.afterTurn = func() { turned <- struct{}{} }
	e.Start()
	defer e.Close()
	clock := e.cfg.Clock.(*fakeClock)
	spec := flat("two", 2)
	spec.Tasks[0].StartTimeout = time.Hour
	spec.Tasks[1].StartTimeout = time.Minute
	put(t, e, spec)
	id := trigger(t, e, "two")
	a := m.next()
	settle(t, e)
	advance := func(d time.Duration) {
		for len(turned) > 0 {
			<-turned
		}
		clock.Advance(d)
		<-turned // the turn that looked at the deadline
		settle(t, e)
	}
	advance(2 * time.Minute)
	if b := taskView(e, id, "b"); b.Status != "dispatched" {
		t.Fatalf("b is %s %q after 2m waiting for a slot: want dispatched", b.Status, b.Error)
	}
	m.finish(a, true)
	if b := m.next(); b.TaskName != "b" {
		t.Fatalf("started %s, want b", b.TaskName)
	}
	// No deadline is due 59s after b's slot, so no turn need follow the
	// clock: waiting for one (advance) hung whenever a's end, pushed
	// quietly, was committed before advance drained the turns. Every turn
	// looks at the deadlines: settle's does, at the moved clock.
	settle(t, e)
	clock.Advance(59 * time.Second)
	settle(t, e)
	if b := taskView(e, id, "b"); b.Status != "dispatched" {
		t.Fatalf("b is %s %q 59s after its spawn: want dispatched", b.Status, b.Error)
	}
	advance(2 * time.Second)
	waitFor(t, e, "b failed", finished(e, id))
	if b := taskView(e, id, "b"); b.Status != "failed" || !strings.Contains(b.Error, "never started (no start reported within 1m0s)") {
		t.Fatalf("b is %s %q: want failed, never started", b.Status, b.Error)
	}
}

// TestCancelledAheadAttemptNeverSpawns: cancelling a run whose attempt
// waits ahead for a slot ends it with no spawn: it leaves the queue, what
// was prepared is removed, and it is recorded cancelled like any attempt
// stopped before it ran (no task_started).
func TestCancelledAheadAttemptNeverSpawns(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	e := openEngine(t, dir, p, 1)
	defer e.Close()
	id, _ := aheadOfA(t, e, p.next)
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e, "run cancelled", func() bool { return runStatus(e, id) == "cancelled" })
	settle(t, e)
	p.none()
	if n := p.started.Load(); n != 1 {
		t.Fatalf("%d jobs started: want a alone", n)
	}
	if j := <-p.aborted; j.TaskName != "b" {
		t.Fatalf("aborted %s, want b", j.TaskName)
	}
	b := taskView(e, id, "b")
	if kinds := recordsOf(t, dir, id, 1); b.Error != "cancelled" || strings.Join(kinds, " ") != "task_dispatched task_finished" {
		t.Fatalf("b: %s %q, records %v: want cancelled, dispatched then finished", b.Status, b.Error, kinds)
	}
}

// TestShutdownEndsAheadAttemptUnspawned: Close with an attempt waiting
// ahead ends it unspawned, interrupted cleanly as any attempt the
// shutdown stopped; the next boot runs it again.
func TestShutdownEndsAheadAttemptUnspawned(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	e := openEngine(t, dir, p, 1)
	id, _ := aheadOfA(t, e, p.next)
	e.Close()
	if n := p.started.Load(); n != 1 {
		t.Fatalf("%d jobs started: want a alone", n)
	}
	if kinds := recordsOf(t, dir, id, 1); strings.Join(kinds, " ") != "task_dispatched task_interrupted" {
		t.Fatalf("b's records %v: want dispatched then interrupted", kinds)
	}
	m := newManual(t, dir)
	back := openEngine(t, dir, m, 1)
	defer back.Close()
	jobs := map[string]int{}
	for range 2 {
		j := m.next()
		jobs[j.TaskName] = j.Attempt
		m.finish(j, true)
	}
	waitFor(t, back, "run done", finished(back, id))
	if jobs["a"] != 2 || jobs["b"] != 2 || runStatus(back, id) != "success" {
		t.Fatalf("after the restart: %v, run %s; want a and b attempt 2, success", jobs, runStatus(back, id))
	}
}

// TestAheadAttemptAfterACrash: a crash with an attempt waiting ahead
// finds it dispatched and not started, as an attempt whose process had
// not spawned: the boot interrupts it as unstarted (no retry spent, not
// counted toward the crash loop), it runs again, and the replayed state
// equals the live one.
func TestAheadAttemptAfterACrash(t *testing.T) {
	dir := t.TempDir()
	p := newPreparing(t, dir)
	e := openEngine(t, dir, p, 1)
	id, _ := aheadOfA(t, e, p.next)
	crash(e)
	m := newManual(t, dir)
	back := openEngine(t, dir, m, 1)
	var interrupted *replay.TaskInterrupted
	wal.ReplayDir(filepath.Join(dir, "wal"), 1, func(_ uint64, ps [][]byte) error {
		for _, pl := range ps {
			if r, _ := replay.Decode(pl); r != nil {
				if i, ok := r.(*replay.TaskInterrupted); ok && i.Run == id && i.Task == 1 {
					interrupted = i
				}
			}
		}
		return nil
	})
	if interrupted == nil || !interrupted.Unstarted || interrupted.Attempt != 1 {
		t.Fatalf("b's interruption: %+v; want attempt 1, unstarted", interrupted)
	}
	for range 2 {
		m.finish(m.next(), true)
	}
	waitFor(t, back, "run done", finished(back, id))
	if b := taskView(back, id, "b"); b.Status != "success" || b.Failures != 0 || b.Attempt != 2 {
		t.Fatalf("b: %s, attempt %d, %d failures; want success at attempt 2, no failure", b.Status, b.Attempt, b.Failures)
	}
	replaysTheSame(t, back, func() *Engine { return openEngine(t, dir, newManual(t, dir), 1) })
}

// TestMaxConcurrentBoundsLiveProcesses: with attempts dispatched ahead,
// no more than --max-concurrent task processes are ever alive at once:
// each marks itself alive in a folder while it runs and records how many
// it saw.
func TestMaxConcurrentBoundsLiveProcesses(t *testing.T) {
	const slots, n = 2, 24
	dir := t.TempDir()
	alive := filepath.Join(t.TempDir(), "alive")
	if err := os.Mkdir(alive, 0o755); err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, dir, executors.NewProcess(executors.ProcessConfig{}), slots)
	defer e.Close()
	script := `touch "$A/$ORKWAL_TASK_ID"; ls "$A" | wc -l >> "$A.seen"; rm "$A/$ORKWAL_TASK_ID"`
	put(t, e, &workflow.Spec{Name: "many", Tasks: []*workflow.Task{{Name: "t", Executor: "process",
		Command: []string{"sh", "-c", script}, Env: map[string]string{"A": alive}, Parallel: n}}})
	id := trigger(t, e, "many")
	waitFor(t, e, "run done", finished(e, id))
	if s := runStatus(e, id); s != "success" {
		t.Fatalf("run %s", s)
	}
	seen, err := os.ReadFile(alive + ".seen")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(seen))
	if len(lines) != n {
		t.Fatalf("%d processes recorded, want %d", len(lines), n)
	}
	for _, l := range lines {
		if k, _ := strconv.Atoi(l); k > slots {
			t.Fatalf("a process saw %d alive at once: more than %d slots", k, slots)
		}
	}
}

// TestAheadDepth: with every slot in use, up to max(--max-concurrent, 32)
// process attempts are dispatched ahead (durable and prepared, waiting
// for a slot), no more: one slot and 50 instances give 1 running and 32
// ahead, the rest pending.
func TestAheadDepth(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 1)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "wide", Tasks: []*workflow.Task{
		{Name: "t", Executor: "process", Command: []string{"true"}, Parallel: 50}}})
	trigger(t, e, "wide")
	m.next()
	settle(t, e)
	if st := e.Stats(); st.SlotsInUse != 1 || st.TasksAhead != 32 || st.TasksInFlight != 33 {
		t.Fatalf("stats: %d slots in use, %d ahead, %d in flight; want 1, 32, 33", st.SlotsInUse, st.TasksAhead, st.TasksInFlight)
	}
}

// TestAheadKeepsDispatchOrder: a task that may not go ahead (a noop: its
// executor holds its slot until the loop records its end) waits for a
// free slot, and the tasks after it wait behind it rather than pass it
// ahead: slots are given in dispatch order.
func TestAheadKeepsDispatchOrder(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 1)
	defer e.Close()
	put(t, e, &workflow.Spec{Name: "mixed", Tasks: []*workflow.Task{
		{Name: "a", Executor: "process", Command: []string{"true"}},
		{Name: "b", Executor: "noop"},
		{Name: "c", Executor: "process", Command: []string{"true"}},
	}})
	id := trigger(t, e, "mixed")
	a := m.next()
	settle(t, e)
	for _, k := range []string{"b", "c"} {
		if v := taskView(e, id, k); v.Status != "pending" || len(v.WaitingOn) != 1 ||
			v.WaitingOn[0] != "executor slots full (1 of 1 in use, 0 dispatched ahead)" {
			t.Fatalf("%s is %s %q while a runs: want pending, slots full", k, v.Status, v.WaitingOn)
		}
	}
	m.finish(a, true)
	m.finish(m.next(), true) // c, once b (noop) ended
	waitFor(t, e, "run done", finished(e, id))
	if order := dispatchOrder(t, e, dir); strings.Join(order, " ") != id+"a "+id+"b "+id+"c" {
		t.Fatalf("dispatch order %v, want a, b, c", order)
	}
}

// TestWithdrawEveryIsOneStep: a shutdown or a run's cancel withdraws the
// attempts waiting for a slot all at once: a process that exits while
// they are being withdrawn cannot give its slot to one of them (which
// would spawn it only to stop it). The exit here is reported at the first
// moment it could be once the withdrawal began: as soon as the slots'
// lock is released (its release hook, on this goroutine), which must be
// after the last of them left the queue.
func TestWithdrawEveryIsOneStep(t *testing.T) {
	s := newSlots(1, &fakeClock{})
	spec := &workflow.Task{Executor: "process"}
	running, w1, w2 := &attempt{spec: spec}, &attempt{spec: spec}, &attempt{spec: spec}
	s.enter(running)
	s.keep(math.MinInt) // running gets the slot
	s.enter(w1)
	s.enter(w2)
	s.ready(w1, fakePrepared{})
	s.ready(w2, fakePrepared{})
	var began, exited bool
	var handed []spawnable
	s.mu.released = func() {
		if began && !exited {
			exited = true
			handed, _ = s.leave(running) // the exit
		}
	}
	gone := s.withdrawEvery(func(a *attempt) bool {
		began = true
		return true
	})
	if !exited {
		t.Fatal("the slots' lock was never released after the withdrawal began")
	}
	if len(handed) != 0 {
		t.Fatalf("an exit during the withdrawal gave its slot to %d withdrawn attempts", len(handed))
	}
	if len(gone) != 2 || gone[0].a != w1 || gone[1].a != w2 || gone[0].prep == nil {
		t.Fatalf("withdrawn %v, want w1 and w2 with their prepared work", gone)
	}
	for _, a := range []*attempt{w1, w2} {
		if a.slot.state != slotLeft {
			t.Fatalf("a withdrawn attempt's ticket is %v, want left", a.slot.state)
		}
	}
}

// fakePrepared is prepared work that is never started.
type fakePrepared struct{}

func (fakePrepared) Start(func(executors.Event)) (executors.Handle, error) { return nil, nil }
func (fakePrepared) Abort()                                                {}

// TestReporterIsOneAllocation: the report function an attempt's executor
// keeps while the attempt runs is one allocation: for an attempt that
// gives its slot back on its end (a process), a closure of the engine and
// the attempt (issue 27: memory per running task; it was two, the closure
// and the report method it chose, bound to the engine); for the others,
// that method bound to the engine.
func TestReporterIsOneAllocation(t *testing.T) {
	e := &Engine{}
	for _, tc := range []struct {
		early, eager bool
		want         float64
	}{{true, false, 1}, {true, true, 1}, {false, false, 1}, {false, true, 1}} {
		a := &attempt{slot: &ticket{early: tc.early}, eager: tc.eager}
		var keep func(executors.Event)
		got := testing.AllocsPerRun(100, func() { keep = e.reporter(a) })
		if got != tc.want {
			t.Errorf("early %v, eager %v: %v allocations a reporter, want %v", tc.early, tc.eager, got, tc.want)
		}
		_ = keep
	}
}
