// Package replay holds orkwal's record types, its state, and Apply: the one
// pure fold from records to state, used by the live engine and on boot alike.
//
// Invariants:
//   - Apply is deterministic: it never reads the clock, randomness, the
//     environment or files. Every time it stores comes from a record.
//   - Apply validates before it mutates: a record that does not fit the state
//     (an unknown run, a task finishing twice, a finished run changing) is
//     rejected with an error and leaves the state unchanged. On boot such an
//     error means the log is corrupt or was written by a buggy engine; boot
//     refuses rather than guess.
//   - Terminal states stay terminal: a success, failed, skipped or cancelled
//     task and a finished run never change again through Apply.
//   - Derived transitions are computed here, not recorded: when a task
//     fails, its downstream tasks become skipped; when the last task of a run
//     reaches a terminal state, the run ends success or failed (seed 001's
//     check_run_completion), at the time of the record that ended it. The
//     ready queue (pending tasks whose dependencies all succeeded, in
//     creation order) is derived the same way.
//   - State is owned by one goroutine at a time; its methods do no locking.
package replay
