package replay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// snapshotOfRuns is the encoded snapshot of a state holding two runs of
// the diamond workflow, one with params of its own, and that state.
func snapshotOfRuns(t *testing.T) ([]byte, *State) {
	t.Helper()
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: diamond(), At: 1},
		&RunCreated{ID: "run-one", Workflow: "diamond", Version: 1, At: 2},
		&RunCreated{ID: "run-two", Workflow: "diamond", Version: 1, Params: map[string]string{"k": "v"}, At: 3})
	return encodeSnap(t, s.Snapshot(2)), s
}

// withBody is data's header over body, its length and checksum set.
func withBody(data, body []byte) []byte {
	out := append(append([]byte(nil), data[:snapshotHeader]...), body...)
	binary.LittleEndian.PutUint64(out[20:], uint64(len(body)))
	binary.LittleEndian.PutUint64(out[28:], xxhash.Sum64(body))
	return out
}

// TestReadSnapshotRunsBeforeSpecs: orkwal writes a snapshot's Specs
// before its Runs, and ReadSnapshot restores each run as it is decoded;
// a body with its keys in another order (a msgpack map's keys may come in
// any) still loads, to the same state, its runs decoded whole first.
func TestReadSnapshotRunsBeforeSpecs(t *testing.T) {
	data, live := snapshotOfRuns(t)
	dec := msgpack.NewDecoder(bytes.NewReader(data[snapshotHeader:]))
	n, err := dec.DecodeMapLen()
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	enc := msgpack.NewEncoder(&body)
	enc.EncodeMapLen(n)
	var rest [][2]any
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := dec.DecodeRaw()
		if err != nil {
			t.Fatal(err)
		}
		if key == "Runs" { // first
			enc.EncodeString(key)
			enc.Encode(raw)
			continue
		}
		rest = append(rest, [2]any{key, raw})
	}
	for _, kv := range rest {
		enc.Encode(kv[0])
		enc.Encode(kv[1])
	}
	moved := withBody(data, body.Bytes())
	st, _, err := ReadSnapshot(bytes.NewReader(moved), int64(len(moved)))
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := live.Hash()
	if h2, _ := st.Hash(); h1 != h2 || len(st.RunList) != 2 {
		t.Fatalf("runs before specs: %d runs, hash %x, want the live state's %x", len(st.RunList), h2, h1)
	}
}

// TestReadSnapshotChecks: ReadSnapshot refuses a bad file as
// DecodeSnapshot does, each fault with its own error, and a file whose
// bytes change between its check and its decoding.
func TestReadSnapshotChecks(t *testing.T) {
	data, _ := snapshotOfRuns(t)
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), data...)) }
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"short", data[:snapshotHeader-1], ErrSnapshotMagic},
		{"magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), ErrSnapshotMagic},
		{"version", edit(func(b []byte) []byte { b[8] = 9; return b }), ErrSnapshotVersion},
		{"truncated", data[:len(data)-1], ErrSnapshotChecksum},
		{"longer", append(append([]byte(nil), data...), 0), ErrSnapshotChecksum},
		{"a body byte", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrSnapshotChecksum},
	} {
		_, _, err := ReadSnapshot(bytes.NewReader(c.data), int64(len(c.data)))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: ReadSnapshot: %v, want %v", c.name, err, c.want)
		}
		if _, err := DecodeSnapshot(c.data); !errors.Is(err, c.want) {
			t.Errorf("%s: DecodeSnapshot: %v, want %v", c.name, err, c.want)
		}
	}
	i := bytes.Index(data, []byte("run-two"))
	changed := edit(func(b []byte) []byte { b[i+4] = 'x'; return b }) // "run-xwo": still decodes
	r := &changingReader{before: data, after: changed}
	if _, _, err := ReadSnapshot(r, int64(len(data))); !errors.Is(err, ErrSnapshotChecksum) {
		t.Errorf("changed between check and decoding: %v, want %v", err, ErrSnapshotChecksum)
	}
	if r.passes != 2 {
		t.Errorf("the body was read %d times, want 2", r.passes)
	}
}

// changingReader reads as before until its body is read a second time,
// then as after.
type changingReader struct {
	before, after []byte
	passes        int
}

func (r *changingReader) ReadAt(p []byte, off int64) (int, error) {
	if off == snapshotHeader {
		r.passes++
	}
	data := r.before
	if r.passes > 1 {
		data = r.after
	}
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(p, data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestReadSnapshotChangedIntoNonsense: a file rewritten in place between
// ReadSnapshot's two passes (cp over it, as an operator restoring a backup
// does: the same inode, truncated and written again) gives its decoding
// bytes that were never checked. They may say anything a checksum would
// have refused (here: a run's workflow definition that is nil); the read
// must refuse them with ErrSnapshotChecksum, never panic, and restore no
// state from them.
func TestReadSnapshotChangedIntoNonsense(t *testing.T) {
	data, _ := snapshotOfRuns(t)
	var m map[string]any
	if err := msgpack.Unmarshal(data[snapshotHeader:], &m); err != nil {
		t.Fatal(err)
	}
	for _, sp := range m["Specs"].([]any) {
		sp.(map[string]any)["Spec"] = nil
	}
	var enc bytes.Buffer
	e := msgpack.NewEncoder(&enc)
	e.SetSortMapKeys(true)
	if err := e.Encode(m); err != nil {
		t.Fatal(err)
	}
	body := enc.Bytes()
	if len(body) > len(data)-snapshotHeader {
		t.Fatalf("the nonsense body (%d bytes) must fit in the file's (%d)", len(body), len(data)-snapshotHeader)
	}
	after := append(append([]byte(nil), data[:snapshotHeader]...), body...)
	after = append(after, make([]byte, len(data)-len(after))...) // msgpack stops at the body's end
	r := &changingReader{before: data, after: after}
	var st *State
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("ReadSnapshot panicked on bytes changed after their check: %v", p)
			}
		}()
		st, _, err = ReadSnapshot(r, int64(len(data)))
	}()
	if !errors.Is(err, ErrSnapshotChecksum) || st != nil {
		t.Fatalf("changed into nonsense between check and decoding: state %v, %v; want no state, %v", st != nil, err, ErrSnapshotChecksum)
	}
}

// TestReadSnapshotRunsKeepTheirOwnParams: ReadSnapshot decodes every run
// into one params map and one task array (6bea000); a run keeps its
// workflow's defaults, the newest earlier run's equal params, or a map of
// its own, never the one decoding reuses: runs with params of their own
// each hold them, in maps no other run holds, and the workflow's
// defaults are left as they were.
func TestReadSnapshotRunsKeepTheirOwnParams(t *testing.T) {
	spec := diamond()
	spec.Params = map[string]string{"k": "default"}
	s := New()
	mustApply(t, s, &WorkflowPut{Spec: spec, At: 1})
	want := []string{"a", "b", "default", "b", "c"}
	for i, v := range want {
		mustApply(t, s, &RunCreated{ID: fmt.Sprintf("run-%d", i), Workflow: "diamond", Version: 1,
			Params: map[string]string{"k": v}, At: int64(2 + i)})
	}
	data := encodeSnap(t, s.Snapshot(uint64(1+len(want))))
	st, _, err := ReadSnapshot(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	held := map[uintptr]string{}
	for i, v := range want {
		run := st.Runs[fmt.Sprintf("run-%d", i)]
		if got := run.Params["k"]; got != v || len(run.Params) != 1 {
			t.Fatalf("run %d: params %v, want k=%s", i, run.Params, v)
		}
		p := reflect.ValueOf(run.Params).Pointer()
		if other, ok := held[p]; ok && other != v {
			t.Errorf("run %d (k=%s) shares its params map with a run whose k=%s", i, v, other)
		}
		held[p] = v
	}
	if got := st.Workflows["diamond"].Spec.Params; len(got) != 1 || got["k"] != "default" {
		t.Errorf("the workflow's defaults after the read: %v", got)
	}
}
