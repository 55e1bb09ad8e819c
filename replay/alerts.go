package replay

import (
	"slices"

	"github.com/orkwal/orkwal/replay/workflow"
)

// Alerts (issue 25). The engine decides an alert in the same batch as the
// transition that caused it (AlertRaised), and records every outcome of
// its deliveries (AlertDelivered): the state knows at any index which
// deliveries are pending and when each is next tried, so that a boot
// resumes them. Alerts are kept apart from runs, bounded: done alerts
// beyond MaxDoneAlerts are dropped oldest first, and with their runs.

// DeliveryStatus is where one target's delivery of an alert stands.
type DeliveryStatus string

const (
	DeliveryPending    DeliveryStatus = "pending"    // to be tried at NextTry
	DeliveryFailed     DeliveryStatus = "failed"     // an outcome only: an attempt failed, retried at NextTry (the delivery stays pending)
	Delivered          DeliveryStatus = "delivered"  // the target accepted it
	DeliveryGivenUp    DeliveryStatus = "given_up"   // failed until the give-up time
	DeliveryThrottled  DeliveryStatus = "throttled"  // held back by the target's storm limit; a summary will tell
	DeliverySummarized DeliveryStatus = "summarized" // throttled, then told in a summary alert
)

// EventSummary is the event of a summary alert: a target's throttled
// alerts, told in one.
const EventSummary = "summary"

// MaxDoneAlerts is how many done alerts (no delivery pending or
// throttled) the state keeps; older ones are dropped as new ones come.
const MaxDoneAlerts = 1000

// AlertRaised decides an alert: one per event (a run's end, a retry, an
// SLA, a summary), with the targets told about it (secrets only as
// ${env:NAME} references). ID is stable: every delivery, and every
// duplicate of one, carries it.
type AlertRaised struct {
	ID       string            `msgpack:"id"`
	Run      string            `msgpack:"run,omitempty"`
	Workflow string            `msgpack:"wf,omitempty"`
	Event    string            `msgpack:"ev"`
	Task     string            `msgpack:"task,omitempty"` // retry: the task's key
	Attempt  int               `msgpack:"attempt,omitempty"`
	Error    string            `msgpack:"err,omitempty"`
	Targets  []*workflow.Alert `msgpack:"targets"`
	// Covers: a summary's throttled deliveries, which become summarized.
	Covers []DeliveryRef `msgpack:"covers,omitempty"`
	At     int64         `msgpack:"at"`
}

// DeliveryRef names one target of an alert.
type DeliveryRef struct {
	ID     string `msgpack:"id"`
	Target int    `msgpack:"t"`
}

// AlertDelivered records one outcome of a target's delivery: failed (to
// be tried again at NextTry), delivered, given_up or throttled.
type AlertDelivered struct {
	DeliveryRef
	Outcome DeliveryStatus `msgpack:"outcome"`
	Code    int            `msgpack:"code,omitempty"` // HTTP status or SMTP reply code, if any
	Error   string         `msgpack:"err,omitempty"`
	NextTry int64          `msgpack:"next,omitempty"`
	At      int64          `msgpack:"at"`
}

func (*AlertRaised) Kind() Kind    { return KindAlertRaised }
func (*AlertDelivered) Kind() Kind { return KindAlertDelivered }

// Alert is a raised alert and its deliveries, one per target.
type Alert struct {
	ID         string     `msgpack:"id"`
	Run        string     `msgpack:"run,omitempty"`
	Workflow   string     `msgpack:"wf,omitempty"`
	Event      string     `msgpack:"ev"`
	Task       string     `msgpack:"task,omitempty"`
	Attempt    int        `msgpack:"attempt,omitempty"`
	Error      string     `msgpack:"err,omitempty"`
	Covers     int        `msgpack:"covers,omitempty"` // a summary: how many deliveries it tells of
	RaisedAt   int64      `msgpack:"at"`
	Deliveries []Delivery `msgpack:"deliveries"`
}

// Delivery is one target's delivery of an alert.
type Delivery struct {
	Target   *workflow.Alert `msgpack:"target"`
	Status   DeliveryStatus  `msgpack:"status"`
	Attempts int             `msgpack:"attempts,omitempty"` // attempts that failed or succeeded
	Code     int             `msgpack:"code,omitempty"`
	Error    string          `msgpack:"err,omitempty"`
	NextTry  int64           `msgpack:"next,omitempty"` // pending: when to try
	At       int64           `msgpack:"done,omitempty"` // when it was delivered, given up or throttled
}

// Done reports whether nothing of the alert is left to do.
func (a *Alert) Done() bool {
	for _, d := range a.Deliveries {
		if d.Status == DeliveryPending || d.Status == DeliveryThrottled {
			return false
		}
	}
	return true
}

// alerts is the alerts part of the state.
type alerts struct {
	list    []*Alert            // in raise order
	byID    map[string]*Alert   // derived
	byRun   map[string][]*Alert // derived: a run's alerts, in raise order
	done    int                 // derived: alerts in list that are Done
	pending map[string]int      // derived: pending deliveries per target key
}

// AlertList returns the alerts in raise order; callers must not modify it.
func (s *State) AlertList() []*Alert { return s.alerts.list }

// AlertByID returns an alert, or nil.
func (s *State) AlertByID(id string) *Alert { return s.alerts.byID[id] }

// AlertsOf returns a run's alerts in raise order; callers must not
// modify it.
func (s *State) AlertsOf(run string) []*Alert { return s.alerts.byRun[run] }

// PendingTo is the number of pending deliveries to a target (by its Key).
func (s *State) PendingTo(key string) int { return s.alerts.pending[key] }

func (s *State) applyAlertRaised(r *AlertRaised) error {
	switch {
	case r.ID == "" || r.Event == "":
		return invalid("alert_raised without an id or an event")
	case s.alerts.byID[r.ID] != nil:
		return invalid("alert %s raised twice", r.ID)
	case len(r.Targets) == 0:
		return invalid("alert %s without a target", r.ID)
	}
	for _, c := range r.Covers {
		if d := s.delivery(c); d == nil || d.Status != DeliveryThrottled {
			return invalid("alert %s: summary covers %s target %d, which is not throttled", r.ID, c.ID, c.Target)
		}
	}
	a := &Alert{ID: r.ID, Run: r.Run, Workflow: r.Workflow, Event: r.Event, Task: r.Task, Attempt: r.Attempt,
		Error: r.Error, Covers: len(r.Covers), RaisedAt: r.At, Deliveries: make([]Delivery, len(r.Targets))}
	for i, t := range r.Targets {
		a.Deliveries[i] = Delivery{Target: t, Status: DeliveryPending, NextTry: r.At}
	}
	for _, c := range r.Covers {
		s.setDelivery(c, func(d *Delivery) { d.Status = DeliverySummarized })
	}
	s.addAlert(a)
	s.trimAlerts(nil)
	return nil
}

func (s *State) applyAlertDelivered(r *AlertDelivered) error {
	d := s.delivery(r.DeliveryRef)
	switch {
	case d == nil:
		return invalid("alert_delivered: unknown alert %s target %d", r.ID, r.Target)
	case d.Status != DeliveryPending:
		return invalid("alert_delivered: alert %s target %d is %s, not pending", r.ID, r.Target, d.Status)
	case r.Outcome == DeliveryFailed && r.NextTry < r.At:
		return invalid("alert_delivered: alert %s target %d retried before it failed", r.ID, r.Target)
	}
	switch r.Outcome {
	case DeliveryFailed, Delivered, DeliveryGivenUp, DeliveryThrottled:
	default:
		return invalid("alert_delivered: unknown outcome %q", r.Outcome)
	}
	s.setDelivery(r.DeliveryRef, func(d *Delivery) {
		if r.Outcome != DeliveryThrottled {
			d.Attempts++
			d.Code, d.Error = r.Code, r.Error
		}
		if r.Outcome == DeliveryFailed {
			d.NextTry = r.NextTry
			return
		}
		d.Status, d.NextTry, d.At = r.Outcome, 0, r.At
	})
	s.trimAlerts(nil)
	return nil
}

func (s *State) delivery(ref DeliveryRef) *Delivery {
	a := s.alerts.byID[ref.ID]
	if a == nil || ref.Target < 0 || ref.Target >= len(a.Deliveries) {
		return nil
	}
	return &a.Deliveries[ref.Target]
}

// setDelivery changes one delivery, keeping the derived counts. The
// deliveries are copied first: a snapshot being encoded may share them.
func (s *State) setDelivery(ref DeliveryRef, change func(*Delivery)) {
	a := s.alerts.byID[ref.ID]
	wasDone, old := a.Done(), a.Deliveries[ref.Target]
	a.Deliveries = slices.Clone(a.Deliveries)
	change(&a.Deliveries[ref.Target])
	s.countPending(old, -1)
	s.countPending(a.Deliveries[ref.Target], +1)
	switch done := a.Done(); {
	case done && !wasDone:
		s.alerts.done++
	case !done && wasDone:
		s.alerts.done--
	}
}

func (s *State) countPending(d Delivery, delta int) {
	if d.Status != DeliveryPending {
		return
	}
	if s.alerts.pending == nil {
		s.alerts.pending = map[string]int{}
	}
	k := d.Target.Key()
	if s.alerts.pending[k] += delta; s.alerts.pending[k] == 0 {
		delete(s.alerts.pending, k)
	}
}

func (s *State) addAlert(a *Alert) {
	if s.alerts.byID == nil {
		s.alerts.byID, s.alerts.byRun = map[string]*Alert{}, map[string][]*Alert{}
	}
	s.alerts.list = append(s.alerts.list, a)
	s.alerts.byID[a.ID] = a
	if a.Run != "" {
		s.alerts.byRun[a.Run] = append(s.alerts.byRun[a.Run], a)
	}
	for _, d := range a.Deliveries {
		s.countPending(d, +1)
	}
	if a.Done() {
		s.alerts.done++
	}
}

// trimAlerts drops done alerts: those of the runs in pruned, and the
// oldest beyond MaxDoneAlerts (once a quarter more have gathered, so that
// the cost of the pass is spread).
func (s *State) trimAlerts(pruned map[string]bool) {
	if len(pruned) == 0 && s.alerts.done <= MaxDoneAlerts+MaxDoneAlerts/4 {
		return
	}
	excess := max(s.alerts.done-MaxDoneAlerts, 0)
	kept := make([]*Alert, 0, len(s.alerts.list))
	for _, a := range s.alerts.list {
		if a.Done() && (excess > 0 || pruned[a.Run]) {
			if excess > 0 {
				excess--
			}
			s.alerts.done--
			delete(s.alerts.byID, a.ID)
			s.dropFromRun(a)
			continue
		}
		kept = append(kept, a)
	}
	s.alerts.list = kept
}

func (s *State) dropFromRun(a *Alert) {
	list := s.alerts.byRun[a.Run]
	if i := slices.Index(list, a); i >= 0 {
		list = slices.Delete(slices.Clone(list), i, i+1)
	}
	if len(list) == 0 {
		delete(s.alerts.byRun, a.Run)
		return
	}
	s.alerts.byRun[a.Run] = list
}

// copyAlerts is the alerts for a snapshot: bounded (see MaxDoneAlerts and
// the engine's cap of pending deliveries per target), so copied whole.
func (s *State) copyAlerts() []Alert {
	out := make([]Alert, len(s.alerts.list))
	for i, a := range s.alerts.list {
		out[i] = *a // Deliveries are replaced, never changed in place (setDelivery)
	}
	return out
}

// restoreAlerts rebuilds the alerts of a snapshot.
func (s *State) restoreAlerts(list []Alert) {
	for i := range list {
		a := list[i]
		s.addAlert(&a)
	}
}
