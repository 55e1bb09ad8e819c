package main

import (
	"fmt"
	"net/url"

	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

func retryCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "retry",
		Usage:     "rerun a finished run: its failed, skipped and cancelled tasks (--failed, the default), a task and everything downstream of it (--from), or all of it on the workflow's current version (--latest)",
		ArgsUsage: "RUN",
		Flags: []cli.Flag{outputFlag(),
			&cli.BoolFlag{Name: "failed", Usage: "rerun the failed, skipped and cancelled tasks (the default)"},
			&cli.StringFlag{Name: "from", Usage: "rerun the task `TASK` and every task downstream of it, whatever their outcome"},
			&cli.BoolFlag{Name: "latest", Usage: "start a new run of the workflow's current version with the same params"},
			&cli.BoolFlag{Name: "wait", Usage: "follow the run until it ends; exit 1 if it does not succeed"}},
		Action:       retryAction,
		BashComplete: completeRuns,
	}, true)
}

func retryAction(c *cli.Context) error {
	if _, err := arguments(c, 1, 1); err != nil { // applies the flags written after RUN
		return err
	}
	body := map[string]any{}
	n := 0
	if c.Bool("failed") {
		n++
	}
	if from := c.String("from"); from != "" {
		body["from"] = from
		n++
	}
	if c.Bool("latest") {
		body["latest"] = true
		n++
	}
	if n > 1 {
		return usageError(c, fmt.Errorf("give one of --failed, --from and --latest"))
	}
	return runVerbWith(c, "retry", body)
}

func markCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name: "mark",
		Usage: "set a task's outcome by hand, to unblock a run: a pending task ends so at once; a failed, skipped or cancelled task of an ended run " +
			"marked success makes the tasks downstream of it run again. Recorded in the log like every transition",
		ArgsUsage:    "RUN TASK success|failed",
		Flags:        []cli.Flag{outputFlag()},
		Action:       markAction,
		BashComplete: completeRuns,
	}, true)
}

func markAction(c *cli.Context) error {
	s, args, err := startRunSession(c, 3, 3)
	if err != nil {
		return err
	}
	if args[2] != "success" && args[2] != "failed" {
		return usageError(c, fmt.Errorf("outcome %q: use success or failed", args[2]))
	}
	var run engine.RunView
	path := "/runs/" + url.PathEscape(args[0]) + "/tasks/" + url.PathEscape(args[1]) + "/mark"
	_, raw, err := s.cl.postJSON(s.ctx, path, nil, map[string]string{"status": args[2]}, &run)
	if err != nil {
		return fmt.Errorf("mark %s of run %s: %w", args[1], args[0], err)
	}
	if s.json {
		return s.writeRaw(raw)
	}
	fmt.Fprintf(s.out, "task %s marked %s; run %s: %s\n", args[1], args[2], run.ID, run.Status)
	return nil
}
