package engine

import (
	"fmt"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// VersionsView lists the versions of a workflow kept in its history
// (replay/versions.go): the newest replay.MaxVersions, fewer when their
// sources pass replay.MaxPastSourceBytes.
type VersionsView struct {
	Name     string        `json:"name"`
	Current  int           `json:"current"`
	Versions []VersionItem `json:"versions"` // newest first
}

// VersionItem is one version in a list: its number, when it was applied,
// the size of its source and its number of tasks.
type VersionItem struct {
	Version   int       `json:"version"`
	AppliedAt time.Time `json:"applied_at"`
	Size      int       `json:"size"`
	TaskCount int       `json:"task_count"`
}

// VersionView is one version of a workflow: its source as applied and its
// parsed definition (the tasks and their dependencies: its static graph).
type VersionView struct {
	Name        string            `json:"name"`
	Version     int               `json:"version"`
	Current     bool              `json:"current"`
	AppliedAt   time.Time         `json:"applied_at"`
	Description string            `json:"description,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	Tasks       []*workflow.Task  `json:"tasks"`
	Source      string            `json:"source"`
}

// WorkflowVersions lists the versions of a workflow kept, newest first.
func (e *Engine) WorkflowVersions(name string) (VersionsView, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	w, ok := e.state.Workflows[name]
	if !ok {
		return VersionsView{}, fmt.Errorf("%w: workflow %q", ErrNotFound, name)
	}
	vs := w.Versions()
	out := VersionsView{Name: name, Current: w.Version, Versions: make([]VersionItem, len(vs))}
	for i, v := range vs {
		out.Versions[len(vs)-1-i] = VersionItem{Version: v.Version, AppliedAt: ts(v.At), Size: len(v.Source), TaskCount: len(v.Spec.Tasks)}
	}
	return out, nil
}

// WorkflowVersion returns version v of a workflow, if it is kept.
func (e *Engine) WorkflowVersion(name string, v int) (VersionView, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	w, ok := e.state.Workflows[name]
	if !ok {
		return VersionView{}, fmt.Errorf("%w: workflow %q", ErrNotFound, name)
	}
	ver, ok := w.VersionOf(v)
	switch {
	case !ok && v > w.Version:
		return VersionView{}, fmt.Errorf("%w: workflow %q has no version %d (its current version is %d)", ErrNotFound, name, v, w.Version)
	case !ok:
		return VersionView{}, fmt.Errorf("%w: workflow %q: version %d source no longer kept (a workflow keeps its newest %d versions, and of the earlier ones at most %d bytes of source)",
			ErrNotFound, name, v, replay.MaxVersions, replay.MaxPastSourceBytes)
	}
	return VersionView{Name: name, Version: v, Current: v == w.Version, AppliedAt: ts(ver.At),
		Description: ver.Spec.Description, Params: ver.Spec.Params, Tasks: ver.Spec.Tasks, Source: ver.Source}, nil
}
