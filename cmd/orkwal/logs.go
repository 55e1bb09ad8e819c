package main

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/orkwal/orkwal/api"
	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

func logsAction(c *cli.Context) error {
	s, args, err := startRunSession(c, 2, 2)
	if err != nil {
		return err
	}
	attempt := c.Int("attempt")
	if attempt < 0 {
		return usageError(c, fmt.Errorf("--attempt %d: must be 1 or more (0: the latest)", attempt))
	}
	run, task := args[0], args[1]
	if !c.Bool("follow") {
		_, err := s.printLog(run, task, attempt, false)
		return err
	}
	if attempt > 0 { // that attempt alone
		_, err := s.printLog(run, task, attempt, true)
		return err
	}
	return s.followTask(run, task)
}

// printLog prints an attempt's log (0: the latest); with follow, until the
// attempt ends. It returns the attempt printed, when the daemon said.
func (s *session) printLog(run, task string, attempt int, follow bool) (int, error) {
	path := "/runs/" + url.PathEscape(run) + "/tasks/" + url.PathEscape(task) + "/logs"
	q := url.Values{}
	if attempt > 0 {
		q.Set("attempt", strconv.Itoa(attempt))
	}
	if follow {
		q.Set("follow", "1")
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	header, trailer, err := s.cl.copyTo(s.ctx, path, s.out, follow)
	if err != nil {
		return 0, fmt.Errorf("logs of %s: %w", task, err)
	}
	if follow {
		switch end := trailer.Get(api.FollowEndTrailer); end {
		case api.FollowEndAttempt:
		case api.FollowEndStopping:
			return 0, &exitError{code: exitServer, err: fmt.Errorf("logs of %s: the daemon at %s is stopping; the log may go on", task, s.cl.addr)}
		default:
			return 0, &exitError{code: exitServer, err: fmt.Errorf("logs of %s: the stream ended early (%s)", task, orDash(end))}
		}
	}
	n, _ := strconv.Atoi(header.Get("X-Orkwal-Attempt"))
	return n, nil
}

// followTask prints a task's log as it is written, attempt after attempt,
// until the task ends: between two attempts, a line says how the first
// ended and that the next follows.
func (s *session) followTask(run, task string) error {
	attempt := 0 // the latest, or the first once it starts
	for {
		n, err := s.printLog(run, task, attempt, true)
		if err != nil || n == 0 {
			return err
		}
		next, note, err := s.nextAttempt(run, task, n)
		if err != nil || next == 0 {
			return err
		}
		fmt.Fprintf(s.out, "\n--- orkwal: %s; attempt %d follows ---\n", note, next)
		attempt = next
	}
}

// nextAttempt waits, after attempt n of a task ended, for the task's next
// attempt to start (0 when the task or its run ended instead), and says
// how attempt n ended.
func (s *session) nextAttempt(run, task string, n int) (next int, note string, err error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		var view engine.RunView
		if _, err := s.cl.get(s.ctx, "/runs/"+url.PathEscape(run), &view); err != nil {
			return 0, "", fmt.Errorf("logs of %s: %w", task, err)
		}
		t, ok := findTask(view, task)
		switch {
		case ok && t.Attempt > n:
			return n + 1, attemptNote(t, n), nil
		case !ok || finished(view.Status) || terminalTask(t.Status):
			return 0, "", nil
		}
		select {
		case <-s.ctx.Done():
			return 0, "", s.ctx.Err()
		case <-tick.C:
		}
	}
}

// attemptNote says how attempt n of t ended: "attempt 2 failed: exit
// status 1".
func attemptNote(t engine.TaskView, n int) string {
	for _, a := range t.AttemptHistory {
		if a.Attempt != n {
			continue
		}
		switch {
		case a.Status == "interrupted":
			return fmt.Sprintf("attempt %d was interrupted", n)
		case a.Error != "":
			return fmt.Sprintf("attempt %d %s: %s", n, a.Status, oneLine(a.Error))
		}
		return fmt.Sprintf("attempt %d %s", n, a.Status)
	}
	return fmt.Sprintf("attempt %d ended", n)
}

// findTask finds a task of a run by its key ("process[3]" for an instance).
func findTask(r engine.RunView, key string) (engine.TaskView, bool) {
	for _, t := range r.Tasks {
		if t.Name == key {
			return t, true
		}
	}
	return engine.TaskView{}, false
}

// terminalTask reports a task status that no longer changes (until a rerun).
func terminalTask(status string) bool {
	return status == "success" || status == "failed" || status == "skipped" || status == "cancelled"
}
