package fuzz

import (
	"bytes"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/replay/workflow"
	"github.com/orkwal/orkwal/wal"
)

// goldenDir holds a WAL written by this version: one record of every kind.
// The test fails if the format changes by accident; regenerate it on
// purpose with ORKWAL_UPDATE_GOLDEN=1 (and document the change in
// docs/format.md, with a new version byte if old logs no longer read).
const goldenDir = "../testdata/golden/wal-v2"

// goldenV1Dir holds the same records in version 1 frames, written by orkwal
// before the header checksum (issue 21): never regenerated, it proves that
// a data folder of an earlier version still reads.
const goldenV1Dir = "../testdata/golden/wal-v1"

func goldenRecords() []replay.Record {
	spec := &workflow.Spec{Name: "g", Params: map[string]string{"p": "1"}, Schedule: &workflow.Schedule{Cron: "@hourly"},
		Tasks: []*workflow.Task{{Name: "a", Executor: "process", Command: []string{"sh", "-c", "true"}, Retries: 2,
			RetryBackoff: &workflow.Backoff{Initial: time.Second, Max: time.Minute, Factor: 2}, Timeout: 30 * time.Second}}}
	ref := replay.TaskRef{Run: "r1", Task: 0}
	return []replay.Record{
		&replay.WorkflowPut{Spec: spec, Source: "name: g", At: 1},
		&replay.RunCreated{ID: "r1", Workflow: "g", Version: 1, Params: map[string]string{"p": "2"}, Trigger: "api", IdempotencyKey: "k", At: 2},
		&replay.TaskDispatched{TaskRef: ref, Attempt: 1, At: 3},
		&replay.TaskStarted{TaskRef: ref, Attempt: 1, PID: 42, StartTime: 7, At: 4},
		&replay.TaskFinished{TaskRef: ref, Attempt: 1, OK: true, Output: []byte(`{"x":1}`), At: 5},
		&replay.TaskInterrupted{TaskRef: ref, Attempt: 2, Clean: true, At: 6},
		&replay.RunCancelRequested{ID: "r1", At: 7},
		&replay.RunRetried{ID: "r1", At: 8},
		&replay.CronFired{Workflow: "g", ScheduledAt: 9, RunID: "r2", Version: 1, At: 10},
		&replay.SchedulePaused{Workflow: "g", Paused: true, At: 11},
		&replay.RunsPruned{IDs: []string{"r1"}, At: 12},
		&replay.WorkflowDeleted{Name: "g", At: 13},
	}
}

func TestGoldenLog(t *testing.T) {
	want := goldenRecords()
	if os.Getenv("ORKWAL_UPDATE_GOLDEN") != "" {
		os.RemoveAll(goldenDir)
		l, err := wal.Open(goldenDir, wal.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range want {
			p, _ := replay.Encode(r)
			if _, err := l.Append([][]byte{p}); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
	}
	for _, dir := range []string{goldenDir, goldenV1Dir} {
		checkGolden(t, dir, want)
	}
}

// checkGolden replays the golden log in dir: want, re-encoded byte for byte.
func checkGolden(t *testing.T, dir string, want []replay.Record) {
	t.Helper()
	var got []replay.Record
	err := wal.ReplayDir(dir, 1, func(_ uint64, ps [][]byte) error {
		for _, p := range ps {
			r, err := replay.Decode(p)
			if err != nil {
				return err
			}
			again, _ := replay.Encode(r)
			if !bytes.Equal(again, p) {
				t.Errorf("%s: re-encoding differs from the golden bytes", r.Kind())
			}
			got = append(got, r)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("golden log %s does not read: %v", dir, err)
	}
	if len(got) != len(want) {
		t.Fatalf("golden log %s has %d records, want %d", dir, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s: record %d (%s): got %+v, want %+v", dir, i, want[i].Kind(), got[i], want[i])
		}
	}
}
