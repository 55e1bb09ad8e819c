package engine

import (
	"math"
	"slices"
	"sync"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// Executor slots and dispatch-ahead (docs/reliability.md, "Executor slots
// and dispatch-ahead").
//
// --max-concurrent (Config.MaxConcurrent) bounds the attempts that run at
// once: an attempt holds one of that many slots from when it gets one
// until its end is seen. Besides those, the loop may dispatch up to as
// many again ahead (aheadOf): a process task that every other gate admits
// now is dispatched, its task_dispatched made durable and its files
// prepared while every slot is in use, and it waits in the slots' queue.
// Whoever sees a running process end (the executor's report, on its own
// goroutine) gives its slot to the first attempt of the queue (unless the
// slot is kept for a task that may not go ahead: see keep) and spawns
// it at once: no loop turn and no fsync lie between one process's exit
// and the next one's spawn. The loop records the end and dispatches more
// ahead in its next turn.
//
// The rules:
//   - Only the process executor dispatches ahead, and never a task with a
//     mutex (its holder would wait for a slot holding the key). Others are
//     dispatched only while a slot is free for them (one not held, that
//     no attempt waiting before them takes), so they never wait in the
//     queue; a pass that meets one it cannot dispatch stops there:
//     nothing after it in dispatch order (priority, then creation) goes
//     ahead of it, and the slots that free are kept for it and those of
//     its priority or higher (keep): none goes to a lower one waiting
//     ahead, so it gets the first that frees after those waiting before
//     it.
//   - An attempt dispatched ahead counts against every gate (max_active_runs,
//     concurrency, pools) as a dispatched attempt: it is one.
//   - Slots are given by priority (the task's, highest first), then in
//     dispatch order: the queue is kept in that order (place: an O(queue)
//     insert, from the back; the queue is at most overtakeMax long), so a
//     task of a higher priority ready later gets the next slot that frees
//     before the lower ones waiting.
//   - With the queue full (dispatchMax in flight), a task that goes ahead
//     and whose priority is above the lowest waiting is still dispatched
//     ahead, up to aheadOf more (overtakeMax; see Engine.room): it does
//     not wait for the lower ones to drain, and what is in flight stays
//     bounded.
//   - Its start deadline and timeout count from when it gets its slot
//     (grantedAt), not from its dispatch.
//   - Stopped while it waits (cancel, deadline, shutdown, fail-stop), it
//     leaves the queue and never spawns; its end is recorded as that of any
//     dispatched attempt stopped before it ran.
//   - A crash finds it dispatched and not started, as any attempt whose
//     process had not spawned yet: it is interrupted and runs again without
//     spending a retry.
type slots struct {
	mu    slotsLock
	clock Clock
	max   int        // Config.MaxConcurrent
	held  int        // attempts holding a slot (more than max only after a boot resumed deferred ones)
	queue []*attempt // waiting for a slot: by priority (highest first), then in dispatch order
	bar   int        // a slot that frees goes to no attempt of a lower priority (see keep); math.MinInt: none kept
}

// slotsLock is the slots' mutex. released, tests only, is called after
// each Unlock, outside the lock: the first moment another goroutine (a
// process's exit reporting its end) could take it.
type slotsLock struct {
	sync.Mutex
	released func()
}

func (l *slotsLock) Unlock() {
	l.Mutex.Unlock()
	if l.released != nil {
		l.released()
	}
}

type slotState uint8

const (
	slotWaiting slotState = iota // in the queue
	slotHeld                     // holds a slot: may be spawned
	slotLeft                     // gave its slot back, or left the queue unspawned
)

// ticket is an attempt's place in the slots (shared by a deferred
// attempt's tracker, which keeps its slot). Guarded by slots.mu.
type ticket struct {
	state     slotState
	grantedAt int64              // when it got its slot (unix ns)
	prep      executors.Prepared // durable and prepared, waiting for its slot
	early     bool               // its slot is given back on its Finished report (a process)
}

// spawnable is an attempt given a slot with its prepared work.
type spawnable struct {
	a    *attempt
	prep executors.Prepared
}

func newSlots(max int, clock Clock) *slots { return &slots{max: max, clock: clock, bar: math.MinInt} }

// aheadOf is how many attempts the loop may dispatch ahead beyond the
// slots: as many as there are slots, at least 32, which keeps every
// slot's next attempt durable and prepared when it frees, and lets the
// loop take several ends in one turn (see reporter): a turn, and its
// fsync, comes every aheadOf/2 ends or so. BenchmarkProcessVsBare at
// concurrency 2: 2 ahead, 0.74-0.82 turns a task; 8, 0.24-0.27 frames a
// task; 16, 0.14, and 20-30 µs less engine CPU a task than 8 (3
// alternating pairs, cpu-ratio 0.87-0.91 → 0.90-0.93; an fdatasync costs
// this machine about 90 µs of CPU); 32, 0.08-0.09 frames a task (12
// alternating pairs against 16 under load 11-17: median cpu-ratio 0.90 →
// 0.93).
func aheadOf(maxConcurrent int) int { return max(maxConcurrent, 32) }

// goesAhead tells whether a task may be dispatched ahead of a free slot.
func goesAhead(t *replay.Task) bool {
	spec := t.Spec()
	return earlyRelease(spec) && t.MutexKey == ""
}

// earlyRelease: the executor's Finished report is the end of the attempt
// (a process reaped), so its slot is given back then, before the loop
// records it. Not for an executor whose work may go on deferred.
func earlyRelease(spec *workflow.Task) bool { return spec.Executor == "process" }

// enter gives a just dispatched attempt its ticket: a place in the queue,
// by its priority. The loop's keep, at the end of the dispatch pass,
// gives the free slots in the queue's order (as may whoever frees one
// meanwhile). Loop goroutine.
func (s *slots) enter(a *attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.slot = &ticket{early: earlyRelease(a.spec)}
	s.queue = slices.Insert(s.queue, s.place(a.spec.Priority), a)
}

// keep keeps the slots that free for attempts of priority bar or higher
// (math.MinInt: for any), and gives the free slots to the first attempts
// of the queue down to bar: a task that may not go ahead (see goesAhead)
// and waits for a slot does not wait behind lower ones waiting ahead. The
// loop sets it at every turn (see Engine.keepSlots). It returns the
// attempts given a slot that are ready to spawn (the caller spawns them).
func (s *slots) keep(bar int) []spawnable {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bar = bar
	return s.handOut()
}

// free is how many slots are free (kept ones included).
func (s *slots) free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.max-s.held, 0)
}

// before is how many attempts wait with priority p or higher: those a
// task of priority p dispatched now would wait behind.
func (s *slots) before(p int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.place(p)
}

// place is where an attempt of priority p enters the queue: after every
// attempt of priority p or higher (slots go by priority, then in dispatch
// order). From the back: one dispatched after the others, of their
// priority or lower, the common case, is looked at against one.
func (s *slots) place(p int) int {
	i := len(s.queue)
	for i > 0 && s.queue[i-1].spec.Priority < p {
		i--
	}
	return i
}

// lowest is the lowest priority of the attempts waiting for a slot (the
// queue's last); ok is false when none waits.
func (s *slots) lowest() (p int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return 0, false
	}
	return s.queue[len(s.queue)-1].spec.Priority, true
}

// force gives an attempt a slot even if none is free (a deferred task's
// tracker resumed at boot: it was running before).
func (s *slots) force(a *attempt, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.slot = &ticket{}
	s.grant(a, now)
}

func (s *slots) grant(a *attempt, now int64) {
	a.slot.state, a.slot.grantedAt = slotHeld, now
	s.held++
}

// readiness is what ready found for an attempt whose dispatch is durable
// and whose preparation is over.
type readiness uint8

const (
	readySpawn  readiness = iota // it holds a slot: the caller spawns it
	readyQueued                  // it waits for a slot with its work: whoever frees one spawns it
	readyGone                    // it was withdrawn while it waited: the caller aborts prep and reports its end
	readyFailed                  // it could not be prepared: it holds no place in the queue; the caller reports the failure
)

// ready is called once a's dispatch is durable and its work prepared
// (prep, nil if preparing failed), by the launcher, or by the loop for a
// lone start (see Engine.loneStart). An attempt that
// could not be prepared leaves the queue if it waited there (it ends
// without running); one that holds a slot keeps it until its end is
// recorded.
func (s *slots) ready(a *attempt, prep executors.Prepared) readiness {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := a.slot
	switch {
	case t.state == slotLeft:
		return readyGone
	case prep == nil:
		if t.state == slotWaiting {
			s.unqueue(a)
			t.state = slotLeft
		}
		return readyFailed
	case t.state == slotHeld:
		return readySpawn
	}
	t.prep = prep
	return readyQueued
}

// leave gives back a's slot, or takes it out of the queue, once: a ended.
// It returns the attempts that got a slot and are ready to spawn (the
// caller spawns them), and whether the loop may learn of a's end late
// (quiet): more than half the ahead queue's room still waits, and no
// slot is free (none kept: see keep).
func (s *slots) leave(a *attempt) (next []spawnable, quiet bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := a.slot; t.state != slotLeft {
		if t.state == slotHeld {
			s.held--
		} else {
			s.unqueue(a)
		}
		t.state, t.prep = slotLeft, nil
		next = s.handOut()
	}
	return next, len(s.queue) > aheadOf(s.max)/2 && s.held >= s.max
}

// handOut gives free slots to the first attempts of the queue: the
// highest priority, the earliest dispatched of it; not below the bar.
func (s *slots) handOut() []spawnable {
	var out []spawnable
	for s.held < s.max && len(s.queue) > 0 && s.queue[0].spec.Priority >= s.bar {
		a := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.grant(a, s.clock.Now().UnixNano())
		if a.slot.prep != nil {
			out = append(out, spawnable{a, a.slot.prep})
			a.slot.prep = nil
		}
	}
	if len(s.queue) == 0 {
		s.queue = nil // let the backing array go
	}
	return out
}

// withdrawEvery takes out of the queue, at once, every waiting attempt
// that match accepts, and returns each with its prepared work (nil if the
// launcher has not made it ready: it then aborts it and reports its end;
// see ready). One withdrawn never spawns. The one way out of the queue
// but a slot or a failed preparation (a stop of one attempt matches only
// it). One hold of the lock for all of them: a process that exits
// meanwhile cannot give its slot to one of them before it is withdrawn,
// as it could between two withdrawals (a shutdown or a run's cancel would
// spawn it only to stop it). match runs under the lock.
func (s *slots) withdrawEvery(match func(*attempt) bool) []spawnable {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []spawnable
	kept := s.queue[:0]
	for _, a := range s.queue {
		if t := a.slot; t.state != slotWaiting || !match(a) {
			kept = append(kept, a)
			continue
		}
		out = append(out, spawnable{a, a.slot.prep})
		a.slot.state, a.slot.prep = slotLeft, nil
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	if len(s.queue) == 0 {
		s.queue = nil
	}
	return out
}

func (s *slots) unqueue(a *attempt) {
	if i := slices.Index(s.queue, a); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// grantedAt is when a got its slot, 0 while it waits for one.
func (s *slots) grantedAt(a *attempt) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.slot.state == slotWaiting {
		return 0
	}
	return a.slot.grantedAt
}

// waiting tells whether a waits for a slot.
func (s *slots) waiting(a *attempt) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return a.slot.state == slotWaiting
}

// inUse is the number of slots held, and of attempts waiting for one.
func (s *slots) inUse() (held, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held, len(s.queue)
}
