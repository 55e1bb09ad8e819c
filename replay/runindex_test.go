package replay

import (
	"strings"
	"testing"
)

func prefixed(s *State, prefix string) string {
	var ids []string
	for _, r := range s.RunsWithPrefix(prefix, 10) {
		ids = append(ids, r.ID)
	}
	return strings.Join(ids, ",")
}

// TestRunsWithPrefix: the sorted index of run ids follows runs created
// out of order, pruned, and restored from a snapshot.
func TestRunsWithPrefix(t *testing.T) {
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: diamond(), At: 1})
	for _, id := range []string{"ab2", "ab1", "b1", "aa", "ab3"} {
		mustApply(t, s, &RunCreated{ID: id, Workflow: "diamond", Version: 1, At: 2})
		mustApply(t, s, &RunCancelRequested{ID: id, At: 3})
	}
	for prefix, want := range map[string]string{"ab": "ab1,ab2,ab3", "a": "aa,ab1,ab2,ab3", "b1": "b1", "c": "", "ab3": "ab3"} {
		if got := prefixed(s, prefix); got != want {
			t.Errorf("prefix %q: %s, want %s", prefix, got, want)
		}
	}
	if got := s.RunsWithPrefix("a", 2); len(got) != 2 || got[1].ID != "ab1" {
		t.Errorf("limit 2: %d runs", len(got))
	}
	mustApply(t, s, &RunsPruned{IDs: []string{"ab2", "aa"}, At: 4})
	if got := prefixed(s, "a"); got != "ab1,ab3" {
		t.Errorf("after prune: %s", got)
	}
	restored := restoreSnap(t, s.Snapshot(1))
	if got := prefixed(restored, ""); got != "ab1,ab3,b1" {
		t.Errorf("restored: %s", got)
	}
}

// TestRunsWithPrefixInIDOrder: while runs come in id order (UUIDv7s) the
// run list is the index and no sorted copy is kept; the first run out of
// order builds it, and prefixes find the same runs before and after, and
// after a prune.
func TestRunsWithPrefixInIDOrder(t *testing.T) {
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: diamond(), At: 1})
	for _, id := range []string{"a1", "a2", "b1", "b2"} {
		mustApply(t, s, &RunCreated{ID: id, Workflow: "diamond", Version: 1, At: 2}, &RunCancelRequested{ID: id, At: 3})
	}
	if s.runIDs.built {
		t.Fatal("runs in id order built a sorted copy")
	}
	if got := prefixed(s, "a"); got != "a1,a2" {
		t.Errorf("in order, prefix a: %s", got)
	}
	mustApply(t, s, &RunCreated{ID: "a0", Workflow: "diamond", Version: 1, At: 4}, &RunCancelRequested{ID: "a0", At: 5})
	if !s.runIDs.built {
		t.Fatal("a run out of id order built no sorted copy")
	}
	if got := prefixed(s, "a"); got != "a0,a1,a2" {
		t.Errorf("out of order, prefix a: %s", got)
	}
	mustApply(t, s, &RunsPruned{IDs: []string{"a1"}, At: 6})
	if got := prefixed(s, ""); got != "a0,a2,b1,b2" {
		t.Errorf("after prune: %s", got)
	}
}
