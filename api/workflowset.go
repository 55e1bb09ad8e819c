package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/orkwal/orkwal/engine"
)

// Limits of POST /workflows/batch.
const (
	MaxBatchWorkflows = 200
	MaxBatchBytes     = 16 << 20
)

// batchRequest is the body of POST /workflows/batch.
type batchRequest struct {
	Workflows []struct {
		File   string `json:"file"`   // optional: the file it came from (see WorkflowFileHeader)
		Source string `json:"source"` // the workflow's YAML
	} `json:"workflows"`
}

// putWorkflows answers POST /workflows/batch: a set of workflows recorded
// all or none (orkwal apply with several files or folders). Every bad
// workflow of the set is named in one 400; nothing is recorded then.
func (s *Server) putWorkflows(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, MaxBatchBytes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	set, err := parseBatch(body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	results, err := s.eng.PutWorkflows(set)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workflows": results})
}

// parseBatch decodes and checks every workflow of a batch, all of them:
// the error lists each bad one.
func parseBatch(body []byte) ([]engine.WorkflowSource, error) {
	var req batchRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("%w: body: %v (want {\"workflows\": [{\"file\", \"source\"}]})", engine.ErrInvalid, err)
	}
	switch n := len(req.Workflows); {
	case n == 0:
		return nil, fmt.Errorf("%w: workflows: give at least one", engine.ErrInvalid)
	case n > MaxBatchWorkflows:
		return nil, fmt.Errorf("%w: workflows: %d, at most %d at once", engine.ErrInvalid, n, MaxBatchWorkflows)
	}
	set := make([]engine.WorkflowSource, 0, len(req.Workflows))
	var problems []string
	for i, wf := range req.Workflows {
		switch {
		case wf.File != "" && !cleanAbs(wf.File):
			problems = append(problems, fmt.Sprintf("workflows[%d].file: %q is not a clean absolute path", i, wf.File))
			continue
		case len(wf.Source) > MaxWorkflowBytes:
			problems = append(problems, fmt.Sprintf("workflows[%d] (%s): larger than %d bytes", i, wf.File, MaxWorkflowBytes))
			continue
		}
		spec, err := engine.CheckWorkflow(wf.File, []byte(wf.Source))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		set = append(set, engine.WorkflowSource{Spec: spec, Source: wf.Source})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %d of %d workflows are invalid, none was recorded:\n%s", engine.ErrInvalid,
			len(problems), len(req.Workflows), strings.Join(problems, "\n"))
	}
	return set, nil
}
