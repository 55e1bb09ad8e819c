package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/orkwal/orkwal/engine"
)

// folderQuiet is how long the folder must stay still after a change before
// it is reloaded: an editor's save (write a temporary file, rename it) or a
// deploy that copies several files is one reload, not several.
const folderQuiet = 300 * time.Millisecond

// folderLoader keeps the daemon's --workflows folder recorded: at boot, on
// SIGHUP and when its files change (engine/folder.go says who owns what).
type folderLoader struct {
	dir    string
	eng    *engine.Engine
	logger *slog.Logger
	mu     sync.Mutex // one load at a time
}

// load records the folder as one change set and logs what changed, or,
// loudly, why nothing was recorded.
func (l *folderLoader) load(why string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	change, err := l.eng.LoadFolder(l.dir)
	if err != nil {
		l.logger.Error("workflows folder NOT loaded: the daemon serves the versions it already had; fix the files "+
			"(orkwal validate) and they are loaded again", "folder", l.dir, "trigger", why, "err", err)
		return err
	}
	l.logger.Info("workflows folder loaded", "folder", l.dir, "trigger", why, "recorded", describeRecorded(change.Recorded),
		"unchanged", change.Unchanged, "released", strings.Join(change.Released, ", "))
	return nil
}

// describeRecorded is "etl@3 (etl.yaml), hello@1 (hello.yaml)", or "none".
func describeRecorded(recs []engine.WorkflowChange) string {
	if len(recs) == 0 {
		return "none"
	}
	parts := make([]string, len(recs))
	for i, r := range recs {
		parts[i] = fmt.Sprintf("%s@%d (%s)", r.Name, r.Version, filepath.Base(r.File))
	}
	return strings.Join(parts, ", ")
}

// watch reloads the folder once it has been still for folderQuiet after a
// change to one of its workflow files, until stop is closed. It uses
// fsnotify (inotify on Linux): polling the folder would cost a read of
// every file at each tick, and miss nothing only with a short tick.
func (l *folderLoader) watch(stop <-chan struct{}) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", l.dir, err)
	}
	if err := w.Add(l.dir); err != nil {
		w.Close()
		return fmt.Errorf("watching %s: %w", l.dir, err)
	}
	go l.watchLoop(w, stop)
	return nil
}

func (l *folderLoader) watchLoop(w *fsnotify.Watcher, stop <-chan struct{}) {
	defer w.Close()
	var quiet *time.Timer
	var due <-chan time.Time
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if !isWorkflowFile(ev.Name) || ev.Op == fsnotify.Chmod {
				continue
			}
			if quiet == nil {
				quiet = time.NewTimer(folderQuiet)
			} else {
				quiet.Reset(folderQuiet)
			}
			due = quiet.C
		case <-due:
			due = nil
			l.load("a file changed")
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			l.logger.Warn("watching the workflows folder (SIGHUP reloads it)", "folder", l.dir, "err", err)
		}
	}
}

func isWorkflowFile(name string) bool {
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml"
}

// checkStrictFolder refuses to boot, before the data folder is opened, on
// a folder with a bad file (--strict-workflows).
func checkStrictFolder(dir string) error {
	if err := engine.CheckFolder(dir); err != nil {
		if errors.Is(err, engine.ErrFolder) {
			return exitf(exitFailure, "--strict-workflows: %v", err)
		}
		return exitf(exitFailure, "%v", err)
	}
	return nil
}
