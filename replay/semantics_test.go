package replay

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/orkwal/orkwal/replay/workflow"
)

// sim drives a state like a minimal engine: it dispatches ready tasks whose
// not_before has passed, and finishes them as told.
type sim struct {
	t   *testing.T
	s   *State
	now int64
}

func newSim(t *testing.T, spec *workflow.Spec, runs ...string) *sim {
	m := &sim{t: t, s: New(), now: 1}
	mustApply(t, m.s, &WorkflowPut{Spec: spec, At: m.now})
	for _, id := range runs {
		m.apply(&RunCreated{ID: id, Workflow: spec.Name, Version: 1, At: m.now})
	}
	return m
}

func (m *sim) apply(r Record) {
	m.t.Helper()
	if err := m.s.Apply(r); err != nil {
		m.t.Fatalf("apply %s: %v", r.Kind(), err)
	}
}

// ready lists ready task keys in dispatch order, with their runs.
func (m *sim) ready() []string {
	var out []string
	m.s.EachReady(func(t *Task) bool {
		if t.NotBefore <= m.now {
			out = append(out, t.Run.ID+"/"+t.Key())
		}
		return true
	})
	return out
}

func (m *sim) task(run, key string) *Task {
	for _, t := range m.s.Runs[run].Tasks {
		if t.Key() == key {
			return t
		}
	}
	m.t.Fatalf("no task %s/%s", run, key)
	return nil
}

// run dispatches and finishes one task attempt with an outcome and output.
func (m *sim) run(run, key string, ok bool, output string) {
	m.t.Helper()
	t := m.task(run, key)
	ref := TaskRef{Run: run, Task: t.Index}
	m.now++
	m.apply(&TaskDispatched{TaskRef: ref, Attempt: t.Attempt + 1, At: m.now})
	var out []byte
	if output != "" {
		out = []byte(output)
	}
	m.apply(&TaskFinished{TaskRef: ref, Attempt: t.Attempt, OK: ok, Output: out, At: m.now})
}

func task(name string, deps ...string) *workflow.Task {
	return &workflow.Task{Name: name, Executor: "noop", DependsOn: deps}
}

func TestRetriesWithBackoff(t *testing.T) {
	a := task("a")
	a.Retries = 2
	a.RetryBackoff = &workflow.Backoff{Initial: time.Second, Max: time.Minute, Factor: 10}
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{a}}, "r")
	m.run("r", "a", false, "")
	ta := m.task("r", "a")
	if ta.Status != Pending || ta.NotBefore != m.now+int64(time.Second) || len(m.ready()) != 0 {
		t.Fatalf("after failure 1: %s not_before %d (now %d), ready %v", ta.Status, ta.NotBefore, m.now, m.ready())
	}
	m.now = ta.NotBefore
	m.run("r", "a", false, "")
	if ta.NotBefore != m.now+int64(10*time.Second) {
		t.Fatalf("second backoff %d, want 10s", ta.NotBefore-m.now)
	}
	m.now = ta.NotBefore
	m.run("r", "a", false, "")
	if ta.Status != Failed || ta.Attempt != 3 || m.s.Runs["r"].Status != RunFailed {
		t.Fatalf("after 3 failures with 2 retries: %s attempt %d run %s", ta.Status, ta.Attempt, m.s.Runs["r"].Status)
	}
}

func TestOnFailureRunRunsCleanup(t *testing.T) {
	cleanup := task("cleanup", "work")
	cleanup.OnFailure = "run"
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("work"), task("after", "work"), cleanup}}, "r")
	m.run("r", "work", false, "")
	if m.task("r", "after").Status != Skipped {
		t.Fatal("a normal downstream task must be skipped")
	}
	if got := m.ready(); len(got) != 1 || got[0] != "r/cleanup" {
		t.Fatalf("ready %v, want the cleanup task", got)
	}
	m.run("r", "cleanup", true, "")
	if m.s.Runs["r"].Status != RunFailed {
		t.Fatalf("run %s: a cleanup's success does not clear the failure", m.s.Runs["r"].Status)
	}
}

func TestCancelStopsPendingAndEndsCancelled(t *testing.T) {
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("a"), task("b"), task("c", "a")}}, "r")
	ta := m.task("r", "a")
	m.apply(&TaskDispatched{TaskRef: TaskRef{Run: "r", Task: ta.Index}, Attempt: 1, At: 2})
	m.apply(&RunCancelRequested{ID: "r", At: 3})
	if m.task("r", "b").Status != Cancelled || m.task("r", "c").Status != Cancelled || m.s.Runs["r"].Status != RunRunning {
		t.Fatalf("after cancel: b %s c %s run %s", m.task("r", "b").Status, m.task("r", "c").Status, m.s.Runs["r"].Status)
	}
	if err := m.s.Apply(&RunCancelRequested{ID: "r", At: 4}); err == nil {
		t.Fatal("a second cancel applied")
	}
	m.apply(&TaskFinished{TaskRef: TaskRef{Run: "r", Task: ta.Index}, Attempt: 1, Error: "stopped", At: 5})
	if ta.Status != Cancelled || m.s.Runs["r"].Status != RunCancelled {
		t.Fatalf("after the attempt stopped: a %s run %s", ta.Status, m.s.Runs["r"].Status)
	}
	if err := m.s.Apply(&RunCancelRequested{ID: "r", At: 6}); err == nil {
		t.Fatal("cancel of a finished run applied")
	}
}

func TestRerunKeepsSuccesses(t *testing.T) {
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("a"), task("b", "a"), task("c", "b")}}, "r")
	m.run("r", "a", true, `{"x":1}`)
	m.run("r", "b", false, "")
	if m.s.Runs["r"].Status != RunFailed {
		t.Fatal("run should have failed")
	}
	m.apply(&RunRetried{ID: "r", At: 100})
	run := m.s.Runs["r"]
	if run.Status != RunPending || m.task("r", "a").Status != Success || string(m.task("r", "a").Output) != `{"x":1}` {
		t.Fatalf("after rerun: run %s a %s", run.Status, m.task("r", "a").Status)
	}
	if got := m.ready(); len(got) != 1 || got[0] != "r/b" || m.task("r", "c").Status != Pending {
		t.Fatalf("after rerun ready %v c %s", got, m.task("r", "c").Status)
	}
	m.run("r", "b", true, "")
	m.run("r", "c", true, "")
	if run.Status != RunSuccess || m.task("r", "b").Attempt != 2 {
		t.Fatalf("rerun ended %s, b attempt %d", run.Status, m.task("r", "b").Attempt)
	}
	if err := m.s.Apply(&RunRetried{ID: "r", At: 200}); err == nil {
		t.Fatal("retry of a successful run applied")
	}
}

func TestFanOut(t *testing.T) {
	fixed := task("fixed", "discover")
	fixed.Parallel = 2
	each := task("each", "discover")
	each.Foreach = "discover.files"
	count := task("count", "discover")
	count.ParallelFrom = "discover.n"
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("discover"), fixed, each, count, task("join", "each")}}, "r")
	m.run("r", "discover", true, `{"files": ["a.csv", "b.csv", "c.csv"], "n": 0}`)
	want := []string{"r/fixed[0]", "r/fixed[1]", "r/each[0]", "r/each[1]", "r/each[2]"}
	if got := m.ready(); len(got) != len(want) {
		t.Fatalf("ready %v, want %v", got, want)
	}
	if c := m.task("r", "count"); c.Status != Success || string(c.Output) != "[]" {
		t.Fatalf("zero instances: %s %s", c.Status, c.Output)
	}
	if it := m.task("r", "each[1]"); string(it.Item) != `"b.csv"` || it.Count != 3 {
		t.Fatalf("each[1] item %s count %d", it.Item, it.Count)
	}
	for i, f := range []string{"a", "b", "c"} {
		m.run("r", "each["+string(rune('0'+i))+"]", true, `"`+f+`"`)
	}
	if n := m.task("r", "each"); n.Status != Success || string(n.Output) != `["a","b","c"]` {
		t.Fatalf("node after its instances: %s %s", n.Status, n.Output)
	}
	if got := m.ready(); len(got) != 3 || got[0] != "r/join" {
		t.Fatalf("ready %v, want join (created before the instances) then fixed[0], fixed[1]", got)
	}
	m.run("r", "fixed[0]", true, "")
	m.run("r", "fixed[1]", false, "")
	if n := m.task("r", "fixed"); n.Status != Failed || n.Error != "1 of 2 instances did not succeed: fixed[1]" {
		t.Fatalf("fixed node: %s %q", n.Status, n.Error)
	}
}

func TestFanOutBadSourceFailsNode(t *testing.T) {
	each := task("each", "discover")
	each.Foreach = "discover.files"
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("discover"), each}}, "r")
	m.run("r", "discover", true, `{"files": 3}`)
	if n := m.task("r", "each"); n.Status != Failed || n.Error != "foreach: discover.files is 3, not a list" {
		t.Fatalf("node %s %q", n.Status, n.Error)
	}
}

func TestMutexGrantedInCreationOrder(t *testing.T) {
	mig := task("migrate")
	mig.Mutex = "db-{{params.db}}"
	spec := &workflow.Spec{Name: "w", Params: map[string]string{"db": "x"}, Tasks: []*workflow.Task{mig}}
	m := newSim(t, spec)
	for _, r := range []struct{ id, db string }{{"r1", "a"}, {"r2", "b"}, {"r3", "a"}} {
		m.apply(&RunCreated{ID: r.id, Workflow: "w", Version: 1, Params: map[string]string{"db": r.db}, At: 2})
	}
	if h := m.s.MutexHolder("db-a"); h == nil || h.Run.ID != "r1" {
		t.Fatalf("holder of db-a %v, want r1", h)
	}
	m.run("r1", "migrate", true, "")
	if h := m.s.MutexHolder("db-a"); h == nil || h.Run.ID != "r3" {
		t.Fatalf("holder of db-a after r1 %v, want r3", h)
	}
	if h := m.s.MutexHolder("db-b"); h == nil || h.Run.ID != "r2" {
		t.Fatal("db-b is held by r2")
	}
}

func TestPriorityOrdersReadyWork(t *testing.T) {
	hi := task("hi")
	hi.Priority = 10
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("lo"), hi}}, "r1", "r2")
	want := []string{"r1/hi", "r2/hi", "r1/lo", "r2/lo"}
	got := m.ready()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ready %v, want %v", got, want)
		}
	}
}

func TestOnInterruptFail(t *testing.T) {
	a := task("a")
	a.OnInterrupt = "fail"
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{a}}, "r")
	ref := TaskRef{Run: "r", Task: 0}
	m.apply(&TaskDispatched{TaskRef: ref, Attempt: 1, At: 2})
	m.apply(&TaskInterrupted{TaskRef: ref, Attempt: 1, At: 3})
	if ta := m.task("r", "a"); ta.Status != Failed || m.s.Runs["r"].Status != RunFailed {
		t.Fatalf("on_interrupt fail: %s, run %s", ta.Status, m.s.Runs["r"].Status)
	}
}

func TestDelaySetsNotBefore(t *testing.T) {
	b := task("b", "a")
	b.Delay = time.Minute
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("a"), b}}, "r")
	m.run("r", "a", true, "")
	if tb := m.task("r", "b"); tb.NotBefore != m.now+int64(time.Minute) {
		t.Fatalf("b not_before %d, want now+1m", tb.NotBefore-m.now)
	}
}

func TestCronFireTimesNeverRepeat(t *testing.T) {
	spec := &workflow.Spec{Name: "c", Schedule: &workflow.Schedule{Cron: "*/5 * * * *"}, Tasks: []*workflow.Task{task("a")}}
	m := newSim(t, spec)
	m.apply(&CronFired{Workflow: "c", ScheduledAt: 300, RunID: "r1", Version: 1, At: 301})
	for name, r := range map[string]*CronFired{
		"same time":       {Workflow: "c", ScheduledAt: 300, RunID: "r2", Version: 1, At: 302},
		"earlier time":    {Workflow: "c", ScheduledAt: 200, RunID: "r2", Version: 1, At: 302},
		"before start":    {Workflow: "c", ScheduledAt: 0, Skipped: "x", At: 302},
		"future":          {Workflow: "c", ScheduledAt: 900, RunID: "r2", Version: 1, At: 302},
		"run and skipped": {Workflow: "c", ScheduledAt: 600, RunID: "r2", Version: 1, Skipped: "x", At: 602},
		"no schedule":     {Workflow: "zz", ScheduledAt: 600, RunID: "r2", Version: 1, At: 602},
	} {
		if err := m.s.Apply(r); err == nil {
			t.Errorf("%s: applied", name)
		}
	}
	if r := m.s.Runs["r1"]; r == nil || r.Trigger != "cron" || r.ScheduledAt != 300 || len(m.s.Runs) != 1 {
		t.Fatalf("runs after the rejected fires: %+v", m.s.Runs)
	}
	m.apply(&SchedulePaused{Workflow: "c", Paused: true, At: 400})
	if err := m.s.Apply(&CronFired{Workflow: "c", ScheduledAt: 600, Skipped: "x", At: 601}); err == nil {
		t.Fatal("a paused schedule fired")
	}
}

func TestRunsPruned(t *testing.T) {
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("a")}}, "r1", "r2")
	m.run("r1", "a", true, "")
	if err := m.s.Apply(&RunsPruned{IDs: []string{"r2"}}); err == nil {
		t.Fatal("an unfinished run was pruned")
	}
	m.apply(&RunsPruned{IDs: []string{"r1"}, At: 9})
	if len(m.s.RunList) != 1 || m.s.Runs["r1"] != nil || m.s.RunList[0].ID != "r2" {
		t.Fatalf("after pruning: %d runs", len(m.s.RunList))
	}
	m.apply(&RunCreated{ID: "r3", Workflow: "w", Version: 1, At: 10})
	if m.s.Runs["r3"].Seq <= m.s.Runs["r2"].Seq {
		t.Fatal("run sequence reused after pruning")
	}
}

// TestRerunExpandsAFanOutThatFailedToExpand: a fan-out whose expansion
// failed (its source's output had no count or list) has no instances. A
// rerun put it back to running, as if its instances would end it: none
// ever did, so the run stayed running for good, a cancel could not end it
// (only pending tasks are cancelled), and it held its workflow's
// max_active_runs and a delete. It goes back to pending and expands again
// once its upstream tasks end.
func TestRerunExpandsAFanOutThatFailedToExpand(t *testing.T) {
	each := task("each", "discover")
	each.ParallelFrom, each.OnFailure = "discover.n", "run"
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("discover"), each}}, "r")
	m.run("r", "discover", false, "")
	if n := m.task("r", "each"); n.Status != Failed || len(n.Instances) != 0 || m.s.Runs["r"].Status != RunFailed {
		t.Fatalf("before the rerun: node %s with %d instances, run %s", n.Status, len(n.Instances), m.s.Runs["r"].Status)
	}
	m.apply(&RunRetried{ID: "r", Expand: true, At: 100})
	if n := m.task("r", "each"); n.Status != Pending || n.Waiting() != 1 {
		t.Fatalf("after the rerun: node %s waiting on %d, want pending behind discover", n.Status, n.Waiting())
	}
	m.run("r", "discover", true, `{"n": 2}`)
	if got := m.ready(); len(got) != 2 || got[0] != "r/each[0]" || got[1] != "r/each[1]" {
		t.Fatalf("ready %v, want the two instances", got)
	}
	m.run("r", "each[0]", true, "")
	m.run("r", "each[1]", true, "")
	if run := m.s.Runs["r"]; run.Status != RunSuccess {
		t.Fatalf("rerun ended %s, want success", run.Status)
	}

	// The same output again: the node fails again, and the run ends.
	m.apply(&RunCreated{ID: "r2", Workflow: "w", Version: 1, At: m.now})
	m.run("r2", "discover", true, `{"files": []}`)
	m.apply(&RunRetried{ID: "r2", Expand: true, At: 200})
	if n, run := m.task("r2", "each"), m.s.Runs["r2"]; n.Status != Failed || run.Status != RunFailed {
		t.Fatalf("rerun of a fan-out whose source has no count: node %s, run %s; want both failed", n.Status, run.Status)
	}
}

// TestMutexStaysWithTheTaskInFlightAfterRerun: the queue of a mutex key is
// in creation order, so a rerun task, created before the task of another
// run that took the key when the first failed, went back to its head and
// was granted the key while that task still ran: two tasks of one key in
// flight at once. The key stays with the task in flight until it ends,
// then goes by creation order; a snapshot restores the same holder.
func TestMutexStaysWithTheTaskInFlightAfterRerun(t *testing.T) {
	mig := task("migrate")
	mig.Mutex = "db"
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{mig}}, "r1", "r2", "r3")
	m.run("r1", "migrate", false, "")
	r2 := m.task("r2", "migrate")
	m.now++
	m.apply(&TaskDispatched{TaskRef: TaskRef{Run: "r2", Task: r2.Index}, Attempt: 1, At: m.now})
	m.apply(&RunRetried{ID: "r1", At: m.now})
	if h := m.s.MutexHolder("db"); h != r2 {
		t.Fatalf("while r2's attempt is in flight, the mutex is held by %s", h.ID())
	}
	if h := restoreSnap(t, m.s.Snapshot(1)).MutexHolder("db"); h == nil || h.ID() != r2.ID() {
		t.Fatalf("restored from a snapshot, the mutex is held by %v, want %s", h, r2.ID())
	}
	m.apply(&TaskFinished{TaskRef: TaskRef{Run: "r2", Task: r2.Index}, Attempt: 1, OK: true, At: m.now})
	if h := m.s.MutexHolder("db"); h == nil || h.Run.ID != "r1" {
		t.Fatalf("after r2's task, the mutex is held by %v, want r1's (created first)", h)
	}
}

// TestOldRerunOfAFanOutThatFailedToExpandStillReplays: a log written by
// a version before the rerun re-expanded a fan-out whose expansion failed
// holds what that version did next: the rerun left the node running with
// no instances, the run running, and the operator's cancel of that run was
// recorded. Replayed with the rerun's new rule, the node failed again at
// once and the run ended: the cancel no longer applied, and the folder did
// not boot. A run_retried without expand keeps the old rule; the cancel
// now ends such a node.
func TestOldRerunOfAFanOutThatFailedToExpandStillReplays(t *testing.T) {
	each := task("each", "discover")
	each.ParallelFrom = "discover.n"
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("discover"), each}}, "r")
	m.run("r", "discover", true, `{"files": []}`)
	if run := m.s.Runs["r"]; run.Status != RunFailed {
		t.Fatalf("before the rerun: run %s, want failed", run.Status)
	}
	m.apply(&RunRetried{ID: "r", At: 100}) // as the earlier version wrote it
	if run := m.s.Runs["r"]; run.Status.Finished() {
		t.Fatalf("after an earlier version's rerun: run %s, want it unfinished as that version left it", run.Status)
	}
	m.apply(&RunCancelRequested{ID: "r", At: 101})
	if n, run := m.task("r", "each"), m.s.Runs["r"]; n.Status != Cancelled || run.Status != RunCancelled {
		t.Fatalf("after the cancel: node %s, run %s; want both cancelled", n.Status, run.Status)
	}
}

// TestRerunWithNothingToReset: a run cancelled while its last attempt
// succeeded ends cancelled with every task a success. A rerun of it
// resets nothing, and no dispatch would ever start or end the run: the
// engine refuses it, and so does Apply for a record of this version. An
// earlier version recorded it: that record still applies, and a cancel
// ends the run it left unfinished.
func TestRerunWithNothingToReset(t *testing.T) {
	m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{task("a")}}, "r")
	a := m.task("r", "a")
	ref := TaskRef{Run: "r", Task: a.Index}
	m.apply(&TaskDispatched{TaskRef: ref, Attempt: 1, At: 2})
	m.apply(&RunCancelRequested{ID: "r", At: 3})
	m.apply(&TaskFinished{TaskRef: ref, Attempt: 1, OK: true, At: 4})
	if run := m.s.Runs["r"]; run.Status != RunCancelled || a.Status != Success || run.Resettable() {
		t.Fatalf("run %s, a %s, resettable %v; want cancelled with a a success", run.Status, a.Status, run.Resettable())
	}
	if err := m.s.Apply(&RunRetried{ID: "r", Expand: true, At: 5}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("rerun with nothing to reset: %v, want refused", err)
	}
	m.apply(&RunRetried{ID: "r", At: 5}) // as an earlier version wrote it
	m.apply(&RunCancelRequested{ID: "r", At: 6})
	if run := m.s.Runs["r"]; run.Status != RunCancelled {
		t.Fatalf("the earlier version's rerun, then a cancel: run %s, want cancelled", run.Status)
	}
}

func TestRetryBackoffJitter(t *testing.T) {
	for _, c := range []struct {
		jitter float64
		want   time.Duration
	}{
		{0, 10 * time.Second},
		{0.1, 9 * time.Second},
		{0.19, 8100 * time.Millisecond},
		{-0.5, 10 * time.Second}, // out of range: a corrupt record's value is not trusted
		{1, 10 * time.Second},
		{math.NaN(), 10 * time.Second},
	} {
		a := task("a")
		a.Retries = 1
		a.RetryBackoff = &workflow.Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2}
		m := newSim(t, &workflow.Spec{Name: "w", Tasks: []*workflow.Task{a}}, "r")
		ta := m.task("r", "a")
		ref := TaskRef{Run: "r", Task: ta.Index}
		m.apply(&TaskDispatched{TaskRef: ref, Attempt: 1, At: m.now})
		m.apply(&TaskFinished{TaskRef: ref, Attempt: 1, Jitter: c.jitter, At: m.now})
		if got := time.Duration(ta.NotBefore - m.now); got != c.want {
			t.Errorf("jitter %v: backoff %v, want %v", c.jitter, got, c.want)
		}
	}
}
