package replay

// RunOf is the run a record is about: the one it creates, changes or whose
// task it changes ("" for a record about no run).
func RunOf(r Record) string {
	switch r := r.(type) {
	case *RunCreated:
		return r.ID
	case *CronFired:
		return r.RunID
	case *TaskDispatched:
		return r.Run
	case *TaskStarted:
		return r.Run
	case *TaskFinished:
		return r.Run
	case *TaskInterrupted:
		return r.Run
	case *TaskDeferred:
		return r.Run
	case *RunCancelRequested:
		return r.ID
	case *RunRetried:
		return r.ID
	case *TaskMarked:
		return r.Run
	}
	return ""
}
