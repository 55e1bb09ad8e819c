package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
)

// notRun reports an attempt the daemon could not prepare: its input file
// or log could not be written, or its spawn lacked a resource (an
// executors.PrepareError: a full disk, too many open files, no memory or
// processes left). Nothing of the task ran, so it is not the task's
// failure: the attempt is recorded as interrupted with NotRun (no retry
// spent, no interruption counted) and the task runs again as the next
// attempt after a backoff, which doubles with each such attempt of the
// task in a row (RecoveryBackoff, 1 s, up to 30 s): a full disk is
// retried once it may have room, without spinning.
type notRun struct {
	taskID  string
	attempt int
	err     error
}

// decideNotRun records a notRun of the attempt in flight. Under the write
// lock, on the loop.
func (e *Engine) decideNotRun(p *notRun, now int64, out *turnOutput) {
	a := e.attempts[p.taskID]
	if a == nil || a.number != p.attempt {
		return
	}
	if e.poison.Load() != nil {
		e.forget(p.taskID, p.attempt, out) // runs again once the log recovers
		return
	}
	n := e.notRunCount[p.taskID] + 1
	wait := min(e.cfg.RecoveryBackoff<<min(n-1, 16), maxRecoveryWait)
	rec := &replay.TaskInterrupted{TaskRef: a.ref, Attempt: a.number, Clean: true, NotRun: true,
		Reason: fmt.Sprintf("attempt %d not started: the daemon could not prepare it (%v); not counted as a failure, it runs again after %s",
			a.number, p.err, wait),
		NotBefore: now + int64(wait), At: now}
	if err := e.state.Apply(rec); err != nil {
		e.log.Error("unprepared attempt does not apply", "task", p.taskID, "err", err)
		return
	}
	e.notRunCount[p.taskID] = n
	e.log.Warn("could not prepare an attempt; it runs again later", "task", p.taskID, "attempt", a.number, "in", wait, "err", p.err)
	out.recs = append(out.recs, rec)
	out.progress = true
	e.forget(p.taskID, p.attempt, out)
}

// notePrepareFailure says in the attempt's log, if it can be written, why
// the attempt did not start (on a full disk it usually cannot: the API
// and `orkwal show` say it too). Off the loop, on the launcher.
func (e *Engine) notePrepareFailure(job executors.Job, err error) {
	if job.LogPath == "" {
		return
	}
	line := fmt.Sprintf("\n[orkwal: attempt not started: the daemon could not prepare it: %v; it runs again as the next attempt, not counted as a failure]\n", err)
	if mkErr := os.MkdirAll(filepath.Dir(job.LogPath), 0o700); mkErr != nil {
		return
	}
	f, ferr := os.OpenFile(job.LogPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if ferr != nil {
		return
	}
	f.WriteString(line)
	f.Close()
}
