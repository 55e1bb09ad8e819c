package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

// writeCounter is a response that counts its writes and flushes.
type writeCounter struct {
	*httptest.ResponseRecorder
	writes, flushes, largest int
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes++
	w.largest = max(w.largest, len(b))
	return w.ResponseRecorder.Write(b)
}

func (w *writeCounter) Flush() { w.flushes++ }

// followerBatches is a busy engine's events: batches of task events of
// two runs of two workflows, with run events among them.
func followerBatches(batches, perBatch int) []*engine.EventBatch {
	var out []*engine.EventBatch
	for i := 0; i < batches; i++ {
		b := &engine.EventBatch{}
		for j := 0; j < perBatch; j++ {
			run, wf := "r1", "w1"
			if j%3 == 2 {
				run, wf = "r2", "w2"
			}
			ev := engine.Event{ID: fmt.Sprintf("%d.%d", i+1, j), Type: "task_started", Run: run, Workflow: wf,
				Task: fmt.Sprintf("each[%d]", (i*perBatch+j)%7), Status: "running"}
			ev.TaskSeq = uint64((i*perBatch+j)%7 + 1)
			if run == "r2" {
				ev.TaskSeq += 100
			}
			if j%5 == 4 {
				ev.Type, ev.Task, ev.TaskSeq, ev.Status = "run_retried", "", 0, "pending"
			}
			b.Events = append(b.Events, ev)
		}
		out = append(out, b)
	}
	return out
}

// TestEventWriterSendsWhatItSelects: whatever the filter, a stream adding
// several batches then flushing sends exactly the frames of the events
// the filter selects, in log order, leaving out under ?latest=1 a task's
// event that a later one of the same task follows (a model: each event
// looked at alone), however add gathers them.
func TestEventWriterSendsWhatItSelects(t *testing.T) {
	filters := map[string]eventFilter{"every": {}, "run": {run: "r1"}, "workflow": {workflow: "w2"},
		"tasks=0": {noTasks: true}, "latest": {latest: true}, "latest&run": {latest: true, run: "r2"}}
	for _, batches := range [][]*engine.EventBatch{followerBatches(20, 30), sameSizeBatches()} {
		checkEventWriter(t, filters, batches)
	}
}

// sameSizeBatches: frames of one size, so that an event of r1 in the
// second batch begins where the first batch's event of r1 ends.
func sameSizeBatches() []*engine.EventBatch {
	ev := func(id, run string) engine.Event {
		return engine.Event{ID: id, Type: "run_retried", Run: run, Workflow: "w1", Status: "pending"}
	}
	return []*engine.EventBatch{{Events: []engine.Event{ev("1.0", "r2"), ev("1.1", "r1")}},
		{Events: []engine.Event{ev("2.0", "r2"), ev("2.1", "r2"), ev("2.2", "r1")}}}
}

func checkEventWriter(t *testing.T, filters map[string]eventFilter, batches []*engine.EventBatch) {
	t.Helper()
	for name, f := range filters {
		w := httptest.NewRecorder()
		st := &sseWriter{w: w, rc: http.NewResponseController(w), eventWindow: eventWindow{filter: f}}
		for _, b := range batches {
			st.add(b)
		}
		if err := st.flush(); err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		for i, b := range batches {
			for j := range b.Events {
				ev := &b.Events[j]
				if f.match(ev) && !(f.latest && ev.Task != "" && supersededLater(batches, i, j, f)) {
					want.WriteString("id: " + ev.ID + "\ndata: " + string(engine.AppendEventJSON(nil, ev)) + "\n\n")
				}
			}
		}
		if got := w.Body.String(); got != want.String() {
			t.Errorf("%s: sent %d bytes, want %d:\n%.300s\nwant\n%.300s", name, len(got), want.Len(), got, want.String())
		}
	}
}

// supersededLater: a later event of the same task is selected.
func supersededLater(batches []*engine.EventBatch, i, j int, f eventFilter) bool {
	ev := &batches[i].Events[j]
	for ; i < len(batches); i, j = i+1, -1 {
		for k := j + 1; k < len(batches[i].Events); k++ {
			later := &batches[i].Events[k]
			if f.match(later) && later.Run == ev.Run && later.Task == ev.Task {
				return true
			}
		}
	}
	return false
}

// TestEventWriterChunksABurst: a burst larger than writeChunk is written
// in writes of at most writeChunk bytes and flushed once, so a stream's
// buffer stays that small whatever the burst (before: one write of the
// whole burst, its buffer as large).
func TestEventWriterChunksABurst(t *testing.T) {
	w := &writeCounter{ResponseRecorder: httptest.NewRecorder()}
	st := &sseWriter{w: w, rc: http.NewResponseController(w)}
	size := 0
	for _, b := range followerBatches(200, 30) {
		st.add(b)
		size += len(b.Framed(frameEvent).All)
	}
	if size < 3*writeChunk {
		t.Fatalf("the burst is %d bytes: too small a test", size)
	}
	if err := st.flush(); err != nil {
		t.Fatal(err)
	}
	if w.Body.Len() != size || w.largest > writeChunk || w.writes < size/writeChunk || w.flushes != 1 {
		t.Errorf("sent %d of %d bytes in %d writes (largest %d, at most %d), %d flushes (want 1)",
			w.Body.Len(), size, w.writes, w.largest, writeChunk, w.flushes)
	}
	if cap(st.buf) > writeChunk {
		t.Errorf("the stream's buffer grew to %d bytes, over %d", cap(st.buf), writeChunk)
	}
}

// discardResponse is a response that keeps nothing.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardResponse) WriteHeader(int)             {}
func (d *discardResponse) Flush()                      {}

// BenchmarkEventWriter: one stream's own CPU per event (ns/event), apart
// from the socket: a busy spell's window of 100 entries of 30 events (a
// task's dispatch, start and end in three entries in a row, 1,000 tasks),
// added then flushed, for each kind of stream. The frames are made before
// (once for every stream: not a stream's cost).
func BenchmarkEventWriter(b *testing.B) {
	const entries, perEntry = 100, 30
	var batches []*engine.EventBatch
	for i := 0; i < entries; i++ {
		batch := &engine.EventBatch{}
		for j := 0; j < perEntry; j++ {
			task := (i/3)*perEntry + j
			batch.Events = append(batch.Events, engine.Event{ID: fmt.Sprintf("%d.%d", 5000+i, j),
				Type: []string{"task_dispatched", "task_started", "task_finished"}[i%3], Run: "r-0123456789abcdef",
				Workflow: "fan", Task: fmt.Sprintf("each[%d]", task), TaskSeq: uint64(task + 1), Status: "running"})
		}
		batch.Framed(frameEvent)
		batches = append(batches, batch)
	}
	for _, kind := range []struct {
		name string
		f    eventFilter
	}{{"every", eventFilter{}}, {"tasks=0", eventFilter{noTasks: true}}, {"latest", eventFilter{latest: true}},
		{"latest&run", eventFilter{latest: true, run: "r-0123456789abcdef"}}} {
		b.Run(kind.name, func(b *testing.B) {
			w := &discardResponse{h: http.Header{}}
			st := &sseWriter{w: w, rc: http.NewResponseController(w), eventWindow: eventWindow{filter: kind.f}}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for _, batch := range batches {
					st.add(batch)
				}
				st.flush()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*entries*perEntry), "ns/event")
		})
	}
}
