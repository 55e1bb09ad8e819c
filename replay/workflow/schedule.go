package workflow

import (
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"
)

// cronParser accepts five fields, descriptors (@hourly, @every 30s) and a
// CRON_TZ= or TZ= prefix; Ork's six and seven fields are read by
// parseCronFields.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a schedule's cron expression. It never panics: the cron
// library indexes past the end of some inputs (a CRON_TZ= or TZ= prefix
// with nothing after it), so those are refused first, and any other panic
// inside the library is turned into an error.
func ParseCron(expr string) (sched cron.Schedule, err error) {
	if zone, ok := zoneOnly(expr); ok {
		return nil, fmt.Errorf("time zone prefix %q has no schedule after it (write e.g. %q)", zone, zone+" 0 2 * * *")
	}
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("not a cron expression (%v)", r)
		}
	}()
	return parseCronFields(expr)
}

// zoneOnly reports whether expr is a time zone prefix (CRON_TZ=... or
// TZ=...) with no space after it, hence no fields: what the cron library
// would panic on.
func zoneOnly(expr string) (string, bool) {
	s := strings.TrimSpace(expr)
	if !strings.HasPrefix(s, "CRON_TZ=") && !strings.HasPrefix(s, "TZ=") {
		return "", false
	}
	return s, !strings.ContainsAny(s, " \t")
}

// DefaultCatchup and DefaultOverlap are the policies of a schedule that
// does not set them.
const (
	DefaultCatchup = "latest"
	DefaultOverlap = "skip"
)

// CatchupPolicy returns the schedule's catch-up policy, defaulted.
func (s *Schedule) CatchupPolicy() string {
	if s.Catchup == "" {
		return DefaultCatchup
	}
	return s.Catchup
}

// OverlapPolicy returns the schedule's overlap policy, defaulted.
func (s *Schedule) OverlapPolicy() string {
	if s.Overlap == "" {
		return DefaultOverlap
	}
	return s.Overlap
}

// scheduleKey decodes the workflow-level schedule keys: `schedule` (a cron
// expression), `catchup` and `overlap`.
func (p *parser) scheduleKey(spec *Spec, e entry) (bool, error) {
	var err error
	switch e.key {
	case "schedule":
		var expr string
		if expr, err = p.str(e.val, e.path); err == nil {
			if _, perr := ParseCron(expr); perr != nil {
				return true, p.fail(e.val, e.path, "bad cron expression %q: %v", expr, perr)
			}
			p.schedule(spec).Cron = expr
		}
	case "catchup":
		p.schedule(spec).Catchup, err = p.choice(e.val, e.path, map[string]string{"none": "none", "latest": "latest", "all": "all"})
	case "overlap":
		p.schedule(spec).Overlap, err = p.choice(e.val, e.path, map[string]string{"skip": "skip", "allow": "allow", "queue": "queue"})
	default:
		return false, nil
	}
	return true, err
}

func (p *parser) schedule(spec *Spec) *Schedule {
	if spec.Schedule == nil {
		spec.Schedule = &Schedule{}
	}
	return spec.Schedule
}

// checkSchedule rejects catchup/overlap without a schedule.
func (p *parser) checkSchedule(spec *Spec, root *yaml.Node) error {
	if s := spec.Schedule; s != nil && s.Cron == "" {
		key := "overlap"
		if s.Catchup != "" {
			key = "catchup"
		}
		return p.fail(root, key, "applies only with a schedule (a cron expression), and this workflow has none")
	}
	return nil
}
