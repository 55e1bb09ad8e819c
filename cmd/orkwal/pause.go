package main

import (
	"fmt"
	"net/url"

	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

// pauseCommand is `orkwal pause` (paused) or `orkwal resume`.
func pauseCommand(paused bool) *cli.Command {
	name, usage := "pause", "pause a run (it dispatches nothing new; its running tasks finish), or one pending task of it. Recorded in the log like every transition"
	if !paused {
		name, usage = "resume", "resume a paused run, or a paused task of it"
	}
	return clientCommand(&cli.Command{
		Name:         name,
		Usage:        usage,
		ArgsUsage:    "RUN [TASK]",
		Flags:        []cli.Flag{outputFlag()},
		Action:       func(c *cli.Context) error { return pauseAction(c, name) },
		BashComplete: completeRuns,
	}, true)
}

func pauseAction(c *cli.Context, verb string) error {
	s, args, err := startRunSession(c, 1, 2)
	if err != nil {
		return err
	}
	path, what := "/runs/"+url.PathEscape(args[0])+"/"+verb, "run "+args[0]
	if len(args) == 2 {
		path = "/runs/" + url.PathEscape(args[0]) + "/tasks/" + url.PathEscape(args[1]) + "/" + verb
		what = "task " + args[1] + " of run " + args[0]
	}
	var run engine.RunView
	_, raw, err := s.cl.postJSON(s.ctx, path, nil, nil, &run)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, what, err)
	}
	if s.json {
		return s.writeRaw(raw)
	}
	fmt.Fprintf(s.out, "%s: %sd; run %s: %s%s\n", what, verb, run.ID, run.Status, cancelling(run))
	return nil
}
