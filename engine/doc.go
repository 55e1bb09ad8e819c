// Package engine is orkwal's scheduler: one goroutine that owns the state,
// turns commands and executor events into records, makes them durable, and
// only then acts on them.
//
// One turn of the loop (see docs/format.md, "Crash safety"):
//  1. block until an event arrives (a command, an executor event) or ready
//     work can be dispatched; an idle engine does not wake up;
//  2. drain the waiting events, up to a cap;
//  3. under the state's write lock, decide each transition and Apply it at
//     once (Apply validates before it mutates: a rejected record is answered
//     as an error and never logged), then dispatch ready tasks into free
//     slots in creation order, applying those records too;
//  4. hand the turn's starts (in dispatch order) to the launcher, whose few
//     goroutines prepare the attempts' files meanwhile (see
//     executors.Preparer) and then wait for step 5's outcome; append every
//     record of the turn as one WAL frame: one write, one fsync, still
//     under the write lock, so readers never see state that is not durable.
//     A turn's one process start with no event waiting (a chain's next
//     step) is prepared so too, and spawned by the loop itself in step 5,
//     after the answers, when a launcher worker is free to prepare it at
//     once (see Engine.loneStart);
//  5. tell the waiting starts that the frame is durable (they spawn) or
//     failed (they remove what they prepared, and the turn waits until
//     they have, so that a later dispatch of the same attempt cannot have
//     its files removed under it); release the lock and
//     perform the effects: answer callers, stop attempts, hand the removal
//     of finished attempts' scratch files to the launcher; the loop takes
//     its next turn while processes are being spawned (see launcher).
//
// Invariants:
//   - Write ahead: no caller is answered and no executor is started before
//     the records that say so are durable.
//   - The state changes only through replay.Apply, live and on boot alike.
//   - The engine reads the clock; Apply never does.
//   - At-least-once: on boot every attempt that was in flight is recorded as
//     interrupted and runs again as a new attempt; its leftover process group
//     is killed first so that it cannot race the new attempt.
//   - After a WAL failure the engine is fail-stop: it accepts no more work
//     and answers commands with ErrUnavailable.
package engine
