package replay

import (
	"fmt"
	"slices"

	"github.com/orkwal/orkwal/replay/workflow"
)

// taskLinks are a spec task's dependencies, as positions in Run.Tasks
// (where the spec's tasks come first, in the spec's order): the same for
// every run of that workflow version, so its runs share one copy.
// Never changed once made.
type taskLinks struct {
	deps []int // upstream tasks
	down []int // derived: tasks that depend on this one
}

// specLinks are the links of the tasks of one workflow version.
type specLinks struct {
	spec  *workflow.Spec
	tasks []taskLinks
}

// linksOf returns the links of spec's tasks, made once per version: the
// state keeps those of the latest version each workflow's runs were made
// of (s.links, by workflow name).
func (s *State) linksOf(spec *workflow.Spec) []taskLinks {
	if l, ok := s.links[spec.Name]; ok && l.spec == spec {
		return l.tasks
	}
	tasks := makeLinks(spec)
	s.links[spec.Name] = specLinks{spec, tasks}
	return tasks
}

func makeLinks(spec *workflow.Spec) []taskLinks {
	index := make(map[string]int, len(spec.Tasks))
	for i, ts := range spec.Tasks {
		index[ts.Name] = i
	}
	links := make([]taskLinks, len(spec.Tasks))
	for i, ts := range spec.Tasks {
		for _, d := range ts.DependsOn {
			links[i].deps = append(links[i].deps, index[d])
		}
	}
	linkDown(links)
	return links
}

// linkDown fills each task's down from the deps of the others.
func linkDown(links []taskLinks) {
	for i := range links {
		for _, d := range links[i].deps {
			links[d].down = append(links[d].down, i)
		}
	}
}

// restoreLinks links a restored run's tasks, checking the dependencies
// its snapshot recorded, and their definitions' positions.
func (s *State) restoreLinks(run *Run, sr *SnapRun) error {
	deps := make([][]int, len(sr.Tasks))
	for i, st := range sr.Tasks {
		if st.SpecIndex < 0 || st.SpecIndex >= len(run.Spec.Tasks) {
			return fmt.Errorf("replay: snapshot: run %s: task %d is definition %d of %d", sr.ID, i, st.SpecIndex, len(run.Spec.Tasks))
		}
		for _, d := range st.Deps {
			if d < 0 || d >= len(sr.Tasks) {
				return fmt.Errorf("replay: snapshot: run %s: task %d depends on task %d of %d", sr.ID, i, d, len(sr.Tasks))
			}
		}
		deps[i] = st.Deps
	}
	s.linkTasks(run, deps)
	return nil
}

// linkTasks points a run's spec tasks at their links (instances have
// none). deps, when not nil, are the dependencies a snapshot recorded for
// each task: a run whose recorded ones differ from its spec's (none do)
// keeps its own.
func (s *State) linkTasks(run *Run, deps [][]int) {
	shared := s.linksOf(run.Spec)
	own := deps != nil && !sameDeps(run, shared, deps)
	if own {
		shared = make([]taskLinks, len(run.Tasks))
		for i := range run.Tasks {
			shared[i].deps = deps[i]
		}
		linkDown(shared)
	}
	for i, t := range run.Tasks {
		if own || t.Parent < 0 && i < len(shared) {
			t.links = &shared[i]
		}
	}
}

// sameDeps reports whether deps are the spec's links: those of the spec's
// tasks, and none for an instance.
func sameDeps(run *Run, shared []taskLinks, deps [][]int) bool {
	for i, t := range run.Tasks {
		var want []int
		if t.Parent < 0 && i < len(shared) {
			want = shared[i].deps
		}
		if !slices.Equal(deps[i], want) {
			return false
		}
	}
	return true
}

// Deps are the positions in Run.Tasks of the tasks t depends on.
func (t *Task) Deps() []int {
	if t.links == nil {
		return nil
	}
	return t.links.deps
}

// downstream are the positions of the tasks that depend on t.
func (t *Task) downstream() []int {
	if t.links == nil {
		return nil
	}
	return t.links.down
}
