package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/urfave/cli/v2"
)

// execCommand is Ork's `ork run FILE`: one workflow file run to its end by
// an engine of its own, in-process, with no API.
func execCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "exec",
		Usage:     "run one workflow file to its end in an engine of its own and exit with its outcome (Ork's ork run), for CI jobs and scripts",
		ArgsUsage: "FILE",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "keep the state (WAL, logs) in this data folder; default: a temporary one, removed at the end"},
			paramFlag(),
			&cli.DurationFlag{Name: "timeout", Usage: "cancel the run and fail once it has run this long (default: no limit)"},
			maxConcurrentFlag(),
			pythonFlag(),
			killGraceFlag(),
			maxLogBytesFlag(),
			&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "the engine's log on stderr: debug, info, warn or error"},
			outputFlag(),
		}, cloudRunFlags()...),
		Action: execAction,
	}, false)
}

func execAction(c *cli.Context) error {
	args, err := arguments(c, 1, 1)
	if err != nil {
		return err
	}
	if err := checkExecFlags(c); err != nil {
		return err
	}
	cloudRun, err := cloudRunConfig(c)
	if err != nil {
		return err
	}
	file := args[0]
	data, err := os.ReadFile(file)
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	spec, err := workflow.Parse(file, data)
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	logger, err := newLogger("text", c.String("log-level"))
	if err != nil {
		return err
	}
	dir, cleanup, err := execDataDir(c.String("data"))
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	defer cleanup()
	eng, err := engine.Open(engine.Config{DataDir: dir, MaxConcurrent: c.Int("max-concurrent"), Logger: logger,
		KillGrace: c.Duration("kill-grace"), Python: c.String("python"), MaxLogBytes: c.Int64("max-log-bytes"), CloudRun: cloudRun})
	if err != nil {
		return exitf(exitFailure, "%v", err)
	}
	eng.Start()
	run, err := execRun(c, eng, spec, string(data))
	if cerr := eng.Close(); err == nil && cerr != nil {
		err = exitf(exitFailure, "close: %v", cerr)
	}
	if err != nil {
		return err
	}
	if run.Status != "success" {
		return exitf(exitFailure, "run %s %s", run.ID, run.Status)
	}
	return nil
}

// checkExecFlags rejects settings that cannot work.
func checkExecFlags(c *cli.Context) error {
	switch {
	case c.Int("max-concurrent") < 1:
		return exitf(exitUsage, "--max-concurrent must be at least 1")
	case c.Duration("kill-grace") <= 0:
		return exitf(exitUsage, "--kill-grace must be above 0, got %s", c.Duration("kill-grace"))
	case c.Int64("max-log-bytes") < 1024:
		return exitf(exitUsage, "--max-log-bytes must be at least 1024")
	case c.Duration("timeout") < 0:
		return exitf(exitUsage, "--timeout must not be negative")
	}
	return nil
}

// execDataDir is the given data folder, or a temporary one that cleanup
// removes.
func execDataDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "orkwal-exec-*")
	if err != nil {
		return "", nil, fmt.Errorf("temporary data folder: %w", err)
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// execRun records the workflow, starts a run and follows it to its end,
// printing its tasks' changes; SIGINT, SIGTERM and --timeout cancel it.
func execRun(c *cli.Context, eng *engine.Engine, spec *workflow.Spec, source string) (engine.RunView, error) {
	if _, _, err := eng.PutWorkflow(spec, source); err != nil {
		return engine.RunView{}, exitf(exitFailure, "%v", err)
	}
	id, err := eng.Trigger(spec.Name, c.Generic("param").(*paramsFlag).values(), "exec")
	if err != nil {
		return engine.RunView{}, exitf(exitFailure, "%v", err)
	}
	asJSON := c.String("output") == "json"
	out := c.App.Writer
	if !asJSON {
		fmt.Fprintf(out, "run %s of %s\n", id, spec.Name)
	}
	run, why, err := followLocal(eng, id, c.Duration("timeout"), out, asJSON)
	if err != nil {
		return run, exitf(exitFailure, "%v", err)
	}
	if asJSON {
		return run, json.NewEncoder(out).Encode(run)
	}
	if why != "" {
		fmt.Fprintf(out, "%s: the run was cancelled\n", why)
	}
	fmt.Fprintf(out, "run %s %s\n\n", run.ID, run.Status)
	if err := writeTasks(out, run, showOptions{now: time.Now()}); err != nil {
		return run, err
	}
	writeFailedLogs(out, eng, run)
	return run, nil
}

// execLogLines is how much of a failed task's log exec prints: its end.
const execLogLines = 20

// writeFailedLogs prints the end of each failed task's log: with no daemon
// left to ask, it is the only place to see why.
func writeFailedLogs(out io.Writer, eng *engine.Engine, run engine.RunView) {
	for _, t := range run.Tasks {
		if t.Status != "failed" || t.Instances > 0 || t.Attempt == 0 {
			continue
		}
		path, err := eng.TaskLog(run.ID, t.Name, 0)
		if err != nil {
			continue
		}
		data, _ := os.ReadFile(path) // no file: the attempt wrote nothing
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(out, "\n%s (attempt %d): %s; the end of its log:\n", t.Name, t.Attempt, orDash(oneLine(t.Error)))
		for _, line := range lines[max(0, len(lines)-execLogLines):] {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
}

// followLocal waits for the run's end, printing a line per change of its
// tasks (none when quiet). A signal or the timeout cancels the run first;
// why says which.
func followLocal(eng *engine.Engine, id string, timeout time.Duration, out io.Writer, quiet bool) (engine.RunView, string, error) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	prog := newProgress(out)
	why := ""
	for {
		changed := eng.Changed()
		run, err := eng.Run(id)
		if err != nil {
			return run, why, err
		}
		if !quiet {
			prog.update(run)
		}
		if finished(run.Status) {
			return run, why, nil
		}
		select {
		case <-changed:
			continue
		case sig := <-sigs:
			why = sig.String()
		case <-expired:
			why, expired = "timeout after "+timeout.String(), nil
		case <-eng.Done():
			return run, why, errors.New("the engine stopped")
		}
		if _, err := eng.CancelRun(id); err != nil && !errors.Is(err, engine.ErrConflict) {
			return run, why, err
		}
		run, err = eng.WaitRun(context.Background(), id)
		if err != nil || finished(run.Status) {
			return run, why, err
		}
	}
}
