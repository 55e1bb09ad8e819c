package engine

import (
	"container/heap"
	"fmt"
	"strconv"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Alerts: the engine decides them (docs/format.md, "Alerts"). Every
// record a turn applies is looked at once, in order (noticeRecords): one
// that ends a run, or a failed attempt that will be retried, raises an
// alert in the same frame; so does the SLA timer. Deliveries are sent off
// the loop (alertsend.go) and each outcome is a record.

// Alert defaults (Config).
const (
	DefaultAlertGiveUp     = 24 * time.Hour
	DefaultAlertMaxBackoff = 5 * time.Minute
	DefaultAlertThrottle   = 10               // alerts per target per window
	DefaultAlertWindow     = 10 * time.Minute // the throttle's window
	// maxPendingPerTarget: beyond this many pending deliveries to one
	// target, new ones are throttled (a target that is down does not grow
	// the state).
	maxPendingPerTarget = 100
	maxSummaryCovers    = 1000
	maxAlertSends       = 4 // deliveries in flight at once
)

// alertLoop is the loop's alert bookkeeping; none of it is state: a boot
// rebuilds it from the state (armAlerts).
type alertLoop struct {
	timers  alertTimers                 // SLA, delivery and summary times, a min-heap
	ready   []replay.DeliveryRef        // deliveries due, waiting for a send slot
	sending map[replay.DeliveryRef]bool // deliveries being sent
	windows map[string]*throttleWindow  // by target key
	summary map[string]bool             // a summary timer is armed for the target key
	logged  map[string]bool             // runs whose start this turn logged
}

type throttleWindow struct {
	start int64
	count int
}

type timerKind uint8

const (
	slaTimer timerKind = iota + 1
	deliveryTimer
	summaryTimer
)

type alertTimer struct {
	at   int64
	kind timerKind
	run  string             // slaTimer
	ref  replay.DeliveryRef // deliveryTimer
	key  string             // summaryTimer: the target key
}

type alertTimers []alertTimer

func (h alertTimers) Len() int           { return len(h) }
func (h alertTimers) Less(i, j int) bool { return h[i].at < h[j].at }
func (h alertTimers) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *alertTimers) Push(x any)        { *h = append(*h, x.(alertTimer)) }
func (h *alertTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

func (e *Engine) pushAlertTimer(t alertTimer) { heap.Push(&e.alerts.timers, t) }

// armAlerts rebuilds the timers from the state at boot: pending deliveries
// at their next try (a past one at once), a summary for each target with
// throttled deliveries, the SLA of each unfinished run.
func (e *Engine) armAlerts() {
	e.alerts.timers, e.alerts.ready, e.alerts.summary = nil, nil, map[string]bool{}
	now := e.cfg.Clock.Now().UnixNano()
	for _, a := range e.state.AlertList() {
		for i, d := range a.Deliveries {
			switch d.Status {
			case replay.DeliveryPending:
				e.pushAlertTimer(alertTimer{at: d.NextTry, kind: deliveryTimer, ref: replay.DeliveryRef{ID: a.ID, Target: i}})
			case replay.DeliveryThrottled:
				e.armSummary(d.Target.Key(), now)
			}
		}
	}
	for _, run := range e.state.RunList {
		e.armSLA(run)
	}
}

func (e *Engine) armSLA(run *replay.Run) {
	if sla := run.Spec.SLA; sla > 0 && !run.Status.Finished() && e.state.AlertByID(slaID(run.ID)) == nil {
		e.pushAlertTimer(alertTimer{at: run.CreatedAt + int64(sla), kind: slaTimer, run: run.ID})
	}
}

func (e *Engine) armSummary(key string, at int64) {
	if !e.alerts.summary[key] {
		e.alerts.summary[key] = true
		e.pushAlertTimer(alertTimer{at: at, kind: summaryTimer, key: key})
	}
}

// noticeRecords looks at the records the turn applied since the last
// call, in order, and decides what they imply: alerts (appended to the
// same frame), timers, and the daemon's log lines.
func (e *Engine) noticeRecords(out *turnOutput) {
	for ; out.noticed < len(out.recs); out.noticed++ {
		e.notice(out.recs[out.noticed], out)
	}
}

func (e *Engine) notice(rec replay.Record, out *turnOutput) {
	switch r := rec.(type) {
	case *replay.TaskDispatched:
		e.noticeStart(r, out)
	case *replay.TaskFinished:
		e.noticeFinish(r, out)
	case *replay.TaskInterrupted:
		if t, err := e.state.Task(r.TaskRef); err == nil {
			e.noticeRunEnd(t.Run, r.At, out)
		}
	case *replay.RunCancelRequested:
		if run := e.state.Runs[r.ID]; run != nil {
			e.noticeRunEnd(run, r.At, out)
		}
	case *replay.RunCreated:
		e.armSLA(e.state.Runs[r.ID])
	case *replay.CronFired:
		if r.RunID != "" {
			e.armSLA(e.state.Runs[r.RunID])
		}
	case *replay.AlertRaised:
		e.noticeRaised(r)
	case *replay.AlertDelivered:
		if r.Outcome == replay.DeliveryFailed {
			e.pushAlertTimer(alertTimer{at: r.NextTry, kind: deliveryTimer, ref: r.DeliveryRef})
		}
	}
}

func (e *Engine) noticeStart(r *replay.TaskDispatched, out *turnOutput) {
	t, err := e.state.Task(r.TaskRef)
	if err != nil || t.Run.StartedAt != r.At || out.logged[t.Run.ID] {
		return
	}
	if out.logged == nil {
		out.logged = map[string]bool{}
	}
	out.logged[t.Run.ID] = true
	run := t.Run
	out.logs = append(out.logs, func() {
		e.log.Info("run started", "run", run.ID, "workflow", run.Workflow, "trigger", run.Trigger)
	})
}

func (e *Engine) noticeFinish(r *replay.TaskFinished, out *turnOutput) {
	t, err := e.state.Task(r.TaskRef)
	if err != nil {
		return
	}
	if !r.OK {
		retry := t.Status == replay.Pending
		start := t.DispatchedAt // the attempt's duration: from its dispatch
		run, key := t.Run, t.Key()
		out.logs = append(out.logs, func() {
			e.log.Warn("task failed", "run", run.ID, "workflow", run.Workflow, "task", key, "attempt", r.Attempt,
				"exit_code", r.ExitCode, "error", r.Error, "duration", time.Duration(r.At-start), "will_retry", retry)
		})
		if retry {
			e.raise(out, alertFor(t.Run, workflow.EventRetry, r.At, key, r.Attempt, r.Error))
		}
	}
	e.noticeRunEnd(t.Run, r.At, out)
}

// noticeRunEnd raises the alert of a run that the record at at ended.
func (e *Engine) noticeRunEnd(run *replay.Run, at int64, out *turnOutput) {
	if !run.Status.Finished() || run.FinishedAt != at {
		return
	}
	ev := map[replay.RunStatus]string{replay.RunFailed: workflow.EventFailure, replay.RunSuccess: workflow.EventSuccess,
		replay.RunCancelled: workflow.EventCancelled}[run.Status]
	a := alertFor(run, ev, at, "", 0, "")
	if e.state.AlertByID(a.ID) != nil || out.ended[a.ID] {
		return // several records of this turn ended it at the same time
	}
	if out.ended == nil {
		out.ended = map[string]bool{}
	}
	out.ended[a.ID] = true
	status, dur := run.Status, time.Duration(run.FinishedAt-run.StartedAt)
	out.logs = append(out.logs, func() {
		log := e.log.Info
		if status != replay.RunSuccess {
			log = e.log.Warn
		}
		log("run finished", "run", run.ID, "workflow", run.Workflow, "status", string(status), "duration", dur)
	})
	e.raise(out, a)
}

// alertFor is the alert of an event of run; its id is derived from the
// transition, so that the same transition always names the same alert.
func alertFor(run *replay.Run, event string, at int64, task string, attempt int, errText string) *replay.AlertRaised {
	id := fmt.Sprintf("%s.%s.%s", run.ID, event, strconv.FormatInt(at, 36))
	switch event {
	case workflow.EventRetry:
		id = fmt.Sprintf("%s.retry.%s.%d", run.ID, task, attempt)
	case workflow.EventSLA:
		id = slaID(run.ID)
	}
	return &replay.AlertRaised{ID: id, Run: run.ID, Workflow: run.Workflow, Event: event, Task: task,
		Attempt: attempt, Error: errText, At: at}
}

func slaID(run string) string { return run + ".sla" }

// targetsFor are the targets that want event: the workflow's, then the
// daemon's, each target once.
func (e *Engine) targetsFor(spec *workflow.Spec, event string) []*workflow.Alert {
	var out []*workflow.Alert
	seen := map[string]bool{}
	for _, list := range [][]*workflow.Alert{spec.Alerts, e.cfg.Alerts} {
		for _, a := range list {
			if a.Wants(event) && !seen[a.Key()] {
				seen[a.Key()] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// raise applies and logs an alert if some target wants it, and throttles
// its deliveries to targets in a storm.
func (e *Engine) raise(out *turnOutput, a *replay.AlertRaised) {
	if a.Targets == nil {
		run := e.state.Runs[a.Run]
		a.Targets = e.targetsFor(run.Spec, a.Event)
	}
	if len(a.Targets) == 0 || e.state.AlertByID(a.ID) != nil {
		return
	}
	if !e.record(out, a) {
		return
	}
	e.metrics.alertsRaised.Add(1)
	if a.Event == replay.EventSummary {
		return
	}
	for i, t := range a.Targets {
		if e.throttle(t.Key(), a.At) {
			e.record(out, &replay.AlertDelivered{DeliveryRef: replay.DeliveryRef{ID: a.ID, Target: i},
				Outcome: replay.DeliveryThrottled, At: a.At})
			e.metrics.alertsThrottled.Add(1)
		}
	}
}

// record applies a record the loop decided and adds it to the turn.
func (e *Engine) record(out *turnOutput, rec replay.Record) bool {
	if err := e.state.Apply(rec); err != nil {
		e.log.Error("alert record does not apply", "kind", rec.Kind(), "err", err)
		return false
	}
	out.recs = append(out.recs, rec)
	out.progress = true
	return true
}

// throttle counts a delivery to the target key and says whether it is
// held back: more than the window allows, or too many pending.
func (e *Engine) throttle(key string, now int64) bool {
	w := e.alerts.windows[key]
	if w == nil || now-w.start >= int64(e.cfg.AlertWindow) {
		w = &throttleWindow{start: now}
		e.alerts.windows[key] = w
	}
	w.count++
	if w.count <= e.cfg.AlertThrottle && e.state.PendingTo(key) <= maxPendingPerTarget {
		return false
	}
	e.armSummary(key, w.start+int64(e.cfg.AlertWindow))
	return true
}

// summarize raises one alert for the target key's throttled deliveries.
func (e *Engine) summarize(key string, now int64, out *turnOutput) {
	delete(e.alerts.summary, key)
	var covers []replay.DeliveryRef
	var target *workflow.Alert
	for _, a := range e.state.AlertList() {
		for i, d := range a.Deliveries {
			if d.Status == replay.DeliveryThrottled && d.Target.Key() == key && len(covers) < maxSummaryCovers {
				covers, target = append(covers, replay.DeliveryRef{ID: a.ID, Target: i}), d.Target
			}
		}
	}
	if len(covers) == 0 {
		return
	}
	// Named by its target and the first delivery it covers, which no
	// other summary can cover.
	id := fmt.Sprintf("summary.%016x.%016x", xxhash.Sum64String(key), xxhash.Sum64String(fmt.Sprint(covers[0].ID, "#", covers[0].Target)))
	e.raise(out, &replay.AlertRaised{ID: id, Event: replay.EventSummary, Targets: []*workflow.Alert{target}, Covers: covers, At: now})
	if len(covers) == maxSummaryCovers {
		e.armSummary(key, now) // the rest in the next turn
	}
}

// noticeRaised arms the deliveries of a raised alert that were not
// throttled: due at once.
func (e *Engine) noticeRaised(r *replay.AlertRaised) {
	a := e.state.AlertByID(r.ID)
	if a == nil {
		return
	}
	for i, d := range a.Deliveries {
		if d.Status == replay.DeliveryPending {
			e.pushAlertTimer(alertTimer{at: d.NextTry, kind: deliveryTimer, ref: replay.DeliveryRef{ID: a.ID, Target: i}})
		}
	}
}
