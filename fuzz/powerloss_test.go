package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// TestPowerLoss is harness 2 of docs/reliability.md: simulated power loss,
// deterministic, in process. Each scenario (one seed) runs an engine with a
// fake clock and a fake executor through a seeded workload, cuts the power
// at a seeded WAL or compaction I/O point, builds the folder a power cut
// could leave (see diskModel and snapmodel_test.go), boots a new engine on it (which may itself lose power while it
// records the interrupted attempts), checks that nothing acknowledged was
// lost and that recovery is a replay of a prefix of what was written, and
// goes on for a few generations.
//
//	go test ./fuzz -run '^TestPowerLoss$' -seed N -v     # one scenario
//	go test ./fuzz -run '^TestPowerLoss$' -torture.scenarios 100000
func TestPowerLoss(t *testing.T) {
	root := scratchRoot(t)
	if *seed != 0 {
		st := &plStats{}
		s := newScenario(*seed, root, st)
		if err := s.run(); err != nil {
			t.Fatalf("power-loss scenario failed: %v\n%s\nreproduce: go test ./fuzz -run '^TestPowerLoss$' -seed %d -v",
				err, s.trace(), *seed)
		}
		t.Logf("seed %d: %s", *seed, st)
		t.Logf("trace:\n%s", s.trace())
		return
	}
	count, crashes, budget := *tortureScenarios, *tortureCrashes, *tortureTime
	switch {
	case count > 0 || crashes > 0 || budget > 0:
	case longMode():
		crashes = 100_000
	case testing.Short():
		budget = 5 * time.Second
	default:
		budget = 25 * time.Second
	}
	base := baseSeed()
	t.Logf("base seed %d, %d workers", base, runtime.GOMAXPROCS(0))
	st := &plStats{}
	start := time.Now()
	var next atomic.Int64
	var failOnce sync.Once
	var failure string
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := next.Add(1) - 1
				switch {
				case count > 0 && i >= int64(count),
					crashes > 0 && st.crashes.Load() >= int64(crashes),
					budget > 0 && time.Since(start) > budget:
					return
				}
				sd := base + i
				s := newScenario(sd, root, st)
				if err := s.run(); err != nil {
					failOnce.Do(func() {
						failure = fmt.Sprintf("power-loss scenario seed %d failed: %v\n%s\nreproduce: go test ./fuzz -run '^TestPowerLoss$' -seed %d -v",
							sd, err, s.trace(), sd)
					})
					stop.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failure != "" {
		t.Fatal(failure)
	}
	took := time.Since(start)
	t.Logf("%s in %s (%.0f scenarios/min)", st, took.Round(time.Millisecond), float64(st.scenarios.Load())/took.Minutes())
	fmt.Printf("TORTURE powerloss scenarios=%d crashes=%d boot_crashes=%d idle_crashes=%d compaction_crashes=%d runs=%d pruned=%d tasks=%d lost=0 "+
		"unacked_survived=%d torn_cut=%d segments_lost=%d reexecutions=%d compactions=%d truncated_boots=%d snapdir_lost=%d tail_rot_refused=%d tail_rot_booted=%d seconds=%.1f\n",
		st.scenarios.Load(), st.crashes.Load(), st.bootCrashes.Load(), st.idleCrashes.Load(), st.compactCrashes.Load(), st.runs.Load(),
		st.pruned.Load(), st.tasks.Load(), st.unackedSurvived.Load(), st.tornCut.Load(), st.segmentsLost.Load(), st.reexec.Load(),
		st.compactions.Load(), st.truncatedBoots.Load(), st.snapDirLost.Load(), st.rotRefused.Load(), st.rotBooted.Load(), took.Seconds())
}

// plStats counts what the scenarios exercised.
type plStats struct {
	scenarios, generations, crashes, bootCrashes, idleCrashes atomic.Int64
	runs, tasks, unackedSurvived, tornCut, segmentsLost       atomic.Int64
	reexec                                                    atomic.Int64 // attempts interrupted by a crash: run again
	compactions, compactCrashes, truncatedBoots, snapDirLost  atomic.Int64
	pruned, rotRefused, rotBooted                             atomic.Int64
}

func (s *plStats) String() string {
	return fmt.Sprintf("%d scenarios, %d engines, %d power cuts (%d during boot, %d idle, %d during a compaction), %d runs (%d pruned), %d tasks, 0 lost; "+
		"%d unacknowledged frames survived, %d torn tails cut, %d new segments lost, %d attempts interrupted; "+
		"%d compactions before a cut, %d boots on a truncated log, %d images lost an unsynced snapshots/; "+
		"a byte of the last acknowledged frame changed: %d boots refused, %d booted",
		s.scenarios.Load(), s.generations.Load(), s.crashes.Load(), s.bootCrashes.Load(), s.idleCrashes.Load(), s.compactCrashes.Load(),
		s.runs.Load(), s.pruned.Load(), s.tasks.Load(), s.unackedSurvived.Load(), s.tornCut.Load(), s.segmentsLost.Load(), s.reexec.Load(),
		s.compactions.Load(), s.truncatedBoots.Load(), s.snapDirLost.Load(), s.rotRefused.Load(), s.rotBooted.Load())
}

// The workflows of the power-loss workload. %d is the version counter, so
// that a put records a new version. Every task runs on the fake executor
// (kind process); start_timeout keeps the start deadline out of reach of the
// fake clock, so that only the scenario decides when time-driven work
// happens.
var plWorkflows = []string{`name: dag
description: v%d
tasks:
  a: {command: "true", start_timeout: 1000h}
  b: {command: "true", depends_on: [a], retries: 1, retry_backoff: {initial: 1ms, max: 1s, factor: 2}, start_timeout: 1000h}
  c: {command: "true", depends_on: [a], start_timeout: 1000h}
  d: {command: "true", depends_on: [b, c], start_timeout: 1000h}
`, `name: fan
description: v%d
tasks:
  gen: {command: "true", start_timeout: 1000h}
  each: {command: "true", depends_on: [gen], foreach: gen.items, concurrency: 2, retries: 1, retry_backoff: {initial: 1ms, max: 1s, factor: 2}, start_timeout: 1000h}
  par: {command: "true", depends_on: [gen], parallel: 2, start_timeout: 1000h}
  sum: {command: "true", depends_on: [each, par], start_timeout: 1000h}
`, `name: cleanup
description: v%d
tasks:
  work: {command: "true", retries: 2, retry_backoff: {initial: 1s, max: 4s, factor: 2}, start_timeout: 1000h}
  tidy: {command: "true", depends_on: [work], on_failure: run, start_timeout: 1000h}
`, `name: serial
description: v%d
max_active_runs: 1
params: {k: x}
tasks:
  only: {command: "true", mutex: "lock-{{params.k}}", priority: 1, start_timeout: 1000h}
  once: {command: "true", depends_on: [only], on_interrupt: fail, start_timeout: 1000h}
`}

var plNames = []string{"dag", "fan", "cleanup", "serial"}

// scenario is one seed's run.
type scenario struct {
	seed    int64
	rng     *rand.Rand
	root    string
	clock   *fakeClock
	segSize int
	padStep int // wal.Options.PadStep: 0 (the default, past every segment size here) or a step entries cross
	maxConc int
	compact int64      // CompactBytes: -1 (off) or a few KiB
	keep    int        // KeepRuns
	hist    [][][]byte // every frame of the current folder's log, index 1 first
	st      *plStats
	// bootCompactions: the compactions the current engine counted when
	// it booted (a boot past CompactBytes snapshots before it serves);
	// the model's count is of those the loop decided.
	bootCompactions int64
	version         int // put counter

	// Acknowledged: a command returned nil.
	ackRuns     []string
	ackVersions map[string]int
	ackCancels  map[string]int
	ackRetries  map[string]int
	lastCancel  map[string]bool // the last acknowledged command on the run was a cancel

	log []string // what happened, for the failure report
	rot *tailRot // a byte of the next boot's image changed (rot_test.go)
}

func newScenario(sd int64, root string, st *plStats) *scenario {
	return &scenario{seed: sd, rng: rand.New(rand.NewPCG(uint64(sd), 0x9e3779b97f4a7c15)),
		root: filepath.Join(root, fmt.Sprintf("s%d", sd)), clock: newFakeClock(), st: st,
		ackVersions: map[string]int{}, ackCancels: map[string]int{}, ackRetries: map[string]int{}, lastCancel: map[string]bool{}}
}

func (s *scenario) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

// trace is the end of the scenario's log.
func (s *scenario) trace() string {
	l := s.log
	if len(l) > 60 {
		l = append([]string{fmt.Sprintf("... (%d earlier lines)", len(l)-60)}, l[len(l)-60:]...)
	}
	return "  " + strings.Join(l, "\n  ")
}

func (s *scenario) config(dir string, m *diskModel, fx *fakeExec) engine.Config {
	c := engine.Config{DataDir: dir, MaxConcurrent: s.maxConc, Clock: s.clock, Logger: quiet,
		SegmentSize: s.segSize, WALPadStep: s.padStep, CompactBytes: s.compact, KeepRuns: s.keep,
		Executors: map[string]executors.Executor{"process": fx, "noop": fx}}
	if m != nil {
		c.WALFault, c.CompactFault = m.fault, m.compactFault
	}
	return c
}

// run plays the scenario: generations of engines, each ended by a power cut,
// then a last boot that is checked twice.
func (s *scenario) run() error {
	defer os.RemoveAll(s.root)
	s.st.scenarios.Add(1)
	s.segSize = []int{512, 1024, 4096}[s.rng.IntN(3)]
	s.padStep = []int{0, 128, 700}[s.rng.IntN(3)]
	s.maxConc = 1 + s.rng.IntN(4)
	gens := 1 + s.rng.IntN(4)
	s.compact, s.keep = -1, 1+s.rng.IntN(4)
	if s.rng.IntN(4) != 0 {
		s.compact = 1024 << s.rng.IntN(3) // a compaction every few actions
	}
	s.logf("seed %d: segment size %d, pad step %d, max concurrent %d, compact bytes %d, keep runs %d, %d power cuts",
		s.seed, s.segSize, s.padStep, s.maxConc, s.compact, s.keep, gens)
	dir := filepath.Join(s.root, "g0")
	var prev *crashResult
	for g := 0; ; g++ {
		last := g == gens
		image := filepath.Join(s.root, fmt.Sprintf("g%d", g+1))
		actions := 5 + s.rng.IntN(40)
		crashAt := 0
		if !last {
			switch r := s.rng.IntN(10); {
			case r < 3:
				crashAt = 1 + s.rng.IntN(3) // likely during the boot's own appends
			case r < 4: // no cut at an I/O point: the power goes while idle
			default:
				crashAt = 1 + s.rng.IntN(2*actions)
			}
		}
		if s.rot != nil {
			crashAt = 0 // no cut during this boot: its verify must see what it did with the changed frame
		}
		fx := newFakeExec()
		s.st.generations.Add(1)
		s.logf("generation %d: boot on %s (cut at I/O step %d)", g, filepath.Base(dir), crashAt)
		model, e, err := s.boot(dir, image, crashAt, g, fx)
		if err != nil {
			if model == nil || !model.isCrashed() || !errors.Is(err, errCrash) {
				return fmt.Errorf("generation %d: boot failed: %w", g, err)
			}
			s.st.bootCrashes.Add(1)
			s.st.crashes.Add(1)
			s.hist = model.res.written
			if err := s.afterCrash(model, g, "boot"); err != nil {
				return err
			}
			if s.rot, err = s.rotTail(image, &model.res); err != nil {
				return fmt.Errorf("generation %d: %w", g, err)
			}
			os.RemoveAll(dir)
			prev, dir = &model.res, image
			continue
		}
		s.bootCompactions = e.Stats().Compactions
		if prev != nil {
			if err := s.verify(e, dir, prev); err != nil {
				s.closeEngine(e, fx)
				return fmt.Errorf("generation %d, after the power cut at %s: %w", g, prev.describe(), err)
			}
			model.setHistory(s.hist) // the recovered history, boot frames included
		}
		if last {
			err := s.idempotent(e, dir, fx, model)
			if err == nil {
				err = s.count(dir)
			}
			return err
		}
		e.Start()
		werr := s.workload(e, fx, model, actions, g == 0)
		if !model.isCrashed() {
			s.st.idleCrashes.Add(1)
		}
		model.crash()
		s.st.crashes.Add(1)
		s.hist = model.res.written
		s.st.compactions.Add(e.Stats().Compactions)
		if err := s.closeEngine(e, fx); err != nil {
			return fmt.Errorf("generation %d: %w", g, err)
		}
		if werr != nil {
			return fmt.Errorf("generation %d: %w", g, werr)
		}
		if err := s.afterCrash(model, g, "workload"); err != nil {
			return err
		}
		if s.rot, err = s.rotTail(image, &model.res); err != nil {
			return fmt.Errorf("generation %d: %w", g, err)
		}
		os.RemoveAll(dir)
		prev, dir = &model.res, image
	}
}

func (s *scenario) afterCrash(m *diskModel, g int, phase string) error {
	s.logf("power cut during %s at %s", phase, m.res.describe())
	for _, mode := range m.res.modes {
		s.logf("  image: %s", mode)
	}
	s.st.tornCut.Add(int64(m.res.torn))
	s.st.segmentsLost.Add(int64(m.res.segmentsLost))
	if m.res.snapDirLost {
		s.st.snapDirLost.Add(1)
	}
	if m.res.index == 0 && m.res.op != "" && m.res.op != wal.OpWrite && m.res.op != wal.OpSync && m.res.op != wal.OpDirSync {
		s.st.compactCrashes.Add(1) // a CompactFault step or the WAL's truncation
	}
	if m.crashErr != nil {
		return fmt.Errorf("generation %d: harness could not cut the power: %w", g, m.crashErr)
	}
	return nil
}

func (r *crashResult) describe() string {
	if r.index == 0 && r.op != "" {
		return fmt.Sprintf("I/O step %d: compaction %s (%d frames written, all committed)", r.step, r.op, len(r.written))
	}
	if r.index == 0 {
		return fmt.Sprintf("idle (after %d I/O steps, %d frames written, all committed)", r.step, len(r.written))
	}
	return fmt.Sprintf("I/O step %d: %s of frame %d (%d frames written, %d committed)",
		r.step, r.op, r.index, len(r.written), r.committed)
}

// closeEngine releases a crashed or checked engine. Its crash image, if any,
// was taken at the crash: nothing it does now can reach the image.
func (s *scenario) closeEngine(e *engine.Engine, fx *fakeExec) error {
	fx.close()
	done := make(chan error, 1)
	go func() { done <- e.Close() }()
	select {
	case <-done:
		return nil
	case <-time.After(20 * time.Second):
		return errors.New("engine.Close did not return within 20s")
	}
}

// workload runs up to n seeded actions, waiting after each until the engine
// has settled, and stops at the power cut.
func (s *scenario) workload(e *engine.Engine, fx *fakeExec, m *diskModel, n int, first bool) error {
	if err := s.settle(e, fx, m, nil, "boot dispatch"); err != nil {
		return err
	}
	if first {
		for i := range plWorkflows {
			if m.isCrashed() {
				return nil
			}
			if err := s.put(e, fx, m, i); err != nil {
				return err
			}
		}
	}
	for i := 0; i < n && !m.isCrashed(); i++ {
		var err error
		switch r := s.rng.IntN(100); {
		case r < 22:
			err = s.trigger(e, fx, m)
		case r < 37:
			err = s.startJob(e, fx, m)
		case r < 70:
			err = s.finishJob(e, fx, m)
		case r < 76:
			err = s.cancel(e, fx, m)
		case r < 83:
			err = s.retry(e, fx, m)
		case r < 88:
			err = s.put(e, fx, m, s.rng.IntN(len(plWorkflows)))
		default:
			d := time.Duration(1+s.rng.IntN(3000)) * time.Millisecond
			s.logf("advance clock %s", d)
			s.clock.Advance(d)
			err = s.settle(e, fx, m, nil, "clock advance")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *scenario) put(e *engine.Engine, fx *fakeExec, m *diskModel, i int) error {
	s.version++
	src := fmt.Sprintf(plWorkflows[i], s.version)
	spec, err := workflow.Parse("", []byte(src))
	if err != nil {
		return fmt.Errorf("harness workflow %d does not parse: %w", i, err)
	}
	w, _, err := e.PutWorkflow(spec, src)
	s.logf("put %s: version %d, err %v", spec.Name, w.Version, err)
	if err == nil {
		s.ackVersions[spec.Name] = max(s.ackVersions[spec.Name], w.Version)
	}
	return s.settle(e, fx, m, nil, "put")
}

func (s *scenario) trigger(e *engine.Engine, fx *fakeExec, m *diskModel) error {
	name := plNames[s.rng.IntN(len(plNames))]
	var params map[string]string
	if name == "serial" && s.rng.IntN(2) == 0 {
		params = map[string]string{"k": "y"}
	}
	id, err := e.Trigger(name, params, "test")
	s.logf("trigger %s: %s err %v", name, id, err)
	if err == nil {
		s.ackRuns = append(s.ackRuns, id)
	}
	return s.settle(e, fx, m, nil, "trigger")
}

// pickRun returns a random run id (deterministic: runs are listed in
// creation order), or "".
func (s *scenario) pickRun(e *engine.Engine, want func(engine.RunView) bool) string {
	var ids []string
	for _, r := range e.Runs(engine.RunFilter{}) {
		if want(r) {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return ids[s.rng.IntN(len(ids))]
}

func (s *scenario) cancel(e *engine.Engine, fx *fakeExec, m *diskModel) error {
	id := s.pickRun(e, func(r engine.RunView) bool { return !finished(r.Status) || s.rng.IntN(4) == 0 })
	if id == "" {
		return nil
	}
	_, err := e.CancelRun(id)
	s.logf("cancel %s: err %v", id, err)
	if err == nil && !s.lastCancel[id] {
		s.ackCancels[id]++ // a cancel of a run already being cancelled writes nothing
	}
	if err == nil {
		s.lastCancel[id] = true
	}
	return s.settle(e, fx, m, nil, "cancel")
}

func (s *scenario) retry(e *engine.Engine, fx *fakeExec, m *diskModel) error {
	id := s.pickRun(e, func(r engine.RunView) bool { return r.Status == "failed" || r.Status == "cancelled" })
	if id == "" {
		return nil
	}
	_, err := e.RetryRun(id)
	s.logf("retry %s: err %v", id, err)
	if err == nil {
		s.ackRetries[id]++
		s.lastCancel[id] = false
	}
	return s.settle(e, fx, m, nil, "retry")
}

func (s *scenario) startJob(e *engine.Engine, fx *fakeExec, m *diskModel) error {
	var cands []*fakeJob
	for _, j := range fx.live() {
		if !j.started {
			cands = append(cands, j)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	j := cands[s.rng.IntN(len(cands))]
	s.logf("start %s attempt %d", j.job.TaskID, j.job.Attempt)
	fx.start(j)
	return s.settle(e, fx, m, func() bool {
		st, att, ok := taskState(e, j.job.RunID, j.job.TaskID)
		return !ok || att != j.job.Attempt || st != "dispatched" // !ok: finished and pruned by retention
	}, "task started")
}

func (s *scenario) finishJob(e *engine.Engine, fx *fakeExec, m *diskModel) error {
	live := fx.live()
	if len(live) == 0 {
		return nil
	}
	j := live[s.rng.IntN(len(live))]
	ok := s.rng.IntN(4) != 0
	var out []byte
	if ok && j.job.TaskName == "gen" {
		items := make([]string, s.rng.IntN(4))
		for i := range items {
			items[i] = fmt.Sprint(i)
		}
		out = []byte(`{"items":[` + strings.Join(items, ",") + `]}`)
	}
	s.logf("finish %s attempt %d ok=%v %s", j.job.TaskID, j.job.Attempt, ok, out)
	fx.finish(j, ok, out)
	return s.settle(e, fx, m, func() bool {
		st, att, ok := taskState(e, j.job.RunID, j.job.TaskID)
		return !ok || att != j.job.Attempt || st != "dispatched" && st != "running" // !ok: finished and pruned by retention
	}, "task finished")
}

func finished(status string) bool {
	return status == "success" || status == "failed" || status == "cancelled"
}

// taskState is a task's status and attempt in the engine's view.
func taskState(e *engine.Engine, runID, taskID string) (string, int, bool) {
	r, err := e.Run(runID)
	if err != nil {
		return "", 0, false
	}
	for _, t := range r.Tasks {
		if t.ID == taskID {
			return t.Status, t.Attempt, true
		}
	}
	return "", 0, false
}

// settle waits until the engine has done everything the last action
// implies: every attempt it dispatched was handed to the executor, every
// attempt of a run being cancelled was asked to stop, no ready task waits
// for a dispatch, and done (the action's own effect) holds. It waits on the
// engine's commit signal and the executor's, never on a timer; the deadline
// only turns a hang into a failure. It returns at once after the power cut.
func (s *scenario) settle(e *engine.Engine, fx *fakeExec, m *diskModel, done func() bool, what string) error {
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		ec, fc := e.Changed(), fx.Changed()
		if m.isCrashed() {
			return nil
		}
		why := s.busy(e, fx)
		if why == "" && (done == nil || done()) {
			if !m.pendingCompaction() {
				return nil
			}
			// The engine is idle: let the compactions it decided run, alone,
			// and wait for their end (or the cut).
			n := m.release()
			for int(e.Stats().Compactions-s.bootCompactions) < n && !m.isCrashed() {
				ch := e.Changed()
				if int(e.Stats().Compactions-s.bootCompactions) >= n {
					break
				}
				select {
				case <-ch:
				case <-m.crashCh:
				case <-deadline.C:
					return fmt.Errorf("compaction %d did not end within 20s after %s", n, what)
				}
			}
			m.compactionDone()
			continue
		}
		select {
		case <-ec:
		case <-fc:
		case <-m.crashCh:
		case <-deadline.C:
			if why == "" {
				why = "the action's effect is not visible"
			}
			return fmt.Errorf("engine did not settle after %s within 20s: %s", what, why)
		}
	}
}

// busy says what the engine still has to do, or "".
func (s *scenario) busy(e *engine.Engine, fx *fakeExec) string {
	for _, rv := range e.Runs(engine.RunFilter{}) {
		r, err := e.Run(rv.ID)
		if err != nil {
			continue
		}
		for _, t := range r.Tasks {
			switch {
			case t.Instances > 0: // a fan-out node: its instances are the attempts
			case t.Status == "dispatched" && t.Ahead:
				// durable, waiting for a slot: launched when one frees
			case t.Status == "dispatched" || t.Status == "running":
				launched, stopped := fx.launched(t.ID, t.Attempt)
				if !launched {
					return fmt.Sprintf("%s attempt %d not launched", t.ID, t.Attempt)
				}
				if r.CancelRequested && !stopped {
					return fmt.Sprintf("%s attempt %d not stopped by the cancel", t.ID, t.Attempt)
				}
			case t.Ready:
				return fmt.Sprintf("%s ready but not dispatched", t.ID)
			}
		}
	}
	return ""
}

func (m *diskModel) isCrashed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// verify checks a freshly booted engine (not started) against the crash it
// recovered from.
func (s *scenario) verify(e *engine.Engine, dir string, prev *crashResult) error {
	first, log, err := readLog(filepath.Join(dir, "wal"))
	if err != nil {
		return fmt.Errorf("the recovered log does not read: %w", err)
	}
	if first-1 > uint64(len(prev.written)) {
		return fmt.Errorf("the recovered log starts at index %d, after the %d frames ever written", first, len(prev.written))
	}
	// got: the recovered history, index 1 first: the frames truncation
	// removed (which the recovered snapshot stands for) and the log.
	got := append(append([][][]byte(nil), prev.written[:first-1]...), log...)
	p := int(first - 1)
	for p < len(got) && p < len(prev.written) && sameFrame(got[p], prev.written[p]) {
		p++
	}
	s.logf("recovered %d of %d written frames (%d committed; the log from index %d), then %d boot frames",
		p, len(prev.written), prev.committed, first, len(got)-p)
	if uint64(p) < prev.committed {
		return fmt.Errorf("LOST: only %d frames of the %d committed before the crash survived (frame %d differs or is missing)",
			p, prev.committed, p+1)
	}
	if uint64(p) > prev.committed {
		s.st.unackedSurvived.Add(1)
	}
	if len(got)-p > 1 {
		return fmt.Errorf("boot appended %d frames after the recovered prefix, want at most 1", len(got)-p)
	}
	if first > 1 {
		s.st.truncatedBoots.Add(1)
	}
	s.hist = got
	counts := map[string]int{}
	for i, f := range got {
		for _, payload := range f {
			r, err := replay.Decode(payload)
			if err != nil {
				return fmt.Errorf("frame %d: %w", i+1, err)
			}
			switch r := r.(type) {
			case *replay.RunCancelRequested:
				counts["cancel "+r.ID]++
			case *replay.RunRetried:
				counts["retry "+r.ID]++
			case *replay.RunsPruned:
				for _, id := range r.IDs {
					counts["pruned "+id]++
				}
			}
			if _, ok := r.(*replay.TaskInterrupted); i >= p && !ok {
				return fmt.Errorf("boot frame %d holds a %s record; boot only records interruptions", i+1, r.Kind())
			}
		}
	}
	for _, id := range s.ackRuns {
		if _, err := e.Run(id); err != nil && counts["pruned "+id] == 0 {
			return fmt.Errorf("LOST: acknowledged run %s (and no runs_pruned record names it): %w", id, err)
		}
	}
	for name, v := range s.ackVersions {
		w, err := e.Workflow(name)
		if err != nil || w.Version < v {
			return fmt.Errorf("LOST: workflow %s version %d was acknowledged, recovered version %d (%v)", name, v, w.Version, err)
		}
	}
	for id, n := range s.ackCancels {
		if counts["cancel "+id] < n {
			return fmt.Errorf("LOST: %d cancels of run %s acknowledged that must each have written a record, %d in the log",
				n, id, counts["cancel "+id])
		}
	}
	for id, n := range s.ackRetries {
		if counts["retry "+id] < n {
			return fmt.Errorf("LOST: %d retries of run %s acknowledged, %d in the log", n, id, counts["retry "+id])
		}
	}
	live, err := e.StateHash()
	if err != nil {
		return err
	}
	fresh, err := replayHash(got)
	if err != nil {
		return fmt.Errorf("a fresh replay of the recovered history fails: %w", err)
	}
	if fresh != live {
		return fmt.Errorf("recovered state %016x (from the snapshot and the log from index %d) differs from a fresh replay of the history %016x",
			live, first, fresh)
	}
	return nil
}

// idempotent closes a booted engine that never started, boots the folder
// again, and checks that the second boot wrote nothing and found the same
// state.
func (s *scenario) idempotent(e *engine.Engine, dir string, fx *fakeExec, m *diskModel) error {
	if err := s.closeEngine(e, fx); err != nil {
		return err
	}
	// Close compacts (and may prune): the state to find is the fold of the
	// whole history, as it stands after the close.
	hist, err := m.history()
	if err != nil {
		return err
	}
	s.hist = hist
	h1, err := replayHash(hist)
	if err != nil {
		return err
	}
	_, before, err := readLog(filepath.Join(dir, "wal"))
	if err != nil {
		return err
	}
	fx2 := newFakeExec()
	e2, err := engine.Open(s.config(dir, nil, fx2))
	if err != nil {
		return fmt.Errorf("second boot: %w", err)
	}
	h2, err := e2.StateHash()
	cerr := s.closeEngine(e2, fx2)
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	_, after, err := readLog(filepath.Join(dir, "wal"))
	if err != nil {
		return err
	}
	if h1 != h2 {
		return fmt.Errorf("recovery is not idempotent: state %016x after the first boot, %016x after the second", h1, h2)
	}
	if len(after) != len(before) {
		return fmt.Errorf("the second boot appended %d frames", len(after)-len(before))
	}
	s.logf("second boot: same state %016x, nothing appended", h2)
	return nil
}

// count adds the final state's runs and tasks to the stats (every run ever
// created, pruned ones included).
func (s *scenario) count(dir string) error {
	frames := s.hist
	st := replay.New()
	for _, f := range frames {
		for _, p := range f {
			r, err := replay.Decode(p)
			if err != nil {
				return err
			}
			if pr, ok := r.(*replay.RunsPruned); ok {
				for _, id := range pr.IDs {
					if run := st.Runs[id]; run != nil {
						s.st.runs.Add(1)
						s.st.tasks.Add(int64(len(run.Tasks)))
						s.st.pruned.Add(1)
					}
				}
			}
			if err := st.Apply(r); err != nil {
				return err
			}
			if ti, ok := r.(*replay.TaskInterrupted); ok && !ti.Clean {
				s.st.reexec.Add(1)
			}
		}
	}
	s.st.runs.Add(int64(len(st.RunList)))
	for _, r := range st.RunList {
		s.st.tasks.Add(int64(len(r.Tasks)))
	}
	return nil
}

func sameFrame(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

// replayHash folds frames into a fresh state and returns its hash.
func replayHash(frames [][][]byte) (uint64, error) {
	st := replay.New()
	for i, f := range frames {
		for _, p := range f {
			r, err := replay.Decode(p)
			if err == nil {
				err = st.Apply(r)
			}
			if err != nil {
				return 0, fmt.Errorf("frame %d: %w", i+1, err)
			}
		}
	}
	return st.Hash()
}

// TestPowerLossFindings replays the power-loss seeds that found bugs (see
// Findings in docs/reliability.md). A seed is a scenario of this file's
// workload generator: if the generator changes, a seed becomes an ordinary
// scenario, still worth running.
func TestPowerLossFindings(t *testing.T) {
	for _, sd := range []int64{
		624592518125, // snapshots/ created without an fsync of the data folder, lost after the log was truncated
		842197704523, // the model took the tail's zero padding, which the wal trims before it rolls, for durable entries
		750805694459, // a boot snapshot that pruned wrote runs_pruned at boot: boot records only interruptions; Close prunes instead
		83004592190,  // tail rot grew the first entry's length prefix: its shifted bytes read as a torn version 1 frame and were cut; refused now (a version 1 frame only after version 1 frames)
	} {
		s := newScenario(sd, scratchRoot(t), &plStats{})
		if err := s.run(); err != nil {
			t.Fatalf("seed %d: %v\n%s", sd, err, s.trace())
		}
	}
}
