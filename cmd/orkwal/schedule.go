package main

import (
	"fmt"
	"net/url"

	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

// scheduleCommand pauses and resumes workflows' cron schedules.
func scheduleCommand() *cli.Command {
	verb := func(name, usage string) *cli.Command {
		return clientCommand(&cli.Command{
			Name:      name,
			Usage:     usage,
			ArgsUsage: "NAME",
			Flags:     []cli.Flag{outputFlag()},
			Action:    func(c *cli.Context) error { return scheduleAction(c, name) },
		}, true)
	}
	return &cli.Command{
		Name:  "schedule",
		Usage: "pause or resume a workflow's cron schedule",
		Subcommands: []*cli.Command{
			verb("pause", "stop a workflow's schedule from firing"),
			verb("resume", "let a paused schedule fire again (what was due while paused is not caught up)"),
		},
	}
}

func scheduleAction(c *cli.Context, verb string) error {
	s, args, err := startSession(c, 1, 1)
	if err != nil {
		return err
	}
	var w engine.WorkflowView
	_, raw, err := s.cl.postJSON(s.ctx, "/workflows/"+url.PathEscape(args[0])+"/schedule/"+verb, nil, struct{}{}, &w)
	if err != nil {
		return fmt.Errorf("%s schedule of %s: %w", verb, args[0], err)
	}
	if s.json {
		return s.writeRaw(raw)
	}
	if w.Schedule == nil {
		return fmt.Errorf("%s schedule of %s: the answer has no schedule", verb, args[0])
	}
	state := "running, next fire " + stamp(w.Schedule.NextFire)
	if w.Schedule.Paused {
		state = "paused"
	}
	fmt.Fprintf(s.out, "schedule of %s (%s): %s\n", w.Name, w.Schedule.Cron, state)
	return nil
}
