package api

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// orkYAML is a small workflow file as Ork's clients send it.
const orkYAML = `name: %s
tasks:
  first: {executor: noop}
  second: {executor: noop, depends_on: [first]}
`

// orkRequest is f.do that decodes a 200 answer into v.
func (f *fixture) orkRequest(method, path, body string, v any) {
	f.t.Helper()
	code, got := f.do(method, path, body)
	if code != 200 {
		f.t.Fatalf("%s %s: %d %s, want 200", method, path, code, got)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(got), v); err != nil {
			f.t.Fatalf("%s %s: %v in %s", method, path, err, got)
		}
	}
}

func orkBody(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestOrkAPIWorkflowsAndRuns: Ork's clients create workflows, list and
// search them, start runs, page through them and read one, with Ork's
// JSON shapes and status codes.
func TestOrkAPIWorkflowsAndRuns(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"alpha", "beta", "alphabet"} {
		var created struct{ Name, ID string }
		f.orkRequest("POST", "/api/workflows", orkBody(map[string]any{"yaml": fmt.Sprintf(orkYAML, name), "project": "p"}), &created)
		if created.Name != name || created.ID != name {
			t.Fatalf("POST /api/workflows %s: %+v", name, created)
		}
	}
	if code, body := f.do("POST", "/api/workflows", orkBody(map[string]any{"yaml": fmt.Sprintf(orkYAML, "beta"), "replace": false})); code != 409 {
		t.Fatalf("replace false on an existing workflow: %d %s, want 409", code, body)
	}
	if code, body := f.do("POST", "/api/workflows", orkBody(map[string]any{"yaml": "name: x\ntasks: {a: {depends_on: [nope]}}\n"})); code != 400 {
		t.Fatalf("a bad workflow: %d %s, want 400", code, body)
	}

	var wfs orkPage[orkWorkflowItem]
	f.orkRequest("GET", "/api/workflows?search=ALPHA&limit=1", "", &wfs)
	if wfs.Total != 2 || len(wfs.Items) != 1 || wfs.Items[0].Name != "alpha" || !wfs.HasMore || wfs.Items[0].Executor != "noop" {
		t.Fatalf("search ALPHA limit 1: %+v", wfs)
	}
	f.orkRequest("GET", "/api/workflows?search=alpha&offset=1", "", &wfs)
	if wfs.Total != 2 || len(wfs.Items) != 1 || wfs.Items[0].Name != "alphabet" || wfs.HasMore {
		t.Fatalf("search alpha offset 1: %+v", wfs)
	}
	var detail orkWorkflowInfo
	f.orkRequest("GET", "/api/workflows/beta", "", &detail)
	if len(detail.Tasks) != 2 || detail.Tasks[1].Name != "second" || strings.Join(detail.Tasks[1].DependsOn, ",") != "first" || detail.Schedule != nil {
		t.Fatalf("GET /api/workflows/beta: %+v", detail)
	}
	if code, _ := f.do("GET", "/api/workflows/nope", ""); code != 404 {
		t.Fatalf("unknown workflow: %d, want 404", code)
	}

	var ids []string
	for _, name := range []string{"alpha", "beta", "beta"} {
		var started struct {
			RunID string `json:"run_id"`
		}
		f.orkRequest("POST", "/api/runs", orkBody(map[string]string{"workflow": name}), &started)
		f.waitRun(started.RunID)
		ids = append(ids, started.RunID)
	}
	if code, _ := f.do("POST", "/api/runs", `{"workflow": "nope"}`); code != 404 {
		t.Fatalf("start an unknown workflow: %d, want 404", code)
	}
	if code, _ := f.do("POST", "/api/runs", `{}`); code != 400 {
		t.Fatalf("start without a workflow: %d, want 400", code)
	}

	var runs orkPage[orkRunItem]
	f.orkRequest("GET", "/api/runs?workflow=beta&status=success&limit=1&offset=1", "", &runs)
	if runs.Total != 2 || len(runs.Items) != 1 || runs.Items[0].ID != ids[1] || runs.HasMore || runs.Limit != 1 || runs.Offset != 1 {
		t.Fatalf("beta's runs, second page: %+v (ids %v)", runs, ids)
	}
	f.orkRequest("GET", "/api/runs?limit=5000", "", &runs)
	if runs.Total != 3 || len(runs.Items) != 3 || runs.Items[0].ID != ids[2] || runs.Limit != orkMaxLimit || runs.Items[0].FinishedAt == nil {
		t.Fatalf("every run: %+v", runs)
	}
	for _, bad := range []string{"offset=-1", "offset=10001", "limit=x", "status=done", "stauts=failed"} {
		if code, body := f.do("GET", "/api/runs?"+bad, ""); code != 400 {
			t.Errorf("GET /api/runs?%s: %d %s, want 400", bad, code, body)
		}
	}

	var run orkRunDetail
	f.orkRequest("GET", "/api/runs/"+ids[0], "", &run)
	if run.Run.ID != ids[0] || run.Run.Workflow != "alpha" || run.Run.Status != "success" || run.Run.Error != nil ||
		len(run.Tasks) != 2 || run.Tasks[1].Name != "second" || run.Tasks[1].Executor != "noop" || run.Tasks[1].Status != "success" ||
		run.Workflow == nil || run.Workflow.Name != "alpha" {
		t.Fatalf("GET /api/runs/%s: %+v", ids[0], run)
	}
	if code, _ := f.do("GET", "/api/runs/not-a-uuid", ""); code != 400 {
		t.Fatalf("a bad run id: %d, want 400", code)
	}
	if code, _ := f.do("GET", "/api/runs/01a20513-4449-7a72-88e6-f0b8c447588e", ""); code != 404 {
		t.Fatalf("an unknown run: %d, want 404", code)
	}
}

// TestOrkAPICancel: POST /api/runs/{id}/cancel answers 200 with no body
// once the cancel is durable, and the run ends cancelled.
func TestOrkAPICancel(t *testing.T) {
	f := newFixture(t)
	f.orkRequest("POST", "/api/workflows", orkBody(map[string]string{"yaml": "name: slow\ntasks:\n  wait: {command: sleep 60}\n"}), nil)
	var started struct {
		RunID string `json:"run_id"`
	}
	f.orkRequest("POST", "/api/runs", `{"workflow": "slow"}`, &started)
	code, body := f.do("POST", "/api/runs/"+started.RunID+"/cancel", "")
	if code != 200 || body != "" {
		t.Fatalf("cancel: %d %q, want 200 and no body", code, body)
	}
	if st, _ := f.eng.RunStatus(started.RunID); st == "success" || st == "failed" {
		t.Fatalf("after the cancel the run is %s", st)
	}
	for ch := f.eng.Changed(); ; ch = f.eng.Changed() {
		if st, _ := f.eng.RunStatus(started.RunID); st == "cancelled" {
			break
		}
		<-ch
	}
	if code, _ := f.do("POST", "/api/runs/01a20513-4449-7a72-88e6-f0b8c447588e/cancel", ""); code != 404 {
		t.Fatalf("cancel an unknown run: %d, want 404", code)
	}
}

// TestOrkAPISchedule: PATCH /api/workflows/{name}/schedule with enabled
// false pauses the workflow's schedule, true resumes it, answered 200
// without a body; another cron is refused and changes nothing, as is a
// body without enabled.
func TestOrkAPISchedule(t *testing.T) {
	f := newFixture(t)
	f.orkRequest("POST", "/api/workflows", orkBody(map[string]string{"yaml": "name: nightly\nschedule: \"0 3 * * *\"\ntasks:\n  a: {executor: noop}\n"}), nil)
	code, body := f.do("PATCH", "/api/workflows/nightly/schedule", `{"schedule": "0 3 * * *", "enabled": false}`)
	if code != 200 || body != "" {
		t.Fatalf("disable: %d %q, want 200 and no body", code, body)
	}
	var wf orkWorkflowInfo
	f.orkRequest("GET", "/api/workflows/nightly", "", &wf)
	if wf.Schedule == nil || *wf.Schedule != "0 3 * * *" || wf.ScheduleEnabled || wf.NextScheduledAt != nil {
		t.Fatalf("after disable: %+v", wf)
	}
	if v, _ := f.eng.Workflow("nightly"); v.Schedule == nil || !v.Schedule.Paused {
		t.Fatalf("the engine's schedule is not paused: %+v", v.Schedule)
	}
	f.orkRequest("PATCH", "/api/workflows/nightly/schedule", `{"schedule": null, "enabled": true}`, nil)
	f.orkRequest("GET", "/api/workflows/nightly", "", &wf)
	if !wf.ScheduleEnabled || wf.NextScheduledAt == nil {
		t.Fatalf("after enable: %+v", wf)
	}
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/api/workflows/nightly/schedule", `{"schedule": "0 4 * * *", "enabled": true}`, 409},
		{"/api/workflows/nightly/schedule", `{"schedule": "0 3 * * *"}`, 400},
		{"/api/workflows/nightly/schedule", `not json`, 400},
		{"/api/workflows/nope/schedule", `{"enabled": true}`, 404},
	} {
		if code, body := f.do("PATCH", c.path, c.body); code != c.code {
			t.Errorf("PATCH %s %s: %d %s, want %d", c.path, c.body, code, body, c.code)
		}
	}
	if v, _ := f.eng.Workflow("nightly"); v.Schedule == nil || v.Schedule.Paused || v.Schedule.Cron != "0 3 * * *" {
		t.Fatalf("a refused PATCH changed the schedule: %+v", v.Schedule)
	}
}

// TestPauseRoutes: a run paused through Ork's route shows "paused", lets
// its running task finish and starts nothing more; a task paused through
// orkwal's route (and Ork's, by its id) waits after the run resumes; the
// resumes let the run end.
func TestPauseRoutes(t *testing.T) {
	f := newFixture(t)
	gate := filepath.Join(t.TempDir(), "go")
	yaml := fmt.Sprintf("name: held\ntasks:\n  a: {command: \"while [ ! -e %s ]; do sleep 0.05; done\"}\n  b: {executor: noop, depends_on: [a]}\n  c: {executor: noop, depends_on: [a]}\n", gate)
	f.orkRequest("POST", "/api/workflows", orkBody(map[string]string{"yaml": yaml}), nil)
	var started struct {
		RunID string `json:"run_id"`
	}
	f.orkRequest("POST", "/api/runs", `{"workflow": "held"}`, &started)
	id := started.RunID
	f.waitFor(func() bool { v, _ := f.eng.Run(id); return len(v.Tasks) > 0 && v.Tasks[0].Status == "running" })
	f.orkRequest("POST", "/api/runs/"+id+"/pause", "", nil)
	var run engine.RunView
	f.orkRequest("POST", "/runs/"+id+"/tasks/c/pause", "", &run)
	if !run.Paused || !run.Tasks[2].Paused {
		t.Fatalf("after the pauses: run %v, c %v", run.Paused, run.Tasks[2].Paused)
	}
	if code, body := f.do("POST", "/api/tasks/"+id+":a/pause", ""); code != 409 {
		t.Fatalf("pausing a running task: %d %s, want 409", code, body)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.waitFor(func() bool { v, _ := f.eng.Run(id); return v.Tasks[0].Status == "success" })
	var detail orkRunDetail
	f.orkRequest("GET", "/api/runs/"+id, "", &detail)
	if detail.Run.Status != "paused" || detail.Tasks[1].Status != "pending" || detail.Tasks[2].Status != "paused" {
		t.Fatalf("paused run: %s, b %s, c %s", detail.Run.Status, detail.Tasks[1].Status, detail.Tasks[2].Status)
	}
	f.orkRequest("POST", "/runs/"+id+"/resume", "", &run)
	f.waitFor(func() bool { v, _ := f.eng.Run(id); return v.Tasks[1].Status == "success" })
	if v, _ := f.eng.Run(id); v.Tasks[2].Status != "pending" || v.Status == "success" {
		t.Fatalf("c ran while paused: %s, run %s", v.Tasks[2].Status, v.Status)
	}
	f.orkRequest("POST", "/api/tasks/"+id+":c/resume", "", nil)
	if r := f.waitRun(id); r.Status != "success" {
		t.Fatalf("run %s after the resumes", r.Status)
	}
	for _, c := range []struct {
		path string
		code int
	}{
		{"/api/runs/" + id + "/pause", 409},
		{"/api/tasks/" + id + "/pause", 400},
		{"/api/tasks/nope:c/pause", 400},
		{"/api/tasks/01a20513-4449-7a72-88e6-f0b8c447588e:c/pause", 404},
	} {
		if code, body := f.do("POST", c.path, ""); code != c.code {
			t.Errorf("POST %s: %d %s, want %d", c.path, code, body, c.code)
		}
	}
}

// waitFor blocks until cond holds, woken by the engine's commits.
func (f *fixture) waitFor(cond func() bool) {
	f.t.Helper()
	guard := time.After(20 * time.Second)
	for {
		ch := f.eng.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-guard:
			f.t.Fatal("timed out")
		}
	}
}
