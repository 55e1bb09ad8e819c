package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
)

// scanPick is the dispatch pass as it was before tasks were parked: a
// scan of every ready task in order, taking those the gate lets through.
// TestPickMatchesScan holds pick to it.
func scanPick(e *Engine, g *gate, free int) []*replay.Task {
	var picked []*replay.Task
	e.state.EachReady(func(t *replay.Task) bool {
		if len(picked) == free {
			return false
		}
		if g.blocked(t) == "" {
			picked = append(picked, t)
			g.take(t)
		}
		return true
	})
	return picked
}

// pickSpecs exercise every gate: delays and retry backoff, max_active_runs
// (two versions of one workflow with different caps), overlap: queue (cron
// runs), fan-out concurrency, mutexes shared across workflows, priority.
func pickSpecs() []*workflow.Spec {
	backoff := &workflow.Backoff{Initial: 3 * time.Second, Max: 10 * time.Second, Factor: 2}
	t := func(name string, mod func(*workflow.Task), deps ...string) *workflow.Task {
		tk := &workflow.Task{Name: name, Executor: "noop", DependsOn: deps, Retries: 1, RetryBackoff: backoff}
		if mod != nil {
			mod(tk)
		}
		return tk
	}
	return []*workflow.Spec{
		{Name: "capped", MaxActiveRuns: 2, Tasks: []*workflow.Task{
			t("a", nil), t("b", func(tk *workflow.Task) { tk.Mutex = "m" }, "a"), t("c", func(tk *workflow.Task) { tk.Priority = 2 }, "a")}},
		{Name: "capped", MaxActiveRuns: 1, Tasks: []*workflow.Task{ // version 2
			t("a", func(tk *workflow.Task) { tk.Delay = 2 * time.Second }), t("b", nil)}},
		{Name: "fan", Tasks: []*workflow.Task{
			t("n", func(tk *workflow.Task) { tk.Parallel, tk.Concurrency, tk.Mutex = 4, 2, "m" })}},
		{Name: "wide", Tasks: []*workflow.Task{
			t("x", func(tk *workflow.Task) { tk.Parallel, tk.Concurrency = 6, 3 }), t("y", func(tk *workflow.Task) { tk.Priority = 1 })}},
		{Name: "cron", Schedule: &workflow.Schedule{Cron: "* * * * *", Overlap: "queue"}, Tasks: []*workflow.Task{
			t("q", func(tk *workflow.Task) { tk.Mutex = "m" }), t("r", func(tk *workflow.Task) { tk.Delay = time.Second }, "q")}},
	}
}

// TestPickMatchesScan: on random workloads, the parked dispatch takes
// exactly the tasks, in the order, that a scan of every ready task took
// (same state, same clock, same free slots), pass after pass.
func TestPickMatchesScan(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { pickMatchesScan(t, seed) })
	}
}

func pickMatchesScan(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	parked := &Engine{log: quiet, state: replay.New(), slots: newSlots(1, &fakeClock{})} // none waits for a slot
	scan := &Engine{log: quiet, state: replay.New()}
	now := int64(time.Hour)
	apply := func(r replay.Record) bool {
		e1, e2 := parked.state.Apply(r), scan.state.Apply(r)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("seed %d: %s: %v vs %v", seed, r.Kind(), e1, e2)
		}
		return e1 == nil
	}
	for _, s := range pickSpecs() {
		apply(&replay.WorkflowPut{Spec: s, At: now})
		if s.Name == "capped" && s.MaxActiveRuns == 2 {
			for i := 0; i < 6; i++ { // runs pinned to version 1
				apply(&replay.RunCreated{ID: fmt.Sprintf("v1-%d", i), Workflow: "capped", Version: 1, At: now})
			}
		}
	}
	var inflight []replay.TaskRef
	attempts := map[replay.TaskRef]int{}
	runs, fires := 0, int64(0)
	for step := 0; step < 400; step++ {
		switch k := rng.IntN(10); {
		case k < 3: // a trigger
			wf := []string{"capped", "fan", "wide", "cron"}[rng.IntN(4)]
			runs++
			id := fmt.Sprintf("r%d", runs)
			if wf == "cron" {
				fires++
				apply(&replay.CronFired{Workflow: "cron", ScheduledAt: fires, RunID: id, Version: 1, Queued: true, At: now})
			} else {
				apply(&replay.RunCreated{ID: id, Workflow: wf, Version: parked.state.Workflows[wf].Version, At: now})
			}
		case k < 6 && len(inflight) > 0: // an attempt ends
			i := rng.IntN(len(inflight))
			ref := inflight[i]
			inflight = append(inflight[:i], inflight[i+1:]...)
			apply(&replay.TaskFinished{TaskRef: ref, Attempt: attempts[ref], OK: rng.IntN(4) > 0, At: now})
		case k == 6:
			now += int64(rng.IntN(4)) * int64(time.Second)
		case k == 7 && runs > 0: // a cancel
			apply(&replay.RunCancelRequested{ID: fmt.Sprintf("r%d", 1+rng.IntN(runs)), At: now})
			inflight = stillInFlight(parked.state, inflight)
		default: // a dispatch pass
			free := 1 + rng.IntN(4)
			got, _, _ := parked.pick(now, room{free: free, slots: free, most: free})
			want := scanPick(scan, newGate(scan, now), free)
			if ids(got) != ids(want) {
				t.Fatalf("seed %d step %d: parked picked %s, a scan %s", seed, step, ids(got), ids(want))
			}
			for _, tk := range got {
				ref := replay.TaskRef{Run: tk.Run.ID, Task: tk.Index}
				attempts[ref] = tk.Attempt + 1
				apply(&replay.TaskDispatched{TaskRef: ref, Attempt: tk.Attempt + 1, At: now})
				inflight = append(inflight, ref)
			}
		}
		if a, b := parked.state.ReadyCount(), scan.state.ReadyCount(); a != b {
			t.Fatalf("seed %d step %d: %d ready, the scan's state %d", seed, step, a, b)
		}
	}
}

// stillInFlight drops the attempts a cancel ended.
func stillInFlight(st *replay.State, refs []replay.TaskRef) []replay.TaskRef {
	out := refs[:0]
	for _, ref := range refs {
		if tk, err := st.Task(ref); err == nil && tk.AttemptInFlight() {
			out = append(out, ref)
		}
	}
	return out
}

func ids(ts []*replay.Task) string {
	s := ""
	for _, t := range ts {
		s += t.ID() + " "
	}
	return s
}
