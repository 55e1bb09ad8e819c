package workflow

import (
	"strings"
	"testing"
	"time"
)

// TestOrkCron: Ork's six- and seven-field schedules (seconds first, days
// of the week 1 = Sunday to 7, a year last) fire when Ork's would; five
// fields keep their meaning.
func TestOrkCron(t *testing.T) {
	from := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // a Monday
	day := func(d int, hms ...int) time.Time {
		return time.Date(2026, 3, d, hms[0], hms[1], hms[2], 0, time.UTC)
	}
	for _, tc := range []struct {
		expr string
		want []time.Time // the next fires from `from`; empty: none
	}{
		{"CRON_TZ=UTC 30 2 * * *", []time.Time{day(2, 2, 30, 0), day(3, 2, 30, 0)}},
		{"CRON_TZ=UTC 15 30 2 * * *", []time.Time{day(2, 2, 30, 15), day(3, 2, 30, 15)}},
		{"CRON_TZ=UTC */20 * * * * *", []time.Time{day(2, 0, 0, 20), day(2, 0, 0, 40)}},
		{"CRON_TZ=UTC 0 0 12 * * 1", []time.Time{day(8, 12, 0, 0)}},                     // 1 = Sunday
		{"CRON_TZ=UTC 0 0 12 * * 7", []time.Time{day(7, 12, 0, 0)}},                     // 7 = Saturday
		{"CRON_TZ=UTC 0 0 12 * * 3-4", []time.Time{day(3, 12, 0, 0), day(4, 12, 0, 0)}}, // Tuesday, Wednesday
		{"CRON_TZ=UTC 0 0 12 * * Tuesday,THURS", []time.Time{day(3, 12, 0, 0), day(5, 12, 0, 0)}},
		{"CRON_TZ=UTC 0 0 12 ? March Mon", []time.Time{day(2, 12, 0, 0), day(9, 12, 0, 0)}},
		{"CRON_TZ=UTC 0 0 0 1 1 * 2028", []time.Time{time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), {}}},
		{"CRON_TZ=UTC 0 0 0 1 1 * 2020-2025", []time.Time{{}}},
		{"CRON_TZ=UTC 0 0 0 1 1 * */2", []time.Time{time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		s, err := ParseCron(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		at := from
		for i, want := range tc.want {
			at = s.Next(at)
			if !at.Equal(want) {
				t.Errorf("%s: fire %d = %v, want %v", tc.expr, i+1, at, want)
				break
			}
		}
	}
	for _, tc := range []struct{ expr, want string }{
		{"0 0 12 * * 0", "day of week 0: Ork's days of the week run from 1 (Sunday) to 7"},
		{"0 0 12 * * 8", "day of week 8"},
		{"0 0 0 1 1 * 1969", `year "1969": Ork's years run from 1970 to 2100`},
		{"0 0 0 1 1 * 2030-2028", "the range is empty"},
		{"* * * *", "4 fields: write five"},
		{"0 0 0 1 1 * 2026 x", "8 fields"},
	} {
		if _, err := ParseCron(tc.expr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.expr, err, tc.want)
		}
	}
}
