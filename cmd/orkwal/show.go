package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// maxAttemptLines is how many ended attempts `show` lists below its table
// before it says how many more there are (and how to see them all).
const maxAttemptLines = 50

// showOptions are the flags of `orkwal show`.
type showOptions struct {
	instances bool // list a fan-out's instances one by one
	now       time.Time
}

// writeRun prints a run's header, its task table, then its tasks' ended
// attempts that did not succeed, each with its error, whole.
func writeRun(w io.Writer, r engine.RunView, opt showOptions) error {
	finished := stamp(r.FinishedAt)
	if r.FinishedAt != nil {
		finished += " (took " + runDuration(r) + ")"
	}
	fields := [][2]string{
		{"run:", r.ID},
		{"workflow:", fmt.Sprintf("%s@%d", r.Workflow, r.Version)},
		{"status:", r.Status + cancelling(r)},
		{"trigger:", orDash(r.Trigger)},
		{"params:", orDash(formatParams(r.Params))},
		{"created:", stamp(&r.CreatedAt)},
		{"started:", stamp(r.StartedAt)},
		{"finished:", finished},
	}
	for _, f := range fields {
		fmt.Fprintf(w, "%-10s%s\n", f[0], f[1])
	}
	fmt.Fprintln(w)
	if err := writeTasks(w, r, opt); err != nil {
		return err
	}
	writeAttempts(w, r, opt)
	return writeAlerts(w, r.Alerts)
}

// writeTasks prints the task table: a fan-out is one line with its
// instances counted by status, unless opt.instances.
func writeTasks(w io.Writer, r engine.RunView, opt showOptions) error {
	counts := instanceCounts(r.Tasks)
	t := newTable(w, "NAME", "STATUS", "ATTEMPT", "DURATION", "DEPENDS ON", "EXIT", "NOTE")
	for _, task := range r.Tasks {
		if task.Instance != nil && !opt.instances {
			continue
		}
		exit := "-"
		if task.ExitCode != nil && task.Instances == 0 {
			exit = strconv.Itoa(*task.ExitCode)
		}
		status := task.Status
		if task.Paused {
			status += " (paused)"
		}
		t.row(task.Name, status, attemptCell(task), taskDuration(task, opt.now),
			orDash(strings.Join(task.DependsOn, ",")), exit, orDash(taskNote(task, counts[task.Name])))
	}
	return t.flush()
}

// attemptCell is "2/3": the attempt, of the most its retries allow.
func attemptCell(t engine.TaskView) string {
	switch {
	case t.Instances > 0:
		return "-"
	case t.Attempt == 0:
		return "-"
	}
	return fmt.Sprintf("%d/%d", t.Attempt, max(t.Retries+1, t.Attempt))
}

// taskDuration is how long the latest attempt ran, or has been running.
func taskDuration(t engine.TaskView, now time.Time) string {
	switch {
	case t.StartedAt == nil:
		return "-"
	case t.FinishedAt != nil && !t.FinishedAt.Before(*t.StartedAt):
		return humanDuration(t.FinishedAt.Sub(*t.StartedAt))
	case t.Status == "running" || t.Status == "dispatched":
		return humanDuration(now.Sub(*t.StartedAt)) + "…"
	}
	return "-"
}

// taskNote is a task's last column: a fan-out's instances by status, what
// a pending task waits on, or its error, whole, on one line.
func taskNote(t engine.TaskView, inst map[string]int) string {
	if t.Instances > 0 {
		return fmt.Sprintf("%d instances: %s", t.Instances, byStatus(inst))
	}
	if t.Status == "pending" && len(t.WaitingOn) > 0 {
		return "waiting on " + strings.Join(t.WaitingOn, "; ")
	}
	return oneLine(t.Error)
}

// instanceCounts counts each fan-out's instances by status.
func instanceCounts(tasks []engine.TaskView) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, t := range tasks {
		if t.Instance == nil {
			continue
		}
		if out[t.Task] == nil {
			out[t.Task] = map[string]int{}
		}
		out[t.Task][t.Status]++
	}
	return out
}

// taskStatuses orders statuses in counts.
var taskStatuses = []string{"success", "failed", "running", "dispatched", "pending", "skipped", "cancelled"}

// byStatus is "7 success, 2 failed, 1 running".
func byStatus(counts map[string]int) string {
	var parts []string
	for _, st := range taskStatuses {
		if n := counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

// endedAttempt is one attempt that did not succeed, of a task.
type endedAttempt struct {
	task string
	a    engine.AttemptView
}

// writeAttempts lists the attempts that did not succeed, oldest first by
// end, each with its error whole; past maxAttemptLines it says how many
// more there are.
func writeAttempts(w io.Writer, r engine.RunView, opt showOptions) {
	var ended []endedAttempt
	for _, t := range r.Tasks {
		for _, a := range t.AttemptHistory {
			if a.Status != "success" {
				ended = append(ended, endedAttempt{t.Name, a})
			}
		}
	}
	if len(ended) == 0 {
		return
	}
	sort.SliceStable(ended, func(i, j int) bool { return ended[i].a.FinishedAt.Before(ended[j].a.FinishedAt) })
	fmt.Fprintln(w, "\nattempts that did not succeed:")
	for i, e := range ended {
		if i == maxAttemptLines {
			fmt.Fprintf(w, "  … and %d more (all of them: orkwal show -o json %s)\n", len(ended)-i, r.ID)
			break
		}
		fmt.Fprintf(w, "  %s attempt %d %s at %s after %s", e.task, e.a.Attempt, e.a.Status, stamp(&e.a.FinishedAt),
			humanDuration(e.a.FinishedAt.Sub(e.a.StartedAt)))
		if e.a.Status == "failed" {
			fmt.Fprintf(w, " (exit %d)", e.a.ExitCode)
		}
		if e.a.Error != "" {
			fmt.Fprintf(w, ": %s", oneLine(e.a.Error))
		}
		fmt.Fprintln(w)
	}
}
