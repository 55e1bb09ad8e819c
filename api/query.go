package api

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// checkQuery rejects a raw query that does not parse, names a parameter
// not in allowed, or gives one more than once.
func checkQuery(raw string, allowed []string) error {
	if raw == "" {
		return nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return fmt.Errorf("query %q: %v", raw, err)
	}
	var unknown []string
	for k, vs := range q {
		switch {
		case !slices.Contains(allowed, k):
			unknown = append(unknown, strconv.Quote(k))
		case len(vs) > 1:
			return fmt.Errorf("%s: given %d times, give it once", k, len(vs))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	known := "this endpoint takes none"
	if len(allowed) > 0 {
		known = "known: " + strings.Join(allowed, ", ")
	}
	return fmt.Errorf("unknown query parameter %s (%s)", strings.Join(unknown, ", "), known)
}
