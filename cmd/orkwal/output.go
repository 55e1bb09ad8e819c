package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// Human output of the client commands: tables, times, run progress.

// table writes aligned columns; cells are cleaned of tabs and newlines.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = oneLine(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// oneLine folds whitespace runs (newlines, tabs) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// maxErrorCell is how much of an error a table cell shows (alerts).
const maxErrorCell = 60

// truncateRunes shortens s to at most n runes, marking the cut with "...".
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// stampLayout is how the client shows times: in its local zone, which it
// names (UTC, CET, or an offset where the zone has no abbreviation).
const stampLayout = "2006-01-02 15:04:05 MST"

// stamp formats a time in the local zone, with the zone, "-" when absent.
func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format(stampLayout)
}

// humanDuration rounds d to what a person reads: 350ms, 4.2s, 3m12s.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// runDuration is how long a run took, or has been running; "-" before it
// started.
func runDuration(r engine.RunView) string {
	if r.StartedAt == nil {
		return "-"
	}
	end := time.Now()
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	return humanDuration(end.Sub(*r.StartedAt))
}

func writeRuns(w io.Writer, runs []engine.RunView) error {
	t := newTable(w, "ID", "WORKFLOW", "STATUS", "CREATED", "DURATION")
	for _, r := range runs {
		t.row(r.ID, r.Workflow, r.Status, stamp(&r.CreatedAt), runDuration(r))
	}
	return t.flush()
}

func writeWorkflows(w io.Writer, wfs []engine.WorkflowView) error {
	t := newTable(w, "NAME", "VERSION", "TASKS", "UPDATED", "SCHEDULE", "NEXT FIRE", "LAST FIRE")
	for _, wf := range wfs {
		sched, next, last := "-", "-", "-"
		if sc := wf.Schedule; sc != nil {
			sched, next, last = sc.Cron, stamp(sc.NextFire), stamp(sc.LastFire)
			if sc.Paused {
				next = "paused"
			}
		}
		t.row(wf.Name, strconv.Itoa(wf.Version), strconv.Itoa(len(wf.Tasks)), stamp(&wf.UpdatedAt), sched, next, last)
	}
	return t.flush()
}

func cancelling(r engine.RunView) string {
	switch {
	case r.CancelRequested:
		return " (cancelling)"
	case r.Paused:
		return " (paused)"
	}
	return ""
}

// formatParams is "k1=v1 k2=v2", sorted by key.
func formatParams(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(params[k])
	}
	return strings.Join(parts, " ")
}

// progress prints one line per task status change of a followed run, in
// the order the changes happened.
type progress struct {
	w    io.Writer
	seen map[string]taskState
}

// taskState is what a change of makes a line: a new status or attempt, a
// failed attempt (back to pending for a retry), an interrupted one.
type taskState struct {
	status                  string
	attempt                 int
	failures, interruptions int
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, seen: map[string]taskState{}}
}

func (p *progress) update(r engine.RunView) {
	type change struct {
		at     time.Time
		fanOut bool // ends with its last instance, in the same commit
		line   string
	}
	var changes []change
	for _, t := range r.Tasks {
		st := taskState{status: t.Status, attempt: t.Attempt, failures: t.Failures, interruptions: t.Interruptions}
		prev, seen := p.seen[t.Name]
		if seen && prev == st {
			continue
		}
		p.seen[t.Name] = st
		if line := progressLine(t, prev, seen); line != "" {
			changes = append(changes, change{changedAt(t), t.Instances > 0, line})
		}
	}
	// One state holds the changes since the last: a fan-out's end comes
	// after its instances', whatever their order in the run.
	sort.SliceStable(changes, func(i, j int) bool {
		a, b := changes[i], changes[j]
		return a.at.Before(b.at) || (a.at.Equal(b.at) && !a.fanOut && b.fanOut)
	})
	for _, c := range changes {
		fmt.Fprintf(p.w, "%s %s\n", c.at.Local().Format("15:04:05"), c.line)
	}
}

// progressLine describes a task's new state, prev being its state when last
// seen; "" for states not worth a line (a task not started yet, an attempt
// handed to its executor).
func progressLine(t engine.TaskView, prev taskState, seenBefore bool) string {
	switch t.Status {
	case "pending":
		switch {
		case t.Failures > prev.failures: // a failed attempt, retried after its backoff
			return fmt.Sprintf("%s attempt %d failed: %s; will retry", t.Name, t.Attempt, orDash(oneLine(t.Error)))
		case !seenBefore:
			return ""
		case t.Interruptions > prev.interruptions:
			return t.Name + " pending (interrupted, will run again)"
		}
		return t.Name + " pending"
	case "dispatched":
		return ""
	case "running":
		if t.Instances > 0 {
			return fmt.Sprintf("%s running (%d instances)", t.Name, t.Instances)
		}
		return fmt.Sprintf("%s running (attempt %d)", t.Name, t.Attempt)
	case "failed":
		return fmt.Sprintf("%s failed: %s", t.Name, orDash(oneLine(t.Error)))
	}
	return t.Name + " " + t.Status
}

// changedAt is the time of a task's latest change: its end, its start, or,
// for a change the run does not date (back to pending), now.
func changedAt(t engine.TaskView) time.Time {
	switch {
	case t.FinishedAt != nil:
		return *t.FinishedAt
	case t.StartedAt != nil && t.Status == "running":
		return *t.StartedAt
	}
	return time.Now()
}

// writeOutcome prints the end of a followed run: its status and, when it
// failed, each failed task with its error.
func writeOutcome(w io.Writer, r engine.RunView) {
	fmt.Fprintf(w, "run %s %s\n", r.ID, r.Status)
	var failed []string
	for _, t := range r.Tasks {
		if t.Status == "failed" && t.Instances == 0 {
			failed = append(failed, t.Name)
			fmt.Fprintf(w, "  %s (attempt %d): %s\n", t.Name, t.Attempt, orDash(oneLine(t.Error)))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "see its output with: orkwal logs %s %s\n", r.ID, failed[0])
	}
}

// liveView redraws a compact view of a followed run in place, for a
// terminal: a header line, then a line per task (a fan-out's instances are
// summed up on its line), moving the cursor back up over the last drawing
// with ANSI sequences.
type liveView struct {
	w     io.Writer
	size  termSize
	drawn int // lines of the last drawing
	now   func() time.Time
}

func newLiveView(w io.Writer, size termSize) *liveView {
	return &liveView{w: w, size: size, now: time.Now}
}

// ANSI sequences of the live view.
const (
	ansiUp        = "\x1b[%dA" // cursor up n lines
	ansiClearLine = "\r\x1b[2K"
	ansiClearDown = "\x1b[J" // clear from the cursor to the end of the screen
)

func (v *liveView) update(r engine.RunView) {
	lines := liveLines(r, v.now(), v.size)
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, ansiUp, v.drawn)
	}
	for _, l := range lines {
		b.WriteString(ansiClearLine)
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(ansiClearDown)
	v.drawn = len(lines)
	io.WriteString(v.w, b.String())
}

var statusSymbols = map[string]string{"pending": "·", "dispatched": "»", "running": "»",
	"success": "✓", "failed": "✗", "skipped": "-", "cancelled": "⊘"}

func statusSymbol(status string) string {
	if s, ok := statusSymbols[status]; ok {
		return s
	}
	return "?"
}

// liveLines are the lines of a live view of r, each cut to the terminal's
// width, at most its height less one.
func liveLines(r engine.RunView, now time.Time, size termSize) []string {
	header := fmt.Sprintf("%s %s@%d %s%s", statusSymbol(r.Status), r.Workflow, r.Version, r.Status, cancelling(r))
	if r.StartedAt != nil {
		end := now
		if r.FinishedAt != nil {
			end = *r.FinishedAt
		}
		header += "  " + humanDuration(end.Sub(*r.StartedAt))
	}
	instances := map[string]map[string]int{} // fan-out task → status → count
	nameWidth := 4
	var top []engine.TaskView
	for _, t := range r.Tasks {
		if t.Instance != nil {
			if instances[t.Task] == nil {
				instances[t.Task] = map[string]int{}
			}
			instances[t.Task][t.Status]++
			continue
		}
		top = append(top, t)
		nameWidth = max(nameWidth, min(len([]rune(t.Name)), 24))
	}
	lines := []string{header}
	for _, t := range top {
		lines = append(lines, fmt.Sprintf("  %s %-*s  %-10s %s", statusSymbol(t.Status), nameWidth, t.Name, t.Status,
			taskDetail(t, instances[t.Name], now)))
	}
	if maxLines := size.rows - 1; maxLines >= 2 && len(lines) > maxLines {
		more := len(lines) - (maxLines - 1)
		lines = append(lines[:maxLines-1], fmt.Sprintf("  … and %d more tasks", more))
	}
	for i, l := range lines {
		lines[i] = truncateRunes(strings.TrimRight(l, " "), max(size.cols-1, 10))
	}
	return lines
}

// taskDetail is the end of a task's live line: what it waits on, how long
// it has run or took, its error, or its instances' progress.
func taskDetail(t engine.TaskView, inst map[string]int, now time.Time) string {
	if t.Instances > 0 {
		done := inst["success"] + inst["failed"] + inst["skipped"] + inst["cancelled"]
		parts := []string{fmt.Sprintf("%d/%d done", done, t.Instances)}
		for _, st := range []string{"running", "failed"} {
			if n := inst[st]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		return strings.Join(parts, ", ")
	}
	switch t.Status {
	case "pending":
		if t.NotBefore != nil && t.NotBefore.After(now) {
			return "retry in " + humanDuration(t.NotBefore.Sub(now))
		}
		if len(t.WaitingOn) > 0 {
			return "waiting on " + oneLine(strings.Join(t.WaitingOn, "; "))
		}
	case "dispatched":
		return fmt.Sprintf("attempt %d, starting", t.Attempt)
	case "running":
		if t.StartedAt != nil {
			return fmt.Sprintf("attempt %d, %s", t.Attempt, humanDuration(now.Sub(*t.StartedAt)))
		}
		return fmt.Sprintf("attempt %d", t.Attempt)
	case "success":
		if t.StartedAt != nil && t.FinishedAt != nil {
			return humanDuration(t.FinishedAt.Sub(*t.StartedAt))
		}
	case "failed":
		return fmt.Sprintf("attempt %d: %s", t.Attempt, orDash(oneLine(t.Error)))
	}
	return oneLine(t.Error)
}
