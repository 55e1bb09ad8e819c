package replay

import (
	"fmt"

	"github.com/orkwal/orkwal/replay/workflow"
)

// A workflow's version history: besides its current version, each workflow
// keeps its earlier versions (Workflow.Past) with their source as applied
// and their spec, so that a person can see what changed and what an older
// run ran. The history is bounded when a version is put (applyWorkflowPut,
// the one place): the newest MaxVersions versions, the current one
// included, of which the earlier ones' sources total at most
// MaxPastSourceBytes. The trim is a function of the records alone, so live
// state, replay and snapshots agree. A deleted workflow's history goes with
// it; its runs keep their pinned spec.

// MaxVersions is how many versions of a workflow are kept, the current one
// included.
const MaxVersions = 20

// MaxPastSourceBytes bounds the total source of a workflow's earlier
// versions kept. It equals the largest workflow (workflow.MaxBytes), so the
// previous version is always kept.
const MaxPastSourceBytes = workflow.MaxBytes

// Version is one version of a workflow as it was applied.
type Version struct {
	Version int
	At      int64          // when it was put
	Spec    *workflow.Spec // shared and immutable, as a run's pinned spec
	Source  string
}

// Versions lists the workflow's versions kept, oldest first, the current
// one last.
func (w *Workflow) Versions() []Version {
	out := make([]Version, 0, len(w.Past)+1)
	out = append(out, w.Past...)
	return append(out, w.current())
}

// VersionOf returns version v of the workflow, if it is kept.
func (w *Workflow) VersionOf(v int) (Version, bool) {
	if v == w.Version {
		return w.current(), true
	}
	for _, p := range w.Past {
		if p.Version == v {
			return p, true
		}
	}
	return Version{}, false
}

func (w *Workflow) current() Version {
	return Version{Version: w.Version, At: w.UpdatedAt, Spec: w.Spec, Source: w.Source}
}

// pastAfterPut is the history of a workflow whose version old is replaced:
// old's history and old itself, trimmed to the bounds. It is a new slice
// (a snapshot being copied may share the previous one).
func pastAfterPut(old *Workflow) []Version {
	all := append(append(make([]Version, 0, len(old.Past)+1), old.Past...), old.current())
	keep, bytes := 0, 0
	for i := len(all) - 1; i >= 0 && keep < MaxVersions-1; i-- {
		if bytes+len(all[i].Source) > MaxPastSourceBytes {
			break
		}
		bytes += len(all[i].Source)
		keep++
	}
	if keep == len(all) {
		return all
	}
	return append([]Version(nil), all[len(all)-keep:]...)
}

// SnapVersion is an earlier version of a workflow in a snapshot; Spec is an
// index into Snapshot.Specs.
type SnapVersion struct {
	_msgpack struct{} `msgpack:",as_array"`
	Workflow string
	Version  int
	At       int64
	Spec     int
	Source   string
}

// copyPast adds the earlier versions of the snapshot's workflows, in the
// order of Workflows and oldest first, after the workflows' current specs.
func (snap *Snapshot) copyPast(s *State) {
	for _, w := range snap.Workflows {
		for _, p := range s.Workflows[w.Name].Past {
			snap.Versions = append(snap.Versions, SnapVersion{Workflow: w.Name, Version: p.Version, At: p.At,
				Spec: snap.specOf(w.Name, p.Version, p.Spec), Source: p.Source})
		}
	}
}

// restorePast puts the snapshot's earlier versions back into the restored
// workflows, checking that each names a workflow, a spec, and a version
// below the ones after it.
func restorePast(s *State, snap *Snapshot) error {
	for _, v := range snap.Versions {
		w, ok := s.Workflows[v.Workflow]
		switch {
		case !ok:
			return fmt.Errorf("replay: snapshot: version %d of workflow %q, which is not there", v.Version, v.Workflow)
		case v.Spec < 0 || v.Spec >= len(snap.Specs):
			return fmt.Errorf("replay: snapshot: version %d of workflow %s refers to spec %d", v.Version, v.Workflow, v.Spec)
		case v.Version >= w.Version || (len(w.Past) > 0 && v.Version <= w.Past[len(w.Past)-1].Version):
			return fmt.Errorf("replay: snapshot: version %d of workflow %s is out of order", v.Version, v.Workflow)
		}
		w.Past = append(w.Past, Version{Version: v.Version, At: v.At, Spec: snap.Specs[v.Spec].Spec, Source: v.Source})
	}
	return nil
}
