package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors"
)

// TestFanOutViewsCostNoMoreWithMoreInstances: a page of a fan-out's
// instances (AppendInstances) and the run summarised (AppendRunSummary)
// allocate as much for a fan-out of 3,000 instances as for one of 30
// (within 8 KB: sync.Pool drops its items at random under -race): neither
// builds a view per instance, nor a list of them, nor their JSON.
func TestFanOutViewsCostNoMoreWithMoreInstances(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), Logger: quiet, Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	defer e.Close()
	allocs := map[int][2]uint64{}
	for _, n := range []int{30, 3000} {
		name := fmt.Sprintf("fan%d", n)
		spec, err := CheckWorkflow("", []byte(fmt.Sprintf("name: %s\ntasks:\n  each: {executor: noop, parallel: %d}\n  after: {executor: noop, depends_on: [each]}\n", name, n)))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.PutWorkflow(spec, ""); err != nil {
			t.Fatal(err)
		}
		id, err := e.Trigger(name, nil, "api")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		run, err := e.WaitRun(ctx, id)
		cancel()
		if err != nil || run.Status != "success" {
			t.Fatalf("run of %d: %v %v", n, run.Status, err)
		}
		buf := make([]byte, 0, 1<<16)
		page := allocated(func() {
			if _, more, err := e.AppendInstances(buf[:0], id, "each", 9, 10); err != nil || !more {
				t.Fatalf("page: %v, more %v", err, more)
			}
		})
		sum := allocated(func() {
			if _, err := e.AppendRunSummary(buf[:0], id); err != nil {
				t.Fatal(err)
			}
		})
		allocs[n] = [2]uint64{page, sum}
	}
	for i, what := range []string{"a page of 10 instances", "the run summarised"} {
		if small, big := allocs[30][i], allocs[3000][i]; big > small+8<<10 {
			t.Errorf("%s: %d bytes allocated with 3,000 instances, %d with 30: want no more", what, big, small)
		}
	}
}

// allocated is the bytes fn allocates a call, over 20 calls.
func allocated(fn func()) uint64 {
	fn()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 20; i++ {
		fn()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / 20
}
