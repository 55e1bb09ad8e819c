package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// Engine runs workflows from a data folder. Create it with Open, start it
// with Start, stop it with Close.
type Engine struct {
	cfg  Config
	log  *slog.Logger
	lock *wal.Lock
	wal  *wal.Log

	mu    sync.RWMutex // guards state: written only by the loop, read by views
	state *replay.State

	inbox    *inbox
	launcher *launcher     // starts executors and removes scratch files off the loop
	slots    *slots        // executor slots and the attempts dispatched ahead (slots.go)
	stop     chan struct{} // closed by Close: begin shutdown
	done     chan struct{} // closed when the loop has returned
	stopping bool          // loop-owned: shutdown begun, dispatch no more

	// Loop-owned.
	attempts map[string]*attempt // task id → the attempt in flight (their count bounds dispatch: canDispatch)
	// crashed: tasks whose attempt this boot found in flight after a crash
	// (task id → true), until their next dispatch: that attempt's start is
	// recorded at once (see deferStarted), so that a task that takes the
	// box down again is seen to have started, and counts.
	crashed map[string]bool
	// heldStarts: held attempts whose task_started waits in pendingStarted.
	heldStarts []*attempt
	// notRunCount: attempts of a task in a row the daemon could not
	// prepare (task id → count), for the backoff (see decideNotRun).
	notRunCount map[string]int
	jobs        jobShared   // what prepared jobs share (jobs.go)
	dirs        attemptDirs // where attempts' files go (Layout.attemptDirs)
	frames      frameEncoder

	poison atomic.Pointer[error]       // set once the WAL failed: fail-stop
	folder atomic.Pointer[folderState] // the workflows folder's last sync (folder.go), nil without one

	events broker // subscribers to committed events (see events.go)

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced after every commit

	waitMu  sync.Mutex                 // guards waiters (see WaitRun)
	waiters map[string][]chan struct{} // run id → channels closed when it ends

	halt      chan struct{} // tests only: stop the loop as a crash would
	afterTurn func()        // tests only: called on the loop after each turn's effects
	started   atomic.Bool
	turns     atomic.Int64 // loop turns taken, for tests and metrics
	looked    atomic.Int64 // ready tasks and parked runs dispatch looked at: a pass's cost, for tests
	refused   atomic.Int64 // new runs refused by admission control (admission.go)

	// Loop-owned: deadlines of attempts, cron schedules, and the timer for
	// the next wake-up.
	deadlines deadlines
	cron      cronCache
	wakeAt    int64
	wakeCh    <-chan time.Time

	// Loop-owned: task_started records not yet applied nor logged (see
	// defaultStartedDelay), and the real-time timer that commits them.
	pendingStarted []*replay.TaskStarted
	startedTimer   *time.Timer
	startedDue     chan struct{} // capacity 1, sent by startedTimer
	startedDelay   time.Duration // defaultStartedDelay; tests may change it before Start
	startedFired   bool          // startedDue was received

	// Compaction: loop-owned, except compactions (a counter).
	snapIndex   uint64       // WAL index of the newest snapshot (0 = none)
	logBytes    int64        // bytes appended since it
	compacting  bool         // from the beginning of a snapshot until its writer reported
	copying     *copying     // the snapshot the loop is copying, if any
	copySteps   atomic.Int64 // copy steps taken, for tests
	stepBudget  int          // runs and tasks a copy step takes: snapshotStep; tests may change it before Start
	compactions atomic.Int64
	// bootSnapshotted: the boot wrote a snapshot without pruning
	// (compactAtBoot); Close then compacts, and prunes, even with nothing
	// logged since.
	bootSnapshotted bool
	compactDone     chan *compactResult // reports of a compaction that outlived the loop
	// What the disk bound depends on besides the settings (see
	// TestDiskStaysBounded): the most bytes logged between two
	// compactions' beginnings, and while one was under way, and the
	// largest entry.
	spanMax, lagMax, entryMax int64

	metrics metrics

	// Alerts: loop-owned bookkeeping (alerts.go), and the context of the
	// sends, cancelled by Close.
	alerts     alertLoop
	sendCtx    context.Context
	cancelSend context.CancelFunc
	bootCut    int64 // torn-tail bytes cut when the WAL was opened

	// Loop-owned: in-process recovery after a disk-full failure.
	recoverTimer <-chan time.Time
	recoverWait  time.Duration
}

// attempt is an executor's work in flight, known to the loop.
type attempt struct {
	ref          replay.TaskRef
	taskID       string
	number       int
	spec         *workflow.Task
	exec         execHandle // set by the launcher once the executor started it
	dispatchedAt int64
	lastBeat     int64     // last Started or Heartbeat report
	hold         chan bool // a held attempt's go (executors.Job.Hold), sent once by release
	failReason   string    // the engine stopped it for this reason (timeout, heartbeat, never started)
	slot         *ticket   // its executor slot, or its place in the queue for one (slots.go): every attempt has one (enter, force); guarded by slots.mu

	// Its flags, side by side: one word, where each between two words
	// took one (issue 27: memory per running task: 168 bytes, a 176-byte
	// allocation; 200 and 208 before).
	hasScratch bool // it has scratch files to remove (scratchOf)
	eager      bool // its start is recorded at once, not deferred, and it is held (hold.go)
	released   bool // hold was sent
	started    bool // the executor reported Started
	stopped    bool // the engine asked it to stop for a shutdown: not an outcome
	cancelled  bool // stopped because its run is being cancelled
	deferred   bool // its process ended deferring its work: its jobs are tracked (deferred.go)
}

// cleaned notes a Finished report whose executor removed the attempt's
// scratch files itself (executors.Event.Cleaned): the engine then removes
// nothing once the outcome is durable.
func (a *attempt) cleaned(ev *executors.Event) {
	if ev.Cleaned {
		a.hasScratch = false
	}
}

// scratchOf is the prefix of a's scratch files (executors.Job.Scratch) to
// remove once its outcome is durable, "" for none. It is made when asked:
// an attempt in flight keeps no path (issue 27: memory per running task).
func (e *Engine) scratchOf(a *attempt) string {
	if !a.hasScratch {
		return ""
	}
	return e.dirs.scratch(a.ref.Run, a.key(), a.number)
}

// key is a's task's key (its taskID is run:key).
func (a *attempt) key() string { return a.taskID[len(a.ref.Run)+1:] }

// stopReason is why the engine stops the attempt, for its log's last
// line: its failReason, a cancel, or the daemon's shutdown.
func (a *attempt) stopReason() string {
	switch {
	case a.failReason != "":
		return a.failReason
	case a.cancelled:
		return "cancelled"
	}
	return executors.StopShutdown
}

// Open locks the data folder, recovers the WAL, replays it into a fresh
// state, and records every attempt that was in flight as interrupted (after
// killing what is left of its process group). It does not start the loop.
func Open(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Made absolute once: every attempt's paths are the data folder's
	// (its scratch files, its log), and a task may run in another folder;
	// a relative one made absolute per start cost the working folder's
	// look-up (two stats) for each of them.
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("engine: data folder %s: %w", cfg.DataDir, err)
	}
	cfg.DataDir = abs
	if err := makeDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	warnIfShared(cfg.DataDir, cfg.Logger)
	lock, err := wal.AcquireLock(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(cfg.DataDir); err != nil {
		lock.Release()
		return nil, err
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, lock: lock, dirs: Layout(cfg.DataDir).attemptDirs(), state: replay.New(), inbox: newInbox(), launcher: newLauncher(launchWorkersFor(cfg.MaxConcurrent)), slots: newSlots(cfg.MaxConcurrent, cfg.Clock), startedDue: make(chan struct{}, 1),
		startedDelay: defaultStartedDelay, stepBudget: snapshotStep,
		stop: make(chan struct{}), done: make(chan struct{}), attempts: map[string]*attempt{}, crashed: map[string]bool{}, notRunCount: map[string]int{},
		changed: make(chan struct{}), halt: make(chan struct{}), compactDone: make(chan *compactResult, 1)}
	e.sendCtx, e.cancelSend = context.WithCancel(context.Background())
	e.alerts = alertLoop{sending: map[replay.DeliveryRef]bool{}, windows: map[string]*throttleWindow{}, summary: map[string]bool{}}
	if err := e.recover(); err != nil {
		lock.Release()
		return nil, err
	}
	e.events.last = e.wal.LastIndex()
	return e, nil
}

// syncDir is wal.SyncDir; tests record its calls.
var syncDir = wal.SyncDir

// makeDataDir creates the data folder if it does not exist, and makes its
// name durable: the name of a folder is in its parent, which only an fsync
// of the parent commits (POSIX; ext4 and XFS happen to commit it with any
// later fsync). Without it a power cut could lose a folder created by the
// first boot (the default, orkwal-data, is relative to where the daemon
// starts), with every acknowledged run in it: the fsyncs of the files and
// folders inside it do not commit its own name.
func makeDataDir(dir string) error {
	var created []string // the folders MkdirAll makes, innermost first
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || filepath.Dir(p) == p {
			break
		}
		created = append(created, p)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("engine: create data folder: %w", err)
	}
	for i := len(created) - 1; i >= 0; i-- { // outermost first
		if err := syncDir(filepath.Dir(created[i])); err != nil {
			return fmt.Errorf("engine: create data folder: %w", err)
		}
	}
	return nil
}

// warnIfShared warns when other users may enter the data folder: its
// logs, WAL and snapshots hold params, outputs and whatever tasks print.
// orkwal makes its folders 0700 and its files 0600; a folder made by an
// earlier version, or by hand, is left as it is (a group may be meant to
// read it).
func warnIfShared(dir string, logger *slog.Logger) {
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o007 != 0 {
		logger.Warn("other users may read the data folder: its logs and WAL may hold secrets; chmod o-rwx it",
			"dir", dir, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
}

func (e *Engine) recover() error {
	l, err := e.openWAL()
	if err != nil {
		return fmt.Errorf("engine: open wal: %w", err)
	}
	e.wal = l
	e.bootCut = l.CutBytes()
	// The frames the snapshot covers are checked first, while the heap
	// is small: decoded and dropped after the state is restored, their
	// garbage took the heap to twice the state before a collection
	// (issue 27: a boot's peak memory).
	if err := checkFrames(l, e.newestSnapshot()); err != nil {
		l.Close()
		return err
	}
	st, from, err := e.loadSnapshot()
	if err != nil {
		l.Close()
		return err
	}
	e.state = st
	n, size, err := applyAfter(l, e.state, from)
	if err != nil {
		l.Close()
		return err
	}
	e.logBytes = size
	e.log.Info("recovered", "snapshot_index", from, "records_replayed", n, "bytes_replayed", size,
		"last_index", l.LastIndex(), "runs", len(e.state.Runs))
	e.sweepRunFolders()
	if err := e.interruptInFlight(); err != nil {
		l.Close()
		return err
	}
	e.compactAtBoot()
	e.armAlerts()
	return nil
}

func (e *Engine) openWAL() (*wal.Log, error) {
	return wal.Open(Layout(e.cfg.DataDir).WAL(),
		wal.Options{SegmentSize: e.cfg.SegmentSize, PadStep: e.cfg.WALPadStep, Logger: e.log, Fault: e.cfg.WALFault})
}

// Replay applies every record of the log to st and returns how many it
// applied. A record that does not decode or apply stops it with an error
// naming the WAL index: the log is corrupt and boot must refuse.
func Replay(l *wal.Log, st *replay.State) (int, error) { return ReplayFrom(l, st, 1) }

// ReplayFrom applies the records of every frame from index on.
func ReplayFrom(l *wal.Log, st *replay.State, from uint64) (int, error) {
	n := 0
	err := l.Replay(from, func(index uint64, payloads [][]byte) error {
		n += len(payloads)
		return applyFrame(st, index, payloads)
	})
	return n, err
}

// LogMeetsSnapshot checks that a log holding entries first..last can
// follow a snapshot at snapIndex (0: none): it must start no later than
// snapIndex+1 (no gap), and end no earlier than snapIndex. The snapshot was
// taken at a durable index, so a log ending earlier lost entries (its folder
// was deleted or lost its tail), and new entries would reuse indexes the
// snapshot covers, which the next boot would skip.
func LogMeetsSnapshot(first, last, snapIndex uint64) error {
	switch {
	case snapIndex == 0:
		return nil
	case first > snapIndex+1:
		return fmt.Errorf("%w: the log starts at index %d, after the snapshot's %d: entries are missing", wal.ErrCorrupt, first, snapIndex)
	case last < snapIndex:
		return fmt.Errorf("%w: the log ends at index %d, before the snapshot's %d: entries are missing from the log, and new ones would reuse their indexes; restore the wal folder, or set the snapshot aside to boot from the log alone",
			wal.ErrCorrupt, last, snapIndex)
	}
	return nil
}

// replayAfter checks every frame still in the log, so that corruption
// anywhere in it stops boot (checkFrames), and applies those after the
// snapshot index (applyAfter). It returns how many records it applied and
// the bytes of their entries (as on disk: the log since the snapshot,
// which --compact-bytes counts).
func replayAfter(l *wal.Log, st *replay.State, snapIndex uint64) (int, int64, error) {
	if err := checkFrames(l, snapIndex); err != nil {
		return 0, 0, err
	}
	return applyAfter(l, st, snapIndex)
}

// checkFrames decodes the records of the log's frames up to index upTo,
// which a boot from the snapshot at upTo does not apply: a record that
// does not decode stops it with an error naming the WAL index.
func checkFrames(l *wal.Log, upTo uint64) error {
	first, err := l.FirstIndex()
	if err != nil {
		return fmt.Errorf("engine: first wal index: %w", err)
	}
	if upTo < first {
		return nil
	}
	err = l.Replay(first, func(index uint64, payloads [][]byte) error {
		if index > upTo {
			return errChecked
		}
		for i, p := range payloads {
			if _, err := replay.Decode(p); err != nil {
				return fmt.Errorf("engine: wal index %d record %d: %w", index, i, err)
			}
		}
		return nil
	})
	if errors.Is(err, errChecked) {
		return nil
	}
	return err
}

var errChecked = errors.New("past the frames to check")

// applyAfter checks that the log meets the snapshot (LogMeetsSnapshot),
// then applies every frame after the snapshot index; those up to it are
// checkFrames'. It returns what replayAfter does.
func applyAfter(l *wal.Log, st *replay.State, snapIndex uint64) (int, int64, error) {
	first, err := l.FirstIndex()
	if err != nil {
		return 0, 0, fmt.Errorf("engine: first wal index: %w", err)
	}
	if err := LogMeetsSnapshot(first, l.LastIndex(), snapIndex); err != nil {
		return 0, 0, err
	}
	n, size := 0, int64(0)
	err = l.Replay(snapIndex+1, func(index uint64, payloads [][]byte) error {
		n += len(payloads)
		size += wal.EntrySize(index, payloads)
		return applyFrame(st, index, payloads)
	})
	return n, size, err
}

// applyFrame decodes and applies one frame's records.
func applyFrame(st *replay.State, index uint64, payloads [][]byte) error {
	for i, p := range payloads {
		rec, err := replay.Decode(p)
		if err == nil {
			err = st.Apply(rec)
		}
		if err != nil {
			return fmt.Errorf("engine: replay wal index %d record %d: %w", index, i, err)
		}
	}
	return nil
}

// interruptInFlight is the boot half of at-least-once: every attempt whose
// outcome was never recorded is killed if anything of it survives, then
// recorded as interrupted so that it runs again as a new attempt.
func (e *Engine) interruptInFlight() error {
	now := e.cfg.Clock.Now().UnixNano()
	var recs []replay.Record
	var scratch, logs []string
	for _, run := range e.state.RunList {
		if run.Status.Finished() {
			continue
		}
		for _, t := range run.Tasks {
			if !t.AttemptInFlight() {
				continue
			}
			if t.Deferred {
				e.resumeDeferred(t, now)
				continue
			}
			e.killLeftover(t)
			e.crashed[t.ID()] = true
			recs = append(recs, &replay.TaskInterrupted{TaskRef: replay.TaskRef{Run: run.ID, Task: t.Index},
				Attempt: t.Attempt, Unstarted: t.Status == replay.Dispatched, At: now})
			scratch = append(scratch, Layout(e.cfg.DataDir).Scratch(run.ID, t.Key(), t.Attempt))
			logs = append(logs, Layout(e.cfg.DataDir).AttemptLog(run.ID, t.Key(), t.Attempt))
		}
	}
	if len(recs) == 0 {
		return nil
	}
	e.recoverLogs(logs)
	if err := e.commit(recs); err != nil {
		return err
	}
	// The interrupted attempts are over: their scratch files go, as a
	// finished attempt's do (a crash during a dispatch's fsync can leave
	// them for an attempt whose process never started), and so does what
	// their logs' completion kept beside them.
	for _, prefix := range scratch {
		if err := executors.RemoveScratch(prefix); err != nil {
			e.log.Warn("could not remove the scratch files of an interrupted attempt", "prefix", prefix, "err", err)
		}
	}
	for _, log := range logs {
		if err := executors.EndLogRecovery(log); err != nil {
			e.log.Warn("could not remove the tail of an interrupted attempt's log", "log", log, "err", err)
		}
	}
	e.log.Info("re-running attempts interrupted by a crash", "tasks", len(recs))
	return nil
}

// recoverLogs completes the logs of the interrupted attempts, whose
// processes are gone: a crash mid-attempt leaves a log's capped tail beside
// it, from which the log is completed, and each log says that its attempt
// was interrupted. Until the interruptions are durable, a crash makes the
// next boot do it again, and RecoverLog completes each log once. Each
// completion waits for a few fsyncs one after another, so several run at
// once: on slow storage (an SD card: some ms an fsync) a boot after a crash
// that interrupted hundreds of talkative tasks would otherwise wait
// seconds before serving.
func (e *Engine) recoverLogs(logs []string) {
	const workers = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(logs)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(logs)); i = next.Add(1) - 1 {
				if err := executors.RecoverLog(logs[i]); err != nil {
					e.log.Warn("could not complete the log of an interrupted attempt", "log", logs[i], "err", err)
				}
			}
		})
	}
	wg.Wait()
}

func (e *Engine) killLeftover(t *replay.Task) {
	if t.PID <= 1 {
		return
	}
	killed, err := executors.KillGroupIfSame(t.PID, t.StartTime)
	if err != nil {
		e.log.Warn("could not kill leftover process group", "task", t.ID(), "pid", t.PID, "err", err)
	} else if killed {
		e.log.Info("killed leftover process group of interrupted task", "task", t.ID(), "pid", t.PID)
	}
}

// commit applies and logs records outside a turn (boot and recovery).
func (e *Engine) commit(recs []replay.Record) error {
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		if err := e.state.Apply(r); err != nil {
			return fmt.Errorf("engine: boot record %s: %w", r.Kind(), err)
		}
	}
	out := &turnOutput{recs: recs}
	e.noticeRecords(out) // a crash loop that ends a run raises its alert here
	recs = out.recs
	defer func() {
		for _, log := range out.logs {
			log()
		}
	}()
	payloads, err := e.frames.encode(recs)
	if err != nil {
		return err
	}
	defer e.frames.done()
	index, err := e.wal.Append(payloads)
	if err != nil {
		return fmt.Errorf("engine: append boot records: %w", err)
	}
	e.logBytes += wal.EntrySize(index, payloads)
	e.publish(index, recs)
	return nil
}

// Start runs the loop in a goroutine. It may be called once.
func (e *Engine) Start() {
	if e.started.CompareAndSwap(false, true) {
		go e.loop()
	}
}

// Close stops the engine cleanly: it stops accepting commands, asks running
// attempts to stop, records them as cleanly interrupted (or their real
// outcome if they finished first), closes the WAL and releases the lock.
func (e *Engine) Close() error {
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
	if e.started.CompareAndSwap(false, true) {
		close(e.done) // never started: there is no loop to wait for
	}
	<-e.done
	e.cancelSend() // a send cut short is sent again after the next boot
	e.closeEvents()
	e.launcher.close()     // no start or folder removal outlives Close
	for e.copying != nil { // the loop left a snapshot's copy: complete it
		e.copyStep()
	}
	for e.compacting { // a background snapshot is still being written
		e.compacted(<-e.compactDone)
	}
	if e.poison.Load() == nil && (e.logBytes > 0 || e.bootSnapshotted) {
		if err := e.Compact(); err != nil {
			e.log.Error("snapshot at shutdown failed", "err", err)
		}
	}
	err := e.wal.Close()
	e.lock.Release()
	return err
}

// Err returns the WAL failure that stopped the engine, or nil.
func (e *Engine) Err() error {
	if p := e.poison.Load(); p != nil {
		return *p
	}
	return nil
}

// StateHash is the hash of the current state (see replay.State.Hash).
func (e *Engine) StateHash() (uint64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.state.Hash()
}

// Changed returns a channel that is closed after the next commit. Wait on it,
// then re-read the views: a signal, never a poll.
func (e *Engine) Changed() <-chan struct{} {
	e.changedMu.Lock()
	defer e.changedMu.Unlock()
	return e.changed
}

func (e *Engine) notify() {
	e.changedMu.Lock()
	close(e.changed)
	e.changed = make(chan struct{})
	e.changedMu.Unlock()
}

// Done is closed when the loop has stopped.
func (e *Engine) Done() <-chan struct{} { return e.done }
