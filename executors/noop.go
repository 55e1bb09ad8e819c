package executors

import "time"

// Noop is an Executor that does no work: Start reports Started (PID 0) and
// then a successful Finished, both before it returns. It serves tests and
// benchmarks of the engine.
type Noop struct{}

// Start reports Started and Finished{OK: true} synchronously and returns a
// Handle whose Stop does nothing.
func (Noop) Start(job Job, report func(Event)) (Handle, error) {
	now := time.Now()
	report(Event{Kind: Started, TaskID: job.TaskID, Attempt: job.Attempt, At: now})
	report(Event{Kind: Finished, TaskID: job.TaskID, Attempt: job.Attempt, At: now, OK: true})
	return noopHandle{}, nil
}

// noopHandle is the Handle of a Noop job, which is always finished.
type noopHandle struct{}

// Stop does nothing: the work is already over.
func (noopHandle) Stop(time.Duration, string) {}
