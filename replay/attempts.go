package replay

// AttemptEnd is how one attempt of a task ended, kept so that operators
// see every attempt with its error, not only the latest (`orkwal show`).
// Apply appends it from the record that ended the attempt: derived from
// the log alone, and persisted in snapshots (SnapTask.Attempts).
type AttemptEnd struct {
	_msgpack   struct{} `msgpack:",as_array"`
	Attempt    int
	Status     string // success, failed, cancelled or interrupted
	ExitCode   int
	Error      string
	StartedAt  int64 // its start, or its dispatch when it never started
	FinishedAt int64
}

// MaxAttemptsKept bounds a task's attempt history: the latest are kept
// (Task.Attempt still counts them all).
const MaxAttemptsKept = 20

// attemptEnded records the end of t's current attempt. t was touched.
func (t *Task) attemptEnded(status string, at int64) {
	start := t.StartedAt
	if start == 0 {
		start = t.DispatchedAt
	}
	end := AttemptEnd{Attempt: t.Attempt, Status: status, ExitCode: t.ExitCode, Error: t.Error, StartedAt: start, FinishedAt: at}
	kept := t.Attempts
	if len(kept) >= MaxAttemptsKept {
		kept = kept[len(kept)-MaxAttemptsKept+1:]
	}
	// A new array: a snapshot's copy of the task may share the old one.
	t.Attempts = append(append(make([]AttemptEnd, 0, len(kept)+1), kept...), end)
}
