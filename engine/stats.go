package engine

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

// Histogram is the latency histogram the engine and its WAL keep (the WAL
// measures its own writes and fsyncs, and imports nothing of orkwal, so the
// type lives there); the API reads it through the engine, its one door.
type Histogram = wal.Histogram

// LatencyBuckets are the upper bounds, in seconds, of a Histogram's buckets.
var LatencyBuckets = wal.LatencyBuckets

// Stats are the engine's metrics (GET /metrics exports them).
type Stats struct {
	DispatchLatency *Histogram // from a task being due to its dispatch
	TaskDuration    *Histogram // from an attempt's start to its end
	WALWrite        *Histogram
	WALSync         *Histogram
	WALBytes        int64
	SnapshotBytes   int64
	SnapshotIndex   uint64
	Turns           int64
	Compactions     int64
	DiskRecoveries  int64 // in-process recoveries after a full disk
	BootCutBytes    int64 // torn-tail bytes cut at boot
	TasksInFlight   int
	SlotsInUse      int // executor slots held (at most --max-concurrent)
	TasksAhead      int // attempts dispatched ahead, waiting for a slot (slots.go)
	TasksReady      int
	Workflows       int
	Runs            map[string]int // by status, every status present
	Tasks           map[string]int // by status (a fan-out counts as itself and as each instance), every status present
	// Alerts since the daemon started: raised, deliveries sent (accepted
	// by their target), attempts failed, deliveries given up and throttled.
	AlertsRaised, AlertsSent, AlertsFailed, AlertsGivenUp, AlertsThrottled int64
	// Admission control (admission.go): unfinished runs, in all and per
	// workflow (those with any), their bounds, and the new runs refused.
	PendingRuns               int
	PendingRunsByWorkflow     map[string]int
	MaxPendingRuns            int
	MaxPendingRunsPerWorkflow int
	RunsRefused               int64
}

// runStatuses and taskStatuses are every status, in their lifecycle order.
var (
	runStatuses  = []replay.RunStatus{replay.RunPending, replay.RunRunning, replay.RunSuccess, replay.RunFailed, replay.RunCancelled}
	taskStatuses = []replay.TaskStatus{replay.Pending, replay.Dispatched, replay.Running, replay.Success, replay.Failed, replay.Skipped, replay.Cancelled}
)

// metrics are the engine's own counters; atomics and histograms are safe to
// read from any goroutine.
type metrics struct {
	dispatch       wal.Histogram
	duration       wal.Histogram
	diskRecoveries int64 // under e.mu

	alertsRaised, alertsSent, alertsFailed, alertsGivenUp, alertsThrottled atomic.Int64
}

// Turns is how many turns the loop has taken: an atomic read, for who
// must tell a busy engine from a quiet one without the cost of Stats.
func (e *Engine) Turns() int64 { return e.turns.Load() }

// Stats returns the current metrics.
func (e *Engine) Stats() Stats {
	e.mu.RLock()
	st := Stats{DispatchLatency: &e.metrics.dispatch, TaskDuration: &e.metrics.duration,
		WALWrite: &e.wal.WriteLatency, WALSync: &e.wal.SyncLatency, Turns: e.turns.Load(),
		Compactions: e.compactions.Load(), DiskRecoveries: e.metrics.diskRecoveries,
		BootCutBytes: e.bootCut, TasksInFlight: len(e.attempts), TasksReady: e.state.ReadyCount(),
		Workflows: len(e.state.Workflows), Runs: map[string]int{}, Tasks: map[string]int{},
		AlertsRaised: e.metrics.alertsRaised.Load(), AlertsSent: e.metrics.alertsSent.Load(),
		AlertsFailed: e.metrics.alertsFailed.Load(), AlertsGivenUp: e.metrics.alertsGivenUp.Load(),
		AlertsThrottled: e.metrics.alertsThrottled.Load(),
		PendingRuns:     e.state.OpenRuns(), PendingRunsByWorkflow: e.state.OpenRunsByWorkflow(),
		MaxPendingRuns: e.cfg.MaxPendingRuns, MaxPendingRunsPerWorkflow: e.cfg.MaxPendingRunsPerWorkflow,
		RunsRefused: e.refused.Load()}
	runs, tasks := e.state.RunCounts(), e.state.TaskCounts() // kept by Apply: O(1)
	for _, s := range runStatuses {
		st.Runs[string(s)] = runs[s]
	}
	for _, s := range taskStatuses {
		st.Tasks[string(s)] = tasks[s]
	}
	dataDir := e.cfg.DataDir
	e.mu.RUnlock()
	st.SlotsInUse, st.TasksAhead = e.slots.inUse()
	st.WALBytes, _ = e.wal.Size()
	if idxs, _ := snapshotIndexes(dataDir); len(idxs) > 0 {
		st.SnapshotIndex = idxs[0]
		if fi, err := os.Stat(Layout(dataDir).Snapshot(idxs[0])); err == nil {
			st.SnapshotBytes = fi.Size()
		}
	}
	return st
}

// observeDispatch records how long a task waited from being due (its
// dependencies done, its not_before passed, its run created) to its
// dispatch at now. Under the write lock.
func (e *Engine) observeDispatch(t *replay.Task, now int64) {
	due := max(t.Run.CreatedAt, t.NotBefore)
	base := t
	if t.Parent >= 0 {
		base = t.Run.Tasks[t.Parent]
	}
	for _, d := range base.Deps() {
		due = max(due, t.Run.Tasks[d].FinishedAt)
	}
	if now >= due {
		e.metrics.dispatch.Observe(time.Duration(now - due))
	}
}

// observeFinish records an attempt's duration.
func (e *Engine) observeFinish(a *attempt, now int64) {
	if a.dispatchedAt > 0 && now >= a.dispatchedAt {
		e.metrics.duration.Observe(time.Duration(now - a.dispatchedAt))
	}
}
