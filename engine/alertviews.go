package engine

import (
	"time"

	"github.com/orkwal/orkwal/replay"
)

// AlertView is an alert and its deliveries, one per target. Targets are
// described without secrets (workflow.Alert.Describe).
type AlertView struct {
	ID         string         `json:"id"`
	Event      string         `json:"event"`
	Task       string         `json:"task,omitempty"`    // retry: the task
	Attempt    int            `json:"attempt,omitempty"` // retry: its failed attempt
	Error      string         `json:"error,omitempty"`
	Covers     int            `json:"covers,omitempty"` // summary: deliveries held back and told in it
	RaisedAt   time.Time      `json:"raised_at"`
	Deliveries []DeliveryView `json:"deliveries"`
}

// DeliveryView is one target's delivery of an alert.
type DeliveryView struct {
	Target   string     `json:"target"` // e.g. "webhook hooks.example.com", "email ops@example.com"
	Status   string     `json:"status"` // pending, delivered, given_up, throttled, summarized
	Attempts int        `json:"attempts"`
	Code     int        `json:"code,omitempty"`  // last HTTP status or SMTP reply code
	Error    string     `json:"error,omitempty"` // last error
	NextTry  *time.Time `json:"next_try,omitempty"`
	DoneAt   *time.Time `json:"done_at,omitempty"`
}

func viewAlerts(list []*replay.Alert) []AlertView {
	if len(list) == 0 {
		return nil
	}
	out := make([]AlertView, len(list))
	for i, a := range list {
		out[i] = viewAlert(a)
	}
	return out
}

func viewAlert(a *replay.Alert) AlertView {
	v := AlertView{ID: a.ID, Event: a.Event, Task: a.Task, Attempt: a.Attempt, Error: a.Error, Covers: a.Covers,
		RaisedAt: ts(a.RaisedAt), Deliveries: make([]DeliveryView, len(a.Deliveries))}
	for i, d := range a.Deliveries {
		v.Deliveries[i] = DeliveryView{Target: d.Target.Describe(), Status: string(d.Status), Attempts: d.Attempts,
			Code: d.Code, Error: d.Error, NextTry: tsp(d.NextTry), DoneAt: tsp(d.At)}
	}
	return v
}

// Alerts lists the latest alerts, newest first (at most limit; 0 = all
// kept: the state keeps them bounded).
func (e *Engine) Alerts(limit int) []AlertView {
	e.mu.RLock()
	defer e.mu.RUnlock()
	list := e.state.AlertList()
	out := []AlertView{} // an empty list, never null: the API documents an array
	for i := len(list) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, viewAlert(list[i]))
	}
	return out
}
