package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
)

const wfFanPages = `name: fanpages
tasks:
  src: {command: 'echo "{\"n\": 7}" > $ORKWAL_OUTPUT'}
  each: {command: 'echo "$ORKWAL_PARALLEL_INDEX" > $ORKWAL_OUTPUT; [ $ORKWAL_PARALLEL_INDEX != 4 ]', parallel: src.n, depends_on: [src]}
  after: {executor: noop, depends_on: [each], on_failure: run}
`

// getJSON GETs path into v (wanting 200) and returns its Link header.
func (f *fixture) getJSON(path string, v any) string {
	f.t.Helper()
	return f.getJSONHeader(path, v).Get("Link")
}

// TestRunWithInstanceCounts: GET /runs/{id}?instances=counts is the run
// with its workflow's tasks alone, each fan-out counting its instances by
// status (as the full run's instances say) with the first one's dispatch,
// and without its output (the list of its instances' outputs).
func TestRunWithInstanceCounts(t *testing.T) {
	f := newFixture(t)
	f.put(wfFanPages)
	id := f.trigger("fanpages")
	full := f.waitRun(id)
	var sum engine.RunView
	f.getJSON("/runs/"+id+"?instances=counts", &sum)
	if len(sum.Tasks) != 3 || sum.Tasks[0].Name != "src" || sum.Tasks[1].Name != "each" || sum.Tasks[2].Name != "after" {
		t.Fatalf("tasks %v, want src, each, after", names(sum.Tasks))
	}
	counts, first := map[string]int{}, ""
	for _, task := range full.Tasks {
		if task.Instance != nil {
			counts[task.Status]++
			if at := task.DispatchedAt.UTC().Format("2006-01-02T15:04:05.999999999Z"); first == "" || at < first {
				first = at
			}
		}
	}
	each := sum.Tasks[1]
	if fmt.Sprint(each.InstanceCounts) != fmt.Sprint(counts) || fmt.Sprint(counts) != "map[failed:1 success:6]" {
		t.Errorf("instance_counts %v, the run's instances say %v (want 6 success, 1 failed)", each.InstanceCounts, counts)
	}
	if each.InstancesStartedAt == nil || each.InstancesStartedAt.UTC().Format("2006-01-02T15:04:05.999999999Z") != first {
		t.Errorf("instances_started_at %v, the instances' first dispatch %s", each.InstancesStartedAt, first)
	}
	if each.Output != nil || each.Instances != 7 || sum.Tasks[0].Output == nil {
		t.Errorf("each: output %s, instances %d; src output %s: want none, 7, src's", each.Output, each.Instances, sum.Tasks[0].Output)
	}
	if full.Tasks[1].InstanceCounts == nil {
		t.Errorf("the full run's fan-out has no instance_counts")
	}
	var waited engine.RunView
	f.getJSON("/runs/"+id+"?instances=counts&wait=1s", &waited)
	if len(waited.Tasks) != 3 {
		t.Errorf("?wait with ?instances=counts: %d tasks, want 3", len(waited.Tasks))
	}
}

var instancesLinkRE = regexp.MustCompile(`^<(/runs/[0-9a-f-]+/tasks\?[^>]+)>; rel="next"$`)

// TestFanOutInstancePages: GET /runs/{id}/tasks?fanout=NAME&limit=N lists
// a fan-out's instances in index order, N at a time, each page linking the
// next (after=the last index): the pages together are the run's
// instances, as GET /runs/{id} shows them.
func TestFanOutInstancePages(t *testing.T) {
	f := newFixture(t)
	f.put(wfFanPages)
	id := f.trigger("fanpages")
	full := f.waitRun(id)
	var want []engine.TaskView
	for _, task := range full.Tasks {
		if task.Instance != nil {
			want = append(want, task)
		}
	}
	for _, limit := range []int{1, 3, 7, 100} {
		var got []engine.TaskView
		pages := 0
		for path := fmt.Sprintf("/runs/%s/tasks?fanout=each&limit=%d", id, limit); path != ""; pages++ {
			var page []engine.TaskView
			link := f.getJSON(path, &page)
			if len(page) > limit {
				t.Fatalf("%s: %d instances", path, len(page))
			}
			got = append(got, page...)
			path = ""
			if link != "" {
				m := instancesLinkRE.FindStringSubmatch(link)
				if m == nil {
					t.Fatalf("Link %q", link)
				}
				path = m[1]
			}
		}
		if a, b := jsonOf(t, got), jsonOf(t, want); a != b {
			t.Fatalf("limit %d: pages give\n%s\nthe run has\n%s", limit, a, b)
		}
		if wantPages := (7 + limit - 1) / limit; pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
	}
	var page []engine.TaskView
	if link := f.getJSON("/runs/"+id+"/tasks?fanout=each&after=5", &page); len(page) != 1 || page[0].Name != "each[6]" || link != "" {
		t.Errorf("after=5: %v (Link %q), want each[6] alone, no Link", names(page), link)
	}
	if f.getJSON("/runs/"+id+"/tasks?fanout=each&after=6", &page); len(page) != 0 {
		t.Errorf("after the last: %v, want none", names(page))
	}
}

// TestFanOutQueriesRefuseBadInput: a bad ?instances=, ?fanout=, ?after=
// or ?limit= is a 400 naming the parameter; a fan-out the run does not
// have, or a task that is not one, is a 404.
func TestFanOutQueriesRefuseBadInput(t *testing.T) {
	f := newFixture(t)
	f.put(wfFanPages)
	id := f.trigger("fanpages")
	f.waitRun(id)
	for _, c := range []struct {
		query string
		code  int
		says  string
	}{
		{"?instances=all", 400, `instances "all"`},
		{"?instances=", 200, ""},
		{"/tasks?after=3", 400, "after: only with fanout"},
		{"/tasks?limit=3", 400, "limit: only with fanout"},
		{"/tasks?fanout=", 400, `fanout ""`},
		{"/tasks?fanout=a%2Fb", 400, `fanout "a/b"`},
		{"/tasks?fanout=each&after=-1", 400, "after: must be"},
		{"/tasks?fanout=each&after=x", 400, "after: must be"},
		{"/tasks?fanout=each&after=100000", 400, "after: must be"},
		{"/tasks?fanout=each&limit=0", 400, "limit: must be an integer from 1 to 1000"},
		{"/tasks?fanout=each&limit=1001", 400, "limit: must be an integer from 1 to 1000"},
		{"/tasks?fanout=each&limit=1&limit=2", 400, "limit: given 2 times"},
		{"/tasks?fanout=each&page=2", 400, `unknown query parameter "page"`},
		{"/tasks?fanout=nope", 404, `has no task "nope"`},
		{"/tasks?fanout=src", 404, "not a fan-out"},
	} {
		code, body := f.do("GET", "/runs/"+id+c.query, "")
		var e struct{ Error string }
		json.Unmarshal([]byte(body), &e)
		if code != c.code || !strings.Contains(e.Error, c.says) {
			t.Errorf("GET /runs/{id}%s: %d %s, want %d naming %q", c.query, code, body, c.code, c.says)
		}
	}
	if code, _ := f.do("GET", "/runs/0190b2a4-7c1e-7d3a-9f00-1234567890ab/tasks?fanout=each", ""); code != 404 {
		t.Errorf("an unknown run's fan-out: %d, want 404", code)
	}
}

func names(ts []engine.TaskView) []string {
	out := make([]string, len(ts))
	for i, task := range ts {
		out[i] = task.Name
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
