package engine

import (
	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
)

// Deferred work (Ork's deferrables): a python attempt that succeeds with
// an output whose "deferred" is a non-empty list of job descriptors has
// handed its work to the scheduler, and so has a cloudrun attempt once
// its execution started. Its end is recorded as task_deferred
// (the task stays running, its output kept, its process gone), and once
// that is durable Config.Deferred polls the jobs; its Finished report ends
// the attempt as any executor's does (task_finished with the output, so
// downstream tasks run; a failed job fails it, retries as usual). The
// attempt keeps its slot and its deadlines. A shutdown stops the polling
// without recording anything, and a boot (or the recovery of a failed
// WAL) resumes it for every deferred task in flight: the log says which,
// one tracker per attempt, so no job is polled twice at once.

// deferring reports whether ev, a python or cloudrun attempt's end,
// defers its work. A cloudrun attempt always ends so once it has started
// its execution (executors.CloudRun): the execution is tracked as a
// deferred job of its own (executors.DeferredJob.Owned).
func deferring(a *attempt, ev *executors.Event) bool {
	return ev.Kind == executors.Finished && ev.OK && !a.deferred &&
		(a.spec.Executor == "python" || a.spec.Executor == "cloudrun") && executors.DefersWork(ev.Output)
}

// deferTask records that a's process ended deferring its work and tracks
// its jobs, started once the record is durable, in a's place.
func (e *Engine) deferTask(a *attempt, ev *executors.Event, now int64, out *turnOutput) {
	rec := &replay.TaskDeferred{TaskRef: a.ref, Attempt: a.number, Output: ev.Output, At: now}
	if err := e.state.Apply(rec); err != nil {
		e.log.Warn("deferral does not apply", "task", ev.TaskID, "err", err)
		return
	}
	out.recs = append(out.recs, rec)
	out.progress = true
	a.release(false)
	out.scratch = append(out.scratch, e.scratchOf(a))
	t := &attempt{ref: a.ref, taskID: a.taskID, number: a.number, spec: a.spec, dispatchedAt: a.dispatchedAt,
		started: true, lastBeat: now, deferred: true, stopped: a.stopped, failReason: a.failReason, cancelled: a.cancelled,
		slot: a.slot} // the tracker keeps the process's slot
	e.attempts[a.taskID] = t
	out.starts = append(out.starts, &start{att: t, ex: e.cfg.Deferred, job: e.trackJob(t, ev.Output)})
	if t.stopped || t.cancelled || t.failReason != "" {
		out.stops = append(out.stops, t) // asked while the process ran
	}
}

// trackJob is the job that tracks a deferring attempt's jobs.
func (e *Engine) trackJob(a *attempt, output []byte) executors.Job {
	job := executors.Job{RunID: a.ref.Run, TaskID: a.taskID, Attempt: a.number,
		Deferred: &executors.DeferredJob{Output: output, Owned: a.spec.Executor == "cloudrun"}}
	if t, err := e.state.Task(a.ref); err == nil {
		job.TaskName, job.Workflow = t.Name, t.Run.Workflow
		job.LogPath = Layout(e.cfg.DataDir).AttemptLog(t.Run.ID, t.Key(), a.number)
	}
	return job
}

// resumeDeferred tracks again the jobs of a deferred task found in flight
// with no attempt (at boot, or after the WAL recovered): its task_deferred
// is durable already.
func (e *Engine) resumeDeferred(t *replay.Task, now int64) {
	a := &attempt{ref: replay.TaskRef{Run: t.Run.ID, Task: t.Index}, taskID: t.ID(), number: t.Attempt,
		spec: t.Spec(), dispatchedAt: t.DispatchedAt, started: true, lastBeat: now, deferred: true}
	e.attempts[a.taskID] = a
	e.slots.force(a, now) // it ran before: it takes its slot back
	e.armDeadlines(a, now)
	job := e.trackJob(a, t.Output)
	h, err := e.cfg.Deferred.Start(job, e.report)
	if err != nil {
		e.reportStartFailure(job, err)
		return
	}
	a.exec.set(h)
	e.log.Info("resumed the tracking of a deferred task's jobs", "task", a.taskID, "attempt", a.number)
}
