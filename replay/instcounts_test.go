package replay

import (
	"fmt"
	"testing"
)

// nodeCounts is what InstanceCounts and InstancesStartedAt say of every
// expanded fan-out of s, by run and node (withFirst: the latter too).
func nodeCounts(s *State, withFirst bool) map[string]string {
	out := map[string]string{}
	eachNode(s, func(r *Run, n *Task) {
		c := ""
		n.InstanceCounts(func(st TaskStatus, k int) { c += fmt.Sprintf("%s=%d ", st, k) })
		if withFirst {
			c += fmt.Sprintf("@%d", n.InstancesStartedAt())
		}
		out[r.ID+"/"+n.Name] = c
	})
	return out
}

// countedFromInstances is nodeCounts read from each node's instances.
func countedFromInstances(s *State, withFirst bool) map[string]string {
	out := map[string]string{}
	eachNode(s, func(r *Run, n *Task) {
		by := map[TaskStatus]int{}
		for _, i := range n.Instances {
			by[r.Tasks[i].Status]++
		}
		c := ""
		for _, st := range instStatuses {
			if by[st] > 0 {
				c += fmt.Sprintf("%s=%d ", st, by[st])
			}
		}
		if withFirst {
			c += fmt.Sprintf("@%d", recordedFirst(r, n))
		}
		out[r.ID+"/"+n.Name] = c
	})
	return out
}

// eachNode calls fn with every expanded fan-out of s.
func eachNode(s *State, fn func(*Run, *Task)) {
	for _, r := range s.RunList {
		for _, n := range r.Tasks {
			if n.Expanded && n.Parent < 0 {
				fn(r, n)
			}
		}
	}
}

// recordedFirst is the earliest dispatch n's instances record.
func recordedFirst(r *Run, n *Task) int64 {
	first := int64(0)
	for _, i := range n.Instances {
		for _, at := range []int64{r.Tasks[i].DispatchedAt, firstKept(r.Tasks[i])} {
			if at != 0 && (first == 0 || at < first) {
				first = at
			}
		}
	}
	return first
}

func firstKept(t *Task) int64 {
	if len(t.Attempts) == 0 {
		return 0
	}
	return t.Attempts[0].StartedAt
}

// TestInstanceCountsFollowEveryRecord: after each record of long random
// histories (fan-outs expanding, instances dispatched, failing, retried,
// cancelled, runs rerun and marked), a node's counts by status are those
// of its instances, and its first dispatch is at most the earliest they
// record (a dispatch undone by task_not_run and made again later leaves no
// trace in them); a state restored from a snapshot has the same counts,
// and the first dispatch its instances record.
func TestInstanceCountsFollowEveryRecord(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		recs, paths := cowRecords(seed, 3000)
		if !paths["fan-out"] {
			t.Fatalf("seed %d: no fan-out ran", seed)
		}
		s := New()
		for i, r := range recs {
			if err := s.Apply(r); err != nil {
				t.Fatalf("seed %d: record %d: %v", seed, i, err)
			}
			got, want := nodeCounts(s, false), countedFromInstances(s, false)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: after record %d (%s): counts %v, its instances say %v", seed, i, r.Kind(), got, want)
			}
			checkFirstDispatch(t, s, fmt.Sprintf("seed %d: after record %d (%s)", seed, i, r.Kind()))
		}
		for _, back := range restoredBothWays(t, s, uint64(len(recs))) {
			if got, want := nodeCounts(back, false), nodeCounts(s, false); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: restored counts %v, live %v", seed, got, want)
			}
			if got, want := nodeCounts(back, true), countedFromInstances(back, true); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: restored %v, its instances say %v", seed, got, want)
			}
		}
	}
}

// checkFirstDispatch: every node's first dispatch is set once an instance
// records one, and is never after the earliest they record.
func checkFirstDispatch(t *testing.T, s *State, when string) {
	t.Helper()
	eachNode(s, func(r *Run, n *Task) {
		recorded := recordedFirst(r, n)
		if got := n.InstancesStartedAt(); recorded != 0 && (got == 0 || got > recorded) {
			t.Fatalf("%s: %s/%s first dispatch %d, its instances record %d", when, r.ID, n.Name, got, recorded)
		}
	})
}

// TestStatusIndexIsInstStatuses: statusIndex places each status where
// instStatuses lists it.
func TestStatusIndexIsInstStatuses(t *testing.T) {
	for i, st := range instStatuses {
		if got := statusIndex(st); got != i {
			t.Errorf("statusIndex(%s) = %d, want %d", st, got, i)
		}
	}
	if got := statusIndex("done"); got != -1 {
		t.Errorf("statusIndex(done) = %d, want -1", got)
	}
}
