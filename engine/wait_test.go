package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitRunReturnsWhenTheRunEnds: a waiter blocks while its run is
// active, is woken by the commit that ends it, and gets the ended run; a
// waiter of an ended run returns at once; a done context returns the run as
// it is; an unknown run is ErrNotFound; no waiter is left registered.
func TestWaitRunReturnsWhenTheRunEnds(t *testing.T) {
	dir := t.TempDir()
	m := newManual(t, dir)
	e := openEngine(t, dir, m, 4)
	defer e.Close()
	put(t, e, flat("w", 1))
	id := trigger(t, e, "w")
	type answer struct {
		v   RunView
		err error
	}
	got := make(chan answer, 1)
	go func() {
		v, err := e.WaitRun(context.Background(), id)
		got <- answer{v, err}
	}()
	j := m.next()
	select {
	case a := <-got:
		t.Fatalf("WaitRun returned while the run was active: %s, %v", a.v.Status, a.err)
	default:
	}
	m.finish(j, true)
	var a answer
	select {
	case a = <-got:
	case <-time.After(10 * time.Second): // a guard, like manual.next's
		t.Fatal("WaitRun did not return after its run ended")
	}
	if a.err != nil || a.v.Status != "success" || a.v.ID != id {
		t.Fatalf("WaitRun: %s %s, %v; want %s success", a.v.ID, a.v.Status, a.err, id)
	}
	if v, err := e.WaitRun(context.Background(), id); err != nil || v.Status != "success" {
		t.Fatalf("WaitRun of an ended run: %s, %v", v.Status, err)
	}

	other := trigger(t, e, "w")
	j = m.next()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err := e.WaitRun(ctx, other); err != nil || v.Status == "success" {
		t.Fatalf("WaitRun with a done context: %s, %v; want the active run", v.Status, err)
	}
	m.finish(j, true)
	if _, err := e.WaitRun(context.Background(), "01a20000-0000-7000-8000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("WaitRun of an unknown run: %v", err)
	}
	e.waitMu.Lock()
	left := len(e.waiters)
	e.waitMu.Unlock()
	if left != 0 {
		t.Fatalf("%d runs still have waiters", left)
	}
}
