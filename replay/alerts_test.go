package replay

import (
	"fmt"
	"testing"

	"github.com/orkwal/orkwal/replay/workflow"
)

var hook = &workflow.Alert{On: []string{workflow.EventFailure}, Webhook: "http://127.0.0.1:9/x", Secret: "${env:S}"}

func raised(id string, at int64) *AlertRaised {
	return &AlertRaised{ID: id, Run: "r1", Workflow: "w", Event: workflow.EventFailure, Targets: []*workflow.Alert{hook}, At: at}
}

func deliveryOf(s *State, id string) Delivery { return s.AlertByID(id).Deliveries[0] }

// An alert's deliveries go pending → (failed attempts, each retried at its
// NextTry) → delivered or given up; every record round-trips through
// Encode/Decode, and the state through a snapshot (hash equal).
func TestAlertLifecycle(t *testing.T) {
	s := New()
	ref := DeliveryRef{ID: "a1", Target: 0}
	recs := []Record{raised("a1", 10),
		&AlertDelivered{DeliveryRef: ref, Outcome: DeliveryFailed, Code: 503, Error: "503 Service Unavailable", NextTry: 15, At: 11},
		&AlertDelivered{DeliveryRef: ref, Outcome: Delivered, Code: 200, At: 16}}
	for _, r := range recs {
		p, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, s, back)
		if r == recs[1] {
			if d := deliveryOf(s, "a1"); d.Status != DeliveryPending || d.Attempts != 1 || d.NextTry != 15 || d.Code != 503 || s.PendingTo(hook.Key()) != 1 {
				t.Fatalf("after a failed attempt: %+v, pending %d", d, s.PendingTo(hook.Key()))
			}
		}
	}
	if d := deliveryOf(s, "a1"); d.Status != Delivered || d.Attempts != 2 || d.At != 16 || s.PendingTo(hook.Key()) != 0 {
		t.Fatalf("delivered: %+v", d)
	}
	for _, bad := range []Record{
		&AlertDelivered{DeliveryRef: ref, Outcome: Delivered, At: 17},             // not pending any more
		&AlertDelivered{DeliveryRef: DeliveryRef{ID: "nope"}, Outcome: Delivered}, // unknown
		raised("a1", 18), // twice
		&AlertRaised{ID: "a2", Event: workflow.EventFailure, At: 19},                                              // no target
		&AlertRaised{ID: "a3", Event: EventSummary, Targets: []*workflow.Alert{hook}, Covers: []DeliveryRef{ref}}, // not throttled
	} {
		h0, _ := s.Hash()
		if err := s.Apply(bad); err == nil {
			t.Errorf("%T %+v applied", bad, bad)
		}
		if h1, _ := s.Hash(); h1 != h0 {
			t.Errorf("%T: a refused record changed the state", bad)
		}
	}
	checkSnapshot(t, s)
}

// A throttled delivery waits for a summary, which marks it summarized.
func TestAlertSummaryCoversThrottled(t *testing.T) {
	s := New()
	mustApply(t, s, raised("a1", 1), &AlertDelivered{DeliveryRef: DeliveryRef{ID: "a1"}, Outcome: DeliveryThrottled, At: 1})
	if a := s.AlertByID("a1"); a.Done() || a.Deliveries[0].Status != DeliveryThrottled {
		t.Fatalf("throttled: %+v", a.Deliveries[0])
	}
	checkSnapshot(t, s)
	mustApply(t, s, &AlertRaised{ID: "sum", Event: EventSummary, Targets: []*workflow.Alert{hook}, Covers: []DeliveryRef{{ID: "a1"}}, At: 2})
	if a := s.AlertByID("a1"); !a.Done() || a.Deliveries[0].Status != DeliverySummarized || s.AlertByID("sum").Covers != 1 {
		t.Fatalf("summarized: %+v", a.Deliveries[0])
	}
	checkSnapshot(t, s)
}

// Done alerts are bounded: beyond MaxDoneAlerts (plus a quarter) the
// oldest go; pending ones stay whatever their age; a pruned run's done
// alerts go with it.
func TestAlertsBounded(t *testing.T) {
	s := New()
	mustApply(t, s, raised("pending", 0))
	for i := range MaxDoneAlerts + MaxDoneAlerts/4 + 1 {
		id := fmt.Sprintf("a%d", i)
		mustApply(t, s, raised(id, int64(i+1)), &AlertDelivered{DeliveryRef: DeliveryRef{ID: id}, Outcome: Delivered, At: int64(i + 1)})
	}
	if n := len(s.AlertList()); n != MaxDoneAlerts+1 {
		t.Fatalf("%d alerts kept, want %d", n, MaxDoneAlerts+1)
	}
	if s.AlertByID("pending") == nil || s.AlertByID("a0") != nil {
		t.Fatal("the pending alert went, or the oldest done one stayed")
	}
	checkSnapshot(t, s)
}

func checkSnapshot(t *testing.T, s *State) {
	t.Helper()
	for _, snap := range []*Snapshot{s.Snapshot(1), s.BeginSnapshot(1)} {
		complete(t, snap, 1000)
		back := restoreSnap(t, snap)
		h1, _ := s.Hash()
		if h2, _ := back.Hash(); h1 != h2 {
			t.Fatal("restored state's hash differs from the live state's")
		}
		if len(back.AlertList()) != len(s.AlertList()) || back.PendingTo(hook.Key()) != s.PendingTo(hook.Key()) {
			t.Fatal("restored alerts differ")
		}
	}
}
