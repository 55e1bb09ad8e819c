package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// TestWeekOfFiveMinuteFires drives the scheduler's arithmetic (nextFire,
// dueFires) through a week of */5 on computed time: 2016 fires, each once.
func TestWeekOfFiveMinuteFires(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixNano()
	c := &cronCache{}
	sc := &replay.Schedule{Workflow: "w", Cron: "*/5 * * * *", Since: start}
	s, _ := c.schedule(sc.Cron)
	fires, last := 0, int64(0)
	for {
		next := c.nextFire(sc)
		if next > start+int64(7*24*time.Hour) {
			break
		}
		due, _ := dueFires(s, max(sc.Since, sc.LastFire), next)
		if len(due) != 1 || due[0] != next || due[0] <= last {
			t.Fatalf("fire %d: due %v at %d (last %d)", fires, due, next, last)
		}
		last, sc.LastFire = due[0], due[0]
		fires++
	}
	if fires != 7*24*12 {
		t.Fatalf("%d fires in a week of */5, want 2016", fires)
	}
}

// TestDST: in a named zone, a local time that does not exist (spring
// forward) does not fire, and one that occurs twice (fall back) fires at
// both instants: every fire is a distinct instant.
func TestDST(t *testing.T) {
	s, err := workflow.ParseCron("CRON_TZ=Europe/Berlin 30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	check := func(from, to string, want []string) {
		t.Helper()
		f, _ := time.Parse(time.RFC3339, from)
		u, _ := time.Parse(time.RFC3339, to)
		var got []string
		due, _ := dueFires(s, f.UnixNano(), u.UnixNano())
		for _, at := range due {
			got = append(got, time.Unix(0, at).UTC().Format("01-02 15:04"))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s..%s: fires %v, want %v", from, to, got, want)
		}
	}
	check("2026-03-27T12:00:00Z", "2026-03-31T12:00:00Z", []string{"03-28 01:30", "03-30 00:30", "03-31 00:30"})
	check("2026-10-23T12:00:00Z", "2026-10-26T12:00:00Z", []string{"10-24 00:30", "10-25 00:30", "10-25 01:30", "10-26 01:30"})
}

func cronSpec(name, expr, catchup, overlap string) *workflow.Spec {
	return &workflow.Spec{Name: name, Schedule: &workflow.Schedule{Cron: expr, Catchup: catchup, Overlap: overlap},
		Tasks: []*workflow.Task{{Name: "t", Executor: "process", Command: []string{"x"}}}}
}

func cronRuns(e *Engine, wf string) []RunView {
	runs := e.Runs(RunFilter{Workflow: wf})
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

// nextFire returns the workflow's next fire from the API view.
func nextFire(t *testing.T, e *Engine, wf string) time.Time {
	t.Helper()
	w, err := e.Workflow(wf)
	if err != nil || w.Schedule == nil || w.Schedule.NextFire == nil {
		t.Fatalf("no next fire for %s: %v %+v", wf, err, w.Schedule)
	}
	return *w.Schedule.NextFire
}

func openClocked(t *testing.T, dir string, clock *fakeClock, ex executors.Executor) *Engine {
	t.Helper()
	e, err := Open(Config{DataDir: dir, MaxConcurrent: 16, Clock: clock, Logger: quiet,
		Executors: map[string]executors.Executor{"process": ex}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	return e
}

// TestCronAcrossRestartsAtEveryFire fires */5 on the injected clock and
// crashes the engine at every fire boundary, alternately just after a fire
// was recorded and while its time passes with the engine down: every fire
// time makes exactly one run, none is missed, none is doubled.
func TestCronAcrossRestartsAtEveryFire(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	e := openClocked(t, dir, clock, executors.Noop{})
	put(t, e, cronSpec("c", "*/5 * * * *", "", "allow"))
	var want []time.Time
	for i := 0; i < 24; i++ {
		next := nextFire(t, e, "c")
		want = append(want, next)
		if i%2 == 0 { // fire live, then crash
			clock.Advance(next.Sub(clock.Now()))
			waitFor(t, e, "fire", func() bool { return len(cronRuns(e, "c")) == len(want) })
			crash(e)
		} else { // the fire time passes while the engine is down
			crash(e)
			clock.Advance(next.Sub(clock.Now()))
		}
		e = openClocked(t, dir, clock, executors.Noop{})
		waitFor(t, e, "fire after restart", func() bool { return len(cronRuns(e, "c")) == len(want) })
	}
	defer e.Close()
	runs := cronRuns(e, "c")
	if len(runs) != len(want) {
		t.Fatalf("%d runs for %d fires", len(runs), len(want))
	}
	for i, r := range runs {
		if r.Trigger != "cron" || r.ScheduledAt == nil || !r.ScheduledAt.Equal(want[i]) {
			t.Fatalf("run %d: trigger %q scheduled %v, want cron at %v", i, r.Trigger, r.ScheduledAt, want[i])
		}
	}
}

// TestCatchupPolicies: an hour and two minutes down misses 12 fires.
func TestCatchupPolicies(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	now := clock.Now()
	clock.Advance(now.Truncate(5 * time.Minute).Add(5 * time.Minute).Sub(now)) // on a fire boundary
	e := openClocked(t, dir, clock, executors.Noop{})
	for _, p := range []string{"none", "latest", "all"} {
		put(t, e, cronSpec("c-"+p, "*/5 * * * *", p, "allow"))
	}
	crash(e)
	clock.Advance(62 * time.Minute)
	e = openClocked(t, dir, clock, executors.Noop{})
	defer e.Close()
	want := map[string]int{"none": 0, "latest": 1, "all": 12}
	waitFor(t, e, "catch-up", func() bool { return len(cronRuns(e, "c-all")) == 12 && len(cronRuns(e, "c-latest")) == 1 })
	for p, n := range want {
		if got := len(cronRuns(e, "c-"+p)); got != n {
			t.Errorf("catchup %s: %d runs, want %d", p, got, n)
		}
	}
	w, _ := e.Workflow("c-none")
	if f := w.Schedule.Fires; len(f) != 1 || !strings.Contains(f[0].Skipped, "catchup none: 12 missed fires") {
		t.Fatalf("catchup none fires: %+v", f)
	}
}

func TestOverlapPolicies(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	m := newManual(t, dir)
	e := openClocked(t, dir, clock, m)
	defer e.Close()
	for _, p := range []string{"skip", "queue", "allow"} {
		put(t, e, cronSpec("o-"+p, "*/5 * * * *", "", p))
	}
	next := nextFire(t, e, "o-skip")
	clock.Advance(next.Sub(clock.Now()))
	first := map[string]bool{}
	for i := 0; i < 3; i++ {
		first[m.next().Workflow] = true
	}
	clock.Advance(5 * time.Minute) // the second fire, while the first runs are active
	j := m.next()
	if j.Workflow != "o-allow" {
		t.Fatalf("second fire started %s, want only o-allow", j.Workflow)
	}
	settle(t, e)
	m.none()
	w, _ := e.Workflow("o-skip")
	if f := w.Schedule.Fires; len(f) != 2 || !strings.HasPrefix(f[1].Skipped, "overlap skip: run ") {
		t.Fatalf("o-skip fires: %+v", f)
	}
	queued := cronRuns(e, "o-queue")
	if len(queued) != 2 {
		t.Fatalf("o-queue runs: %+v", queued)
	}
	if r, _ := e.Run(queued[1].ID); r.Status != "pending" || !strings.Contains(strings.Join(r.Tasks[0].WaitingOn, ""), "overlap: queue") {
		t.Fatalf("queued run: %s %+v", r.Status, r.Tasks)
	}
	for _, r := range cronRuns(e, "o-queue")[:1] {
		m.finish(executors.Job{TaskID: r.ID + ":t", Attempt: 1}, true)
	}
	if j := m.next(); j.Workflow != "o-queue" || j.RunID != queued[1].ID {
		t.Fatalf("after the first o-queue run: %s %s, want the queued run", j.Workflow, j.RunID)
	}
}

func TestPauseResumeAndScheduleChanges(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	e := openClocked(t, dir, clock, executors.Noop{})
	defer e.Close()
	put(t, e, cronSpec("p", "*/5 * * * *", "all", "allow"))
	if _, err := e.PauseSchedule("p", true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	settle(t, e)
	if w, _ := e.Workflow("p"); len(cronRuns(e, "p")) != 0 || !w.Schedule.Paused || w.Schedule.NextFire != nil {
		t.Fatalf("paused: %d runs, %+v", len(cronRuns(e, "p")), w.Schedule)
	}
	if _, err := e.PauseSchedule("p", false); err != nil {
		t.Fatal(err)
	}
	settle(t, e)
	if n := len(cronRuns(e, "p")); n != 0 {
		t.Fatalf("resume caught up %d fires from the pause", n)
	}
	clock.Advance(nextFire(t, e, "p").Sub(clock.Now()))
	waitFor(t, e, "fire after resume", func() bool { return len(cronRuns(e, "p")) == 1 })

	put(t, e, cronSpec("p", "@every 1h", "all", "allow")) // takes effect at once
	if next := nextFire(t, e, "p"); next.Sub(clock.Now()) != time.Hour {
		t.Fatalf("next fire after a change in %s, want 1h", next.Sub(clock.Now()))
	}
	noSchedule := cronSpec("p", "", "", "")
	noSchedule.Schedule = nil
	put(t, e, noSchedule)
	clock.Advance(2 * time.Hour)
	settle(t, e)
	if n := len(cronRuns(e, "p")); n != 1 {
		t.Fatalf("a removed schedule fired: %d runs", n)
	}
	if _, err := e.PauseSchedule("p", true); err == nil {
		t.Fatal("pausing a workflow without a schedule succeeded")
	}
}

// TestCatchupAfterMoreFiresThanAScan: a scan of due fires stops after
// maxScan (a million) of them, 11.6 days of @every 1s. The fires it listed
// were taken as the latest: catchup latest ran one run per scan (3 for 30
// days down) and catchup all ran its cap per scan (300). A scan that stops
// short of now records its last fire skipped, and the next turn scans on.
func TestCatchupAfterMoreFiresThanAScan(t *testing.T) {
	for _, p := range []struct {
		catchup string
		runs    int
	}{{"latest", 1}, {"all", MaxCatchup}} {
		dir := t.TempDir()
		clock := &fakeClock{}
		e := openClocked(t, dir, clock, executors.Noop{})
		put(t, e, cronSpec("c", "@every 1s", p.catchup, "allow"))
		crash(e)
		clock.Advance(30 * 24 * time.Hour)
		e = openClocked(t, dir, clock, executors.Noop{})
		waitFor(t, e, "the catch-up", func() bool { return nextFire(t, e, "c").After(clock.Now()) })
		settle(t, e)
		runs := cronRuns(e, "c")
		if len(runs) != p.runs || !runs[len(runs)-1].ScheduledAt.Equal(clock.Now()) {
			t.Errorf("catchup %s after 30 days of @every 1s: %d runs, want %d, the last at now", p.catchup, len(runs), p.runs)
		}
		e.Close()
	}
}

// TestScheduleThatNeverFires: robfig/cron accepts an expression no date
// matches (February 30th) and its Next is then the zero time, whose
// UnixNano is a large negative number: the engine took it for a fire due
// long ago and armed its wake-up in the past after every turn, spinning a
// core, and the API showed a next fire in year 1. Such a schedule has no
// next fire.
func TestScheduleThatNeverFires(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	e := openClocked(t, dir, clock, executors.Noop{})
	defer e.Close()
	put(t, e, cronSpec("c", "0 0 30 2 *", "", ""))
	settle(t, e)
	before := e.turns.Load()
	settle(t, e)
	if n := e.turns.Load() - before; n > 2 {
		t.Errorf("an idle engine with a schedule that never fires took %d turns for one command", n)
	}
	if w, _ := e.Workflow("c"); w.Schedule == nil || w.Schedule.NextFire != nil {
		t.Errorf("schedule %+v, want no next fire", w.Schedule)
	}
}
