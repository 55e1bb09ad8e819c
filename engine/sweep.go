package engine

import (
	"os"
	"path/filepath"
)

// sweepRunFolders removes the logs/ and work/ folders of runs the recovered
// state does not hold: runs pruned by a compaction that a crash stopped
// between recording runs_pruned and removing their folders (removePruned),
// and runs whose first tasks' files were being prepared while the frame
// with their run_created was being fsynced when the crash came (see
// Engine.launch): that run was never acknowledged. Without it they would
// stay for ever, and the data folder would not be bounded. Boot only,
// before the loop starts: a folder without a run in the recovered state
// can then only be one of those.
func (e *Engine) sweepRunFolders() {
	for _, dir := range Layout(e.cfg.DataDir).RunFolders() {
		des, err := os.ReadDir(dir)
		if err != nil {
			continue // none yet
		}
		n := 0
		for _, de := range des {
			if _, ok := e.state.Runs[de.Name()]; ok || !de.IsDir() {
				continue
			}
			if err := os.RemoveAll(filepath.Join(dir, de.Name())); err != nil {
				e.log.Warn("could not remove the folder of a pruned run", "folder", filepath.Join(dir, de.Name()), "err", err)
				continue
			}
			n++
		}
		if n > 0 {
			e.log.Info("removed folders of pruned runs left by a crash during compaction", "folder", dir, "runs", n)
		}
	}
}
