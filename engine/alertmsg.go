package engine

import (
	"github.com/orkwal/orkwal/executors/notify"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// maxFailedInAlert bounds the failed tasks an alert lists.
const maxFailedInAlert = 10

// message builds an alert's message from the state, on the loop: its run
// (if still retained), its failed tasks with their last errors and the
// paths of their logs, whose tails the sender reads off the loop.
func (e *Engine) message(a *replay.Alert) *notify.Message {
	p := notify.Payload{ID: a.ID, Event: a.Event, Workflow: a.Workflow, Task: a.Task, Attempt: a.Attempt,
		Error: a.Error, Covers: a.Covers}
	if a.Run != "" {
		p.Run = &notify.Run{ID: a.Run, Status: "pruned", URL: e.runURL(a.Run)}
	}
	if run := e.state.Runs[a.Run]; run != nil {
		p.Run = &notify.Run{ID: run.ID, Status: string(run.Status), Trigger: run.Trigger, CreatedAt: ts(run.CreatedAt),
			StartedAt: tsp(run.StartedAt), FinishedAt: tsp(run.FinishedAt), URL: e.runURL(run.ID)}
		p.FailedTasks = e.failedTasks(run, a)
	}
	m := &notify.Message{Body: p}
	m.Describe()
	return m
}

func (e *Engine) runURL(id string) string {
	if e.cfg.AlertBaseURL == "" {
		return ""
	}
	return e.cfg.AlertBaseURL + "/ui/runs/" + id
}

// failedTasks: a retry's task and attempt, or the run's failed tasks.
func (e *Engine) failedTasks(run *replay.Run, a *replay.Alert) []notify.FailedTask {
	var out []notify.FailedTask
	for _, t := range run.Tasks {
		if len(out) == maxFailedInAlert {
			break
		}
		ft := notify.FailedTask{Name: t.Key(), Attempt: t.Attempt, ExitCode: t.ExitCode, Error: t.Error}
		switch {
		case a.Event == workflow.EventRetry && t.Key() == a.Task:
			ft.Attempt, ft.Error, ft.ExitCode = a.Attempt, a.Error, 0
		case a.Event != workflow.EventRetry && t.Status == replay.Failed && !t.IsNode():
		default:
			continue
		}
		if ft.Attempt > 0 {
			ft.LogPath = Layout(e.cfg.DataDir).AttemptLog(run.ID, ft.Name, ft.Attempt)
		}
		out = append(out, ft)
	}
	return out
}
