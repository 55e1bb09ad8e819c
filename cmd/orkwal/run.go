package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/orkwal/orkwal/api"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/wal"
	"github.com/urfave/cli/v2"
)

// corruptHint is what an operator can do about a boot refused for
// corruption ("" for any other error).
func corruptHint(err error, data string) string {
	if !errors.Is(err, wal.ErrCorrupt) {
		return ""
	}
	return fmt.Sprintf("\nthe data folder is corrupt: `orkwal wal verify --data %s` shows where; restore it from a backup, "+
		"or cut the log there with `orkwal wal repair --data %s --truncate-at INDEX` (what is cut is kept beside wal/)", data, data)
}

// DefaultDataDir is where `orkwal run` keeps its state when --data is not set.
const DefaultDataDir = "orkwal-data"

// DefaultAddr is the API's default listen address: loopback only.
const DefaultAddr = "127.0.0.1:7777"

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "start the daemon on a data folder",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "data", Value: DefaultDataDir, EnvVars: []string{"ORKWAL_DATA"}, Usage: "data folder (WAL, logs)"},
			&cli.StringFlag{Name: "addr", Value: DefaultAddr, EnvVars: []string{"ORKWAL_ADDR"}, Usage: "API listen address: host:port (not a URL)"},
			&cli.StringFlag{Name: "workflows", Usage: "a folder whose *.yaml/*.yml files manage their workflows: loaded at boot, on SIGHUP and when they change, all or nothing"},
			&cli.BoolFlag{Name: "strict-workflows", Usage: "refuse to boot when the --workflows folder has a bad file (by default the daemon serves the versions it had and says why)"},
			maxConcurrentFlag(),
			pythonFlag(),
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "daemon log format: text or json"},
			killGraceFlag(),
			&cli.Int64Flag{Name: "compact-bytes", Value: 64 << 20, Usage: "write a snapshot and truncate the log once it grew by this many bytes"},
			maxLogBytesFlag(),
			&cli.IntFlag{Name: "max-pending-runs", Value: engine.DefaultMaxPendingRuns, EnvVars: []string{"ORKWAL_MAX_PENDING_RUNS"},
				Usage: "runs accepted and not finished, in all: a trigger beyond answers 429 with Retry-After, a cron fire is skipped"},
			&cli.IntFlag{Name: "max-pending-runs-per-workflow", Value: engine.DefaultMaxPendingRunsPerWorkflow, EnvVars: []string{"ORKWAL_MAX_PENDING_RUNS_PER_WORKFLOW"},
				Usage: "runs accepted and not finished, per workflow (as --max-pending-runs)"},
		}, append(append(append(retentionFlags(), alertFlags()...), daemonFlags()...), cloudRunFlags()...)...),
		Action: withoutArguments(runDaemon),
	}
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, exitf(exitUsage, "--log-level: %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, exitf(exitUsage, "--log-format: %q is not text or json", format)
}

// maxConcurrentFlag, killGraceFlag and maxLogBytesFlag are the engine's
// flags that run and exec share (engine.Config's MaxConcurrent, KillGrace
// and MaxLogBytes).
func maxConcurrentFlag() cli.Flag {
	return &cli.IntFlag{Name: "max-concurrent", Value: 16, Usage: "task attempts running at once"}
}

func killGraceFlag() cli.Flag {
	return &cli.DurationFlag{Name: "kill-grace", Value: 10 * time.Second, Usage: "SIGTERM → SIGKILL grace when stopping tasks (above 0)"}
}

func maxLogBytesFlag() cli.Flag {
	return &cli.Int64Flag{Name: "max-log-bytes", Value: 10 << 20, Usage: "cap each task attempt's log (the head and the tail are kept)"}
}

// pythonFlag is the Python of python tasks that name none, for run and
// exec alike (engine.Config.Python).
func pythonFlag() cli.Flag {
	return &cli.StringFlag{Name: "python", Value: "python3", EnvVars: []string{"ORKWAL_PYTHON"},
		Usage: "the Python of python tasks that name none: a name looked up in PATH or a path, resolved once to the binary it runs"}
}

func runDaemon(c *cli.Context) error {
	logger, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return err
	}
	token := c.String("token")
	if err := checkToken(token); err != nil {
		return err
	}
	if err := checkListenAddr(c.String("addr")); err != nil {
		return err
	}
	if err := checkExposure(c.String("addr"), token, c.Bool("insecure")); err != nil {
		return err
	}
	dir := c.String("workflows")
	if dir != "" && c.Bool("strict-workflows") {
		if err := checkStrictFolder(dir); err != nil {
			return err
		}
	}
	if c.Int("max-concurrent") < 1 {
		return exitf(exitUsage, "--max-concurrent must be at least 1")
	}
	if err := checkLimits(c); err != nil {
		return err
	}
	if err := checkAlertFlags(c); err != nil {
		return err
	}
	alerts, err := loadAlerts(c.String("alerts"))
	if err != nil {
		return err
	}
	cloudRun, err := cloudRunConfig(c)
	if err != nil {
		return err
	}
	// Bind before the data folder is touched: a daemon that cannot listen
	// (the port is taken, often by the daemon already running) must not
	// create, lock or replay anything.
	ln, err := net.Listen("tcp", c.String("addr"))
	if err != nil {
		return exitf(exitFailure, "listen: %v", err)
	}
	eng, err := engine.Open(engine.Config{DataDir: c.String("data"), MaxConcurrent: c.Int("max-concurrent"),
		Logger: logger, KillGrace: c.Duration("kill-grace"), Python: c.String("python"), CompactBytes: c.Int64("compact-bytes"),
		Retention: c.Duration("retention"), KeepRuns: c.Int("keep-runs"), MaxLogBytes: c.Int64("max-log-bytes"),
		Alerts: alerts, AlertBaseURL: publicURL(c, ln), AlertGiveUp: c.Duration("alert-give-up"),
		AlertMaxBackoff: c.Duration("alert-max-backoff"),
		MaxPendingRuns:  c.Int("max-pending-runs"), MaxPendingRunsPerWorkflow: c.Int("max-pending-runs-per-workflow"),
		CloudRun: cloudRun})
	if err != nil {
		ln.Close()
		return exitf(exitFailure, "%v%s", err, corruptHint(err, c.String("data")))
	}
	// Tasks may call this daemon back (the http executor's ${env:ORKWAL_ADDR},
	// with ${env:ORKWAL_TOKEN} when there is a token).
	os.Setenv("ORKWAL_ADDR", ln.Addr().String())
	if token != "" {
		os.Setenv("ORKWAL_TOKEN", token)
	}
	warnExposure(logger, ln.Addr().String(), token, c.Bool("insecure"))
	stopTelemetry, err := startTelemetry(eng, logger)
	if err != nil {
		eng.Close()
		return exitf(exitFailure, "%v", err)
	}
	defer stopTelemetry() // after serve closed the engine: flushes the spans of the last runs
	eng.Start()
	memory := newSettler(eng)
	go memory.run(eng.Done())
	var folder *folderLoader
	if dir != "" {
		folder = &folderLoader{dir: dir, eng: eng, logger: logger}
		if err := folder.load("boot"); err != nil && c.Bool("strict-workflows") {
			eng.Close()
			return exitf(exitFailure, "--strict-workflows: %v", err)
		}
	}
	return serve(eng, ln, logger, folder, api.WithToken(token),
		api.WithCounter(settlesMetric, "Times the engine's loop went quiet after a commit and the memory policy looked at the heap.", memory.settles.Load),
		api.WithCounter(returnsMetric, "Times the settled daemon gave its heap's free memory back to the OS (the heap had grown).", memory.returns.Load))
}

// serve runs the API until SIGTERM or SIGINT, then shuts down cleanly:
// stop accepting, stop children, close the WAL. SIGHUP reloads the
// workflows folder (folder may be nil: there is none).
func serve(eng *engine.Engine, ln net.Listener, logger *slog.Logger, folder *folderLoader, opts ...api.Option) error {
	handler := api.New(eng, logger, opts...)
	// WriteTimeout bounds plain answers; log streams extend their own write
	// deadline per write (see api.streamWriteStall).
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	srv.RegisterOnShutdown(handler.StopStreams)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	stopReload := reloadOnSignals(folder, logger)
	defer stopReload()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("orkwal is serving", "addr", "http://"+ln.Addr().String(), "pid", os.Getpid())
	stopNotify := notifySystemd(eng, ln.Addr().String(), logger)
	defer stopNotify()
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-errc:
		eng.Close()
		return exitf(exitFailure, "serve: %v", err)
	}
	shutCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	srv.Shutdown(shutCtx)
	if err := eng.Close(); err != nil {
		return exitf(exitFailure, "close: %v", err)
	}
	logger.Info("stopped cleanly")
	return nil
}

// reloadOnSignals reloads the workflows folder on SIGHUP and when its
// files change, until the returned stop is called. Without a folder,
// SIGHUP only says so: it never stops the daemon (only SIGINT and SIGTERM
// do).
func reloadOnSignals(folder *folderLoader, logger *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	if folder != nil {
		if err := folder.watch(done); err != nil {
			logger.Warn("the workflows folder is reloaded on SIGHUP only", "err", err)
		}
	}
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				if folder == nil {
					logger.Info("SIGHUP: no --workflows folder to reload (SIGINT or SIGTERM stops the daemon)")
					continue
				}
				folder.load("SIGHUP")
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}

// checkListenAddr refuses, before the data folder is opened, an --addr that
// is not host:port: a URL (which the client commands accept) or an address
// without a port, which would otherwise be refused as not loopback, or fail
// to listen only once the folder was opened.
func checkListenAddr(addr string) error {
	if strings.Contains(addr, "://") {
		return exitf(exitUsage, "--addr (or ORKWAL_ADDR) %q: orkwal run listens on a host:port such as %s; "+
			"a URL is for the client commands", addr, DefaultAddr)
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return exitf(exitUsage, "--addr (or ORKWAL_ADDR) %q: want host:port, such as %s", addr, DefaultAddr)
	}
	return nil
}

// checkLimits rejects compaction, log and stop settings that cannot work.
func checkLimits(c *cli.Context) error {
	switch {
	case c.Int64("compact-bytes") < 1<<20:
		return exitf(exitUsage, "--compact-bytes must be at least 1 MiB (1048576)")
	case c.Int64("max-log-bytes") < 1024:
		return exitf(exitUsage, "--max-log-bytes must be at least 1024")
	case c.Int("max-pending-runs") < 1:
		return exitf(exitUsage, "--max-pending-runs must be at least 1")
	case c.Int("max-pending-runs-per-workflow") < 1:
		return exitf(exitUsage, "--max-pending-runs-per-workflow must be at least 1")
	case c.Duration("kill-grace") <= 0: // the engine would read it as its default, 10s
		return exitf(exitUsage, "--kill-grace must be above 0 (the wait from SIGTERM to SIGKILL), got %s", c.Duration("kill-grace"))
	}
	return checkRetention(c)
}

// retentionFlags say which finished runs a compaction prunes: the daemon's
// (`run`), and those of `wal compact`, which must be given the same values
// or it prunes by its own defaults. The environment variables let both
// read one setting.
func retentionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "retention", Value: 7 * 24 * time.Hour, EnvVars: []string{"ORKWAL_RETENTION"},
			Usage: "drop finished runs older than this (at snapshot time)"},
		&cli.IntFlag{Name: "keep-runs", Value: 1000, EnvVars: []string{"ORKWAL_KEEP_RUNS"},
			Usage: "keep at most this many finished runs per workflow"},
	}
}

// checkRetention rejects retention settings that cannot work.
func checkRetention(c *cli.Context) error {
	switch {
	case c.Duration("retention") < time.Minute:
		return exitf(exitUsage, "--retention must be at least 1m")
	case c.Int("keep-runs") < 1:
		return exitf(exitUsage, "--keep-runs must be at least 1")
	}
	return nil
}
