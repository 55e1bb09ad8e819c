package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/orkwal/orkwal/wal"
)

// FormatFile names the data folder's format version file; FormatVersion is
// its content. A binary refuses a folder written in another format.
const (
	FormatFile    = "FORMAT"
	FormatVersion = "orkwal-data 1"
)

// checkFormat writes the format file into a new data folder, or checks it.
func checkFormat(dir string) error {
	path := Layout(dir).Format()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return writeFormat(dir, path)
	}
	if err != nil {
		return fmt.Errorf("engine: read %s: %w", path, err)
	}
	if got := strings.TrimSpace(string(b)); got != FormatVersion {
		return fmt.Errorf("engine: data folder %s has format %q; this orkwal reads %q", dir, got, FormatVersion)
	}
	return nil
}

func writeFormat(dir, path string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.WriteString(FormatVersion + "\n")
		if err == nil {
			err = f.Sync()
		}
		f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = wal.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("engine: write %s: %w", path, err)
	}
	return nil
}
