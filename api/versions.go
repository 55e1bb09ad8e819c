package api

import (
	"fmt"
	"net/http"
	"strconv"
)

// A workflow's versions kept (engine.WorkflowVersions): the list, and one
// version's source and static graph.

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	view, err := s.eng.WorkflowVersions(name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	v, err := parseVersion(r.PathValue("version"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	view, err := s.eng.WorkflowVersion(name, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// parseVersion reads a version number: a whole number from 1, written
// without sign or leading zeros.
func parseVersion(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || strconv.Itoa(v) != s {
		return 0, fmt.Errorf("version %q: want a whole number from 1, such as 3", s)
	}
	return v, nil
}
