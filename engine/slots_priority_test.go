package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Slots by priority (slots.go): a task of a higher priority that becomes
// ready while lower ones wait ahead for the one slot gets the next slot
// that frees, whether the ahead queue has room or is full.

// lows is a workflow of n low-priority process instances.
func lows(n int) *workflow.Spec {
	return &workflow.Spec{Name: "low", Tasks: []*workflow.Task{
		{Name: "t", Executor: "process", Command: []string{"true"}, Parallel: n}}}
}

// prioritized is a one-task process workflow of priority p.
func prioritized(name string, p int) *workflow.Spec {
	return &workflow.Spec{Name: name, Tasks: []*workflow.Task{
		{Name: name, Executor: "process", Command: []string{"true"}, Priority: p}}}
}

// label names a job by its workflow and key ("low t[3]", "high high").
func label(j executors.Job) string { return j.Workflow + " " + j.TaskID[len(j.RunID)+1:] }

// runOneByOne finishes the running job and each job the freed slot
// starts, n in all, and returns their labels (of) in the order they
// started.
func runOneByOne(m *manual, running executors.Job, n int, of func(executors.Job) string) string {
	order := []string{of(running)}
	for j := running; len(order) < n; {
		m.finish(j, true)
		j = m.next()
		order = append(order, of(j))
	}
	return strings.Join(order, ", ")
}

// oneSlot opens an engine of one slot (the caller closes it) whose
// process executor is m, driven by the test; with noop, its noop
// executor too (a task that may not go ahead: the loop releases its slot
// when it records its end, as a noop's).
func oneSlot(t *testing.T, noop bool) (*Engine, *manual) {
	t.Helper()
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openStopped(t, dir, m, 1)
	if noop {
		e.cfg.Executors["noop"] = m
	}
	e.Start()
	return e, m
}

// lowsAhead starts lows(n) on e (one slot): t[0] runs, the others wait
// ahead (up to the ahead bound). It returns t[0]'s job.
func lowsAhead(t *testing.T, e *Engine, m *manual, n, ahead int) executors.Job {
	t.Helper()
	put(t, e, lows(n))
	trigger(t, e, "low")
	j := m.next()
	settle(t, e)
	if st := e.Stats(); label(j) != "low t[0]" || st.SlotsInUse != 1 || st.TasksAhead != ahead {
		t.Fatalf("started %s; %d slots in use, %d ahead: want low t[0], 1, %d", label(j), st.SlotsInUse, st.TasksAhead, ahead)
	}
	return j
}

// TestAheadLatePriorityTakesNextSlot: with one slot and low tasks
// dispatched ahead, a priority-10 task that becomes ready later is
// dispatched ahead too and gets the next slot that frees before any low
// task waiting: triggered while low t[0] runs (t[1..4] ahead), it starts
// when t[0] exits; ready when its upstream u exits (u held the slot,
// t[0..4] waited ahead), it starts when t[0], which took u's slot at
// once, exits.
func TestAheadLatePriorityTakesNextSlot(t *testing.T) { bothWays(t, "upstream", lateIntoQueue) }

// bothWays runs f as subtests name=false and name=true.
func bothWays(t *testing.T, name string, f func(*testing.T, bool)) {
	for _, b := range []bool{false, true} {
		t.Run(fmt.Sprint(name, "=", b), func(t *testing.T) { f(t, b) })
	}
}

func lateIntoQueue(t *testing.T, upstream bool) {
	e, m := oneSlot(t, false)
	defer e.Close()
	high := prioritized("high", 10)
	var t0 executors.Job
	if upstream {
		high.Tasks = append([]*workflow.Task{{Name: "u", Executor: "process", Command: []string{"true"}}}, high.Tasks...)
		high.Tasks[1].DependsOn = []string{"u"}
		put(t, e, high)
		put(t, e, lows(5))
		trigger(t, e, "high")
		u := m.next()
		trigger(t, e, "low")
		settle(t, e)
		m.finish(u, true) // its slot goes to t[0] at once; high becomes ready
		t0 = m.next()
	} else {
		t0 = lowsAhead(t, e, m, 5, 4)
		put(t, e, high)
		trigger(t, e, "high")
	}
	settle(t, e)
	m.none()
	if st := e.Stats(); label(t0) != "low t[0]" || st.TasksAhead != 5 {
		t.Fatalf("running %s, %d ahead: want low t[0], 5 (the high task dispatched ahead)", label(t0), st.TasksAhead)
	}
	got := runOneByOne(m, t0, 6, label)
	if want := "low t[0], high high, low t[1], low t[2], low t[3], low t[4]"; got != want {
		t.Fatalf("started %s\nwant    %s", got, want)
	}
}

// TestAheadFullLatePriorityTakesNextSlot: with the ahead queue full (one
// slot, low t[0] running, 32 dispatched ahead, 7 pending), a priority-10
// task that becomes ready is dispatched ahead beyond the bound and starts
// when t[0] exits, not after the 32: triggered while t[0] runs, or ready
// when its delay ends.
func TestAheadFullLatePriorityTakesNextSlot(t *testing.T) { bothWays(t, "delayed", lateIntoFullQueue) }

func lateIntoFullQueue(t *testing.T, delayed bool) {
	e, m := oneSlot(t, false)
	defer e.Close()
	high := prioritized("high", 10)
	if delayed {
		high.Tasks[0].Delay = time.Minute
		put(t, e, high)
		id := trigger(t, e, "high")
		t0 := lowsAhead(t, e, m, 40, 32)
		e.cfg.Clock.(*fakeClock).Advance(time.Minute)
		waitFor(t, e, "high dispatched", func() bool { return taskView(e, id, "high").Status == "dispatched" })
		fullQueueThenHigh(t, e, m, t0)
		return
	}
	t0 := lowsAhead(t, e, m, 40, 32)
	put(t, e, high)
	trigger(t, e, "high")
	fullQueueThenHigh(t, e, m, t0)
}

// fullQueueThenHigh checks that high waits ahead beyond the bound of 32,
// and starts when t0 exits.
func fullQueueThenHigh(t *testing.T, e *Engine, m *manual, t0 executors.Job) {
	t.Helper()
	settle(t, e)
	m.none()
	if st := e.Stats(); st.TasksAhead != 33 || st.TasksInFlight != 34 {
		t.Fatalf("%d ahead, %d in flight: want 33 (32 low, high beyond the bound), 34", st.TasksAhead, st.TasksInFlight)
	}
	if got, want := runOneByOne(m, t0, 4, label), "low t[0], high high, low t[1], low t[2]"; got != want {
		t.Fatalf("started %s\nwant    %s", got, want)
	}
}

// TestAheadEqualPriorityKeepsDispatchOrder: attempts waiting for a slot
// get it by priority, and those of one priority in dispatch order: with
// low t[1..4] ahead, then "other" (priority 0) and two runs of "high"
// (priority 10) dispatched ahead in that order, the slot goes to high's
// first run, its second, t[1..4], then other.
func TestAheadEqualPriorityKeepsDispatchOrder(t *testing.T) {
	e, m := oneSlot(t, false)
	defer e.Close()
	t0 := lowsAhead(t, e, m, 5, 4)
	put(t, e, prioritized("other", 0))
	put(t, e, prioritized("high", 10))
	trigger(t, e, "other")
	h1, h2 := trigger(t, e, "high"), trigger(t, e, "high")
	settle(t, e)
	m.none()
	run := map[string]string{h1: " (1st run)", h2: " (2nd run)"}
	got := runOneByOne(m, t0, 8, func(j executors.Job) string { return label(j) + run[j.RunID] })
	want := "low t[0], high high (1st run), high high (2nd run), low t[1], low t[2], low t[3], low t[4], other other"
	if got != want {
		t.Fatalf("started %s\nwant    %s", got, want)
	}
}

// TestSlotsByPriorityThenDispatchOrder: the slots' queue gives slots by
// priority, highest first, and in dispatch (enter) order within one.
func TestSlotsByPriorityThenDispatchOrder(t *testing.T) {
	s := newSlots(1, &fakeClock{})
	at := func(p int) *attempt { return &attempt{spec: &workflow.Task{Executor: "process", Priority: p}} }
	s.enter(at(0))
	s.keep(math.MinInt) // it holds the slot
	prios := []int{0, 5, 0, -3, 5, 3, 0, -3}
	var entered []*attempt
	for _, p := range prios {
		a := at(p)
		entered = append(entered, a)
		s.enter(a)
	}
	want := []int{1, 4, 5, 0, 2, 6, 3, 7} // indexes into entered
	for i, w := range want {
		got := s.queue[i]
		if got != entered[w] {
			t.Fatalf("queue[%d] has priority %d; want entered[%d] (priority %d)", i, got.spec.Priority, w, prios[w])
		}
	}
}

// TestKeptSlotForTaskThatCannotGoAhead: a task that may not go ahead (not
// a process: its slot is its own until the loop records its end) of
// priority 10, ready while low t[1..4] wait ahead behind t[0], waits
// pending for a free slot, and the slot t[0] frees is kept for it rather
// than given to t[1]: it starts when t[0] exits, and t[1..4] after it.
func TestKeptSlotForTaskThatCannotGoAhead(t *testing.T) {
	e, m := oneSlot(t, true)
	defer e.Close()
	t0, _ := urgentWaits(t, e, m)
	got := runOneByOne(m, t0, 6, label)
	if want := "low t[0], urgent u, low t[1], low t[2], low t[3], low t[4]"; got != want {
		t.Fatalf("started %s\nwant    %s", got, want)
	}
}

// urgentWaits starts low t[0] on e (one slot, its noop driven by m) with
// t[1..4] waiting ahead, then urgent u (priority 10, a noop: it may not
// go ahead), which waits pending for the slot. It returns t[0]'s job and
// urgent's run.
func urgentWaits(t *testing.T, e *Engine, m *manual) (t0 executors.Job, run string) {
	t.Helper()
	t0 = lowsAhead(t, e, m, 5, 4)
	put(t, e, &workflow.Spec{Name: "urgent", Tasks: []*workflow.Task{{Name: "u", Executor: "noop", Priority: 10}}})
	run = trigger(t, e, "urgent")
	settle(t, e)
	m.none()
	if u := taskView(e, run, "u"); u.Status != "pending" || u.Ahead {
		t.Fatalf("u is %s (ahead %v) while the slot is in use: want pending, not ahead", u.Status, u.Ahead)
	}
	return t0, run
}

// TestKeptSlotLetGoWhenItsTaskIsCancelled: the slots kept for a task that
// may not go ahead are kept only while it waits: with urgent u (priority
// 10, not a process) pending for the slot low t[0] holds and t[1..4]
// waiting ahead, u's run is cancelled; when t[0] exits its slot goes to
// t[1], not kept for a task that is gone.
func TestKeptSlotLetGoWhenItsTaskIsCancelled(t *testing.T) {
	e, m := oneSlot(t, true)
	defer e.Close()
	t0, id := urgentWaits(t, e, m)
	if _, err := e.CancelRun(id); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	m.none()
	if got, want := runOneByOne(m, t0, 5, label), "low t[0], low t[1], low t[2], low t[3], low t[4]"; got != want {
		t.Fatalf("started %s\nwant    %s", got, want)
	}
	if u := taskView(e, id, "u"); u.Status != "cancelled" {
		t.Fatalf("u is %s: want cancelled", u.Status)
	}
}

// TestKeptSlotWithEveryAttemptInFlight: a slot is kept for a task that
// may not go ahead even while no more may be dispatched (overtakeMax in
// flight): with low t[0] running, 32 low and 32 mid (priority 5)
// waiting ahead, urgent u (priority 10, a noop) ready waits pending, and
// the slot t[0] frees is kept for it, not given to mid's first.
func TestKeptSlotWithEveryAttemptInFlight(t *testing.T) {
	e, m := oneSlot(t, true)
	defer e.Close()
	t0 := lowsAhead(t, e, m, 40, 32)
	mid := lows(40)
	mid.Name, mid.Tasks[0].Priority = "mid", 5
	put(t, e, mid)
	trigger(t, e, "mid")
	settle(t, e)
	if st := e.Stats(); st.TasksInFlight != e.overtakeMax() {
		t.Fatalf("%d in flight: want %d", st.TasksInFlight, e.overtakeMax())
	}
	put(t, e, &workflow.Spec{Name: "urgent", Tasks: []*workflow.Task{{Name: "u", Executor: "noop", Priority: 10}}})
	trigger(t, e, "urgent")
	settle(t, e)
	m.none()
	if got, want := runOneByOne(m, t0, 3, label), "low t[0], urgent u, mid t[0]"; got != want {
		t.Fatalf("started %s\nwant    %s", got, want)
	}
}
