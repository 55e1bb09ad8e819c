package engine

import (
	"context"
	"fmt"

	"github.com/orkwal/orkwal/executors/notify"
	"github.com/orkwal/orkwal/replay/workflow"
)

// AlertTestResult is how a sample alert went to one target.
type AlertTestResult struct {
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	Code   int    `json:"code,omitempty"`
	Error  string `json:"error,omitempty"`
}

// TestAlerts sends a sample alert (event "test") to every target of a
// workflow and of the daemon, whatever their `on` lists, and says how each
// went. Nothing is recorded: it checks the configuration (URLs, secrets,
// SMTP credentials) now.
func (e *Engine) TestAlerts(ctx context.Context, name string) ([]AlertTestResult, error) {
	e.mu.RLock()
	w, ok := e.state.Workflows[name]
	e.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: workflow %q", ErrNotFound, name)
	}
	var targets []*workflow.Alert
	seen := map[string]bool{}
	for _, list := range [][]*workflow.Alert{w.Spec.Alerts, e.cfg.Alerts} {
		for _, a := range list {
			if !seen[a.Key()] {
				seen[a.Key()] = true
				targets = append(targets, a)
			}
		}
	}
	now := e.cfg.Clock.Now()
	out := make([]AlertTestResult, len(targets))
	for i, t := range targets {
		msg := &notify.Message{Body: notify.Payload{ID: fmt.Sprintf("test.%s.%d", name, now.UnixNano()), Event: "test",
			Workflow: name, Run: &notify.Run{ID: "test", Status: "test", CreatedAt: now.UTC(), URL: e.runURL("test")}}}
		msg.Describe()
		code, err := e.cfg.AlertSender.Send(ctx, t, msg)
		out[i] = AlertTestResult{Target: t.Describe(), OK: err == nil, Code: code}
		if err != nil {
			out[i].Error = err.Error()
		}
	}
	return out, nil
}
