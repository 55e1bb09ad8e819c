package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// A workflows folder (orkwal run --workflows DIR) owns the workflows its
// files define. Who owns what:
//
//   - A workflow whose current version was loaded from a file of the folder
//     is managed by that file while the file is in the folder and defines
//     it (or cannot be read or parsed): the API refuses to replace or delete
//     it (ErrConflict naming the file). The file is recorded in the
//     version's workflow_put record, so ownership survives restarts.
//   - Every sync of the folder (at boot, on SIGHUP, when its files change)
//     is one change set: every file is read and checked first, and if any
//     is bad (or two define one name) nothing is recorded and the workflows
//     keep the versions they had; FolderStatus says why. Otherwise the
//     changed files' versions are recorded together, in one frame.
//   - An unchanged file records nothing; a changed file (or one that takes
//     over a name from the API or from another file) records a new version.
//   - A file removed from the folder releases its workflow: it stays, as it
//     was, and the API may replace or delete it.
//
// Workflows the API put, and those of files outside the folder, are the
// API's.

// FolderFile is one workflow file of a folder, read and checked.
type FolderFile struct {
	Path   string         // absolute
	Spec   *workflow.Spec // nil when Err is set
	Source string
	Err    error // why the file cannot be loaded
}

// FolderStatus is the state of the workflows folder, as /healthz, /metrics
// and the web page show it.
type FolderStatus struct {
	Dir       string    `json:"dir"`
	OK        bool      `json:"ok"`                 // the last sync recorded the folder as it is
	CheckedAt time.Time `json:"checked_at"`         // when the last sync ran
	Files     int       `json:"files"`              // workflow files found by the last sync
	Problems  []string  `json:"problems,omitempty"` // every reason the last sync recorded nothing
}

// folderState is what the engine knows of the folder, replaced whole.
type folderState struct {
	status FolderStatus
	names  map[string]string // each file of the last sync → the workflow it defines ("" when bad)
}

// FolderChange is what a sync recorded.
type FolderChange struct {
	Recorded  []WorkflowChange // new versions, by name
	Unchanged int              // files that recorded nothing
	Released  []string         // workflows whose file left the folder (or now defines another name)
}

// WorkflowChange is one version a sync recorded.
type WorkflowChange struct {
	Name    string
	Version int
	File    string
}

// ErrFolder is the error of a sync that recorded nothing because of bad
// files; it lists every problem.
var ErrFolder = errors.New("workflows folder not loaded")

// ScanFolder reads and checks (CheckWorkflow) every *.yaml and *.yml file of
// dir, in name order. An error is about the folder itself; a bad file has
// its Err set.
func ScanFolder(dir string) (string, []FolderFile, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("--workflows %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", nil, fmt.Errorf("--workflows: %w", err)
	}
	var files []FolderFile
	for _, de := range entries {
		ext := filepath.Ext(de.Name())
		if de.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		files = append(files, ReadWorkflowFile(filepath.Join(abs, de.Name())))
	}
	return abs, files, nil
}

// ReadWorkflowFile reads and checks (CheckWorkflow) one workflow file,
// reading at most one byte more than a workflow may hold.
func ReadWorkflowFile(path string) FolderFile {
	f := FolderFile{Path: path}
	data, err := readCapped(path)
	if err == nil {
		f.Spec, err = CheckWorkflow(path, data)
	}
	f.Source, f.Err = string(data), err
	return f
}

func readCapped(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, workflow.MaxBytes+1))
}

// LoadFolder reads, checks and records the workflows folder dir as one
// change set (ScanFolder, then SyncFolder). A folder that cannot be read
// records nothing either, and its status says why.
func (e *Engine) LoadFolder(dir string) (FolderChange, error) {
	abs, files, err := ScanFolder(dir)
	if err != nil {
		prev := e.folder.Load()
		st := &folderState{status: FolderStatus{Dir: dir, CheckedAt: e.cfg.Clock.Now(), Problems: []string{err.Error()}}}
		if prev != nil {
			st.names = prev.names // the files still own what they owned
		}
		e.folder.Store(st)
		return FolderChange{}, fmt.Errorf("%w: %w", ErrFolder, err)
	}
	return e.SyncFolder(abs, files)
}

// CheckFolder reads and checks the workflows folder dir without recording
// anything: an ErrFolder error lists every problem.
func CheckFolder(dir string) error {
	_, files, err := ScanFolder(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFolder, err)
	}
	if problems := folderProblems(files); len(problems) > 0 {
		return fmt.Errorf("%w: %d problem(s):\n  %s", ErrFolder, len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

// SyncFolder records the folder's files (from ScanFolder) as one change set:
// nothing when any is bad (an ErrFolder error listing every problem),
// otherwise the new version of each changed file, all in one frame. Either
// way the folder's status and the files that manage workflows are updated.
func (e *Engine) SyncFolder(dir string, files []FolderFile) (FolderChange, error) {
	st := &folderState{status: FolderStatus{Dir: dir, Files: len(files), CheckedAt: e.cfg.Clock.Now()},
		names: make(map[string]string, len(files))}
	for _, f := range files {
		if f.Spec != nil {
			st.names[f.Path] = f.Spec.Name
		} else {
			st.names[f.Path] = ""
		}
	}
	st.status.Problems = folderProblems(files)
	if len(st.status.Problems) > 0 {
		e.folder.Store(st)
		return FolderChange{}, fmt.Errorf("%w: %d problem(s), the workflows keep their versions:\n  %s",
			ErrFolder, len(st.status.Problems), strings.Join(st.status.Problems, "\n  "))
	}
	v, err := e.doAll(func(s *replay.State, now int64) ([]replay.Record, any, error) {
		return folderRecords(s, dir, files, st.names, now)
	})
	if err != nil {
		st.status.Problems = []string{"recording the folder: " + err.Error()}
		e.folder.Store(st)
		return FolderChange{}, fmt.Errorf("%w: %w", ErrFolder, err)
	}
	st.status.OK = true
	e.folder.Store(st)
	return v.(FolderChange), nil
}

// folderProblems lists every bad file and every name two files define.
func folderProblems(files []FolderFile) []string {
	var out []string
	byName := map[string]string{}
	for _, f := range files {
		switch {
		case f.Err != nil:
			out = append(out, f.Err.Error())
		case byName[f.Spec.Name] != "":
			out = append(out, fmt.Sprintf("%s: name: workflow %q is also defined in %s", f.Path, f.Spec.Name, byName[f.Spec.Name]))
		default:
			byName[f.Spec.Name] = f.Path
		}
	}
	sort.Strings(out)
	return out
}

// folderRecords decides a sync's records: a put for each changed file. It
// also names the workflows the folder no longer manages.
func folderRecords(s *replay.State, dir string, files []FolderFile, names map[string]string, now int64) ([]replay.Record, any, error) {
	var recs []replay.Record
	change := FolderChange{}
	for _, f := range files {
		rec := putRecord(s, f.Spec, f.Source, f.Path, now)
		if rec == nil {
			change.Unchanged++
			continue
		}
		recs = append(recs, rec)
		change.Recorded = append(change.Recorded, WorkflowChange{Name: f.Spec.Name, Version: rec.Version, File: f.Path})
	}
	for name, w := range s.Workflows {
		if filepath.Dir(w.File) == dir && names[w.File] != name && !putsName(recs, name) {
			change.Released = append(change.Released, name)
		}
	}
	sort.Strings(change.Released)
	return recs, change, nil
}

func putsName(recs []replay.Record, name string) bool {
	for _, r := range recs {
		if r.(*replay.WorkflowPut).Spec.Name == name {
			return true
		}
	}
	return false
}

// FolderStatus returns the workflows folder's state; ok is false when the
// daemon has none.
func (e *Engine) FolderStatus() (FolderStatus, bool) {
	st := e.folder.Load()
	if st == nil {
		return FolderStatus{}, false
	}
	status := st.status
	status.Problems = append([]string(nil), status.Problems...)
	return status, true
}

// managedBy returns the file of the folder that manages the workflow
// name, or "" when the API may change it.
func (e *Engine) managedBy(st *replay.State, name string) string {
	w, ok := st.Workflows[name]
	folder := e.folder.Load()
	if !ok || w.File == "" || folder == nil {
		return ""
	}
	if defines, in := folder.names[w.File]; in && (defines == name || defines == "") {
		return w.File
	}
	return ""
}

// refuseManaged is the API's error for changing a managed workflow.
func (e *Engine) refuseManaged(st *replay.State, name, verb string) error {
	if file := e.managedBy(st, name); file != "" {
		return fmt.Errorf("%w: workflow %q is managed by the file %s of the workflows folder: edit or remove that file "+
			"(the daemon reloads it) instead of asking the API to %s it", ErrConflict, name, file, verb)
	}
	return nil
}
