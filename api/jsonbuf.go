package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"weak"
)

// Answers are written whole (the status is known before the first byte):
// into a jsonBuf, reused from request to request, then to the client in
// one write. A big run's answer (AppendRun) is its compact JSON, written
// indented a chunk at a time.

// Up to keptJSONBufs buffers are kept, each at most maxKeptJSONBuf bytes:
// a sync.Pool would drop them at every other collection, and a monitor
// polling a big run would then grow them again (twice the answer's size)
// request after request. One past weakJSONBuf bytes (a big run's answer)
// is kept through a weak pointer: reused until the next collection, which
// frees it unless a request holds it, so it does not count in the live
// heap that sets the heap's goal (issue 27: 1.4 MB for a 5,000-task run
// polled every 250 ms, about twice that in resident memory). A new
// buffer's compact bytes are then made the size of the last answer's, in
// one allocation (sizeCompact).
const (
	keptJSONBufs   = 2
	maxKeptJSONBuf = 8 << 20
	weakJSONBuf    = 64 << 10
)

type jsonBuf struct {
	out     bytes.Buffer
	enc     *json.Encoder // indented JSON into out, as every answer is
	compact []byte        // AppendRun's and AppendTasks's bytes
	chunk   []byte        // writeIndented's
}

// keptJSON is a kept buffer: strong, or weak when it is big.
type keptJSON struct {
	strong *jsonBuf
	weak   weak.Pointer[jsonBuf]
}

var jsonBufs struct {
	sync.Mutex
	free        []keptJSON
	lastCompact int // the compact bytes of the last answer that had some
}

func getJSONBuf() *jsonBuf {
	jsonBufs.Lock()
	defer jsonBufs.Unlock()
	for n := len(jsonBufs.free); n > 0; n-- {
		k := jsonBufs.free[n-1]
		jsonBufs.free = jsonBufs.free[:n-1]
		if b := k.strong; b != nil {
			return b
		}
		if b := k.weak.Value(); b != nil {
			return b
		}
	}
	b := &jsonBuf{}
	b.enc = json.NewEncoder(&b.out)
	b.enc.SetIndent("", "  ")
	return b
}

func putJSONBuf(b *jsonBuf) {
	size := b.out.Cap() + cap(b.compact) + cap(b.chunk)
	if size > maxKeptJSONBuf {
		return
	}
	k := keptJSON{strong: b}
	if size > weakJSONBuf {
		k = keptJSON{weak: weak.Make(b)}
	}
	jsonBufs.Lock()
	defer jsonBufs.Unlock()
	if len(b.compact) > 0 {
		jsonBufs.lastCompact = len(b.compact)
	}
	b.out.Reset()
	b.compact = b.compact[:0]
	if len(jsonBufs.free) < keptJSONBufs {
		jsonBufs.free = append(jsonBufs.free, k)
	}
}

// sizeCompact gives a new buffer's compact bytes the size of the last
// answer's, when it was big: one allocation, not a growth by doubling.
func (b *jsonBuf) sizeCompact() {
	jsonBufs.Lock()
	last := jsonBufs.lastCompact
	jsonBufs.Unlock()
	if cap(b.compact) < last && last > weakJSONBuf {
		b.compact = make([]byte, 0, last+last/16)
	}
}

// write answers status with out's JSON.
func (b *jsonBuf) write(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b.out.Bytes())
}

// writeCompact answers status with compact's JSON indented as writeJSON
// indents (json.Encoder's SetIndent("", "  ") is Indent of its compact
// bytes followed by a newline), a chunk at a time.
func (b *jsonBuf) writeCompact(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b.compact = append(b.compact, '\n')
	b.chunk, _ = writeIndented(w, b.compact, b.chunk) // a failed write: the client is gone
}

// appendFunc appends a run's compact JSON (engine.AppendRun, AppendTasks).
type appendFunc func(dst []byte, id string) ([]byte, error)

// writeAppended answers GET /runs/{id} and its tasks from app's bytes.
func (s *Server) writeAppended(w http.ResponseWriter, r *http.Request, app appendFunc) {
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	b := getJSONBuf()
	defer putJSONBuf(b)
	b.sizeCompact()
	var err error
	if b.compact, err = app(b.compact[:0], id); err != nil {
		s.fail(w, r, err)
		return
	}
	b.writeCompact(w, http.StatusOK)
}
