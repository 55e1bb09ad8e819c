package engine

import (
	"errors"
	"syscall"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

const maxRecoveryWait = 30 * time.Second

// failStop records the WAL failure that stops the engine from accepting
// work. A full disk (ENOSPC on write) is retried in-process; any other
// failure, an fsync's above all, stays until the daemon is restarted: after
// a failed fsync the page cache cannot be trusted, and re-reading it in
// this process would be no safer than carrying on.
//
// The failure is published (Err) last, once the state is rebuilt and the
// recovery timer armed: whoever sees it sees those too.
func (e *Engine) failStop(err error) {
	e.rebuildDurable()
	if recoverable(err) {
		e.log.Error("disk full: no more work is accepted until space is freed; retrying", "err", err)
		e.armRecovery()
	} else {
		e.log.Error("engine is fail-stop: the write-ahead log failed; restart the daemon", "err", err)
	}
	e.poison.CompareAndSwap(nil, &err)
}

// recoverable reports a failure the engine may recover from by reopening
// the WAL: a write that ran out of space.
func recoverable(err error) bool {
	return errors.Is(err, syscall.ENOSPC) && !errors.Is(err, wal.ErrSync)
}

// rebuildDurable replaces the state, which holds the failed turn's records,
// with the durable state: the newest snapshot plus every later frame up to
// the last one whose fsync succeeded. Reading those back is safe, since
// their fsync did succeed; nothing after them is read. Readers then see only
// acknowledged state. The log may have been truncated by compaction, so the
// snapshot is the start, never index 1. Called under the write lock.
func (e *Engine) rebuildDurable() {
	last := e.wal.LastIndex()
	st, from, err := LoadSnapshot(e.cfg.DataDir, e.log)
	if err == nil {
		err = e.wal.Replay(from+1, func(index uint64, payloads [][]byte) error {
			if index > last {
				return errPastDurable
			}
			return applyFrame(st, index, payloads)
		})
	}
	var ce *wal.CorruptError
	if err != nil && !errors.Is(err, errPastDurable) && !(errors.As(err, &ce) && ce.Index > last) {
		e.log.Error("could not rebuild the durable state; reads may show unacknowledged changes", "err", err)
		return
	}
	e.state = st
}

var errPastDurable = errors.New("past the durable prefix")

func (e *Engine) armRecovery() {
	switch {
	case e.recoverWait == 0:
		e.recoverWait = e.cfg.RecoveryBackoff
	case e.recoverWait < maxRecoveryWait:
		e.recoverWait = min(2*e.recoverWait, maxRecoveryWait)
	}
	e.recoverTimer = e.cfg.Clock.After(e.recoverWait)
}

// tryRecover reopens the WAL (the failed write was taken back: see wal's
// segments.undo), replays it into a fresh state, and resumes. Attempts
// whose outcome was lost are recorded as interrupted (not counted as
// crashes) and run again.
func (e *Engine) tryRecover() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wal.Close()
	l, err := e.openWAL()
	if err != nil {
		if errors.Is(err, wal.ErrSync) {
			e.stopForGood(err) // the reopen's fsync failed: never again
			return
		}
		e.log.Warn("WAL recovery failed; will retry", "err", err, "in", e.recoverWait)
		e.armRecovery()
		return
	}
	// The newest snapshot plus the log after it, as at boot: compaction may
	// have truncated the log's front.
	st, from, err := LoadSnapshot(e.cfg.DataDir, e.log)
	if err == nil {
		_, _, err = replayAfter(l, st, from)
	}
	if err != nil {
		l.Close()
		e.log.Error("WAL recovery found the log corrupt; restart the daemon", "err", err)
		return
	}
	e.wal, e.state = l, st
	recs := e.reconcile(st)
	if err := e.commit(recs); err != nil {
		e.rebuildDurable() // commit applied them: readers see none of it
		if !recoverable(err) {
			e.stopForGood(err) // its fsync failed: the page cache cannot be trusted
			return
		}
		e.log.Warn("WAL recovery could not record interrupted attempts; will retry", "err", err)
		e.armRecovery()
		return
	}
	e.poison.Store(nil)
	e.armAlerts() // the state was read again: its pending deliveries and SLAs
	e.recoverWait = 0
	e.metrics.diskRecoveries++
	e.log.Info("WAL recovered: accepting work again", "last_index", l.LastIndex(), "requeued", len(recs))
	e.notify()
	e.wakeWaiters()
}

// stopForGood ends the in-process recovery after a failure it must not
// retry (an fsync's): the engine stays fail-stop, reporting err, until the
// daemon is restarted.
func (e *Engine) stopForGood(err error) {
	e.log.Error("engine is fail-stop: the write-ahead log failed during recovery; restart the daemon", "err", err)
	e.poison.Store(&err)
}

// reconcile matches the replayed state with the attempts still running:
// an in-flight task with no live attempt (its outcome was lost) is
// interrupted cleanly so that it runs again.
func (e *Engine) reconcile(st *replay.State) []replay.Record {
	now := e.cfg.Clock.Now().UnixNano()
	var recs []replay.Record
	live := 0
	for _, run := range st.RunList {
		for _, t := range run.Tasks {
			if !t.AttemptInFlight() {
				continue
			}
			if a := e.attempts[t.ID()]; a != nil && a.number == t.Attempt {
				live++
				continue
			}
			if t.Deferred {
				e.resumeDeferred(t, now)
				live++
				continue
			}
			recs = append(recs, &replay.TaskInterrupted{TaskRef: replay.TaskRef{Run: run.ID, Task: t.Index},
				Attempt: t.Attempt, Clean: true, At: now})
		}
	}
	if live != len(e.attempts) {
		e.log.Warn("attempts running without a durable dispatch", "running", len(e.attempts), "matched", live)
	}
	return recs
}
