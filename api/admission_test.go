package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// TestTriggerBeyondTheBoundIs429: once the bound on pending runs is
// reached, a trigger answers 429 with Retry-After and a message naming the
// bound, and writes nothing; /metrics shows the pending runs, the bounds
// and the refusal.
func TestTriggerBeyondTheBoundIs429(t *testing.T) {
	f := newFixtureConfig(t, engine.Config{MaxPendingRuns: 10, MaxPendingRunsPerWorkflow: 2})
	f.put("name: w\ntasks:\n  t: {executor: noop, delay: 1h}\n")
	f.trigger("w")
	f.trigger("w")
	before := f.walFrames()
	req, _ := http.NewRequest("POST", f.srv.URL+"/workflows/w/runs", nil)
	resp := f.send(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("trigger of a full workflow: %d, Retry-After %q; want 429, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	code, body := f.do("POST", "/workflows/w/runs", "")
	if code != 429 || !strings.Contains(body, "workflow w has 2 pending runs, its limit (--max-pending-runs-per-workflow) is 2") {
		t.Fatalf("%d %s", code, body)
	}
	if after := f.walFrames(); after != before {
		t.Fatalf("refused triggers wrote %d WAL frames", after-before)
	}
	m := f.scrape()
	for name, want := range map[string]float64{"orkwal_pending_runs": 2, "orkwal_pending_runs_limit": 10, "orkwal_pending_runs_per_workflow_limit": 2,
		"orkwal_runs_refused_total": 2, `orkwal_workflow_pending_runs{workflow="w"}`: 2} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}
}
