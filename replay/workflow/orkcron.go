package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Ork's schedules are read by the Rust cron crate (0.12): six fields,
// second minute hour day-of-month month day-of-week, and an optional
// seventh, the year (1970 to 2100). Its days of the week run from 1
// (Sunday) to 7 (Saturday), where five-field cron has 0 to 6; names may be
// written in full (Monday, February). Ork evaluates them in UTC; orkwal
// evaluates every schedule in the daemon's time zone unless it starts
// with CRON_TZ= (CRON_TZ=UTC gives Ork's behaviour).

// orkCronParser reads the first six fields once the day of the week is
// renumbered: the seconds first.
var orkCronParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Years an Ork schedule's seventh field may name.
const (
	minCronYear = 1970
	maxCronYear = 2100
)

// parseCronFields parses expr by its number of fields: five (and
// descriptors such as @hourly) as robfig/cron does, six or seven as Ork
// does.
func parseCronFields(expr string) (cron.Schedule, error) {
	zone, body := cutZone(expr)
	fields := strings.Fields(body)
	if strings.HasPrefix(body, "@") || len(fields) == 5 {
		return cronParser.Parse(expr)
	}
	if len(fields) != 6 && len(fields) != 7 {
		return nil, fmt.Errorf("%d fields: write five (minute hour day-of-month month day-of-week) or Ork's six or seven (a second first, a year last)", len(fields))
	}
	fields[4] = renameAll(fields[4], monthNames)
	var err error
	if fields[5], err = orkWeekdays(fields[5]); err != nil {
		return nil, err
	}
	s, err := orkCronParser.Parse(zone + strings.Join(fields[:6], " "))
	if err != nil || len(fields) == 6 {
		return s, err
	}
	years, err := parseYears(fields[6])
	if err != nil {
		return nil, err
	}
	return yearSchedule{spec: s.(*cron.SpecSchedule), years: years}, nil
}

// cutZone splits a CRON_TZ= or TZ= prefix (with its space) off expr.
func cutZone(expr string) (zone, body string) {
	s := strings.TrimSpace(expr)
	if strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ=") {
		if i := strings.IndexAny(s, " \t"); i > 0 {
			return s[:i+1], strings.TrimSpace(s[i:])
		}
	}
	return "", s
}

// orkWeekdays renumbers an Ork day-of-week field (1 = Sunday ... 7 =
// Saturday) for robfig/cron (0 = Sunday ... 6), and shortens full names.
func orkWeekdays(field string) (string, error) {
	items := strings.Split(renameAll(field, dayNames), ",")
	for i, item := range items {
		base, step, hasStep := strings.Cut(item, "/")
		ends := strings.Split(base, "-")
		for j, end := range ends {
			n, err := strconv.Atoi(end)
			if err != nil {
				continue // *, ? or a name
			}
			if n < 1 || n > 7 {
				return "", fmt.Errorf("day of week %d: Ork's days of the week run from 1 (Sunday) to 7 (Saturday)", n)
			}
			ends[j] = strconv.Itoa(n - 1)
		}
		items[i] = strings.Join(ends, "-")
		if hasStep {
			items[i] += "/" + step
		}
	}
	return strings.Join(items, ","), nil
}

var dayNames = map[string]string{"sunday": "sun", "monday": "mon", "tues": "tue", "tuesday": "tue",
	"wednesday": "wed", "thurs": "thu", "thursday": "thu", "friday": "fri", "saturday": "sat"}

var monthNames = map[string]string{"january": "jan", "february": "feb", "march": "mar", "april": "apr",
	"june": "jun", "july": "jul", "august": "aug", "september": "sep", "october": "oct",
	"november": "nov", "december": "dec"}

// renameAll replaces the full names of field (Ork's cron accepts them)
// by the three letters robfig/cron reads.
func renameAll(field string, names map[string]string) string {
	var b strings.Builder
	word := func(w string) {
		if short, ok := names[strings.ToLower(w)]; ok {
			w = short
		}
		b.WriteString(w)
	}
	start := -1
	for i := 0; i <= len(field); i++ {
		letter := i < len(field) && (field[i]|0x20 >= 'a' && field[i]|0x20 <= 'z')
		switch {
		case letter && start < 0:
			start = i
		case !letter && start >= 0:
			word(field[start:i])
			start = -1
		}
		if !letter && i < len(field) {
			b.WriteByte(field[i])
		}
	}
	return b.String()
}

// parseYears reads Ork's year field: *, a year, a range, a list, each
// with an optional /step.
func parseYears(field string) ([]bool, error) {
	years := make([]bool, maxCronYear-minCronYear+1)
	for _, item := range strings.Split(field, ",") {
		base, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := minCronYear, maxCronYear
		if base != "*" && base != "?" {
			a, b, isRange := strings.Cut(base, "-")
			var err error
			if lo, err = cronYear(a); err != nil {
				return nil, err
			}
			hi = lo
			if isRange {
				if hi, err = cronYear(b); err != nil {
					return nil, err
				}
			} else if hasStep {
				hi = maxCronYear
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("year step %q: not a positive number", stepText)
			}
			step = n
		}
		if lo > hi {
			return nil, fmt.Errorf("years %d-%d: the range is empty", lo, hi)
		}
		for y := lo; y <= hi; y += step {
			years[y-minCronYear] = true
		}
	}
	return years, nil
}

func cronYear(s string) (int, error) {
	y, err := strconv.Atoi(s)
	if err != nil || y < minCronYear || y > maxCronYear {
		return 0, fmt.Errorf("year %q: Ork's years run from %d to %d", s, minCronYear, maxCronYear)
	}
	return y, nil
}

// yearSchedule is a six-field schedule restricted to some years.
type yearSchedule struct {
	spec  *cron.SpecSchedule
	years []bool // by year - minCronYear
}

// Next returns the first fire after t in an allowed year; the zero time
// when there is none.
func (s yearSchedule) Next(t time.Time) time.Time {
	for {
		next := s.spec.Next(t)
		if next.IsZero() {
			return next
		}
		y := next.Year()
		if y >= minCronYear && y <= maxCronYear && s.years[y-minCronYear] {
			return next
		}
		following := s.nextYear(y)
		if following == 0 {
			return time.Time{}
		}
		t = time.Date(following, time.January, 1, 0, 0, 0, 0, s.spec.Location).Add(-time.Second)
	}
}

// nextYear is the first allowed year after y, 0 when there is none.
func (s yearSchedule) nextYear(y int) int {
	for n := max(y+1, minCronYear); n <= maxCronYear; n++ {
		if s.years[n-minCronYear] {
			return n
		}
	}
	return 0
}
