package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/cespare/xxhash/v2"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/vmihailenco/msgpack/v5"
)

// Snapshot file format (docs/format.md, "Snapshot"):
//
//	offset  size  field
//	0       8     magic "ORKWSNAP"
//	8       1     version, currently 1
//	9       3     zero
//	12      8     WAL index: the state after applying every frame up to it
//	20      8     body length
//	28      8     xxhash64 of the body
//	36      ...   body: msgpack of a Snapshot
const (
	snapshotMagic   = "ORKWSNAP"
	SnapshotVersion = 1
	snapshotHeader  = 36
)

// Snapshot errors; a bad snapshot is never loaded.
var (
	ErrSnapshotMagic    = errors.New("replay: not a snapshot (bad magic)")
	ErrSnapshotVersion  = errors.New("replay: unknown snapshot version")
	ErrSnapshotChecksum = errors.New("replay: snapshot checksum mismatch")
)

// Snapshot is a flat, immutable copy of every persisted field of a State:
// the engine takes it under its lock (cheap) and encodes it elsewhere.
// Derived structures are rebuilt by Restore.
type Snapshot struct {
	Index      uint64 `msgpack:"-"`
	NextSeq    uint64
	NextRunSeq uint64
	Specs      []SnapSpec
	Workflows  []SnapWorkflow
	Schedules  []Schedule
	Runs       []SnapRun
	Alerts     []Alert `msgpack:",omitempty"` // in raise order; absent before issue 25
	// Files is the --workflows file of each workflow that has one (by
	// name); Retired the last version of each deleted name. Both absent
	// from snapshots written before they existed (then empty).
	Files   map[string]string `msgpack:",omitempty"`
	Retired versionMap        `msgpack:",omitempty"`
	// Attempts is the attempt history of the tasks that have one (see
	// AttemptEnd); absent from snapshots written before it (then none).
	Attempts []SnapAttempts `msgpack:",omitempty"`
	// Deferred lists the tasks whose running attempt deferred its work
	// (task_deferred), as [run, task] positions; absent when none, and
	// from snapshots written before it.
	Deferred [][2]int `msgpack:",omitempty"`
	// Paused lists the paused runs and tasks (run_paused) as [run, task]
	// positions, task -1 for the run itself; absent when none, and from
	// snapshots written before it.
	Paused [][2]int `msgpack:",omitempty"`
	// Versions are the workflows' earlier versions kept (versions.go), in
	// the order of Workflows, oldest first; absent when none, and from
	// snapshots written before them (then each workflow has only its
	// current version).
	Versions []SnapVersion `msgpack:",omitempty"`

	// copies are the runs as value copies, taken under the engine's lock
	// (State.Snapshot), or pend the incremental copy (BeginSnapshot);
	// Encode turns them into Runs outside the lock.
	copies []runCopy
	pend   *pending
	specs  map[*workflow.Spec]int // Specs' indexes, while they are assigned
}

// runCopy is a run and its tasks copied by value. Their slices, strings and
// specs are shared: the state never mutates them in place (it replaces
// them), so the copy stays consistent while the state moves on.
type runCopy struct {
	run   Run
	spec  int
	tasks []Task
}

// SnapSpec is one workflow version that a workflow or a run refers to.
type SnapSpec struct {
	Workflow string
	Version  int
	Spec     *workflow.Spec
}

// SnapWorkflow is a workflow's current version.
type SnapWorkflow struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Name      string
	Version   int
	Source    string
	CreatedAt int64
	UpdatedAt int64
}

// SnapRun is a run with its tasks; Spec is an index into Snapshot.Specs.
type SnapRun struct {
	_msgpack        struct{} `msgpack:",as_array"`
	ID              string
	Seq             uint64
	Workflow        string
	Version         int
	Spec            int
	Params          map[string]string
	Trigger         string
	ScheduledAt     int64
	Queued          bool
	Status          RunStatus
	CreatedAt       int64
	StartedAt       int64
	FinishedAt      int64
	CancelRequested bool
	Paused          bool `msgpack:"-"` // encoded apart, in Snapshot.Paused
	Tasks           []SnapTask
	IdemKey         string
}

// SnapTask is one task of a run.
type SnapTask struct {
	_msgpack      struct{} `msgpack:",as_array"`
	SpecIndex     int
	Name          string
	Seq           uint64
	Status        TaskStatus
	Attempt       int
	Failures      int
	Interruptions int
	NotBefore     int64
	MutexKey      string
	Priority      int
	Parent        int
	Instance      int
	Count         int
	Item          []byte
	Instances     []int
	Expanded      bool
	PID           int
	StartTime     uint64
	ExitCode      int
	Error         string
	Output        []byte
	Deferred      bool `msgpack:"-"` // encoded apart, in Snapshot.Deferred
	Paused        bool `msgpack:"-"` // encoded apart, in Snapshot.Paused
	DispatchedAt  int64
	StartedAt     int64
	FinishedAt    int64
	Deps          []int
	Attempts      []AttemptEnd `msgpack:"-"` // encoded apart, in Snapshot.Attempts
}

// Snapshot copies the state's persisted fields at once: its cost grows with
// the number of tasks (BeginSnapshot spreads it). Strings, byte slices and
// specs are shared (they are never mutated in place); everything else is
// copied, so the result may be encoded while the state moves on.
func (s *State) Snapshot(index uint64) *Snapshot {
	snap := &Snapshot{Index: index, NextSeq: s.NextSeq, NextRunSeq: s.NextRunSeq, specs: map[*workflow.Spec]int{}}
	snap.copyWorkflows(s)
	snap.copies = make([]runCopy, len(s.RunList))
	for i, r := range s.RunList {
		c := runCopy{run: *r, spec: snap.specOf(r.Workflow, r.Version, r.Spec), tasks: make([]Task, len(r.Tasks))}
		if !r.runMore.shared { // the state writes it in place
			more := *r.runMore
			c.run.runMore = &more
		}
		for j, t := range r.Tasks {
			c.tasks[j] = *t
			if t.taskEnd != &noEnd { // the state writes it in place
				end := *t.taskEnd
				c.tasks[j].taskEnd = &end
			}
		}
		snap.copies[i] = c
	}
	snap.specs = nil
	return snap
}

// copyWorkflows copies the workflows and schedules, and numbers the
// workflows' specs first.
func (snap *Snapshot) copyWorkflows(s *State) {
	for _, name := range sortedNames(s.Workflows) {
		w := s.Workflows[name]
		snap.specOf(w.Name, w.Version, w.Spec)
		snap.Workflows = append(snap.Workflows, SnapWorkflow{Name: w.Name, Version: w.Version, Source: w.Source,
			CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt})
		if w.File != "" {
			if snap.Files == nil {
				snap.Files = map[string]string{}
			}
			snap.Files[w.Name] = w.File
		}
	}
	if len(s.Retired) > 0 {
		snap.Retired = make(versionMap, len(s.Retired))
		for name, v := range s.Retired {
			snap.Retired[name] = v
		}
	}
	snap.copyPast(s)
	for _, name := range sortedNames(s.Schedules) {
		sc := *s.Schedules[name]
		sc.Fires = append([]Fire(nil), sc.Fires...)
		snap.Schedules = append(snap.Schedules, sc)
	}
	snap.Alerts = s.copyAlerts()
}

// specOf returns spec's index in Specs, adding it at the end the first time.
func (snap *Snapshot) specOf(name string, version int, spec *workflow.Spec) int {
	if i, ok := snap.specs[spec]; ok {
		return i
	}
	snap.specs[spec] = len(snap.Specs)
	snap.Specs = append(snap.Specs, SnapSpec{Workflow: name, Version: version, Spec: spec})
	return snap.specs[spec]
}

// flatten turns the copies into the encoded form.
func (snap *Snapshot) flatten() error {
	if snap.pend != nil {
		return snap.flattenPending()
	}
	if snap.copies == nil {
		return nil
	}
	snap.Runs = make([]SnapRun, len(snap.copies))
	for i := range snap.copies {
		c := &snap.copies[i]
		sr := snapRunFields(&c.run)
		sr.Spec, sr.Tasks = c.spec, make([]SnapTask, len(c.tasks))
		for j := range c.tasks {
			sr.Tasks[j] = snapTask(&c.tasks[j])
		}
		snap.Runs[i] = sr
	}
	snap.copies = nil
	return nil
}

// snapRunFields is a run's persisted fields, without its spec index and
// tasks.
func snapRunFields(r *Run) SnapRun {
	return SnapRun{ID: r.ID, Seq: r.Seq, Workflow: r.Workflow, Version: r.Version, Params: r.Params,
		Trigger: r.Trigger, ScheduledAt: r.ScheduledAt, Queued: r.Queued, Status: r.Status, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, CancelRequested: r.CancelRequested, IdemKey: r.IdemKey, Paused: r.Paused}
}

// snapTask is a task's persisted fields.
func snapTask(t *Task) SnapTask {
	return SnapTask{SpecIndex: t.SpecIndex, Name: t.Name, Seq: t.Seq, Status: t.Status, Attempt: t.Attempt,
		Failures: t.Failures, Interruptions: t.Interruptions, NotBefore: t.NotBefore, MutexKey: t.MutexKey,
		Priority: t.Priority(), Parent: t.Parent, Instance: t.Instance, Count: t.Count, Item: t.Item,
		Instances: t.Instances, Expanded: t.Expanded, PID: t.PID, StartTime: t.StartTime,
		ExitCode: t.ExitCode, Error: t.Error, Output: t.Output, Deferred: t.Deferred, Paused: t.Paused, DispatchedAt: t.DispatchedAt,
		StartedAt: t.StartedAt, FinishedAt: t.FinishedAt, Deps: t.Deps(), Attempts: t.Attempts}
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SnapAttempts is the attempt history of one task: Runs[Run].Tasks[Task].
type SnapAttempts struct {
	_msgpack struct{} `msgpack:",as_array"`
	Run      int
	Task     int
	Ends     []AttemptEnd
}

// gatherAttempts moves the tasks' attempt histories to snap.Attempts,
// and their deferred marks to snap.Deferred.
func (snap *Snapshot) gatherAttempts() {
	snap.Attempts, snap.Deferred, snap.Paused = nil, nil, nil
	for i := range snap.Runs {
		if snap.Runs[i].Paused {
			snap.Paused = append(snap.Paused, [2]int{i, -1})
		}
		for j, t := range snap.Runs[i].Tasks {
			if t.Paused {
				snap.Paused = append(snap.Paused, [2]int{i, j})
			}
			if len(t.Attempts) > 0 {
				snap.Attempts = append(snap.Attempts, SnapAttempts{Run: i, Task: j, Ends: t.Attempts})
			}
			if t.Deferred {
				snap.Deferred = append(snap.Deferred, [2]int{i, j})
			}
		}
	}
}

// Encode writes the snapshot file: header, then body.
func (snap *Snapshot) Encode(w io.Writer) error {
	if err := snap.flatten(); err != nil {
		return err
	}
	snap.gatherAttempts()
	var body bodyWriter
	enc := msgpack.NewEncoder(&body)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(snap); err != nil {
		return fmt.Errorf("replay: encode snapshot: %w", err)
	}
	hdr := make([]byte, snapshotHeader)
	copy(hdr, snapshotMagic)
	hdr[8] = SnapshotVersion
	binary.LittleEndian.PutUint64(hdr[12:], snap.Index)
	binary.LittleEndian.PutUint64(hdr[20:], uint64(body.n))
	binary.LittleEndian.PutUint64(hdr[28:], body.sum())
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, c := range body.chunks {
		if _, err := w.Write(c); err != nil {
			return err
		}
	}
	return nil
}

// bodyWriter holds an encoded body in chunks of bodyChunk bytes. It grows
// without copying what it holds, where a bytes.Buffer doubles: each growth
// is a large allocation and one long memmove (not preemptible, so a GC's
// stop-the-world, and the engine loop with it, waits for it), and the
// garbage is about twice the body. The encode runs beside the loop, so
// this is the loop's cost too (docs/benchmarks.md, issue 6).
type bodyWriter struct {
	chunks [][]byte
	n      int
	one    [1]byte
}

const bodyChunk = 64 << 10

func (b *bodyWriter) Write(p []byte) (int, error) {
	n := len(p)
	b.n += n
	for len(p) > 0 {
		k := len(b.chunks)
		if k == 0 || len(b.chunks[k-1]) == cap(b.chunks[k-1]) {
			b.chunks = append(b.chunks, make([]byte, 0, bodyChunk))
			k++
		}
		c := &b.chunks[k-1]
		m := min(len(p), cap(*c)-len(*c))
		*c = append(*c, p[:m]...)
		p = p[m:]
	}
	return n, nil
}

func (b *bodyWriter) WriteByte(c byte) error {
	b.one[0] = c
	b.Write(b.one[:])
	return nil
}

func (b *bodyWriter) sum() uint64 {
	d := xxhash.New()
	for _, c := range b.chunks {
		d.Write(c)
	}
	return d.Sum64()
}

// versionMap is a map of names to versions that msgpack encodes with its
// keys in order, so that a snapshot's bytes are a function of the state
// (the encoder's SetSortMapKeys sorts maps of strings, bools and
// interfaces, not of ints: two retired names came out in either order).
// It is a msgpack map on the wire, as a map[string]int is.
type versionMap map[string]int

// EncodeMsgpack writes the map with sorted keys.
func (m versionMap) EncodeMsgpack(enc *msgpack.Encoder) error {
	if m == nil {
		return enc.EncodeNil()
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	if err := enc.EncodeMapLen(len(m)); err != nil {
		return err
	}
	for _, name := range names {
		if err := enc.EncodeString(name); err != nil {
			return err
		}
		if err := enc.EncodeInt(int64(m[name])); err != nil {
			return err
		}
	}
	return nil
}
