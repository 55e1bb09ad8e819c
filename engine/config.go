package engine

import (
	"cmp"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/executors/notify"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// Config configures an Engine. NewConfig-style defaults are filled by
// withDefaults; Validate rejects what cannot work.
type Config struct {
	DataDir        string
	MaxConcurrent  int                           // attempts in flight at once; default 16
	Executors      map[string]executors.Executor // by kind; default process + noop
	Deferred       executors.Executor            // tracks deferred tasks' jobs (deferred.go); default executors.NewDeferred
	CloudRun       executors.CloudRunConfig      // the default executors' cloudrun (its project and region)
	Clock          Clock                         // default WallClock
	Logger         *slog.Logger                  // default slog.Default()
	KillGrace      time.Duration                 // SIGTERM → SIGKILL; default 10s
	Python         string                        // python tasks' interpreter when they name none; default python3
	MaxOutputBytes int64                         // ORKWAL_OUTPUT cap; default 1 MiB
	MaxLogBytes    int64                         // per attempt log cap (head + tail kept); default 10 MiB, negative = none
	SegmentSize    int                           // WAL segment bytes; default wal.DefaultSegmentSize
	MaxBatch       int                           // events per turn; default 4096
	// RecoveryBackoff is the first wait before reopening the WAL after a
	// disk-full failure; it doubles up to 30s. Default 1s.
	RecoveryBackoff time.Duration
	WALFault        wal.Fault // tests only: inject WAL failures
	WALPadStep      int       // tests only: wal.Options.PadStep

	// CompactBytes: a snapshot is written once the log has grown by this
	// much since the last one. Default 64 MiB; negative = never.
	CompactBytes int64
	// Retention drops finished runs older than this at snapshot time
	// (default 7 days); KeepRuns keeps at most this many finished runs per
	// workflow (default 1000).
	Retention time.Duration
	KeepRuns  int
	// CompactFault, tests only: called at each crash point of a compaction
	// (start, after-mkdir, before-rename, after-rename, after-truncate); an error stops it
	// there. Also called with "begin", a notification, on the loop under its
	// lock when a background compaction is decided (before its start).
	CompactFault func(step string) error
	// MaxPendingRuns bounds the runs accepted and not finished (pending or
	// running), MaxPendingRunsPerWorkflow those of one workflow; a trigger
	// beyond either is refused (see admission.go). Defaults
	// DefaultMaxPendingRuns and DefaultMaxPendingRunsPerWorkflow.
	MaxPendingRuns            int
	MaxPendingRunsPerWorkflow int
	// Rand draws uniformly from [0, 1) for the retry backoff's jitter
	// (replay.MaxJitter) and the alerts' backoff; default math/rand/v2.
	// Tests inject their own.
	Rand func() float64

	// Alerts (docs/format.md, "Alerts"): the daemon's default targets,
	// told besides each workflow's own; the base of the run page's link
	// (e.g. http://127.0.0.1:7777: a link is <base>/ui/runs/<id>); the
	// sender (default notify.New); how long a delivery is retried
	// (default 24 h), its longest backoff (default 5 min), and the storm
	// limit per target (AlertThrottle alerts per AlertWindow; defaults 10
	// per 10 min).
	Alerts          []*workflow.Alert
	AlertBaseURL    string
	AlertSender     AlertSender
	AlertGiveUp     time.Duration
	AlertMaxBackoff time.Duration
	AlertThrottle   int
	AlertWindow     time.Duration
}

func (c Config) alertDefaults() Config {
	if c.AlertSender == nil {
		c.AlertSender = notify.New(notify.Config{})
	}
	if c.AlertGiveUp <= 0 {
		c.AlertGiveUp = DefaultAlertGiveUp
	}
	if c.AlertMaxBackoff <= 0 {
		c.AlertMaxBackoff = DefaultAlertMaxBackoff
	}
	if c.AlertThrottle <= 0 {
		c.AlertThrottle = DefaultAlertThrottle
	}
	if c.AlertWindow <= 0 {
		c.AlertWindow = DefaultAlertWindow
	}
	return c
}

func (c Config) withDefaults() Config {
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 16
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.CloudRun.Google.Tokens == nil {
		// One token for the cloudrun executor and the Deferred one (which
		// polls its executions): a token fetched once until it expires,
		// through the cloudrun executor's client when one is configured
		// (as before the token was shared; nil: the default client).
		c.CloudRun.Google.Tokens = executors.NewGoogleTokens(c.CloudRun.Client)
	}
	if c.Executors == nil {
		py := executors.NewPython(executors.PythonConfig{KillGrace: c.KillGrace, Logger: c.Logger, Interpreter: c.Python})
		c.Executors = map[string]executors.Executor{
			"process": executors.NewProcess(executors.ProcessConfig{KillGrace: c.KillGrace, Logger: c.Logger}),
			"noop":    executors.Noop{},
			"python":  py,
			"library": py, // ork_task_run through the python runner (PythonJob.Library)
			"http":    executors.NewHTTP(executors.HTTPConfig{Logger: c.Logger}),
		}
		c.CloudRun.Logger = cmp.Or(c.CloudRun.Logger, c.Logger)
		c.Executors["cloudrun"] = executors.NewCloudRun(c.CloudRun)
	}
	if c.Deferred == nil {
		c.Deferred = executors.NewDeferred(executors.DeferredConfig{Logger: c.Logger, Google: c.CloudRun.Google})
	}
	if c.Clock == nil {
		c.Clock = WallClock
	}
	c = c.alertDefaults()
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.KillGrace <= 0 {
		c.KillGrace = 10 * time.Second
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = 1 << 20
	}
	if c.MaxLogBytes == 0 {
		c.MaxLogBytes = 10 << 20
	}
	if c.CompactBytes == 0 {
		c.CompactBytes = 64 << 20
	}
	if c.Retention <= 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	if c.KeepRuns <= 0 {
		c.KeepRuns = 1000
	}
	if c.RecoveryBackoff <= 0 {
		c.RecoveryBackoff = time.Second
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 4096
	}
	if c.MaxPendingRuns <= 0 {
		c.MaxPendingRuns = DefaultMaxPendingRuns
	}
	if c.MaxPendingRunsPerWorkflow <= 0 {
		c.MaxPendingRunsPerWorkflow = DefaultMaxPendingRunsPerWorkflow
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("engine: data folder not set")
	}
	return nil
}
