package engine

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// DefaultStartTimeout: a dispatched attempt that has not started by then
// fails with "never started" (seed 001's 5 minutes).
const DefaultStartTimeout = 5 * time.Minute

type deadlineKind uint8

const (
	timeoutDeadline   deadlineKind = iota + 1 // the task's timeout
	startDeadline                             // never started
	heartbeatDeadline                         // stale heartbeat
)

// deadline is a time at which the loop must look at an attempt.
type deadline struct {
	at      int64
	taskID  string
	attempt int
	kind    deadlineKind
}

// deadlines is a min-heap by time, owned by the loop.
type deadlines []deadline

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].at < h[j].at }
func (h deadlines) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlines) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlines) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}

// armDeadlines records the deadlines of an attempt just dispatched.
func (e *Engine) armDeadlines(a *attempt, now int64) {
	spec := a.spec
	if spec.Timeout > 0 {
		heap.Push(&e.deadlines, deadline{at: now + int64(spec.Timeout), taskID: a.taskID, attempt: a.number, kind: timeoutDeadline})
	}
	heap.Push(&e.deadlines, deadline{at: now + int64(startTimeout(spec)), taskID: a.taskID, attempt: a.number, kind: startDeadline})
	if hb := heartbeatTimeout(spec); hb > 0 {
		heap.Push(&e.deadlines, deadline{at: now + int64(hb), taskID: a.taskID, attempt: a.number, kind: heartbeatDeadline})
	}
}

// startTimeout is the task's start_timeout, or DefaultStartTimeout.
func startTimeout(spec *workflow.Task) time.Duration {
	if spec.StartTimeout == 0 {
		return DefaultStartTimeout
	}
	return spec.StartTimeout
}

// fromSlot tells whether deadline d, of a duration counted from when a
// got its executor slot, has passed. An attempt dispatched ahead gets its
// slot later than its dispatch (see slots), off the loop: while it waits,
// or when it got its slot after its dispatch, d is armed again for then
// (once per d while it waits), and it has not passed.
func (e *Engine) fromSlot(a *attempt, d deadline, dur time.Duration, now int64) bool {
	at := now + int64(dur) // still waiting: look again then
	if g := e.slots.grantedAt(a); g != 0 {
		at = g + int64(dur)
	}
	if at <= now {
		return true
	}
	d.at = at
	heap.Push(&e.deadlines, d)
	return false
}

// DefaultHeartbeatTimeout applies to executors that report heartbeats (the
// async http executor) when heartbeat_timeout is not set: seed 001's 60s,
// or three poll intervals if that is longer.
const DefaultHeartbeatTimeout = 60 * time.Second

func heartbeatTimeout(spec *workflow.Task) time.Duration {
	if spec.HeartbeatTimeout > 0 || spec.HTTP == nil || spec.HTTP.Async == nil {
		return spec.HeartbeatTimeout
	}
	poll := spec.HTTP.Async.PollInterval
	if poll == 0 {
		poll = executors.DefaultPollInterval
	}
	return max(DefaultHeartbeatTimeout, 3*poll)
}

// expireDeadlines stops every attempt whose deadline has passed; its
// Finished event then records the reason. Called under the write lock.
func (e *Engine) expireDeadlines(now int64, out *turnOutput) {
	for len(e.deadlines) > 0 && e.deadlines[0].at <= now {
		d := heap.Pop(&e.deadlines).(deadline)
		a := e.attempts[d.taskID]
		if a == nil || a.number != d.attempt || a.failReason != "" || a.stopped {
			continue
		}
		if reason := e.expired(a, d, now); reason != "" {
			a.failReason = reason
			out.stops = append(out.stops, a)
		}
	}
}

// expired returns why an attempt fails at deadline d, or "" if it does not
// (a heartbeat deadline that was renewed is pushed again).
func (e *Engine) expired(a *attempt, d deadline, now int64) string {
	switch d.kind {
	case timeoutDeadline:
		if e.fromSlot(a, d, a.spec.Timeout, now) {
			return fmt.Sprintf("timeout after %s", a.spec.Timeout)
		}
	case startDeadline:
		if !a.started && e.fromSlot(a, d, startTimeout(a.spec), now) {
			return fmt.Sprintf("never started (no start reported within %s)", startTimeout(a.spec))
		}
	case heartbeatDeadline:
		if !e.fromSlot(a, d, heartbeatTimeout(a.spec), now) {
			return ""
		}
		next := a.lastBeat + int64(heartbeatTimeout(a.spec))
		if next > now {
			heap.Push(&e.deadlines, deadline{at: next, taskID: a.taskID, attempt: a.number, kind: heartbeatDeadline})
			return ""
		}
		return fmt.Sprintf("heartbeat timeout (none for %s)", heartbeatTimeout(a.spec))
	}
	return ""
}

// nextWake is when the loop must wake up without an event: the earliest
// deadline or not_before (0 = never).
func (e *Engine) nextWake(notBefore int64) int64 {
	wake := notBefore
	if len(e.deadlines) > 0 && (wake == 0 || e.deadlines[0].at < wake) {
		wake = e.deadlines[0].at
	}
	if a := e.nextAlertWake(); a != 0 && (wake == 0 || a < wake) {
		wake = a
	}
	return wake
}
