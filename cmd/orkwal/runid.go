package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/orkwal/orkwal/engine"
)

// runIDLen is the length of a whole run id (a UUID).
const runIDLen = 36

// maxAmbiguous is how many runs an ambiguous prefix error lists.
const maxAmbiguous = 5

// resolveRun turns a run id, or any unique prefix of one (as git and
// docker take them), into the run's id. The daemon finds the runs with
// that prefix in its sorted index of ids (GET /runs?id_prefix=).
func (s *session) resolveRun(arg string) (string, error) {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if len(arg) == runIDLen {
		return arg, nil
	}
	if arg == "" {
		return "", exitf(exitUsage, "empty run id")
	}
	q := url.Values{"id_prefix": {arg}, "limit": {fmt.Sprint(maxAmbiguous + 1)}}
	var runs []engine.RunView
	if _, err := s.cl.get(s.ctx, "/runs?"+q.Encode(), &runs); err != nil {
		return "", fmt.Errorf("find run %s: %w", arg, err)
	}
	switch len(runs) {
	case 0:
		return "", exitf(exitNotFound, "no run id starts with %q (see orkwal runs)", arg)
	case 1:
		return runs[0].ID, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "run id prefix %q is ambiguous: give more of the id; it starts", arg)
	for i, r := range runs {
		if i == maxAmbiguous {
			b.WriteString("\n  ...")
			break
		}
		fmt.Fprintf(&b, "\n  %s  %s  %s  %s", r.ID, r.Workflow, r.Status, stamp(&r.CreatedAt))
	}
	return "", exitf(exitUsage, "%s", b.String())
}
