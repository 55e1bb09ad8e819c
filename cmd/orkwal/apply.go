package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

// applyAction reads every file given and every *.yaml and *.yml of every
// folder given, checks them all, and records them all or none (POST
// /workflows/batch). The daemon resolves each workflow's relative paths
// against its file's folder, as for --workflows (it runs on the same
// machine).
func applyAction(c *cli.Context) error {
	s, args, err := startSession(c, 1, -1)
	if err != nil {
		return err
	}
	files, err := applyFiles(args)
	if err != nil {
		return err
	}
	var problems []string
	type item struct {
		File   string `json:"file"`
		Source string `json:"source"`
	}
	items := make([]item, 0, len(files))
	for _, f := range files {
		if f.Err != nil {
			problems = append(problems, f.Err.Error())
			continue
		}
		items = append(items, item{File: f.Path, Source: f.Source})
	}
	if len(problems) > 0 {
		return exitf(exitFailure, "%d of %d workflow files invalid, none was applied:\n%s",
			len(problems), len(files), strings.Join(problems, "\n"))
	}
	var answer struct {
		Workflows []engine.PutResult `json:"workflows"`
	}
	if _, _, err := s.cl.postJSON(s.ctx, "/workflows/batch", nil, map[string]any{"workflows": items}, &answer); err != nil {
		return fmt.Errorf("apply %s: %w", strings.Join(args, " "), err)
	}
	for _, r := range answer.Workflows {
		if r.Changed {
			fmt.Fprintf(s.out, "workflow %s: version %d recorded\n", r.Name, r.Version)
		} else {
			fmt.Fprintf(s.out, "workflow %s: unchanged (version %d)\n", r.Name, r.Version)
		}
	}
	return nil
}

// applyFiles reads the files and folders given, in order: a folder's
// *.yaml and *.yml files in name order (not its subfolders). Each file is
// read and checked; a path that cannot be read, or a folder without
// workflow files, is an error.
func applyFiles(args []string) ([]engine.FolderFile, error) {
	var out []engine.FolderFile
	seen := map[string]bool{}
	add := func(path string) {
		if !seen[path] {
			seen[path] = true
			out = append(out, engine.ReadWorkflowFile(path))
		}
	}
	for _, arg := range args {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, exitf(exitFailure, "%s: %v", arg, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, exitf(exitFailure, "%v", err)
		}
		if !fi.IsDir() {
			add(abs)
			continue
		}
		entries, err := os.ReadDir(abs)
		if err != nil {
			return nil, exitf(exitFailure, "%v", err)
		}
		n := 0
		for _, de := range entries {
			if ext := filepath.Ext(de.Name()); !de.IsDir() && (ext == ".yaml" || ext == ".yml") {
				add(filepath.Join(abs, de.Name()))
				n++
			}
		}
		if n == 0 {
			return nil, exitf(exitFailure, "%s: no workflow files (*.yaml, *.yml) in this folder", arg)
		}
	}
	return out, nil
}
