package main

import (
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

// orkwal versions NAME [VERSION]: a workflow's versions kept, or one
// version's source as applied (GET /workflows/{name}/versions[/{version}]).

func versionsCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:         "versions",
		Usage:        "list a workflow's versions kept, or print one version's source as applied",
		ArgsUsage:    "NAME [VERSION]",
		Flags:        []cli.Flag{outputFlag()},
		Action:       versionsAction,
		BashComplete: completeWorkflows,
	}, true)
}

func versionsAction(c *cli.Context) error {
	s, args, err := startSession(c, 1, 2)
	if err != nil {
		return err
	}
	path := "/workflows/" + url.PathEscape(args[0]) + "/versions"
	if len(args) == 2 {
		var v engine.VersionView
		raw, err := s.cl.get(s.ctx, path+"/"+url.PathEscape(args[1]), &v)
		if err != nil {
			return fmt.Errorf("workflow %s version %s: %w", args[0], args[1], err)
		}
		if s.json {
			return s.writeRaw(raw)
		}
		_, err = io.WriteString(s.out, v.Source)
		return err
	}
	var list engine.VersionsView
	raw, err := s.cl.get(s.ctx, path, &list)
	if err != nil {
		return fmt.Errorf("versions of workflow %s: %w", args[0], err)
	}
	if s.json {
		return s.writeRaw(raw)
	}
	return writeVersions(s.out, list)
}

func writeVersions(w io.Writer, list engine.VersionsView) error {
	t := newTable(w, "VERSION", "APPLIED", "SIZE", "TASKS", "")
	for _, v := range list.Versions {
		current := ""
		if v.Version == list.Current {
			current = "current"
		}
		t.row(strconv.Itoa(v.Version), stamp(&v.AppliedAt), strconv.Itoa(v.Size), strconv.Itoa(v.TaskCount), current)
	}
	return t.flush()
}
