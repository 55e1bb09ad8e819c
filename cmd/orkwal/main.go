// Command orkwal is the workflow orchestrator: `orkwal run` starts the daemon,
// the other commands are clients of its HTTP API (validate works offline).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// Exit codes, documented in the README.
const (
	exitOK       = 0
	exitFailure  = 1 // the command failed, or the run it waited for did not succeed
	exitUsage    = 2 // bad flags or arguments
	exitNotFound = 3 // the workflow, run or task does not exist
	exitServer   = 4 // the daemon could not be reached or answered 5xx
)

// exitError carries an exit code through urfave/cli.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

func main() {
	app := newApp()
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "orkwal:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(exitFailure)
	}
}

func init() {
	cli.VersionPrinter = func(c *cli.Context) { readBuildInfo().write(c.App.Writer) }
}

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "orkwal",
		Usage:                "a database-free workflow orchestrator",
		EnableBashCompletion: true,
		Commands:             append(append([]*cli.Command{runCommand(), execCommand(), walCommand()}, clientCommands()...), healthCommand(), versionCommand()),
		Action:               commandGroup(true),
		Version:              readBuildInfo().Version,
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			return &exitError{code: exitUsage, err: err}
		},
	}
	for _, c := range app.Commands {
		exitUsageOnBadFlags(c)
	}
	return app
}

// exitUsageOnBadFlags makes a command and its subcommands exit with
// exitUsage on bad flags (urfave/cli applies the app's handler only to the
// app's own flags).
func exitUsageOnBadFlags(c *cli.Command) {
	if c.OnUsageError == nil {
		c.OnUsageError = func(ctx *cli.Context, err error, _ bool) error { return usageError(ctx, err) }
	}
	if len(c.Subcommands) > 0 && c.Action == nil {
		c.Action = commandGroup(false)
	}
	for _, sub := range c.Subcommands {
		exitUsageOnBadFlags(sub)
	}
}

// commandGroup is the action of the app (root) and of a command with
// subcommands (wal, schedule) when none of their commands was named: their
// help with no argument; with one, a usage error naming it and the commands
// there are. (urfave/cli v2 answers "No help topic for 'x'" with exit code
// 3, which is "not found" here.)
func commandGroup(root bool) cli.ActionFunc {
	return func(c *cli.Context) error {
		if !c.Args().Present() {
			if root {
				return cli.ShowAppHelp(c)
			}
			return cli.ShowSubcommandHelp(c)
		}
		var names []string
		for _, cmd := range c.Command.VisibleCommands() {
			if cmd.Name != "help" {
				names = append(names, cmd.Name)
			}
		}
		prefix, help := "", "orkwal"
		if !root {
			prefix, help = commandPath(c)+": ", "orkwal "+commandPath(c)
		}
		return exitf(exitUsage, "%sunknown command %q: use %s (see %s --help)",
			prefix, c.Args().First(), strings.Join(names, ", "), help)
	}
}
