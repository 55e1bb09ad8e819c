package main

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/api"
	"github.com/orkwal/orkwal/engine"
)

// TestBundledExamples loads examples/ the way `orkwal run --workflows
// examples` does and runs every workflow to the outcome its file documents.
func TestBundledExamples(t *testing.T) {
	want := map[string]string{"hello": "success", "etl": "success", "flaky-deploy": "failed", "ork-style": "success",
		"fanout": "success", "ork-pipeline": "success", "http": "success"}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(engine.Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start()
	defer eng.Close()
	srv := httptest.NewServer(api.New(eng, quiet)) // the http example calls the daemon back
	defer srv.Close()
	t.Setenv("ORKWAL_ADDR", strings.TrimPrefix(srv.URL, "http://"))
	change, err := eng.LoadFolder("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if len(change.Recorded) != len(want) {
		t.Fatalf("loaded %d examples, the test knows %d: add the new one here", len(change.Recorded), len(want))
	}
	ids := map[string]string{}
	for name := range want {
		if ids[name], err = eng.Trigger(name, nil, "test"); err != nil {
			t.Fatalf("trigger %s: %v", name, err)
		}
	}
	guard := time.After(30 * time.Second)
	for name, id := range ids {
		for {
			ch := eng.Changed()
			r, _ := eng.Run(id)
			if r.Status == "success" || r.Status == "failed" {
				if r.Status != want[name] {
					t.Errorf("example %s ended %s, want %s: %+v", name, r.Status, want[name], r.Tasks)
				}
				break
			}
			select {
			case <-ch:
			case <-guard:
				t.Fatalf("example %s did not finish", name)
			}
		}
	}
	if r, _ := eng.Run(ids["ork-pipeline"]); r.Tasks[1].Attempt != 2 || string(r.Tasks[2].Output) != `{"loaded":5}` {
		t.Errorf("ork-pipeline: transform attempt %d (want 2: its first fails), load output %s", r.Tasks[1].Attempt, r.Tasks[2].Output)
	}
	r, _ := eng.Run(ids["flaky-deploy"])
	for _, task := range r.Tasks {
		if task.Name == "release" && task.Status != "skipped" {
			t.Errorf("release is %s, want skipped after the failed health check", task.Status)
		}
		if task.Name == "migrate" && task.Status != "success" {
			t.Errorf("migrate is %s: tasks on other branches must still run", task.Status)
		}
	}
}
