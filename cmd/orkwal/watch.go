package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

// exitInterrupted is the exit code of a watch stopped by Ctrl-C (the
// shell's 128 + SIGINT): the run goes on.
const exitInterrupted = 130

// redrawInterval is how often a live view is redrawn with no change, so
// that the elapsed times move.
const redrawInterval = time.Second

func watchCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:         "watch",
		Usage:        "follow a run until it ends: a live view of its tasks on a terminal, a line per change when piped; Ctrl-C stops watching, not the run",
		ArgsUsage:    "RUN",
		Flags:        []cli.Flag{outputFlag()},
		Action:       watchAction,
		BashComplete: completeRuns,
	}, true)
}

func watchAction(c *cli.Context) error {
	s, args, err := startRunSession(c, 1, 1)
	if err != nil {
		return err
	}
	return s.wait(args[0])
}

// watcher is told every state of a followed run: progress lines, or a live
// view on a terminal.
type watcher interface{ update(engine.RunView) }

// wait follows a run to its end: a live view on a terminal, progress
// lines when piped, and the outcome; or the final run JSON with -o json.
// Ctrl-C stops the watching, says the run goes on and how to see it again.
func (s *session) wait(id string) error {
	ctx, stop := signal.NotifyContext(s.ctx, os.Interrupt)
	defer stop()
	var prog watcher
	if !s.json {
		fmt.Fprintln(s.out, id)
		if s.tty {
			prog = newLiveView(s.out, terminalSize(s.out))
		} else {
			prog = newProgress(s.out)
		}
	}
	run, raw, err := s.follow(ctx, id, prog)
	if err != nil && ctx.Err() != nil && s.ctx.Err() == nil { // Ctrl-C
		fmt.Fprintf(s.out, "\nstopped watching; run %s goes on. See it again with: orkwal watch %s\n", id, id)
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: run %s was not stopped (orkwal cancel %s stops it)", id, id)}
	}
	if err != nil {
		return fmt.Errorf("follow run %s: %w", id, err)
	}
	if s.json {
		if err := s.writeRaw(raw); err != nil {
			return err
		}
	} else {
		writeOutcome(s.out, run)
	}
	if run.Status != "success" {
		return exitf(exitFailure, "run %s %s", id, run.Status)
	}
	return nil
}

// finished reports a run status that no longer changes.
func finished(status string) bool {
	return status == "success" || status == "failed" || status == "cancelled"
}

// follow waits until the run has ended and returns its last state,
// decoded and raw. prog, when not nil, is told every state seen: the run
// is read again at each of its events (see changes) and at least every
// redrawInterval. Without one, the daemon answers when the run has ended
// (GET /runs/{id}?wait, a request per followWait).
func (s *session) follow(ctx context.Context, id string, prog watcher) (engine.RunView, []byte, error) {
	path := "/runs/" + url.PathEscape(id)
	var ch changes
	if prog == nil {
		path += "?wait=" + followWait.String()
		ch = pollChanges{}
	} else {
		ch = s.runEvents(ctx, id)
	}
	defer ch.close()
	for {
		var run engine.RunView
		raw, err := s.cl.get(ctx, path, &run)
		if err != nil {
			return run, nil, err
		}
		if prog != nil {
			prog.update(run)
		}
		if finished(run.Status) {
			return run, raw, nil
		}
		if err := ch.wait(ctx); err != nil {
			return run, nil, err
		}
	}
}

// changes tells a follower when to read the run again.
type changes interface {
	// wait returns when the run may have changed, or ctx is done.
	wait(ctx context.Context) error
	close()
}

// pollChanges reads the run again every interval (0: at once, for a
// request that waits itself).
type pollChanges struct{ interval time.Duration }

func (p pollChanges) wait(ctx context.Context) error {
	if p.interval == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(p.interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (pollChanges) close() {}

// eventChanges reads the run again at each of its events (GET
// /events?run=ID), and every redrawInterval; if the stream cannot be had
// or breaks (an older daemon, its limit of streams), every pollInterval.
type eventChanges struct {
	events <-chan struct{} // a token per burst of events; closed when the stream ended
	cancel context.CancelFunc
}

// runEvents opens the run's event stream.
func (s *session) runEvents(ctx context.Context, id string) changes {
	ctx, cancel := context.WithCancel(ctx)
	resp, err := s.cl.send(ctx, request{method: http.MethodGet, path: "/events?run=" + url.QueryEscape(id), stream: true,
		header: http.Header{"Accept": {"text/event-stream"}}})
	if err != nil {
		cancel()
		return pollChanges{interval: pollInterval}
	}
	events := make(chan struct{}, 1)
	go func() {
		defer resp.Body.Close()
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") || strings.HasPrefix(sc.Text(), "event:") {
				select {
				case events <- struct{}{}:
				default: // one read covers every event before it
				}
			}
		}
	}()
	return &eventChanges{events: events, cancel: cancel}
}

func (e *eventChanges) wait(ctx context.Context) error {
	if e.events == nil {
		return pollChanges{interval: pollInterval}.wait(ctx)
	}
	t := time.NewTimer(redrawInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case _, ok := <-e.events:
		if !ok { // the stream ended: poll from now on
			e.events = nil
			return pollChanges{interval: pollInterval}.wait(ctx)
		}
	case <-t.C:
	}
	return nil
}

func (e *eventChanges) close() { e.cancel() }
