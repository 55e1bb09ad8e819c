package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/orkwal/orkwal/engine"
)

// maxActionBody bounds the body of retry and mark.
const maxActionBody = 4 << 10

// decodeAction decodes an action's optional JSON body into v (an empty
// body leaves v as it is).
func decodeAction(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, maxActionBody)
	if err != nil || len(body) == 0 {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: body: %v", engine.ErrInvalid, err)
	}
	return nil
}

// retryRun answers POST /runs/{id}/retry: with no body (or {}), the run's
// failed, skipped and cancelled tasks run again; {"from": "TASK"}, that
// task and everything downstream of it; {"latest": true}, a new run of
// the workflow's current version with the same params (the answer is that
// run).
func (s *Server) retryRun(w http.ResponseWriter, r *http.Request) {
	var req struct {
		From   string `json:"from"`
		Latest bool   `json:"latest"`
	}
	if err := decodeAction(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case req.From != "" && req.Latest:
		s.fail(w, r, fmt.Errorf("%w: give from or latest, not both", engine.ErrInvalid))
	case req.Latest:
		s.runAction(w, r, s.eng.RetryLatest)
	case req.From != "":
		s.runAction(w, r, func(id string) (engine.RunView, error) { return s.eng.RetryFrom(id, req.From) })
	default:
		s.runAction(w, r, s.eng.RetryRun)
	}
}

// markTask answers POST /runs/{id}/tasks/{name}/mark {"status": "success"
// or "failed"}: the task's outcome set by hand.
func (s *Server) markTask(w http.ResponseWriter, r *http.Request) {
	task, ok := s.taskKey(w, r)
	if !ok {
		return
	}
	var req struct {
		Status string `json:"status"`
	}
	if err := decodeAction(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Status != "success" && req.Status != "failed" {
		s.fail(w, r, fmt.Errorf("%w: status %q: must be success or failed", engine.ErrInvalid, req.Status))
		return
	}
	s.runAction(w, r, func(id string) (engine.RunView, error) { return s.eng.MarkTask(id, task, req.Status == "success") })
}
