package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/orkwal/orkwal/replay/workflow"
)

// A run page follows a run whose fan-out may have 100,000 instances: it
// reads the run with its fan-outs summarised (GET /runs/{id}?instances=counts)
// and a fan-out's instances a page at a time
// (GET /runs/{id}/tasks?fanout=NAME&after=N&limit=M), each at a cost that
// follows what it answers, not the fan-out's size.

// Page sizes of a fan-out's instances (GET /runs/{id}/tasks?fanout=).
const (
	DefaultInstancesLimit = 100
	MaxInstancesLimit     = 1000
)

// instancesParam checks ?instances= of GET /runs/{id}: "" (every task) or
// counts (fan-outs summarised).
func instancesParam(v string) error {
	if v != "" && v != "counts" {
		return fmt.Errorf(`instances %q: the one value is "counts" (a fan-out as its instances counted by status, without them)`, v)
	}
	return nil
}

// instancesQuery is a parsed GET /runs/{id}/tasks?fanout= query.
type instancesQuery struct {
	fanout       string
	after, limit int
}

// parseInstancesQuery reads fanout, after and limit; ok is false when none
// is given (the run's every task is asked for).
func parseInstancesQuery(q url.Values) (iq instancesQuery, ok bool, err error) {
	iq = instancesQuery{after: -1, limit: DefaultInstancesLimit}
	if !q.Has("fanout") {
		for _, p := range []string{"after", "limit"} {
			if q.Has(p) {
				return iq, false, fmt.Errorf("%s: only with fanout (a page of a fan-out's instances)", p)
			}
		}
		return iq, false, nil
	}
	iq.fanout = q.Get("fanout")
	if !workflow.ValidName(iq.fanout) {
		return iq, false, fmt.Errorf("fanout %q: %s", iq.fanout, workflow.NameRule)
	}
	if v := q.Get("after"); q.Has("after") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= maxInstanceIndex {
			return iq, false, fmt.Errorf("after: must be an instance's index, an integer from 0 to %d, got %q", maxInstanceIndex-1, v)
		}
		iq.after = n
	}
	if v := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxInstancesLimit {
			return iq, false, fmt.Errorf("limit: must be an integer from 1 to %d, got %q", MaxInstancesLimit, v)
		}
		iq.limit = n
	}
	return iq, true, nil
}

// maxInstanceIndex bounds ?after=: a fan-out has at most 100,000 instances.
const maxInstanceIndex = 100_000

// listTasks answers GET /runs/{id}/tasks: the run's tasks, or with
// ?fanout=NAME a page of that fan-out's instances, with a Link to the next.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	iq, paged, err := parseInstancesQuery(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !paged {
		s.writeAppended(w, r, s.eng.AppendTasks)
		return
	}
	s.writeAppended(w, r, func(dst []byte, id string) ([]byte, error) {
		dst, more, err := s.eng.AppendInstances(dst, id, iq.fanout, iq.after, iq.limit)
		if more && err == nil { // the next page follows this one's last instance, after+limit
			next := url.Values{"fanout": {iq.fanout}, "after": {strconv.Itoa(iq.after + iq.limit)}, "limit": {strconv.Itoa(iq.limit)}}
			w.Header().Set("Link", fmt.Sprintf(`</runs/%s/tasks?%s>; rel="next"`, id, next.Encode()))
		}
		return dst, err
	})
}
