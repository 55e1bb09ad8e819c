package engine

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAppendEventJSON: the hand-written encoding of an event is the same
// bytes as json.Marshal's, for every field set or not, strings that need
// escapes, and times in and out of RFC 3339's range.
func TestAppendEventJSON(t *testing.T) {
	code, neg, yes, no := 0, -1, true, false
	at := time.Date(2026, 11, 25, 1, 2, 3, 450000000, time.UTC)
	events := []Event{
		{},
		{ID: "12.3", Type: "task_dispatched", Run: "r-1", Workflow: "wf", Task: "each[7]", Attempt: 2, Status: "dispatched", At: at, TaskSeq: 9},
		{ID: "12.3.1", Type: "run_finished", Run: "r", Status: "failed", At: at.Add(time.Nanosecond)},
		{ID: "1.0", Type: "task_finished", Task: "t", ExitCode: &code, Error: "", At: at},
		{ID: "1.1", Type: "task_finished", ExitCode: &neg, Error: "exit <1> & \"quoted\" \\ tab\t nl\n ünïcödé \u2028 \x01 \xff", At: at},
		{ID: "2", Type: "schedule_paused", Workflow: "w", Paused: &yes, At: at.In(time.FixedZone("x", 3600))},
		{Type: "schedule_paused", Paused: &no, At: time.Unix(0, 0)},
		{ID: "3.4", Type: "instance_counts", Run: "r", Task: "each", Instances: 9, Counts: map[string]int{"success": 4, "pending": 3, "a\"b": 2}, At: at},
		{ID: "3.5", Type: "instance_counts", Instances: 1, Counts: map[string]int{}, At: at},
		{Type: "workflow_put", At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Type: "workflow_put", At: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for i := range events {
		want, _ := json.Marshal(&events[i])
		if got := AppendEventJSON([]byte("prefix"), &events[i]); string(got) != "prefix"+string(want) {
			t.Errorf("event %d:\n got %s\nwant prefix%s", i, got, want)
		}
	}
}

// TestPlainJSONEveryByte: plainJSON (its table) calls a byte plain only
// when encoding/json writes it as is between quotes, and every printable
// ASCII byte that json writes so (the others go through json).
func TestPlainJSONEveryByte(t *testing.T) {
	for c := 0; c < 256; c++ {
		s := string([]byte{'a', byte(c)})
		q, _ := json.Marshal(s)
		asIs := string(q) == `"`+s+`"`
		if plainJSON(s) && !asIs || !plainJSON(s) && asIs && c >= 0x20 && c <= 0x7e {
			t.Errorf("byte %#x: plain %v, json writes %s", c, plainJSON(s), q)
		}
	}
}

// TestEventPosString: an event id is written as docs/api.md says and read
// back as the same position, in one allocation.
func TestEventPosString(t *testing.T) {
	for want, p := range map[string]EventPos{
		"12.3": {Index: 12, Pos: 3}, "12.3.1": {Index: 12, Pos: 3, End: true}, "41": {Index: 41, Pos: EntryEnd},
		"0.0": {}, "18446744073709551615.2147483646.1": {Index: 1<<64 - 1, Pos: EntryEnd - 1, End: true},
	} {
		got := p.String()
		back, err := ParseEventPos(got)
		if got != want || err != nil || back != p {
			t.Errorf("%+v: %q, read back %+v %v; want %q", p, got, back, err, want)
		}
	}
	p := EventPos{Index: 123456, Pos: 789}
	if n := testing.AllocsPerRun(100, func() { idSink = p.String() }); n != 1 {
		t.Errorf("String allocates %v times, want 1 (the string): every event has an id", n)
	}
}

// idSink keeps the ids TestEventPosString makes on the heap, as an event does.
var idSink string
