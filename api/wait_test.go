package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// TestGetRunWait: GET /runs/{id}?wait=D answers once the run has ended, or
// with the run as it is after D, or when the daemon stops; a bad wait is a
// 400 naming it.
func TestGetRunWait(t *testing.T) {
	f := newFixture(t)
	gate := filepath.Join(t.TempDir(), "go")
	f.put("name: gated\ntasks:\n  hold: {command: \"while [ ! -e " + gate + " ]; do sleep 0.01; done\"}\n")
	run := func(path string) (int, engine.RunView) {
		code, body := f.do("GET", path, "")
		var v engine.RunView
		json.Unmarshal([]byte(body), &v)
		return code, v
	}
	id := f.trigger("gated")
	if code, v := run("/runs/" + id + "?wait=20ms"); code != http.StatusOK || v.Status == "success" {
		t.Fatalf("a short wait on an active run: %d %s, want 200 and the run still active", code, v.Status)
	}
	done := make(chan engine.RunView, 1)
	go func() { _, v := run("/runs/" + id + "?wait=30s"); done <- v }()
	os.WriteFile(gate, nil, 0o644)
	if v := <-done; v.Status != "success" {
		t.Fatalf("wait until the run ends: %s, want success", v.Status)
	}
	for _, bad := range []string{"0s", "2m", "soon", "-1s"} {
		if code, body := f.do("GET", "/runs/"+id+"?wait="+bad, ""); code != http.StatusBadRequest || !strings.Contains(body, "wait") {
			t.Fatalf("wait=%s: %d %s, want 400 naming wait", bad, code, body)
		}
	}
	if code, _ := f.do("GET", "/runs/01a20000-0000-7000-8000-000000000000?wait=1s", ""); code != http.StatusNotFound {
		t.Fatalf("wait on an unknown run: %d, want 404", code)
	}
	os.Remove(gate)
	other := f.trigger("gated")
	f.waitTasks(other, "hold running", func(ts map[string]engine.TaskView) bool { return ts["hold"].Status == "running" })
	go func() { _, v := run("/runs/" + other + "?wait=30s"); done <- v }()
	f.api.StopStreams() // what the daemon does when it starts to stop
	if v := <-done; v.Status != "running" {
		t.Fatalf("a wait when the daemon stops: %s, want the run as it is (running)", v.Status)
	}
	os.WriteFile(gate, nil, 0o644)
}
