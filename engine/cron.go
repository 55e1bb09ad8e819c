package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/robfig/cron/v3"
)

// Cron policy constants.
const (
	// OnTimeGrace: a fire at most this late is on time; an older one was
	// missed (the daemon was down, or the box asleep) and is handled by the
	// schedule's catchup policy.
	OnTimeGrace = time.Minute
	// MaxCatchup caps the missed fires `catchup: all` runs.
	MaxCatchup = 100
	// maxScan bounds how many fire times are enumerated at once.
	maxScan = 1_000_000
)

// cronCache keeps parsed expressions and next fire times, loop-owned.
type cronCache struct {
	parsed map[string]cron.Schedule
	next   map[string]cronNext // by workflow
}

type cronNext struct {
	cron string
	from int64 // max(Since, LastFire) the next fire was computed from
	at   int64
}

func (c *cronCache) schedule(expr string) (cron.Schedule, error) {
	if c.parsed == nil {
		c.parsed, c.next = map[string]cron.Schedule{}, map[string]cronNext{}
	}
	if s, ok := c.parsed[expr]; ok {
		return s, nil
	}
	s, err := workflow.ParseCron(expr)
	if err == nil {
		c.parsed[expr] = s
	}
	return s, err
}

// nextAfter is s's next fire time after from (unix nanos), or 0 if it has
// none (robfig/cron accepts expressions no date matches, such as February
// 30th: their Next is the zero time).
func nextAfter(s cron.Schedule, from int64) int64 {
	next := s.Next(time.Unix(0, from))
	if next.IsZero() {
		return 0
	}
	return next.UnixNano()
}

// nextFire returns the schedule's next fire time after its last fire, or 0
// if it has none (see nextAfter).
func (c *cronCache) nextFire(sc *replay.Schedule) int64 {
	from := max(sc.Since, sc.LastFire)
	if n, ok := c.next[sc.Workflow]; ok && n.cron == sc.Cron && n.from == from {
		return n.at
	}
	s, err := c.schedule(sc.Cron)
	if err != nil {
		return 0
	}
	at := nextAfter(s, from)
	c.next[sc.Workflow] = cronNext{cron: sc.Cron, from: from, at: at}
	return at
}

// fireSchedules records the fires that are due, each with the run it
// creates or the reason it creates none, and returns the earliest future
// fire (0 = none). Called under the write lock.
func (e *Engine) fireSchedules(now int64, out *turnOutput) int64 {
	var wake int64
	for _, sc := range e.state.Schedules {
		if sc.Paused {
			continue
		}
		if next := e.cron.nextFire(sc); next > now || next == 0 {
			if next != 0 && (wake == 0 || next < wake) {
				wake = next
			}
			continue
		}
		e.fire(sc, now, out)
		if next := e.cron.nextFire(sc); next != 0 && (wake == 0 || next < wake) {
			wake = next
		}
	}
	return wake
}

// fire handles one schedule's due fires by its catchup policy.
func (e *Engine) fire(sc *replay.Schedule, now int64, out *turnOutput) {
	w := e.state.Workflows[sc.Workflow]
	s, err := e.cron.schedule(sc.Cron)
	if w == nil || err != nil {
		return
	}
	due, more := dueFires(s, max(sc.Since, sc.LastFire), now)
	if len(due) == 0 {
		return
	}
	latest := due[len(due)-1]
	if more { // not the latest fires: skip them, the next turn scans on
		e.fireOne(sc, w, latest, now, fmt.Sprintf("missed: more than %d fires due at once, not run", maxScan), out)
		return
	}
	onTime := now-latest <= int64(OnTimeGrace)
	missed := len(due) - 1
	if !onTime {
		missed++
	}
	switch policy := w.Spec.Schedule.CatchupPolicy(); {
	case missed == 0 || policy == "latest":
		if missed > 0 {
			e.log.Info("schedule missed fires; running the latest (catchup: latest)", "workflow", sc.Workflow, "missed", missed)
		}
		e.fireOne(sc, w, latest, now, "", out)
	case policy == "none":
		if onTime {
			e.fireOne(sc, w, latest, now, "", out)
			return
		}
		e.fireOne(sc, w, latest, now, fmt.Sprintf("catchup none: %d missed fires not run", missed), out)
	default: // all
		if len(due) > MaxCatchup {
			e.log.Warn("schedule missed more fires than catchup all runs; the oldest are skipped",
				"workflow", sc.Workflow, "missed", len(due), "cap", MaxCatchup)
			due = due[len(due)-MaxCatchup:]
		}
		for _, at := range due {
			e.fireOne(sc, w, at, now, "", out)
		}
	}
}

// fireOne records one fire: a run, or skipped (by reason, or by the overlap
// policy when a run of the workflow is still active).
func (e *Engine) fireOne(sc *replay.Schedule, w *replay.Workflow, at, now int64, skip string, out *turnOutput) {
	rec := &replay.CronFired{Workflow: sc.Workflow, ScheduledAt: at, At: now, Skipped: skip}
	if skip == "" {
		active := e.activeRun(sc.Workflow)
		switch policy := w.Spec.Schedule.OverlapPolicy(); {
		case active != "" && policy == "skip":
			rec.Skipped = "overlap skip: run " + active + " is still active"
		case active != "" && policy == "queue":
			rec.Queued = true
		}
	}
	if rec.Skipped == "" {
		var full *OverloadError
		if errors.As(e.admit(e.state, sc.Workflow), &full) {
			rec.Skipped, rec.Queued = "admission: "+full.Reason()+"; not run", false
		}
	}
	if rec.Skipped == "" {
		id, err := uuid.NewV7()
		if err != nil {
			e.log.Error("cron: new run id", "err", err)
			return
		}
		rec.RunID, rec.Version = id.String(), w.Version
	}
	if err := e.state.Apply(rec); err != nil {
		e.log.Error("cron fire does not apply", "workflow", sc.Workflow, "err", err)
		return
	}
	out.recs = append(out.recs, rec)
	out.progress = true
}

// activeRun returns the newest unfinished run of the workflow, or "": the
// newer of the newest pending and the newest running run, read from the
// state's per-workflow, per-status run lists in O(log n), whatever the
// backlog of other workflows' runs (a scan of every run from the newest
// grew with it, at every fire).
func (e *Engine) activeRun(wf string) string {
	var newest *replay.Run
	for _, st := range []replay.RunStatus{replay.RunPending, replay.RunRunning} {
		e.state.EachRunBefore(wf, st, ^uint64(0), func(r *replay.Run) bool {
			if newest == nil || r.Seq > newest.Seq {
				newest = r
			}
			return false
		})
	}
	if newest == nil {
		return ""
	}
	return newest.ID
}

// dueFires lists the fire times after from and at or before now, oldest
// first, the latest MaxCatchup+1 at most. A scan stops after maxScan fires:
// more reports that fires after those listed are due too.
func dueFires(s cron.Schedule, from, now int64) (due []int64, more bool) {
	t := s.Next(time.Unix(0, from))
	for n := 0; !t.IsZero() && t.UnixNano() <= now; n++ {
		if n == maxScan {
			return due, true
		}
		due = append(due, t.UnixNano())
		if len(due) > 2*MaxCatchup {
			due = append(due[:0], due[len(due)-MaxCatchup-1:]...)
		}
		t = s.Next(t)
	}
	return due, false
}

// PauseSchedule pauses or resumes a workflow's schedule. Asking for the
// state it is in changes nothing.
func (e *Engine) PauseSchedule(name string, paused bool) (WorkflowView, error) {
	_, err := e.do(func(st *replay.State, now int64) (replay.Record, any, error) {
		if _, ok := st.Workflows[name]; !ok {
			return nil, nil, fmt.Errorf("%w: workflow %q", ErrNotFound, name)
		}
		sc, ok := st.Schedules[name]
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("%w: workflow %s has no schedule", ErrConflict, name)
		case sc.Paused == paused:
			return nil, nil, nil
		}
		return &replay.SchedulePaused{Workflow: name, Paused: paused, At: now}, nil, nil
	})
	if err != nil {
		return WorkflowView{}, err
	}
	return e.Workflow(name)
}
