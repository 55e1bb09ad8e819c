package replay

import (
	"slices"
	"sort"
	"strings"
)

// runIndex is the runs in the state, sorted by id: a run given by a
// prefix of its id (as git and docker take them) is found in O(log n).
// Derived: kept by newRun, applyRunsPruned and the snapshot's restore.
// Run ids are UUIDv7s, made in time order, so an insert is nearly always
// an append. It holds the runs, not their ids: a pointer an entry, not a
// string header (issue 27).
type runIndex []*Run

// search returns the position of the first run whose id is at or after id.
func (x runIndex) search(id string) int {
	return sort.Search(len(x), func(i int) bool { return x[i].ID >= id })
}

func (x *runIndex) add(r *Run) {
	if i := x.search(r.ID); i == len(*x) || (*x)[i].ID != r.ID {
		*x = slices.Insert(*x, i, r)
	}
}

// drop removes the runs whose ids are in gone, in one pass.
func (x *runIndex) drop(gone map[string]bool) {
	*x = slices.DeleteFunc(*x, func(r *Run) bool { return gone[r.ID] })
}

// RunsWithPrefix returns up to limit runs whose id starts with prefix, by
// id, in O(log n + limit).
func (s *State) RunsWithPrefix(prefix string, limit int) []*Run {
	var out []*Run
	for i := s.runIDs.search(prefix); i < len(s.runIDs) && len(out) < limit && strings.HasPrefix(s.runIDs[i].ID, prefix); i++ {
		out = append(out, s.runIDs[i])
	}
	return out
}
