package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// TestShowRun: show gives durations, attempts (each failed one with its
// whole error), a fan-out on one line with its instances by status
// (--instances lists them), and times with their zone.
func TestShowRun(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { v := t0.Add(time.Duration(s * float64(time.Second))); return &v }
	code := func(n int) *int { return &n }
	long := "Traceback: " + strings.Repeat("a very long error message ", 6) + "END"
	run := engine.RunView{ID: "r1", Workflow: "etl", Version: 2, Status: "failed", CreatedAt: t0, StartedAt: at(0), FinishedAt: at(9),
		Tasks: []engine.TaskView{
			{Name: "extract", Task: "extract", Status: "success", Attempt: 2, Retries: 2, StartedAt: at(1), FinishedAt: at(3.5), ExitCode: code(0),
				AttemptHistory: []engine.AttemptView{
					{Attempt: 1, Status: "failed", ExitCode: 1, Error: long, StartedAt: t0, FinishedAt: *at(0.5)},
					{Attempt: 2, Status: "success", StartedAt: *at(1), FinishedAt: *at(3.5)}}},
			{Name: "process", Task: "process", Status: "failed", Instances: 3, DependsOn: []string{"extract"}, StartedAt: at(4), FinishedAt: at(8),
				Error: "1 of 3 instances did not succeed: process[1]"},
		}}
	for i, st := range []string{"success", "failed", "success"} {
		n := i
		tv := engine.TaskView{Name: fmt.Sprintf("process[%d]", i), Task: "process", Status: st, Instance: &n, Attempt: 1, StartedAt: at(4), FinishedAt: at(5)}
		if st == "failed" {
			tv.ExitCode = code(2)
			tv.AttemptHistory = []engine.AttemptView{{Attempt: 1, Status: "failed", ExitCode: 2, Error: "exit status 2", StartedAt: *at(4), FinishedAt: *at(5)}}
		}
		run.Tasks = append(run.Tasks, tv)
	}
	var b strings.Builder
	if err := writeRun(&b, run, showOptions{now: *at(10)}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	zone := t0.Local().Format("MST")
	for _, want := range []string{
		"created:  " + t0.Local().Format("2006-01-02 15:04:05") + " " + zone,
		"finished: " + at(9).Local().Format("2006-01-02 15:04:05") + " " + zone + " (took 9s)",
		"extract  success  2/3      2.5s",
		"process  failed   -        4s        extract     -     3 instances: 2 success, 1 failed",
		"extract attempt 1 failed at " + at(0.5).Local().Format("2006-01-02 15:04:05") + " " + zone + " after 500ms (exit 1): " + long,
		"process[1] attempt 1 failed at",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "process[0]") {
		t.Errorf("instances listed without --instances:\n%s", out)
	}
	b.Reset()
	writeRun(&b, run, showOptions{instances: true, now: *at(10)})
	if !strings.Contains(b.String(), "process[2]  success  1/1") {
		t.Errorf("--instances:\n%s", b.String())
	}
}
