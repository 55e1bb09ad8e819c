package engine

import (
	"math"
	"slices"

	"github.com/orkwal/orkwal/replay"
)

// dispatch hands ready tasks that pass the gate to executors, in order
// (priority, then creation), while slots are free. A task the gate holds
// is parked behind it (see replay's ready queue), so a pass costs
// O(log n) per task it looks at, not a scan of every waiting task.
func (e *Engine) dispatch(now int64, out *turnOutput) {
	picked, wake, waits := e.pick(now, e.room())
	out.wake = wake
	defer e.keepSlots(waits)
	for _, t := range picked {
		rec := &replay.TaskDispatched{TaskRef: replay.TaskRef{Run: t.Run.ID, Task: t.Index}, Attempt: t.Attempt + 1, At: now}
		if err := e.state.Apply(rec); err != nil {
			e.log.Error("dispatch does not apply", "task", t.ID(), "err", err)
			e.state.Requeue(t)
			continue
		}
		out.recs = append(out.recs, rec)
		out.progress = true
		e.observeDispatch(t, now)
		s := e.prepare(t, now)
		e.holdIfCrashed(s)
		out.starts = append(out.starts, s)
		e.attempts[s.job.TaskID] = s.att
		e.slots.enter(s.att)
		e.armDeadlines(s.att, now)
	}
}

// room is how many ready tasks a dispatch pass may pick.
type room struct {
	free  int // below dispatchMax: any task the gate lets start
	slots int // with a free slot for them (one kept for them included: see keepSlots): tasks that may not go ahead too
	most  int // beyond free, up to most: tasks that go ahead and overtake (priority above floor)
	floor int // the lowest priority waiting for a slot
}

// room is the room of a dispatch pass now. Beyond dispatchMax, a task
// that goes ahead is picked only if its priority is above that of an
// attempt waiting for a slot, which it will pass (see slots.place): a
// full queue of lower priorities does not make it wait for them, and
// what is in flight stays under overtakeMax.
func (e *Engine) room() room {
	n := len(e.attempts)
	r := room{free: e.dispatchMax() - n, slots: e.slots.free()}
	r.most = r.free
	if floor, ok := e.slots.lowest(); ok {
		r.most, r.floor = e.overtakeMax()-n, floor
	}
	return r
}

// overtakeMax is how many attempts may be in flight with those dispatched
// ahead beyond dispatchMax because they overtake one waiting (see room):
// as many again as aheadOf.
func (e *Engine) overtakeMax() int { return e.dispatchMax() + aheadOf(e.cfg.MaxConcurrent) }

// canOvertake tells whether, with dispatchMax in flight or more, the first
// ready task may still be dispatched (see room): it would pass an attempt
// waiting for a slot. It first makes the tasks whose not_before is due
// ready, as a dispatch pass does, and sets out.wake to the next one: a
// delayed task's time wakes the loop even while the queue is full.
// Under e.mu (the ready queue changes).
func (e *Engine) canOvertake(now int64, out *turnOutput) bool {
	if e.stopping || e.poison.Load() != nil || e.state.ReadyCount() == 0 || len(e.attempts) >= e.overtakeMax() {
		return false
	}
	floor, ok := e.slots.lowest()
	if !ok {
		return false
	}
	out.wake = e.state.ReleaseDue(now)
	return overtakes(e.state.PeekReady(), floor)
}

// waitsWhileFull is, with overtakeMax attempts in flight (no dispatch
// pass may run), the task a pass would stop at for want of a slot: the
// ready heap's first, if it may not go ahead, the gate lets it start,
// and it would pass an attempt waiting for a slot; nil otherwise. The
// slots that free are kept for it (see keepSlots) as when a pass stops
// at it: not given to the lower ones waiting ahead while the end that
// makes room for its dispatch is recorded.
func (e *Engine) waitsWhileFull(now int64) *replay.Task {
	if e.stopping || e.poison.Load() != nil || len(e.attempts) < e.overtakeMax() {
		return nil
	}
	floor, ok := e.slots.lowest()
	t := e.state.PeekReady()
	if !ok || !overtakes(t, floor) || goesAhead(t) || newGate(e, now).holds(t) != replay.GateNone {
		return nil
	}
	return t
}

// overtakes tells whether ready task t (nil: none) would pass an attempt
// of priority floor waiting for a slot.
func overtakes(t *replay.Task, floor int) bool { return t != nil && t.Priority() > floor }

// pick takes the ready tasks that pass the gate, in dispatch order, as
// many as r has room for, and parks each one it holds. Runs parked
// behind their workflow compete through their class's first run (see
// heads): it is released
// into the heap when it comes first and the gate lets it start. A task
// released from a fan-out's concurrency and held by another gate releases
// the next one (the room it was released for is still free).
//
// A task that may not go ahead (see slots) it picks only if a slot is
// free for it (r.slots, less the attempts picked or waiting that come
// before it), and stops at the first other one, which stays ready; beyond
// r.free, only while the heap's first has a priority above r.floor (the
// heap gives no higher one after it; a run parked behind its workflow is
// not looked at there: it waits for the next end to make room).
//
// It returns the picked tasks, the earliest not_before still to come
// (0: none), and the task that may not go ahead at which it stopped
// for want of a slot (nil: none).
func (e *Engine) pick(now int64, r room) (picked []*replay.Task, wake int64, waits *replay.Task) {
	st := e.state
	g := newGate(e, now)
	defer func() {
		if wake == 0 || g.wake != 0 && g.wake < wake {
			wake = g.wake
		}
	}()
	wake = st.ReleaseDue(now)
	hs := &heads{e: e, g: g, released: map[*replay.Run]string{}}
	st.ParkedClasses(hs.offer)
	var other []*replay.Task
	for len(picked) < r.most && !e.stopping {
		if len(picked) >= r.free && !overtakes(st.PeekReady(), r.floor) {
			break
		}
		hs.releaseBefore(st.PeekReady())
		t := st.TakeReady()
		if t == nil {
			break
		}
		e.looked.Add(1)
		held := g.holds(t)
		if held == replay.GateNone && !goesAhead(t) && len(picked)+e.slots.before(t.Priority()) >= r.slots {
			other = append(other, t) // waits for a free slot: the pass ends
			waits = t
			break
		}
		switch held {
		case replay.GateNone:
			picked = append(picked, t)
			g.take(t)
		case replay.GateOther:
			other = append(other, t)
		default:
			st.Park(t, held)
		}
		switch t.Released() {
		case replay.GateRun:
			hs.resolved(t.Run)
		case replay.GateNode:
			if held != replay.GateNone && held != replay.GateNode {
				st.ReleaseNode(t.Run.Tasks[t.Parent])
			}
		}
	}
	for _, t := range other {
		st.Requeue(t)
	}
	return picked, wake, waits
}

// keepSlots keeps the slots that free for waits, a task that may not go
// ahead and waits for one (nil: none), and any of its priority or higher:
// none goes to a lower one waiting ahead, and the loop, woken by the end
// that freed it (see slots.leave), dispatches waits into it. Every turn
// sets it, after its dispatch pass or with none (a turn without one), so
// a slot is kept only while the task it is kept for is the first that
// waits. Loop goroutine.
func (e *Engine) keepSlots(waits *replay.Task) {
	bar := math.MinInt
	if waits != nil {
		bar = waits.Priority()
	}
	e.spawnAll(e.slots.keep(bar))
}

// heads are, for one dispatch pass, the first parked run of each class
// (replay.RunClass) that the gate lets start, by their first task: the
// class's candidate. Its other runs wait behind it (the gate holds a
// class's runs alike).
type heads struct {
	e        *Engine
	g        *gate
	h        []head
	released map[*replay.Run]string // released this pass, not yet taken or held: their class
}

type head struct {
	class string
	run   *replay.Run
	first *replay.Task
}

// offer makes the first parked run of class a candidate if the gate lets
// it start now.
func (hs *heads) offer(class string) {
	r, t := hs.e.state.ParkedRun(class)
	hs.e.looked.Add(1)
	if r != nil && hs.g.holds(t) != replay.GateRun {
		hs.h = append(hs.h, head{class, r, t})
		slices.SortFunc(hs.h, func(a, b head) int { // few classes: a sorted slice
			if a.first.Before(b.first) {
				return -1
			}
			return 1
		})
	}
}

// releaseBefore releases the candidates that come before next (the heap's
// first task, or nil), if the gate still lets them start: their tasks then
// compete in the heap in order.
func (hs *heads) releaseBefore(next *replay.Task) {
	for len(hs.h) > 0 && (next == nil || hs.h[0].first.Before(next)) {
		c := hs.h[0]
		hs.h = hs.h[1:]
		if hs.g.holds(c.first) == replay.GateRun { // its workflow filled up meanwhile
			continue
		}
		hs.e.state.ReleaseRun(c.class, c.run)
		hs.released[c.run] = c.class
		next = hs.e.state.PeekReady()
	}
}

// resolved: a task of a run released this pass was taken or held: the
// next run of its class may be a candidate.
func (hs *heads) resolved(r *replay.Run) {
	if class, ok := hs.released[r]; ok {
		delete(hs.released, r)
		hs.offer(class)
	}
}
