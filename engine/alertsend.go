package engine

import (
	"container/heap"
	"context"
	"errors"
	"time"

	"github.com/orkwal/orkwal/executors/notify"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// AlertSender sends one alert message to one target (notify.Sender is the
// real one; tests give their own).
type AlertSender interface {
	Send(ctx context.Context, target *workflow.Alert, msg *notify.Message) (code int, err error)
}

// sendJob is a delivery handed to a sender goroutine once the records
// before it are durable.
type sendJob struct {
	ref    replay.DeliveryRef
	target *workflow.Alert
	msg    *notify.Message
}

// sent is a send's outcome, back to the loop through the inbox.
type sent struct {
	ref  replay.DeliveryRef
	code int
	err  string
}

// alertTimersDue handles the alert timers that are due: an SLA raises its
// alert, a summary its summary, a delivery is queued for a send slot;
// then the queue fills the free slots.
func (e *Engine) alertTimersDue(now int64, out *turnOutput) {
	for len(e.alerts.timers) > 0 && e.alerts.timers[0].at <= now {
		t := heap.Pop(&e.alerts.timers).(alertTimer)
		switch t.kind {
		case slaTimer:
			e.slaDue(t.run, now, out)
		case summaryTimer:
			e.summarize(t.key, now, out)
		case deliveryTimer:
			e.alerts.ready = append(e.alerts.ready, t.ref)
		}
	}
	for len(e.alerts.ready) > 0 && len(e.alerts.sending) < maxAlertSends && !e.stopping {
		ref := e.alerts.ready[0]
		e.alerts.ready = e.alerts.ready[1:]
		e.startSend(ref, now, out)
	}
}

func (e *Engine) slaDue(runID string, now int64, out *turnOutput) {
	run := e.state.Runs[runID]
	if run == nil || run.Status.Finished() {
		return
	}
	out.logs = append(out.logs, func() {
		e.log.Warn("run missed its SLA", "run", run.ID, "workflow", run.Workflow, "sla", run.Spec.SLA)
	})
	e.raise(out, alertFor(run, workflow.EventSLA, now, "", 0, ""))
}

// startSend hands a pending delivery to a sender, or gives it up when its
// time is over.
func (e *Engine) startSend(ref replay.DeliveryRef, now int64, out *turnOutput) {
	a := e.state.AlertByID(ref.ID)
	if a == nil || a.Deliveries[ref.Target].Status != replay.DeliveryPending || e.alerts.sending[ref] {
		return
	}
	if now-a.RaisedAt >= int64(e.cfg.AlertGiveUp) {
		e.giveUp(ref, a.Deliveries[ref.Target], now, out)
		return
	}
	e.alerts.sending[ref] = true
	out.sends = append(out.sends, sendJob{ref: ref, target: a.Deliveries[ref.Target].Target, msg: e.message(a)})
}

func (e *Engine) giveUp(ref replay.DeliveryRef, d replay.Delivery, now int64, out *turnOutput) {
	e.record(out, &replay.AlertDelivered{DeliveryRef: ref, Outcome: replay.DeliveryGivenUp, Code: d.Code,
		Error: d.Error, At: now})
	e.metrics.alertsGivenUp.Add(1)
	out.logs = append(out.logs, func() {
		e.log.Error("alert given up", "alert", ref.ID, "target", d.Target.Describe(), "attempts", d.Attempts, "error", d.Error)
	})
}

// launchSends starts the turn's sends, once its frame is durable.
func (e *Engine) launchSends(jobs []sendJob) {
	for _, j := range jobs {
		go func() {
			code, err := e.cfg.AlertSender.Send(e.sendCtx, j.target, j.msg)
			s := &sent{ref: j.ref, code: code}
			if err != nil {
				s.err = err.Error()
				var ne *notify.Error
				if errors.As(err, &ne) {
					s.code = ne.Code
				}
			}
			e.inbox.push(event{sent: s})
		}()
	}
}

// decideSent records a send's outcome: delivered, or failed and tried
// again after a backoff, or given up once the next try would be past the
// give-up time.
func (e *Engine) decideSent(s *sent, now int64, out *turnOutput) {
	delete(e.alerts.sending, s.ref)
	a := e.state.AlertByID(s.ref.ID)
	if a == nil || a.Deliveries[s.ref.Target].Status != replay.DeliveryPending {
		return
	}
	d := a.Deliveries[s.ref.Target]
	if s.err == "" {
		e.record(out, &replay.AlertDelivered{DeliveryRef: s.ref, Outcome: replay.Delivered, Code: s.code, At: now})
		e.metrics.alertsSent.Add(1)
		return
	}
	e.metrics.alertsFailed.Add(1)
	next := now + int64(e.alertBackoff(d.Attempts+1))
	if next-a.RaisedAt >= int64(e.cfg.AlertGiveUp) {
		d.Attempts, d.Code, d.Error = d.Attempts+1, s.code, s.err
		e.giveUp(s.ref, d, now, out)
		return
	}
	e.record(out, &replay.AlertDelivered{DeliveryRef: s.ref, Outcome: replay.DeliveryFailed, Code: s.code,
		Error: s.err, NextTry: next, At: now})
	out.logs = append(out.logs, func() {
		e.log.Warn("alert delivery failed", "alert", s.ref.ID, "target", d.Target.Describe(), "attempt", d.Attempts+1,
			"error", s.err, "next_try", time.Duration(next-now))
	})
}

// alertBackoff is the wait after the n-th failed attempt: 1 s doubling,
// capped at AlertMaxBackoff, ±20% jitter.
func (e *Engine) alertBackoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < e.cfg.AlertMaxBackoff; i++ {
		d *= 2
	}
	d = min(d, e.cfg.AlertMaxBackoff)
	return time.Duration(float64(d) * (0.8 + 0.4*e.cfg.Rand()))
}

// nextAlertWake is the earliest alert timer (0 = none). While the WAL is
// failed no timer is handled (see turn): a due one would wake the loop
// again at once, for ever.
func (e *Engine) nextAlertWake() int64 {
	if len(e.alerts.timers) == 0 || e.poison.Load() != nil {
		return 0
	}
	return e.alerts.timers[0].at
}
