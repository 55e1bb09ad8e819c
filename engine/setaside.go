package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/orkwal/orkwal/wal"
)

// SnapshotIndexes lists the WAL indexes of a data folder's snapshot files,
// newest first (valid or not: the files are not read).
func SnapshotIndexes(dataDir string) ([]uint64, error) { return snapshotIndexes(dataDir) }

// SetAsideSnapshot renames the snapshot at index to "<name>.<suffix>", which
// boot ignores, and fsyncs the snapshots folder: for `orkwal wal repair`,
// whose cut at index K makes every snapshot at K or later describe entries
// the log no longer holds. It returns the new path.
func SetAsideSnapshot(dataDir string, index uint64, suffix string) (string, error) {
	path := Layout(dataDir).Snapshot(index)
	kept := path + "." + suffix
	if err := os.Rename(path, kept); err != nil {
		return "", fmt.Errorf("engine: set aside snapshot: %w", err)
	}
	if err := wal.SyncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("engine: set aside snapshot: %w", err)
	}
	return kept, nil
}
