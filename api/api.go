package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Body size caps.
const (
	MaxWorkflowBytes = 1 << 20
	MaxTriggerBytes  = 64 << 10
)

// Server serves the API of one engine.
type Server struct {
	eng *engine.Engine
	log *slog.Logger
	mux *http.ServeMux
}

// New returns the API handler for eng.
func New(eng *engine.Engine, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{eng: eng, log: logger, mux: http.NewServeMux()}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /workflows", s.listWorkflows)
	s.mux.HandleFunc("POST /workflows", s.putWorkflow)
	s.mux.HandleFunc("GET /workflows/{name}", s.getWorkflow)
	s.mux.HandleFunc("DELETE /workflows/{name}", s.deleteWorkflow)
	s.mux.HandleFunc("POST /workflows/{name}/runs", s.trigger)
	s.mux.HandleFunc("GET /runs", s.listRuns)
	s.mux.HandleFunc("GET /runs/{id}", s.getRun)
	s.mux.HandleFunc("POST /runs/{id}/cancel", s.cancelRun)
	s.mux.HandleFunc("POST /runs/{id}/retry", s.retryRun)
	s.mux.HandleFunc("GET /runs/{id}/tasks", s.listTasks)
	s.mux.HandleFunc("GET /runs/{id}/tasks/{name}/logs", s.taskLogs)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.Err(); err != nil {
		writeError(w, http.StatusServiceUnavailable, "write-ahead log failed: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.eng.Workflows())
}

func (s *Server) putWorkflow(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, MaxWorkflowBytes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	spec, err := workflow.Parse("", body)
	if err != nil {
		s.fail(w, r, fmt.Errorf("%w: %v", engine.ErrInvalid, err))
		return
	}
	view, changed, err := s.eng.PutWorkflow(spec, string(body))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if changed {
		status = http.StatusCreated
	}
	writeJSON(w, status, view)
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	view, err := s.eng.Workflow(name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

func (s *Server) deleteWorkflow(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	if err := s.eng.DeleteWorkflow(name); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// triggerRequest is the optional body of POST /workflows/{name}/runs.
type triggerRequest struct {
	Params map[string]any `json:"params"`
}

func (s *Server) trigger(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	params, err := decodeTrigger(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	trigger := r.Header.Get("X-Orkwal-Trigger")
	if trigger != "cli" {
		trigger = "api"
	}
	id, err := s.eng.Trigger(name, params, trigger)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/runs/"+id)
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

func decodeTrigger(w http.ResponseWriter, r *http.Request) (map[string]string, error) {
	body, err := readBody(w, r, MaxTriggerBytes)
	if err != nil || len(body) == 0 {
		return nil, err
	}
	var req triggerRequest
	dec := json.NewDecoder(bytesReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("%w: request body: %v", engine.ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: request body: more than one JSON value", engine.ErrInvalid)
	}
	return paramStrings(req.Params)
}

// paramStrings accepts strings, numbers and booleans as parameter values.
func paramStrings(in map[string]any) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64, bool:
			out[k] = fmt.Sprint(v)
		default:
			return nil, fmt.Errorf("%w: params.%s: must be a string, number or boolean", engine.ErrInvalid, k)
		}
	}
	return out, nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := engine.RunFilter{Workflow: q.Get("workflow")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, fmt.Errorf("%w: limit: must be a positive integer, got %q", engine.ErrInvalid, v))
			return
		}
		f.Limit = n
	}
	runs := s.eng.Runs(f)
	if runs == nil {
		runs = []engine.RunView{}
	}
	writeJSON(w, http.StatusOK, runs)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, ok := s.run(w, r)
	if ok {
		writeJSON(w, http.StatusOK, run)
	}
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	s.runAction(w, r, s.eng.CancelRun)
}

func (s *Server) retryRun(w http.ResponseWriter, r *http.Request) {
	s.runAction(w, r, s.eng.RetryRun)
}

// runAction answers with the run once the action is durable.
func (s *Server) runAction(w http.ResponseWriter, r *http.Request, act func(string) (engine.RunView, error)) {
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	run, err := act(id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	run, ok := s.run(w, r)
	if ok {
		writeJSON(w, http.StatusOK, run.Tasks)
	}
}

func (s *Server) taskLogs(w http.ResponseWriter, r *http.Request) {
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	task, ok := s.taskKey(w, r)
	if !ok {
		return
	}
	attempt := 0
	if v := r.URL.Query().Get("attempt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, fmt.Errorf("%w: attempt: must be a positive integer, got %q", engine.ErrInvalid, v))
			return
		}
		attempt = n
	}
	path, err := s.eng.TaskLog(id, task, attempt)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	serveLog(w, path)
}

// serveLog streams a log file; an attempt that has not written yet is empty.
func serveLog(w http.ResponseWriter, path string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "read log: "+err.Error())
		return
	}
	defer f.Close()
	w.WriteHeader(http.StatusOK)
	io.Copy(w, f)
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) (engine.RunView, bool) {
	id, ok := s.runID(w, r)
	if !ok {
		return engine.RunView{}, false
	}
	run, err := s.eng.Run(id)
	if err != nil {
		s.fail(w, r, err)
		return engine.RunView{}, false
	}
	return run, true
}

func (s *Server) runID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("run id %q: not a run id (a UUID such as 0190b2a4-7c1e-7d3a-9f00-1234567890ab)", id))
		return "", false
	}
	return id, true
}

// taskKey checks a task's key in a run: a name, or name[N] for an instance.
func (s *Server) taskKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	v := r.PathValue("name")
	name, index, hasIndex := strings.Cut(v, "[")
	if hasIndex {
		n, err := strconv.Atoi(strings.TrimSuffix(index, "]"))
		if err != nil || n < 0 || !strings.HasSuffix(index, "]") || strconv.Itoa(n)+"]" != index {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("task %q: an instance is written name[N]", v))
			return "", false
		}
	}
	if !workflow.ValidName(name) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("task name %q: %s", v, workflow.NameRule))
		return "", false
	}
	return v, true
}

func (s *Server) name(w http.ResponseWriter, r *http.Request, param, what string) (string, bool) {
	v := r.PathValue(param)
	if !workflow.ValidName(v) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s name %q: %s", what, v, workflow.NameRule))
		return "", false
	}
	return v, true
}
