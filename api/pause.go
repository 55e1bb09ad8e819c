package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/orkwal/orkwal/engine"
)

// Pausing runs and tasks: orkwal's routes answer with the run, Ork's with
// 200 and no body (see ork.go).

func (s *Server) registerPause() {
	s.handle("POST /runs/{id}/pause", func(w http.ResponseWriter, r *http.Request) { s.pauseRun(w, r, "", true) })
	s.handle("POST /runs/{id}/resume", func(w http.ResponseWriter, r *http.Request) { s.pauseRun(w, r, "", false) })
	s.handle("POST /runs/{id}/tasks/{name}/pause", func(w http.ResponseWriter, r *http.Request) { s.pauseTask(w, r, true) })
	s.handle("POST /runs/{id}/tasks/{name}/resume", func(w http.ResponseWriter, r *http.Request) { s.pauseTask(w, r, false) })
	s.handle("POST /api/runs/{id}/pause", func(w http.ResponseWriter, r *http.Request) { s.orkPause(w, r, false, true) })
	s.handle("POST /api/runs/{id}/resume", func(w http.ResponseWriter, r *http.Request) { s.orkPause(w, r, false, false) })
	s.handle("POST /api/tasks/{id}/pause", func(w http.ResponseWriter, r *http.Request) { s.orkPause(w, r, true, true) })
	s.handle("POST /api/tasks/{id}/resume", func(w http.ResponseWriter, r *http.Request) { s.orkPause(w, r, true, false) })
}

func (s *Server) pauseRun(w http.ResponseWriter, r *http.Request, task string, paused bool) {
	s.runAction(w, r, func(id string) (engine.RunView, error) { return s.eng.PauseRun(id, task, paused) })
}

func (s *Server) pauseTask(w http.ResponseWriter, r *http.Request, paused bool) {
	if task, ok := s.taskKey(w, r); ok {
		s.pauseRun(w, r, task, paused)
	}
}

// orkPause pauses or resumes a run (its id) or, with isTask, a task (its
// id as orkwal gives it, "<run id>:<task>") and answers 200 without a body.
func (s *Server) orkPause(w http.ResponseWriter, r *http.Request, isTask, paused bool) {
	ref := r.PathValue("id")
	id, task, _ := strings.Cut(ref, ":")
	if err := checkRunID(id); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if isTask != (task != "") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q: a run's id is a UUID, a task's is <run id>:<task> (as GET /api/runs/{id} gives it)", ref))
		return
	}
	if _, err := s.eng.PauseRun(id, task, paused); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}
