package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/urfave/cli/v2"
)

// alertFlags configure the daemon's alerts (README, "Alerts").
func alertFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "alerts", EnvVars: []string{"ORKWAL_ALERTS"},
			Usage: "a YAML file whose `alerts:` list is told about every workflow's runs, besides the workflow's own"},
		&cli.StringFlag{Name: "public-url", EnvVars: []string{"ORKWAL_PUBLIC_URL"},
			Usage: "the daemon's address as alert receivers reach it, for the link to a run's page (default http://<addr>)"},
		&cli.DurationFlag{Name: "alert-give-up", Value: engine.DefaultAlertGiveUp,
			Usage: "an alert delivery failing this long after its alert is given up"},
		&cli.DurationFlag{Name: "alert-max-backoff", Value: engine.DefaultAlertMaxBackoff,
			Usage: "the longest wait between two attempts of an alert delivery"},
	}
}

// loadAlerts reads the daemon's alerts file, if any.
func loadAlerts(path string) ([]*workflow.Alert, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exitf(exitUsage, "--alerts: %v", err)
	}
	alerts, err := workflow.ParseAlerts(path, data)
	if err != nil {
		return nil, exitf(exitUsage, "--alerts: %v", err)
	}
	return alerts, nil
}

// publicURL is the base of the links alerts carry.
func publicURL(c *cli.Context, ln net.Listener) string {
	if u := c.String("public-url"); u != "" {
		return strings.TrimRight(u, "/")
	}
	return "http://" + ln.Addr().String()
}

func checkAlertFlags(c *cli.Context) error {
	for _, name := range []string{"alert-give-up", "alert-max-backoff"} {
		if c.Duration(name) < time.Second {
			return exitf(exitUsage, "--%s must be at least 1s, got %s", name, c.Duration(name))
		}
	}
	if u := c.String("public-url"); u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return exitf(exitUsage, "--public-url: %q is not an http:// or https:// URL", u)
	}
	return nil
}

func alertsCommand() *cli.Command {
	return &cli.Command{
		Name:  "alerts",
		Usage: "check alert targets",
		Subcommands: []*cli.Command{clientCommand(&cli.Command{
			Name:      "test",
			Usage:     "send a sample alert to every target of a workflow and of the daemon, and say how each went",
			ArgsUsage: "WORKFLOW",
			Flags:     []cli.Flag{outputFlag()},
			Action:    alertsTestAction,
		}, true)},
	}
}

type alertTestAnswer struct {
	Workflow string                   `json:"workflow"`
	Results  []engine.AlertTestResult `json:"results"`
}

func alertsTestAction(c *cli.Context) error {
	s, args, err := startSession(c, 1, 1)
	if err != nil {
		return err
	}
	var ans alertTestAnswer
	_, raw, err := s.cl.postJSON(s.ctx, "/workflows/"+url.PathEscape(args[0])+"/alerts/test", nil, struct{}{}, &ans)
	if err != nil {
		return fmt.Errorf("test alerts of %s: %w", args[0], err)
	}
	failed := 0
	for _, r := range ans.Results {
		if !r.OK {
			failed++
		}
	}
	if s.json {
		err = s.writeRaw(raw)
	} else {
		err = writeAlertTest(s.out, ans)
	}
	if err == nil && failed > 0 {
		return exitf(exitFailure, "%d of %d alert targets of %s failed", failed, len(ans.Results), args[0])
	}
	return err
}

func writeAlertTest(w io.Writer, ans alertTestAnswer) error {
	if len(ans.Results) == 0 {
		fmt.Fprintf(w, "workflow %s has no alert target (and the daemon none by default)\n", ans.Workflow)
		return nil
	}
	t := newTable(w, "TARGET", "RESULT", "CODE", "ERROR")
	for _, r := range ans.Results {
		result := "ok"
		if !r.OK {
			result = "FAILED"
		}
		t.row(r.Target, result, codeCell(r.Code), orDash(truncateRunes(oneLine(r.Error), maxErrorCell)))
	}
	return t.flush()
}

// writeAlerts lists a run's alerts and their deliveries under its tasks.
func writeAlerts(w io.Writer, alerts []engine.AlertView) error {
	if len(alerts) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := newTable(w, "ALERT", "EVENT", "TARGET", "STATUS", "ATTEMPTS", "CODE", "NEXT TRY", "ERROR")
	for _, a := range alerts {
		for _, d := range a.Deliveries {
			next := "-"
			if d.NextTry != nil {
				next = stamp(d.NextTry)
			}
			t.row(a.ID, a.Event, d.Target, d.Status, strconv.Itoa(d.Attempts), codeCell(d.Code), next,
				orDash(truncateRunes(oneLine(d.Error), maxErrorCell)))
		}
	}
	return t.flush()
}

func codeCell(code int) string {
	if code == 0 {
		return "-"
	}
	return strconv.Itoa(code)
}
