package replay

import (
	"slices"
	"sort"
	"strings"
)

// runIndex finds a run by a prefix of its id (as git and docker take
// them) in O(log n). Run ids are UUIDv7s, made in time order: while every
// run's id is above the one before, the run list (in creation order) is
// sorted by id and is the index; the first run out of that order makes
// sorted, a copy of the list sorted by id, kept from then on (a pointer
// a run: issue 27). Derived: kept by newRun, applyRunsPruned and the
// snapshot's restore.
type runIndex struct {
	sorted []*Run
	built  bool // sorted is the index (else the run list is)
}

func searchID(runs []*Run, id string) int {
	return sort.Search(len(runs), func(i int) bool { return runs[i].ID >= id })
}

// add indexes r, which list (the run list, r not yet in it) is about to
// end with.
func (x *runIndex) add(r *Run, list []*Run) {
	if !x.built {
		if len(list) == 0 || list[len(list)-1].ID < r.ID {
			return
		}
		x.sorted, x.built = slices.Clone(list), true
		slices.SortFunc(x.sorted, func(a, b *Run) int { return strings.Compare(a.ID, b.ID) })
	}
	if i := searchID(x.sorted, r.ID); i == len(x.sorted) || x.sorted[i].ID != r.ID {
		x.sorted = slices.Insert(x.sorted, i, r)
	}
}

// drop removes the runs whose ids are in gone, in one pass.
func (x *runIndex) drop(gone map[string]bool) {
	if x.built {
		x.sorted = slices.DeleteFunc(x.sorted, func(r *Run) bool { return gone[r.ID] })
	}
}

// RunsWithPrefix returns up to limit runs whose id starts with prefix, by
// id, in O(log n + limit).
func (s *State) RunsWithPrefix(prefix string, limit int) []*Run {
	runs := s.RunList
	if s.runIDs.built {
		runs = s.runIDs.sorted
	}
	var out []*Run
	for i := searchID(runs, prefix); i < len(runs) && len(out) < limit && strings.HasPrefix(runs[i].ID, prefix); i++ {
		out = append(out, runs[i])
	}
	return out
}
