package replay

import (
	"slices"
	"sort"
	"strings"
)

// runIndex is the ids of the runs in the state, sorted: a run given by a
// prefix of its id (as git and docker take them) is found in O(log n).
// Derived: kept by newRun, applyRunsPruned and the snapshot's restore.
// Run ids are UUIDv7s, made in time order, so an insert is nearly always
// an append.
type runIndex []string

func (x *runIndex) add(id string) {
	i, found := slices.BinarySearch(*x, id)
	if !found {
		*x = slices.Insert(*x, i, id)
	}
}

// drop removes the ids in gone, in one pass.
func (x *runIndex) drop(gone map[string]bool) {
	*x = slices.DeleteFunc(*x, func(id string) bool { return gone[id] })
}

// withPrefix returns up to limit ids starting with prefix, in order.
func (x runIndex) withPrefix(prefix string, limit int) []string {
	i := sort.SearchStrings(x, prefix)
	var out []string
	for ; i < len(x) && len(out) < limit && strings.HasPrefix(x[i], prefix); i++ {
		out = append(out, x[i])
	}
	return out
}

// RunsWithPrefix returns up to limit runs whose id starts with prefix, by
// id, in O(log n + limit).
func (s *State) RunsWithPrefix(prefix string, limit int) []*Run {
	ids := s.runIDs.withPrefix(prefix, limit)
	out := make([]*Run, len(ids))
	for i, id := range ids {
		out[i] = s.Runs[id]
	}
	return out
}
