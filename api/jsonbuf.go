package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
)

// Answers are written whole (the status is known before the first byte):
// into a jsonBuf, reused from request to request, then to the client in
// one write. A big run's answer (AppendRun) is its compact JSON, written
// indented a chunk at a time.

// Up to keptJSONBufs buffers are kept, each at most maxKeptJSONBuf bytes:
// a sync.Pool would drop them at every other collection, and a monitor
// polling a big run would then grow them again (twice the answer's size)
// request after request.
const (
	keptJSONBufs   = 2
	maxKeptJSONBuf = 8 << 20
)

type jsonBuf struct {
	out     bytes.Buffer
	enc     *json.Encoder // indented JSON into out, as every answer is
	compact []byte        // AppendRun's and AppendTasks's bytes
	chunk   []byte        // writeIndented's
}

var jsonBufs struct {
	sync.Mutex
	free []*jsonBuf
}

func getJSONBuf() *jsonBuf {
	jsonBufs.Lock()
	defer jsonBufs.Unlock()
	if n := len(jsonBufs.free); n > 0 {
		b := jsonBufs.free[n-1]
		jsonBufs.free = jsonBufs.free[:n-1]
		return b
	}
	b := &jsonBuf{}
	b.enc = json.NewEncoder(&b.out)
	b.enc.SetIndent("", "  ")
	return b
}

func putJSONBuf(b *jsonBuf) {
	if b.out.Cap()+cap(b.compact)+cap(b.chunk) > maxKeptJSONBuf {
		return
	}
	b.out.Reset()
	b.compact = b.compact[:0]
	jsonBufs.Lock()
	defer jsonBufs.Unlock()
	if len(jsonBufs.free) < keptJSONBufs {
		jsonBufs.free = append(jsonBufs.free, b)
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
	var err error
	if b.compact, err = app(b.compact[:0], id); err != nil {
		s.fail(w, r, err)
		return
	}
	b.writeCompact(w, http.StatusOK)
}
