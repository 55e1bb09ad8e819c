package replay

import (
	"fmt"
	"sort"

	"github.com/cespare/xxhash/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// Hash is a checksum of the state's canonical encoding: two states with the
// same hash hold the same workflows, runs and tasks (derived fields are
// excluded; they follow from the rest). Live and replayed state must match.
func (s *State) Hash() (uint64, error) {
	d := xxhash.New()
	enc := msgpack.NewEncoder(d)
	enc.SetSortMapKeys(true)
	if err := s.encodeCanonical(enc); err != nil {
		return 0, fmt.Errorf("replay: hash state: %w", err)
	}
	return d.Sum64(), nil
}

func (s *State) encodeCanonical(enc *msgpack.Encoder) error {
	names := make([]string, 0, len(s.Workflows))
	for n := range s.Workflows {
		names = append(names, n)
	}
	sort.Strings(names)
	vals := []any{s.NextSeq, s.NextRunSeq, len(names)}
	for _, n := range names {
		w := s.Workflows[n]
		spec, err := w.Spec.Canonical() // msgpack sorts only some maps' keys
		if err != nil {
			return err
		}
		vals = append(vals, w.Name, w.Version, spec, w.Source, w.File, w.CreatedAt, w.UpdatedAt, len(w.Past))
		for _, p := range w.Past {
			spec, err := p.Spec.Canonical()
			if err != nil {
				return err
			}
			vals = append(vals, p.Version, p.At, spec, p.Source)
		}
	}
	retired := make([]string, 0, len(s.Retired))
	for n := range s.Retired {
		retired = append(retired, n)
	}
	sort.Strings(retired) // a map would be encoded in its random order
	vals = append(vals, len(retired))
	for _, n := range retired {
		vals = append(vals, n, s.Retired[n])
	}
	scheds := make([]string, 0, len(s.Schedules))
	for n := range s.Schedules {
		scheds = append(scheds, n)
	}
	sort.Strings(scheds)
	vals = append(vals, len(scheds))
	for _, n := range scheds {
		sc := s.Schedules[n]
		vals = append(vals, sc.Workflow, sc.Cron, sc.Since, sc.LastFire, sc.Paused, len(sc.Fires))
		for _, f := range sc.Fires {
			vals = append(vals, f.ScheduledAt, f.RunID, f.Skipped, f.At)
		}
	}
	vals = append(vals, len(s.RunList))
	for _, r := range s.RunList {
		vals = append(vals, r.ID, r.Seq, r.Workflow, r.Version, r.Params, r.Trigger, r.IdemKey, r.ScheduledAt, r.Queued,
			string(r.Status), r.CreatedAt, r.StartedAt, r.FinishedAt, r.CancelRequested, len(r.Tasks))
		for _, t := range r.Tasks {
			vals = append(vals, t.Index, t.SpecIndex, t.Name, t.Seq, string(t.Status), t.Attempt,
				t.Failures, t.Interruptions, t.NotBefore, t.MutexKey, t.Priority(), t.Parent, t.Instance,
				t.Count, t.Item, t.Instances, t.Expanded, t.PID, t.StartTime, t.ExitCode, t.Error,
				t.Output, t.DispatchedAt, t.StartedAt, t.FinishedAt, t.Deps(), t.Deferred)
		}
	}
	vals = append(vals, s.copyAlerts())
	for _, v := range vals {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}
