package engine

import (
	"os"
	"path/filepath"
)

// sweepRunFolders removes the logs/ folders and the work/ scratch of runs
// the recovered state does not hold: runs pruned by a compaction that a
// crash stopped between recording runs_pruned and removing their files
// (removePruned), and runs whose first tasks' files were being prepared
// while the frame with their run_created was being fsynced when the crash
// came (see Engine.launch): that run was never acknowledged. Without it
// they would stay for ever, and the data folder would not be bounded. Boot
// only, before the loop starts: files without a run in the recovered state
// can then only be one of those.
func (e *Engine) sweepRunFolders() {
	l := Layout(e.cfg.DataDir)
	unknown := func(run string) bool { _, ok := e.state.Runs[run]; return !ok }
	logs := l.logs()
	des, _ := os.ReadDir(logs) // none yet: nothing to do
	n := 0
	for _, de := range des {
		if !de.IsDir() || !unknown(de.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(logs, de.Name())); err != nil {
			e.log.Warn("could not remove the folder of a pruned run", "folder", filepath.Join(logs, de.Name()), "err", err)
			continue
		}
		n++
	}
	scratch, err := l.removeRunScratch(unknown, true)
	if err != nil {
		e.log.Warn("could not remove the scratch of a pruned run", "folder", l.work(), "err", err)
	}
	if n+scratch > 0 {
		e.log.Info("removed the files of runs pruned or never accepted before a crash", "log folders", n, "scratch", scratch)
	}
}
