package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// testAlerts sends a sample alert to every target of a workflow and of
// the daemon: POST /workflows/{name}/alerts/test.
func (s *Server) testAlerts(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 25*time.Second)
	defer cancel()
	results, err := s.eng.TestAlerts(ctx, name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workflow": name, "results": results})
}

// listAlerts lists the latest alerts, newest first: GET /alerts?limit=N.
func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit: must be an integer from 1 to 10000, got %q", v))
			return
		}
		limit = n
	}
	writeJSON(w, http.StatusOK, map[string]any{"alerts": s.eng.Alerts(limit)})
}
