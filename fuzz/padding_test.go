package fuzz

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// TestWALTailAcrossSmallerSegmentSize: the kill -9 harness's walTail moves
// to the next segment only once it has read a segment to the end of its
// file. A folder reopened with a smaller SegmentSize rolls a tail padded
// for the larger one: the roll must truncate that padding, or walTail (and
// an older orkwal, which would call it corruption) stops at it.
func TestWALTailAcrossSmallerSegmentSize(t *testing.T) {
	dir := t.TempDir()
	fx := newFakeExec()
	put := func(e *engine.Engine, v int) {
		src := fmt.Sprintf(plWorkflows[0], v)
		spec, err := workflow.Parse("", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.PutWorkflow(spec, src); err != nil {
			t.Fatal(err)
		}
	}
	open := func(seg int) *engine.Engine {
		e, err := engine.Open(engine.Config{DataDir: dir, Logger: quiet, SegmentSize: seg, CompactBytes: 1 << 40,
			Executors: map[string]executors.Executor{"process": fx, "noop": fx}})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		return e
	}
	w, err := newWALTail(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	poll := func() {
		if err := w.poll(); err != nil {
			t.Fatal(err)
		}
	}
	e := open(0)
	for v := 1; v <= 3; v++ {
		put(e, v)
		poll()
	}
	e.Close()
	poll()
	e = open(2048)
	for v := 4; v <= 12; v++ {
		put(e, v)
		poll()
	}
	segs, _ := listSegs(filepath.Join(dir, "wal"))
	var last uint64
	wal.ReplayDir(filepath.Join(dir, "wal"), 0, func(i uint64, _ [][]byte) error { last = i; return nil })
	e.Close()
	if w.next-1 != last {
		t.Fatalf("segments %v; the log ends at index %d, walTail read up to %d", segs, last, w.next-1)
	}
}
