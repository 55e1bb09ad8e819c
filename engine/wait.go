package engine

import (
	"context"
	"slices"

	"github.com/orkwal/orkwal/replay"
)

// WaitRun returns the run once it has ended (success, failed or
// cancelled), or as it is when ctx is done or the engine stops; ErrNotFound
// if there is no such run (or it was pruned meanwhile). What it returns is
// durable, as every view is. A waiter costs nothing until then: the loop
// wakes the waiters of the runs a commit ended (wakeWaiters), not every
// waiter at every commit.
func (e *Engine) WaitRun(ctx context.Context, id string) (RunView, error) {
	if err := e.WaitRunEnd(ctx, id); err != nil {
		return RunView{}, err
	}
	return e.Run(id)
}

// WaitRunEnd is WaitRun without the view: it returns once the run has
// ended, ctx is done or the engine stops (nil), or ErrNotFound if there is
// no such run. The caller reads the run as it needs it (AppendRun).
func (e *Engine) WaitRunEnd(ctx context.Context, id string) error {
	e.waitMu.Lock()
	status, err := e.RunStatus(id)
	if err != nil || replay.RunStatus(status).Finished() {
		e.waitMu.Unlock()
		return err
	}
	// Registered under waitMu, which wakeWaiters holds while it looks: the
	// commit that ends the run is either seen above or wakes ch.
	ch := make(chan struct{})
	if e.waiters == nil {
		e.waiters = map[string][]chan struct{}{}
	}
	e.waiters[id] = append(e.waiters[id], ch)
	e.waitMu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	case <-e.stop:
	}
	e.waitMu.Lock()
	if i := slices.Index(e.waiters[id], ch); i >= 0 {
		e.waiters[id] = slices.Delete(e.waiters[id], i, i+1)
		if len(e.waiters[id]) == 0 {
			delete(e.waiters, id)
		}
	}
	e.waitMu.Unlock()
	return nil
}

// wakeWaiters wakes the waiters of every run that has ended or is gone.
// Loop goroutine only (the state's only writer, so it reads without the
// lock), after a commit.
func (e *Engine) wakeWaiters() {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	for id, chans := range e.waiters {
		if r := e.state.Runs[id]; r != nil && !r.Status.Finished() {
			continue
		}
		for _, ch := range chans {
			close(ch)
		}
		delete(e.waiters, id)
	}
}
