package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Ork's API (github.com/gajop/ork, crates/ork-web): the routes its clients
// and scripts call, answered with the JSON shapes Ork answers, over the
// engine's views and commands. Errors keep orkwal's {"error": ...} body
// with the status code Ork gives.

// Page sizes of Ork's lists: its defaults, and the largest it serves (a
// larger limit is served as that, as Ork does).
const (
	orkRunsLimit      = 50
	orkWorkflowsLimit = 100
	orkMaxLimit       = 200
	// MaxOrkOffset bounds ?offset= of GET /api/runs, whose cost grows with
	// it: deeper pages are GET /runs's cursor.
	MaxOrkOffset = 10000
)

func (s *Server) registerOrk() {
	s.handle("GET /api/runs", s.orkListRuns, "limit", "offset", "status", "workflow")
	s.handle("POST /api/runs", s.orkStartRun)
	s.handle("GET /api/runs/{id}", s.orkRun)
	s.handle("POST /api/runs/{id}/cancel", s.orkCancel)
	s.handle("GET /api/workflows", s.orkListWorkflows, "limit", "offset", "search")
	s.handle("POST /api/workflows", s.orkPutWorkflow)
	s.handle("GET /api/workflows/{name}", s.orkWorkflow)
	s.handle("PATCH /api/workflows/{name}/schedule", s.orkSchedule)
}

// orkPage is the envelope of Ork's lists.
type orkPage[T any] struct {
	Items   []T  `json:"items"`
	Total   int  `json:"total"`
	Limit   int  `json:"limit"`
	Offset  int  `json:"offset"`
	HasMore bool `json:"has_more"`
}

// orkRunItem is a run in Ork's run list.
type orkRunItem struct {
	ID         string  `json:"id"`
	Workflow   string  `json:"workflow"`
	Status     string  `json:"status"`
	CreatedAt  string  `json:"created_at"`
	StartedAt  *string `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
}

// orkRunDetail is Ork's answer to GET /api/runs/{id}.
type orkRunDetail struct {
	Run      orkRunInfo       `json:"run"`
	Tasks    []orkTaskInfo    `json:"tasks"`
	Workflow *orkWorkflowInfo `json:"workflow"`
}

type orkRunInfo struct {
	orkRunItem
	Error *string `json:"error"`
}

type orkTaskInfo struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Status       string          `json:"status"`
	Executor     string          `json:"executor"`
	DependsOn    []string        `json:"depends_on"`
	StartedAt    *string         `json:"started_at"`
	FinishedAt   *string         `json:"finished_at"`
	DispatchedAt *string         `json:"dispatched_at"`
	Output       json.RawMessage `json:"output"`
	Logs         *string         `json:"logs"` // orkwal serves logs at /runs/{id}/tasks/{name}/logs
	Error        *string         `json:"error"`
}

// orkWorkflowInfo is Ork's answer to GET /api/workflows/{name}.
type orkWorkflowInfo struct {
	Name            string            `json:"name"`
	Tasks           []orkWorkflowTask `json:"tasks"`
	Schedule        *string           `json:"schedule"`
	ScheduleEnabled bool              `json:"schedule_enabled"`
	NextScheduledAt *string           `json:"next_scheduled_at"`
}

type orkWorkflowTask struct {
	Name      string   `json:"name"`
	DependsOn []string `json:"depends_on"`
	Executor  string   `json:"executor"`
}

// orkWorkflowItem is a workflow in Ork's workflow list. orkwal has no
// workflow ids, projects or regions: id is the name, project and region
// are "local" (Ork's defaults).
type orkWorkflowItem struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	Executor        string  `json:"executor"`
	Project         string  `json:"project"`
	Region          string  `json:"region"`
	Schedule        *string `json:"schedule"`
	ScheduleEnabled bool    `json:"schedule_enabled"`
	NextScheduledAt *string `json:"next_scheduled_at"`
}

func orkTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func orkTimep(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := orkTime(*t)
	return &s
}

func orkText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// orkInt reads the query parameter name: absent gives def, else an
// integer from 0 to max.
func orkInt(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, fmt.Errorf("%w: %s: must be an integer from 0 to %d, got %q", engine.ErrInvalid, name, max, v)
	}
	return n, nil
}

// orkLimits reads ?limit= (default def, above orkMaxLimit served as
// orkMaxLimit) and ?offset= (at most maxOffset).
func orkLimits(r *http.Request, def, maxOffset int) (limit, offset int, err error) {
	if limit, err = orkInt(r, "limit", def, int(^uint(0)>>1)); err != nil {
		return 0, 0, err
	}
	offset, err = orkInt(r, "offset", 0, maxOffset)
	return min(limit, orkMaxLimit), offset, err
}

// orkStatus is a run's or task's status as Ork words it: "paused" while
// a pause holds it.
func orkStatus(status string, paused bool) string {
	if paused && (status == "pending" || status == "running") {
		return "paused"
	}
	return status
}

func orkRunOf(v engine.RunView) orkRunItem {
	return orkRunItem{ID: v.ID, Workflow: v.Workflow, Status: orkStatus(v.Status, v.Paused), CreatedAt: orkTime(v.CreatedAt),
		StartedAt: orkTimep(v.StartedAt), FinishedAt: orkTimep(v.FinishedAt)}
}

// orkListRuns answers GET /api/runs?limit&offset&status&workflow, newest
// first: O(log n + offset + limit), the total from the state's counts.
func (s *Server) orkListRuns(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := orkLimits(r, orkRunsLimit, MaxOrkOffset)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	q.Del("limit")               // read above, with Ork's bounds
	rq, err := parseRunsQuery(q) // checks workflow and status the way GET /runs does
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out := orkPage[orkRunItem]{Items: []orkRunItem{}, Limit: limit, Offset: offset,
		Total: s.eng.RunCount(rq.workflow, rq.status)}
	if limit > 0 {
		page, _ := s.eng.RunPage(engine.RunQuery{Workflow: rq.workflow, Status: rq.status, Limit: limit, Offset: offset})
		for _, v := range page {
			out.Items = append(out.Items, orkRunOf(v))
		}
	}
	out.HasMore = offset+len(out.Items) < out.Total
	writeJSON(w, http.StatusOK, out)
}

// orkStartRun answers POST /api/runs {"workflow": NAME} with {"run_id"}
// once the run is durable.
func (s *Server) orkStartRun(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Workflow *string `json:"workflow"`
	}
	if err := decodeAction(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case req.Workflow == nil:
		writeError(w, http.StatusBadRequest, `body: want {"workflow": "NAME"}`)
		return
	case !workflow.ValidName(*req.Workflow):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("workflow name %q: %s", *req.Workflow, workflow.NameRule))
		return
	}
	id, _, err := s.trigger(*req.Workflow, nil, "api", "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"run_id": id})
}

// orkRun answers GET /api/runs/{id}: the run, its tasks, and its
// workflow's current version.
func (s *Server) orkRun(w http.ResponseWriter, r *http.Request) {
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	out := orkRunDetail{Run: orkRunInfo{orkRunItem: orkRunOf(run)}, Tasks: []orkTaskInfo{}}
	executors := map[string]string{}
	if wf, err := s.eng.Workflow(run.Workflow); err == nil {
		info := orkWorkflowOf(wf)
		out.Workflow = &info
		for _, t := range wf.Tasks {
			executors[t.Name] = t.Executor
		}
	}
	for _, t := range run.Tasks {
		if t.Status == "failed" && out.Run.Error == nil {
			out.Run.Error = orkText(t.Name + ": " + t.Error)
		}
		out.Tasks = append(out.Tasks, orkTaskInfo{ID: t.ID, Name: t.Name, Status: orkStatus(t.Status, t.Paused && t.Status == "pending"), Executor: executors[t.Task],
			DependsOn: orNone(t.DependsOn), StartedAt: orkTimep(t.StartedAt), FinishedAt: orkTimep(t.FinishedAt),
			DispatchedAt: orkTimep(t.DispatchedAt), Output: orNull(t.Output), Error: orkText(t.Error)})
	}
	writeJSON(w, http.StatusOK, out)
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}

// orkCancel answers POST /api/runs/{id}/cancel with 200 and no body once
// the cancel is durable.
func (s *Server) orkCancel(w http.ResponseWriter, r *http.Request) {
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	if _, err := s.eng.CancelRun(id); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func orkWorkflowOf(wf engine.WorkflowView) orkWorkflowInfo {
	info := orkWorkflowInfo{Name: wf.Name, Tasks: make([]orkWorkflowTask, 0, len(wf.Tasks))}
	for _, t := range wf.Tasks {
		info.Tasks = append(info.Tasks, orkWorkflowTask{Name: t.Name, DependsOn: orNone(t.DependsOn), Executor: t.Executor})
	}
	if sc := wf.Schedule; sc != nil {
		info.Schedule, info.ScheduleEnabled, info.NextScheduledAt = &sc.Cron, !sc.Paused, orkTimep(sc.NextFire)
	}
	return info
}

func (s *Server) orkWorkflow(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	wf, err := s.eng.Workflow(name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, orkWorkflowOf(wf))
}

// orkSchedule answers PATCH /api/workflows/{name}/schedule {"schedule":
// CRON, "enabled": BOOL} with 200 and no body once durable: enabled pauses
// or resumes the schedule. In orkwal the cron is part of the workflow's
// version (its file's schedule key): a schedule other than the current
// one is refused (409), null or absent keeps it.
func (s *Server) orkSchedule(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	var req struct {
		Schedule *string `json:"schedule"`
		Enabled  *bool   `json:"enabled"`
	}
	if err := decodeBody(w, r, maxActionBody, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Enabled == nil {
		writeError(w, http.StatusBadRequest, `body: want {"schedule": "CRON", "enabled": true|false}: enabled is required`)
		return
	}
	wf, err := s.eng.Workflow(name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Schedule != nil && (wf.Schedule == nil || wf.Schedule.Cron != *req.Schedule) {
		writeError(w, http.StatusConflict, fmt.Sprintf("workflow %q: schedule %q: orkwal changes a workflow's cron only "+
			"with a new version of the workflow (its schedule key, then orkwal apply); send the current one or null to pause or resume", name, *req.Schedule))
		return
	}
	if _, err := s.eng.PauseSchedule(name, !*req.Enabled); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// orkListWorkflows answers GET /api/workflows?limit&offset&search: by
// name, those whose name contains search (any case).
func (s *Server) orkListWorkflows(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := orkLimits(r, orkWorkflowsLimit, int(^uint(0)>>1))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	search := strings.ToLower(r.URL.Query().Get("search"))
	out := orkPage[orkWorkflowItem]{Items: []orkWorkflowItem{}, Limit: limit, Offset: offset}
	for _, wf := range s.eng.Workflows() {
		if !strings.Contains(strings.ToLower(wf.Name), search) {
			continue
		}
		if out.Total >= offset && len(out.Items) < limit {
			out.Items = append(out.Items, orkWorkflowItemOf(wf))
		}
		out.Total++
	}
	out.HasMore = offset+len(out.Items) < out.Total
	writeJSON(w, http.StatusOK, out)
}

func orkWorkflowItemOf(wf engine.WorkflowView) orkWorkflowItem {
	info := orkWorkflowOf(wf)
	item := orkWorkflowItem{ID: wf.Name, Name: wf.Name, Project: "local", Region: "local",
		Schedule: info.Schedule, ScheduleEnabled: info.ScheduleEnabled, NextScheduledAt: info.NextScheduledAt}
	if len(wf.Tasks) > 0 {
		item.Executor = wf.Tasks[0].Executor
	}
	return item
}

// orkPutWorkflow answers POST /api/workflows {"yaml", "root", "replace",
// "project", "region"} with {"name", "id"}: 409 when the workflow exists
// and replace is false. root (absolute) is the folder the workflow's
// relative paths resolve against; project and region are accepted and
// not used.
func (s *Server) orkPutWorkflow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		YAML    *string `json:"yaml"`
		Root    string  `json:"root"`
		Replace *bool   `json:"replace"`
		Project string  `json:"project"`
		Region  string  `json:"region"`
	}
	if err := decodeBody(w, r, MaxWorkflowBytes, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.YAML == nil {
		writeError(w, http.StatusBadRequest, `body: want {"yaml": "..."}`)
		return
	}
	file := ""
	if req.Root != "" {
		if !filepath.IsAbs(req.Root) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("root %q: must be an absolute folder", req.Root))
			return
		}
		file = filepath.Join(filepath.Clean(req.Root), "workflow.yaml")
	}
	spec, err := engine.CheckWorkflow(file, []byte(*req.YAML))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Replace != nil && !*req.Replace {
		if _, err := s.eng.Workflow(spec.Name); !errors.Is(err, engine.ErrNotFound) {
			writeError(w, http.StatusConflict, fmt.Sprintf("workflow %q exists; pass replace=true to update it", spec.Name))
			return
		}
	}
	if _, _, err := s.eng.PutWorkflow(spec, *req.YAML); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"name": spec.Name, "id": spec.Name})
}

// decodeBody decodes a JSON body of at most max bytes into v.
func decodeBody(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	body, err := readBody(w, r, max)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: body: %v", engine.ErrInvalid, err)
	}
	return nil
}
