package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Body size caps.
const (
	MaxWorkflowBytes = workflow.MaxBytes // the one limit of every way a workflow arrives
	MaxTriggerBytes  = 64 << 10
)

// DefaultMaxFollowers is how many `logs?follow=1` streams are served at once
// unless WithMaxFollowers says otherwise; more answer 429.
const DefaultMaxFollowers = 64

// Server serves the API of one engine.
type Server struct {
	eng      *engine.Engine
	log      *slog.Logger
	mux      *http.ServeMux
	routes   map[string]bool // the registered patterns, for metric labels
	token    tokenHash       // zero: no authentication
	hasToken bool
	browser  browserGuard
	trigger  TriggerFunc
	metrics  *metrics
	counters []counter // the process's own counters in /metrics (WithCounter)

	followers      chan struct{} // a slot per log follower in flight
	maxFollowers   int
	subscribers    chan struct{} // a slot per /events stream
	maxSubscribers int
	heartbeat      time.Duration // of /events streams
	feeds          feedSet       // the /events streams' feeds, one per filter

	quit     chan struct{} // closed by StopStreams
	quitOnce sync.Once
}

// Option configures a Server.
type Option func(*Server)

// WithToken makes every endpoint but GET /healthz require
// "Authorization: Bearer <token>". An empty token means no authentication.
func WithToken(token string) Option {
	return func(s *Server) {
		if token != "" {
			s.token, s.hasToken = hashToken(token), true
		}
	}
}

// WithTrigger replaces how POST /workflows/{name}/runs starts a run (the
// default is engine.Trigger, which ignores the idempotency key).
func WithTrigger(fn TriggerFunc) Option {
	return func(s *Server) {
		if fn != nil {
			s.trigger = fn
		}
	}
}

// WithMaxFollowers bounds the log streams served at once (n >= 1).
func WithMaxFollowers(n int) Option {
	return func(s *Server) {
		if n >= 1 {
			s.maxFollowers = n
		}
	}
}

// New returns the API handler for eng.
func New(eng *engine.Engine, logger *slog.Logger, opts ...Option) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{eng: eng, log: logger, mux: http.NewServeMux(), routes: map[string]bool{},
		maxFollowers: DefaultMaxFollowers, maxSubscribers: DefaultMaxSubscribers, heartbeat: defaultHeartbeat, quit: make(chan struct{}), browser: newBrowserGuard()}
	s.trigger = engineTrigger(eng)
	for _, o := range opts {
		o(s)
	}
	s.followers = make(chan struct{}, s.maxFollowers)
	s.subscribers = make(chan struct{}, s.maxSubscribers)
	s.metrics = newMetrics()
	s.register()
	return s
}

// StopStreams ends every log stream in flight (and refuses new ones): call it
// when the HTTP server shuts down (http.Server.RegisterOnShutdown), since a
// stream would otherwise hold its connection until the attempt ends.
func (s *Server) StopStreams() { s.quitOnce.Do(func() { close(s.quit) }) }

// handle registers h for pattern, taking the query parameters params, each
// at most once: any other, or one given twice, is answered 400 before h
// runs (a typo such as ?stauts= must not silently list everything).
func (s *Server) handle(pattern string, h http.HandlerFunc, params ...string) {
	s.routes[pattern] = true
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r.URL.RawQuery, params); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		h(w, r)
	})
}

func (s *Server) register() {
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /metrics", s.serveMetrics)
	s.handle("GET /openapi.json", serveOpenAPI)
	s.handle("GET /schema/workflow.json", serveWorkflowSchema)
	s.handle("GET /workflows", s.listWorkflows)
	s.handle("POST /workflows", s.putWorkflow)
	s.handle("POST /workflows/batch", s.putWorkflows)
	s.handle("GET /workflows/{name}", s.getWorkflow)
	s.handle("DELETE /workflows/{name}", s.deleteWorkflow)
	s.handle("GET /workflows/{name}/versions", s.listVersions)
	s.handle("GET /workflows/{name}/versions/{version}", s.getVersion)
	s.handle("POST /workflows/{name}/runs", s.triggerRun)
	s.handle("POST /workflows/{name}/schedule/pause", s.pauseSchedule)
	s.handle("POST /workflows/{name}/schedule/resume", s.resumeSchedule)
	s.handle("GET /runs", s.listRuns, "workflow", "status", "since", "limit", "cursor", "id_prefix")
	s.handle("GET /runs/{id}", s.getRun, "wait", "instances")
	s.handle("POST /runs/{id}/cancel", s.cancelRun)
	s.handle("POST /runs/{id}/retry", s.retryRun)
	s.handle("GET /runs/{id}/tasks", s.listTasks, "fanout", "after", "limit")
	s.handle("POST /runs/{id}/tasks/{name}/mark", s.markTask)
	s.handle("GET /runs/{id}/tasks/{name}/logs", s.taskLogs, "attempt", "follow")
	s.handle("GET /events", s.streamEvents, "run", "workflow", "tasks", "latest", "instances")
	s.handle("POST /workflows/{name}/alerts/test", s.testAlerts)
	s.handle("GET /alerts", s.listAlerts, "limit")
	s.handle("GET /summary", s.summary)
	s.registerUI()
	s.registerOrk()
	s.registerPause()
}

// Routes lists the registered method and path patterns ("GET /runs/{id}").
func (s *Server) Routes() []string {
	out := make([]string, 0, len(s.routes))
	for p := range s.routes {
		out = append(out, p)
	}
	return out
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.Err(); err != nil {
		msg := "write-ahead log failed"
		if !s.hasToken || s.authorized(r) {
			msg += ": " + err.Error() // the reason may name paths: only for the authorized
		}
		writeError(w, http.StatusServiceUnavailable, msg)
		return
	}
	folder, ok := s.eng.FolderStatus()
	if !ok {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	// A folder that did not load leaves the daemon serving (200) with the
	// versions it had: "degraded" says so, and why, to the authorized.
	health := healthView{Status: "ok", Workflows: &folder}
	if !folder.OK {
		health.Status = "degraded"
	}
	if s.hasToken && !s.authorized(r) {
		folder.Problems, folder.Dir = nil, "" // they name paths
	}
	writeJSON(w, http.StatusOK, health)
}

// healthView is /healthz's answer with a workflows folder.
type healthView struct {
	Status    string               `json:"status"`
	Workflows *engine.FolderStatus `json:"workflows_folder"`
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"workflows": s.eng.RunSummary()})
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
	file, err := workflowFile(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	spec, err := engine.CheckWorkflow(file, body)
	if err != nil {
		s.fail(w, r, err)
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

// WorkflowFileHeader names, on POST /workflows, the absolute path of the
// file the YAML came from (orkwal apply sends it). The daemon does not read
// that file: it names it in errors and resolves the workflow's relative
// paths (a python task's file, workdirs) against its folder, as it does for
// files loaded with --workflows.
const WorkflowFileHeader = "X-Orkwal-Workflow-File"

// workflowFile returns the request's WorkflowFileHeader ("" when absent).
func workflowFile(r *http.Request) (string, error) {
	vs := r.Header.Values(WorkflowFileHeader)
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", fmt.Errorf("%w: %s: given %d times, give it once", engine.ErrInvalid, WorkflowFileHeader, len(vs))
	case !cleanAbs(vs[0]):
		return "", fmt.Errorf("%w: %s: %q is not a clean absolute path", engine.ErrInvalid, WorkflowFileHeader, vs[0])
	}
	return vs[0], nil
}

// cleanAbs says whether p is an absolute path in its clean form, as a
// workflow's file must be.
func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

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

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request)  { s.setPaused(w, r, true) }
func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) { s.setPaused(w, r, false) }

// setPaused pauses or resumes a workflow's schedule and answers with the
// workflow once that is durable.
func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	view, err := s.eng.PauseSchedule(name, paused)
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

// maxRunWait bounds GET /runs/{id}?wait=D.
const maxRunWait = time.Minute

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	wait, instances := r.URL.Query().Get("wait"), r.URL.Query().Get("instances")
	if err := instancesParam(instances); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	write := s.eng.AppendRun
	if instances != "" {
		write = s.eng.AppendRunSummary
	}
	if wait == "" {
		s.writeAppended(w, r, write)
		return
	}
	d, err := time.ParseDuration(wait)
	if err != nil || d <= 0 || d > maxRunWait {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("wait %q: want a duration above 0 and at most %s (e.g. 30s)", wait, maxRunWait))
		return
	}
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	// The answer may come after the server's write timeout would: move
	// the deadline past the wait.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + streamWriteStall))
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	go func() { // the daemon stopping ends a wait as it ends log streams
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.eng.WaitRunEnd(ctx, id); err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeAppended(w, r, write) // as without wait: no RunView built
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	s.runAction(w, r, s.eng.CancelRun)
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
	if err := checkRunID(id); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return id, true
}

func checkRunID(id string) error {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return fmt.Errorf("run id %q: not a run id (a UUID such as 0190b2a4-7c1e-7d3a-9f00-1234567890ab)", id)
	}
	return nil
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

// openLog opens a log file; (nil, nil) when the attempt has not written yet.
func openLog(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return f, err
}
