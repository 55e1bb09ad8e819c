package workflow

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestScheduleZoneWithoutFields: a time zone prefix with nothing after it
// made the cron library panic (validate died, POST /workflows answered 500,
// a --workflows folder holding it killed the daemon at boot). It is a
// clear error naming the key.
func TestScheduleZoneWithoutFields(t *testing.T) {
	for _, expr := range []string{"CRON_TZ=Europe/Berlin", "TZ=UTC", "CRON_TZ=", "TZ=", "  CRON_TZ=Europe/Berlin  "} {
		src := "name: c\nschedule: \"" + expr + "\"\ntasks:\n  a: {command: x}\n"
		_, err := Parse("c.yaml", []byte(src))
		want := "c.yaml: schedule: bad cron expression"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "no schedule after it") {
			t.Errorf("%q: got %v, want %q ... no schedule after it", expr, err, want)
		}
	}
}

// FuzzParseCron: no schedule string panics the parser, and an accepted
// one has a next fire time that can be asked for.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"CRON_TZ=Europe/Berlin", "TZ=UTC 0 2 * * *", "@every 30s", "@hourly", "*/5 * * * *",
		"0 0 30 2 *", "CRON_TZ=Europe/Berlin 30 2 * * *", "@every", "TZ=\t", "1-5/0 * * * *", "@every -1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := ParseCron(expr)
		if err != nil {
			return
		}
		s.Next(time.Unix(1_700_000_000, 0))
		src := "name: c\nschedule: " + strconv.Quote(expr) + "\ntasks:\n  a: {command: x}\n"
		if _, err := Parse("c.yaml", []byte(src)); err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%q: %v", expr, err)
		}
	})
}

// TestWorkflowLimits: the limits hold for every way a workflow arrives
// (Parse is on each): a --workflows file had none (a 20 MB file loaded;
// 100,000 tasks took 235 MB) while POST /workflows stopped at 1 MiB.
func TestWorkflowLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: big\ntasks:\n")
	for i := 0; i <= MaxTasks; i++ {
		b.WriteString("  t" + strconv.Itoa(i) + ": {executor: noop}\n")
	}
	if _, err := Parse("big.yaml", []byte(b.String())); err == nil || !strings.Contains(err.Error(), "big.yaml: tasks: 10001 tasks, above the limit of 10000") {
		t.Errorf("%d tasks: %v", MaxTasks+1, err)
	}
	huge := "name: huge\ntasks:\n  t: {executor: noop}\n" + strings.Repeat("# padding\n", MaxBytes/10+1)
	if _, err := Parse("huge.yaml", []byte(huge)); err == nil || !strings.Contains(err.Error(), "huge.yaml: ") || !strings.Contains(err.Error(), "above the limit of 1048576") {
		t.Errorf("%d bytes: %v", len(huge), err)
	}
}
