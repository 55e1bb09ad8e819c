package engine

import (
	"fmt"
	"time"

	"github.com/orkwal/orkwal/replay"
)

// gate decides whether a ready task may be dispatched now (seed 004's
// PENDING → AVAILABLE checks). One gate lives for one dispatch pass and
// counts what the pass has already taken.
type gate struct {
	e        *Engine
	now      int64
	wake     int64          // earliest not_before still in the future (0 = none)
	nodeKey  map[string]int // run:node → instances taken this pass
	starting map[string]int // workflow → runs started this pass
	runTaken map[string]bool
}

func newGate(e *Engine, now int64) *gate {
	return &gate{e: e, now: now, nodeKey: map[string]int{}, starting: map[string]int{}, runTaken: map[string]bool{}}
}

// blocked returns why t may not be dispatched now, or "" if it may. The
// reasons are the waiting causes the API shows.
func (g *gate) blocked(t *replay.Task) string { return g.reason(t, g.holds(t)) }

// holds returns the gate that holds t back now (replay.GateNone: none),
// checked in the order blocked reports them. It builds no text: dispatch
// calls it for every task it looks at.
func (g *gate) holds(t *replay.Task) replay.Gate {
	st := g.e.state
	if t.Parent >= 0 && t.Run.Tasks[t.Parent].Waiting() > 0 {
		return replay.GateOther
	}
	if t.NotBefore > g.now {
		if g.wake == 0 || t.NotBefore < g.wake {
			g.wake = t.NotBefore
		}
		return replay.GateTime
	}
	if t.Run.Status == replay.RunPending && !g.runTaken[t.Run.ID] {
		active := st.ActiveRuns(t.Run.Workflow) + g.starting[t.Run.Workflow]
		if max := t.Run.Spec.MaxActiveRuns; max > 0 && active >= max || t.Run.Queued && active > 0 {
			return replay.GateRun
		}
	}
	if t.Parent >= 0 && t.Spec().Concurrency > 0 {
		node := t.Run.Tasks[t.Parent]
		if node.InFlightInstances()+g.nodeKey[node.ID()] >= t.Spec().Concurrency {
			return replay.GateNode
		}
	}
	if t.MutexKey != "" && st.MutexHolder(t.MutexKey) != t {
		return replay.GateMutex
	}
	return replay.GateNone
}

// reason words the gate that holds t.
func (g *gate) reason(t *replay.Task, held replay.Gate) string {
	st := g.e.state
	wf := t.Run.Workflow
	switch held {
	case replay.GateOther:
		n := t.Run.Tasks[t.Parent]
		return fmt.Sprintf("upstream of %s: %d tasks not ended (rerun)", n.Name, n.Waiting())
	case replay.GateTime:
		why := "not before " + ts(t.NotBefore).Format(time.RFC3339) + " (retry backoff or delay)"
		if t.Error != "" {
			why += "; last attempt: " + t.Error
		}
		return why
	case replay.GateRun:
		if max := t.Run.Spec.MaxActiveRuns; max > 0 && st.ActiveRuns(wf)+g.starting[wf] >= max {
			return fmt.Sprintf("workflow %s has %d active runs (max_active_runs %d)", wf, st.ActiveRuns(wf), max)
		}
		return fmt.Sprintf("queued behind the active run of %s (overlap: queue)", wf)
	case replay.GateNode:
		node := t.Run.Tasks[t.Parent]
		n := node.InFlightInstances() + g.nodeKey[node.ID()]
		return fmt.Sprintf("%d instances of %s running (concurrency %d)", n, node.Name, t.Spec().Concurrency)
	case replay.GateMutex:
		return fmt.Sprintf("mutex %q held by %s", t.MutexKey, st.MutexHolder(t.MutexKey).ID())
	}
	return ""
}

// take counts t as dispatched in this pass.
func (g *gate) take(t *replay.Task) {
	if t.Parent >= 0 {
		g.nodeKey[t.Run.Tasks[t.Parent].ID()]++
	}
	if t.Run.Status == replay.RunPending && !g.runTaken[t.Run.ID] {
		g.runTaken[t.Run.ID] = true
		g.starting[t.Run.Workflow]++
	}
}

// waitingReady is what waitingOn says of a pending task that nothing
// holds: the engine dispatches it on its next turn (TaskView.Ready).
const waitingReady = "ready: dispatching"

// waitingOn lists why a pending task is not running, for the API: its
// unfinished dependencies, or the gate that holds it, or full slots. g is
// one gate for the whole read (views of big runs would otherwise build one
// per task). Called under the read lock.
func (e *Engine) waitingOn(t *replay.Task, g *gate) []string {
	if t.Status == replay.Dispatched {
		return e.waitingAhead(t)
	}
	if t.Status != replay.Pending {
		return nil
	}
	if t.Held() {
		return []string{"paused: resume it (orkwal resume)"}
	}
	if t.Waiting() > 0 {
		var deps []string
		for _, d := range t.Deps() {
			if up := t.Run.Tasks[d]; !up.Status.Terminal() {
				deps = append(deps, "upstream "+up.Key())
			}
		}
		return deps
	}
	if reason := g.blocked(t); reason != "" {
		return []string{reason}
	}
	if len(e.attempts) >= e.cfg.MaxConcurrent { // it may go ahead, or wait behind one that may not (see pick)
		held, ahead := e.slots.inUse()
		return []string{fmt.Sprintf("executor slots full (%d of %d in use, %d dispatched ahead)", held, e.cfg.MaxConcurrent, ahead)}
	}
	return []string{waitingReady}
}

// waitingAhead: a dispatched task whose attempt waits for an executor
// slot says so (see slots); nil for one that holds its slot.
func (e *Engine) waitingAhead(t *replay.Task) []string {
	a := e.attempts[t.ID()]
	if a == nil || a.number != t.Attempt || !e.slots.waiting(a) {
		return nil
	}
	held, _ := e.slots.inUse()
	return []string{fmt.Sprintf("dispatched ahead: waiting for an executor slot (%d of %d in use)", held, e.cfg.MaxConcurrent)}
}
