package api

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Page sizes of GET /runs.
const (
	DefaultRunsLimit = 100
	MaxRunsLimit     = 1000
)

// runStatuses are the values of a run's status, for ?status=.
var runStatuses = []string{"pending", "running", "success", "failed", "cancelled"}

// runsQuery is a parsed GET /runs query.
type runsQuery struct {
	workflow string
	status   string
	since    time.Time // zero: no lower bound
	limit    int
	after    *cursor // nil: from the newest run
}

// cursor marks the last run of a page: its id, and its creation time in
// case the run is gone when the next page is asked for. Clients see it as
// an opaque string (base64url of "1:<unix nanos>:<id>").
type cursor struct {
	at int64
	id string
}

func (c cursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte("1:" + strconv.FormatInt(c.at, 10) + ":" + c.id))
}

func decodeCursor(s string) (*cursor, error) {
	bad := fmt.Errorf("cursor %q: not a cursor of this server (take it from the Link or X-Next-Cursor header)", s)
	if len(s) > 128 {
		return nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	parts := strings.SplitN(string(raw), ":", 3)
	if len(parts) != 3 || parts[0] != "1" {
		return nil, bad
	}
	at, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || checkRunID(parts[2]) != nil {
		return nil, bad
	}
	return &cursor{at: at, id: parts[2]}, nil
}

// parseRunsQuery reads GET /runs's parameters, each given at most once
// (the router checked: see handle).
func parseRunsQuery(q url.Values) (runsQuery, error) {
	rq := runsQuery{limit: DefaultRunsLimit}
	if v := q.Get("workflow"); v != "" {
		if !workflow.ValidName(v) {
			return rq, fmt.Errorf("workflow %q: %s", v, workflow.NameRule)
		}
		rq.workflow = v
	}
	if v := q.Get("status"); v != "" {
		ok := false
		for _, st := range runStatuses {
			ok = ok || v == st
		}
		if !ok {
			return rq, fmt.Errorf("status %q: must be one of %s", v, strings.Join(runStatuses, ", "))
		}
		rq.status = v
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return rq, fmt.Errorf("since %q: must be an RFC 3339 time such as 2026-03-01T12:00:00Z", v)
		}
		rq.since = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxRunsLimit {
			return rq, fmt.Errorf("limit: must be an integer from 1 to %d, got %q", MaxRunsLimit, v)
		}
		rq.limit = n
	}
	if v := q.Get("cursor"); v != "" {
		c, err := decodeCursor(v)
		if err != nil {
			return rq, err
		}
		rq.after = c
	}
	return rq, nil
}

// engineQuery is the engine's query for q.
func (q runsQuery) engineQuery() engine.RunQuery {
	eq := engine.RunQuery{Workflow: q.workflow, Status: q.status, Limit: q.limit}
	switch maxTime := time.Unix(0, math.MaxInt64); {
	case q.since.After(maxTime): // past 2262: UnixNano would overflow
		eq.Since = math.MaxInt64
	case q.since.After(time.Unix(0, 0)):
		eq.Since = q.since.UnixNano()
	}
	if q.after != nil {
		eq.AfterID, eq.AfterAt = q.after.id, q.after.at
	}
	return eq
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("id_prefix") {
		s.runsWithPrefix(w, q)
		return
	}
	rq, err := parseRunsQuery(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	page, more := s.eng.RunPage(rq.engineQuery()) // O(log n + limit)
	if more {
		next := page[len(page)-1]
		c := cursor{at: next.CreatedAt.UnixNano(), id: next.ID}.encode()
		q.Set("cursor", c)
		q.Set("limit", strconv.Itoa(rq.limit))
		w.Header().Set("Link", fmt.Sprintf(`</runs?%s>; rel="next"`, q.Encode()))
		w.Header().Set("X-Next-Cursor", c)
	}
	writeJSON(w, http.StatusOK, page)
}

// runsWithPrefix answers GET /runs?id_prefix=P[&limit=N]: the runs whose
// id starts with P, by id, at most N (default DefaultRunsLimit), from the
// engine's sorted index of ids (O(log n + N)). It is how clients take a
// run by a prefix of its id: one match is the run, more are ambiguous.
func (s *Server) runsWithPrefix(w http.ResponseWriter, q url.Values) {
	for k := range q {
		if k != "id_prefix" && k != "limit" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("id_prefix: %s cannot go with it (only limit can)", k))
			return
		}
	}
	prefix := strings.ToLower(q.Get("id_prefix"))
	if prefix == "" || len(prefix) > 36 || strings.Trim(prefix, "0123456789abcdef-") != "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("id_prefix %q: must be 1 to 36 characters of a run id (0-9, a-f, -)", prefix))
		return
	}
	rq, err := parseRunsQuery(url.Values{"limit": q["limit"]})
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.eng.RunsWithPrefix(prefix, rq.limit))
}
