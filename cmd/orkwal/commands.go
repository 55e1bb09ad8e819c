package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/api"
	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

// followWait is how long one request of a followed run waits for its end
// (within the client's timeout).
const followWait = 20 * time.Second

// pollInterval is how often `trigger --wait` asks for the run's state.
const pollInterval = 200 * time.Millisecond

// clientCommands are the commands that talk to the daemon, and validate.
func clientCommands() []*cli.Command {
	return []*cli.Command{
		applyCommand(), validateCommand(), triggerCommand(), runsCommand(),
		showCommand(), watchCommand(), logsCommand(), workflowsCommand(), versionsCommand(), deleteCommand(), cancelCommand(), retryCommand(), markCommand(), pauseCommand(true), pauseCommand(false),
		scheduleCommand(), alertsCommand(),
		completionCommand(),
	}
}

// clientCommand completes a client command: usage errors exit with exitUsage and,
// when remote, the --addr and --token flags are added.
func clientCommand(cmd *cli.Command, remote bool) *cli.Command {
	if remote {
		cmd.Flags = append(cmd.Flags, &cli.StringFlag{Name: "addr", Value: DefaultAddr, EnvVars: []string{"ORKWAL_ADDR"},
			Usage: "the daemon's `ADDRESS`: host:port, or an http:// or https:// URL (with a path prefix behind a proxy)"}, tokenFlag())
	}
	cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error { return usageError(c, err) }
	action := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		if err := action(c); !errors.Is(err, errHelpShown) {
			return err
		}
		return nil
	}
	return cmd
}

// paramFlag is -p key=value, repeatable: a run's params.
func paramFlag() cli.Flag {
	return &cli.GenericFlag{Name: "param", Aliases: []string{"p"}, Value: &paramsFlag{},
		Usage: "set the workflow parameter `key=value` (repeatable)"}
}

func outputFlag() cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output `FORMAT`: table or json"}
}

func applyCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "apply",
		Usage:     "validate workflow files (a folder: its *.yaml and *.yml) and record them in the daemon as their workflows' new versions, all or none",
		ArgsUsage: "FILE|FOLDER...",
		Action:    applyAction,
	}, true)
}

func validateCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "validate",
		Usage:     "check workflow files offline, without a daemon",
		ArgsUsage: "FILE...",
		Action:    validateAction,
	}, false)
}

func triggerCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "trigger",
		Usage:     "start a run of a workflow and print its id",
		ArgsUsage: "NAME",
		Flags: []cli.Flag{
			paramFlag(),
			&cli.BoolFlag{Name: "wait", Usage: "follow the run until it ends (a live view on a terminal); exit 1 if it failed"},
			&cli.StringFlag{Name: "idempotency-key", Usage: "send `KEY` as the Idempotency-Key: a trigger with a key already used answers that run, creating none"},
			outputFlag(),
		},
		Action:       triggerAction,
		BashComplete: completeWorkflows,
	}, true)
}

func runsCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:  "runs",
		Usage: "list runs, newest first",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workflow", Usage: "only the runs of the workflow `NAME`"},
			&cli.StringFlag{Name: "status", Usage: "only the runs in `STATUS`: " + strings.Join(runStatuses, ", ")},
			&cli.StringFlag{Name: "since", Usage: "only the runs created at or after `TIME`: RFC 3339, a date (2006-01-02, local), or an age (90m, 2h, 7d)"},
			&cli.IntFlag{Name: "limit", Value: 20, Usage: "show at most `N` runs (0: all)"},
			outputFlag(),
		},
		Action: runsAction,
	}, true)
}

func showCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "show",
		Usage:     "show a run, its tasks (a fan-out on one line) and the attempts that did not succeed",
		ArgsUsage: "RUN",
		Flags: []cli.Flag{outputFlag(),
			&cli.BoolFlag{Name: "instances", Aliases: []string{"a"}, Usage: "list each instance of a fan-out on its own line"}},
		Action:       showAction,
		BashComplete: completeRuns,
	}, true)
}

func cancelCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:         "cancel",
		Usage:        "cancel a run: pending tasks are cancelled, running ones get SIGTERM, then SIGKILL",
		ArgsUsage:    "RUN",
		Flags:        []cli.Flag{outputFlag()},
		Action:       func(c *cli.Context) error { return runVerb(c, "cancel") },
		BashComplete: completeRuns,
	}, true)
}

// runVerb posts /runs/RUN/<verb> and prints the run's status after it.
func runVerb(c *cli.Context, verb string) error {
	return runVerbWith(c, verb, struct{}{})
}

// runVerbWith is runVerb with a request body.
func runVerbWith(c *cli.Context, verb string, body any) error {
	s, args, err := startRunSession(c, 1, 1)
	if err != nil {
		return err
	}
	var run engine.RunView
	_, raw, err := s.cl.postJSON(s.ctx, "/runs/"+url.PathEscape(args[0])+"/"+verb, nil, body, &run)
	if err != nil {
		return fmt.Errorf("%s run %s: %w", verb, args[0], err)
	}
	if c.Bool("wait") {
		return s.wait(run.ID)
	}
	if s.json {
		return s.writeRaw(raw)
	}
	status := run.Status
	if run.CancelRequested {
		status += " (cancelling: stopping its running tasks)"
	}
	fmt.Fprintf(s.out, "run %s: %s\n", run.ID, status)
	return nil
}

func logsCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "logs",
		Usage:     "print the output (stdout and stderr) of a task's attempt",
		ArgsUsage: "RUN TASK",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "attempt", DefaultText: "the latest", Usage: "print attempt `N` (from 1)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"},
				Usage: "keep printing the output as it is written until the task ends, across its retries (with --attempt: until that attempt ends; waits for a task not started yet)"},
		},
		Action:       logsAction,
		BashComplete: completeRuns,
	}, true)
}

func workflowsCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:   "workflows",
		Usage:  "list the workflows the daemon knows",
		Flags:  []cli.Flag{outputFlag()},
		Action: workflowsAction,
	}, true)
}

func deleteCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:         "delete",
		Usage:        "delete a workflow (refused while a run of it is not finished); its runs stay listed",
		ArgsUsage:    "NAME",
		Action:       deleteAction,
		BashComplete: completeWorkflows,
	}, true)
}

// session is what a remote command works with.
type session struct {
	ctx  context.Context
	cl   *client
	out  io.Writer
	json bool // -o json
	tty  bool // out is a terminal: live views
}

// startSession checks the arguments (between minArgs and maxArgs) and the output
// format, and returns the session and the arguments.
func startSession(c *cli.Context, minArgs, maxArgs int) (*session, []string, error) {
	args, err := arguments(c, minArgs, maxArgs)
	if err != nil {
		return nil, nil, err
	}
	s := &session{ctx: c.Context, out: c.App.Writer, tty: isTerminal(c.App.Writer)}
	if s.ctx == nil {
		s.ctx = context.Background()
	}
	switch format := c.String("output"); format {
	case "", "table":
	case "json":
		s.json = true
	default:
		return nil, nil, usageError(c, fmt.Errorf("-o %q: use table or json", format))
	}
	if s.cl, err = newClient(c.String("addr"), c.String("token")); err != nil {
		return nil, nil, err
	}
	return s, args, nil
}

// startRunSession is startSession for a command whose first argument is a
// run: a whole id or a unique prefix of one, resolved to the id.
func startRunSession(c *cli.Context, minArgs, maxArgs int) (*session, []string, error) {
	s, args, err := startSession(c, minArgs, maxArgs)
	if err != nil {
		return nil, nil, err
	}
	if args[0], err = s.resolveRun(args[0]); err != nil {
		return nil, nil, err
	}
	return s, args, nil
}

// writeRaw prints an answer of the API as it came (indented JSON).
func (s *session) writeRaw(data []byte) error {
	if _, err := s.out.Write(data); err != nil {
		return exitf(exitFailure, "write output: %v", err)
	}
	return nil
}

func validateAction(c *cli.Context) error {
	files, err := arguments(c, 1, -1)
	if err != nil {
		return err
	}
	bad := 0
	for _, file := range files {
		summary, err := validateFile(file)
		if err != nil {
			bad++
			fmt.Fprintln(c.App.ErrWriter, err)
			continue
		}
		fmt.Fprintf(c.App.Writer, "%s: ok (%s)\n", file, summary)
	}
	if bad > 0 {
		return exitf(exitFailure, "%d of %d workflow files invalid", bad, len(files))
	}
	return nil
}

// validateFile parses file and summarizes its tasks: "3 tasks: a, b, c".
func validateFile(file string) (string, error) {
	wf := engine.ReadWorkflowFile(file)
	if wf.Err != nil {
		return "", wf.Err
	}
	spec := wf.Spec
	names := make([]string, len(spec.Tasks))
	for i, t := range spec.Tasks {
		names[i] = t.Name
	}
	noun := "tasks"
	if len(names) == 1 {
		noun = "task"
	}
	return fmt.Sprintf("%d %s: %s", len(names), noun, strings.Join(names, ", ")), nil
}

func triggerAction(c *cli.Context) error {
	s, args, err := startSession(c, 1, 1)
	if err != nil {
		return err
	}
	params := c.Generic("param").(*paramsFlag)
	header := http.Header{"X-Orkwal-Trigger": {"cli"}}
	if key := c.String("idempotency-key"); key != "" {
		if len(key) > api.MaxIdempotencyKey || strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			return usageError(c, fmt.Errorf("--idempotency-key: must be 1 to %d printable ASCII characters", api.MaxIdempotencyKey))
		}
		header.Set("Idempotency-Key", key)
	}
	var created struct {
		ID string `json:"id"`
	}
	status, raw, err := s.cl.postJSON(s.ctx, "/workflows/"+url.PathEscape(args[0])+"/runs",
		header, map[string]any{"params": params.values()}, &created)
	if err != nil {
		return fmt.Errorf("trigger %s: %w", args[0], err)
	}
	if status == http.StatusOK && !s.json {
		fmt.Fprintf(c.App.ErrWriter, "orkwal: run %s was created earlier with this idempotency key; none created\n", created.ID)
	}
	if !c.Bool("wait") {
		if s.json {
			return s.writeRaw(raw)
		}
		fmt.Fprintln(s.out, created.ID)
		return nil
	}
	return s.wait(created.ID)
}

// runStatuses are the statuses a run can have, for --status.
var runStatuses = []string{"pending", "running", "success", "failed", "cancelled"}

// runsPageSize is how many runs `orkwal runs` asks for at once (the API's
// maximum page).
var runsPageSize = api.MaxRunsLimit

func runsAction(c *cli.Context) error {
	s, _, err := startSession(c, 0, 0)
	if err != nil {
		return err
	}
	q := url.Values{}
	if w := c.String("workflow"); w != "" {
		q.Set("workflow", w)
	}
	if st := c.String("status"); st != "" {
		if !slices.Contains(runStatuses, st) {
			return usageError(c, fmt.Errorf("--status %q: use one of %s", st, strings.Join(runStatuses, ", ")))
		}
		q.Set("status", st)
	}
	if v := c.String("since"); v != "" {
		t, err := parseSince(v, time.Now())
		if err != nil {
			return usageError(c, fmt.Errorf("--since %q: %v", v, err))
		}
		q.Set("since", t.UTC().Format(time.RFC3339Nano))
	}
	limit := c.Int("limit")
	if limit < 0 {
		return usageError(c, fmt.Errorf("--limit %d: must be 0 (all) or more", limit))
	}
	var runs []engine.RunView
	var pages []json.RawMessage
	for {
		size := runsPageSize
		if limit > 0 {
			size = min(size, limit-len(runs))
		}
		q.Set("limit", strconv.Itoa(size))
		var page []engine.RunView
		next, raw, err := s.cl.getPage(s.ctx, "/runs?"+q.Encode(), &page)
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, page...)
		pages = append(pages, raw)
		if next == "" || len(page) == 0 || (limit > 0 && len(runs) >= limit) {
			break
		}
		q.Set("cursor", next)
	}
	if s.json {
		if len(pages) == 1 {
			return s.writeRaw(pages[0])
		}
		return s.writeRaw(joinArrays(pages))
	}
	return writeRuns(s.out, runs)
}

// joinArrays joins JSON arrays into one, indented as the API indents, each
// element kept as it came.
func joinArrays(arrays []json.RawMessage) []byte {
	var all []json.RawMessage
	for _, a := range arrays {
		var elems []json.RawMessage
		json.Unmarshal(a, &elems)
		all = append(all, elems...)
	}
	if all == nil {
		all = []json.RawMessage{}
	}
	out, _ := json.MarshalIndent(all, "", "  ")
	return append(out, '\n')
}

// parseSince reads --since: an RFC 3339 time, a date (local midnight), or
// an age before now (a Go duration, or whole days as 7d).
func parseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", v, time.Local); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, errors.New("use an RFC 3339 time (2026-03-01T12:00:00Z), a date (2026-03-01) or an age (90m, 2h, 7d)")
}

func showAction(c *cli.Context) error {
	s, args, err := startRunSession(c, 1, 1)
	if err != nil {
		return err
	}
	var run engine.RunView
	raw, err := s.cl.get(s.ctx, "/runs/"+url.PathEscape(args[0]), &run)
	if err != nil {
		return fmt.Errorf("show run: %w", err)
	}
	if s.json {
		return s.writeRaw(raw)
	}
	return writeRun(s.out, run, showOptions{instances: c.Bool("instances"), now: time.Now()})
}

func deleteAction(c *cli.Context) error {
	s, args, err := startSession(c, 1, 1)
	if err != nil {
		return err
	}
	name := args[0]
	if _, _, err := s.cl.raw(s.ctx, request{method: http.MethodDelete, path: "/workflows/" + url.PathEscape(name)}); err != nil {
		return fmt.Errorf("delete workflow %s: %w", name, err)
	}
	fmt.Fprintf(s.out, "workflow %s deleted\n", name)
	return nil
}

func workflowsAction(c *cli.Context) error {
	s, _, err := startSession(c, 0, 0)
	if err != nil {
		return err
	}
	var wfs []engine.WorkflowView
	raw, err := s.cl.get(s.ctx, "/workflows", &wfs)
	if err != nil {
		return fmt.Errorf("list workflows: %w", err)
	}
	if s.json {
		return s.writeRaw(raw)
	}
	return writeWorkflows(s.out, wfs)
}

// paramsFlag collects -p key=value flags; a later value of a key wins.
type paramsFlag struct{ m map[string]string }

func (p *paramsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return errors.New("expected key=value")
	}
	if p.m == nil {
		p.m = map[string]string{}
	}
	p.m[k] = v
	return nil
}

func (p *paramsFlag) String() string {
	keys := make([]string, 0, len(p.m))
	for k := range p.m {
		keys = append(keys, k+"="+p.m[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// values is the params of the trigger request, {} when none.
func (p *paramsFlag) values() map[string]string {
	if p.m == nil {
		return map[string]string{}
	}
	return p.m
}

// errHelpShown ends a command whose help was asked for after its arguments.
var errHelpShown = errors.New("help shown")

// usageError is an exitUsage error followed by the command's usage line.
func usageError(c *cli.Context, err error) error {
	name, usage := "", ""
	if c.Command != nil {
		name = commandPath(c)
		usage = strings.TrimSpace("orkwal " + name + " [options] " + c.Command.ArgsUsage)
	}
	return exitf(exitUsage, "%s: %v\nusage: %s (see orkwal %s --help)", name, err, usage, name)
}

// commandPath is the command's name under the app's, with its parents':
// "schedule pause", not "pause" (urfave/cli v2's FullName has the name
// alone).
func commandPath(c *cli.Context) string {
	var names []string
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != c.App.Name {
			names = append([]string{ctx.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// arguments returns the positional arguments, checking there are between
// minArgs and maxArgs of them (maxArgs < 0: no upper bound).
func arguments(c *cli.Context, minArgs, maxArgs int) ([]string, error) {
	args, err := interspersed(c)
	if err != nil {
		return nil, err
	}
	if len(args) < minArgs || (maxArgs >= 0 && len(args) > maxArgs) {
		return nil, usageError(c, fmt.Errorf("expected %s, got %d", countArgs(minArgs, maxArgs), len(args)))
	}
	return args, nil
}

// withoutArguments wraps the action of a command that takes flags alone
// (run, the wal tools), so that an argument (`orkwal run data`, meant as
// --data) is a usage error instead of being ignored.
func withoutArguments(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if _, err := arguments(c, 0, 0); err != nil {
			return err
		}
		return action(c)
	}
}

func countArgs(minArgs, maxArgs int) string {
	switch {
	case maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", minArgs)
	case minArgs == maxArgs && minArgs == 0:
		return "no arguments"
	case minArgs == maxArgs:
		return fmt.Sprintf("%d argument(s)", minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", minArgs, maxArgs)
}

// interspersed applies the flags written after the arguments, which
// urfave/cli v2 leaves in the arguments (`orkwal trigger etl -p a=1 --wait`),
// and returns the arguments alone. "--" ends the flags.
func interspersed(c *cli.Context) ([]string, error) {
	rest := c.Args().Slice()
	var args []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			return append(args, rest[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			args = append(args, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			cli.ShowSubcommandHelp(c)
			return nil, errHelpShown
		}
		f := lookupFlag(c.Command, name)
		if f == nil {
			return nil, usageError(c, fmt.Errorf("flag provided but not defined: %s", a))
		}
		if !hasValue && takesValue(f) {
			if i+1 >= len(rest) {
				return nil, usageError(c, fmt.Errorf("flag needs an argument: %s", a))
			}
			i++
			value = rest[i]
		} else if !hasValue {
			value = "true"
		}
		if err := c.Set(f.Names()[0], value); err != nil {
			return nil, usageError(c, fmt.Errorf("invalid value %q for flag %s: %v", value, a, err))
		}
	}
	return args, nil
}

func lookupFlag(cmd *cli.Command, name string) cli.Flag {
	if cmd == nil {
		return nil
	}
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if v, ok := f.(interface{ TakesValue() bool }); ok {
		return v.TakesValue()
	}
	return true
}
