package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// getRuns GETs a /runs URL and returns the page and its Link and
// X-Next-Cursor headers.
func (f *fixture) getRuns(path string) ([]engine.RunView, string, string) {
	f.t.Helper()
	var page []engine.RunView
	h := f.getJSONHeader(path, &page)
	if page == nil {
		f.t.Fatalf("GET %s: null, want a JSON array", path)
	}
	return page, h.Get("Link"), h.Get("X-Next-Cursor")
}

// getJSONHeader GETs path into v (wanting 200) and returns its headers.
func (f *fixture) getJSONHeader(path string, v any) http.Header {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	resp := f.send(req)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		f.t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		f.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.Header
}

var linkRE = regexp.MustCompile(`^<(/runs\?[^>]+)>; rel="next"$`)

// allRuns follows the Link headers from path and returns every run listed.
func (f *fixture) allRuns(path string) (runs []engine.RunView, pages int) {
	f.t.Helper()
	for path != "" {
		page, link, cursor := f.getRuns(path)
		runs = append(runs, page...)
		pages++
		path = ""
		if link != "" {
			m := linkRE.FindStringSubmatch(link)
			if m == nil {
				f.t.Fatalf("Link %q", link)
			}
			u, _ := url.Parse(m[1])
			if u.Query().Get("cursor") != cursor {
				f.t.Fatalf("Link cursor %q, X-Next-Cursor %q", u.Query().Get("cursor"), cursor)
			}
			path = m[1]
		} else if cursor != "" {
			f.t.Fatalf("X-Next-Cursor without Link")
		}
		if pages > 1000 {
			f.t.Fatal("the pages do not end")
		}
	}
	return runs, pages
}

func ids(runs []engine.RunView) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func TestRunsFiltersAndCursor(t *testing.T) {
	f := newFixture(t)
	f.put("name: ok\ntasks:\n  t: {executor: noop}\n")
	f.put("name: bad\ntasks:\n  t: {command: exit 3}\n")
	var created []string // oldest first
	for i := 0; i < 24; i++ {
		name := "ok"
		if i%3 == 2 {
			name = "bad"
		}
		created = append(created, f.trigger(name))
	}
	for _, id := range created {
		f.waitRun(id)
	}
	newestFirst := make([]string, len(created))
	for i, id := range created {
		newestFirst[len(created)-1-i] = id
	}

	all, pages := f.allRuns("/runs?limit=5")
	if strings.Join(ids(all), ",") != strings.Join(newestFirst, ",") || pages != 5 {
		t.Fatalf("paged by 5: %d pages, %v\nwant %v", pages, ids(all), newestFirst)
	}
	if page, link, _ := f.getRuns("/runs"); len(page) != 24 || link != "" {
		t.Fatalf("default limit: %d runs, Link %q", len(page), link)
	}
	if page, link, _ := f.getRuns("/runs?limit=24"); len(page) != 24 || link != "" {
		t.Fatalf("an exact last page has no next: %d runs, Link %q", len(page), link)
	}

	failed, _ := f.allRuns("/runs?status=failed&limit=3")
	bad, _ := f.allRuns("/runs?workflow=bad&limit=100")
	if len(failed) != 8 || strings.Join(ids(failed), ",") != strings.Join(ids(bad), ",") {
		t.Fatalf("status=failed %d runs, workflow=bad %d runs", len(failed), len(bad))
	}
	for _, r := range failed {
		if r.Status != "failed" || r.Workflow != "bad" {
			t.Fatalf("status=failed lists %s %s", r.Workflow, r.Status)
		}
	}
	if runs, _ := f.allRuns("/runs?status=success&workflow=bad"); len(runs) != 0 {
		t.Fatalf("success runs of bad: %v", ids(runs))
	}
	if runs, _ := f.allRuns("/runs?status=running"); len(runs) != 0 {
		t.Fatalf("running: %v", ids(runs))
	}

	// since: created at or after a run's creation time.
	pivot, _ := f.eng.Run(created[10])
	since := url.QueryEscape(pivot.CreatedAt.Format(time.RFC3339Nano))
	recent, _ := f.allRuns("/runs?limit=4&since=" + since)
	want := newestFirst[:len(created)-10]
	for len(recent) > len(want) { // runs created in the same nanosecond as the pivot
		want = newestFirst[:len(want)+1]
	}
	if strings.Join(ids(recent), ",") != strings.Join(want, ",") {
		t.Fatalf("since %s: %v\nwant %v", since, ids(recent), want)
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	if runs, link, _ := f.getRuns("/runs?since=" + future); len(runs) != 0 || link != "" {
		t.Fatalf("since the future: %v", ids(runs))
	}

	// The filters travel in the Link; the cursor is opaque but stable.
	_, link, cursor := f.getRuns("/runs?workflow=ok&status=success&limit=2")
	for _, want := range []string{"workflow=ok", "status=success", "limit=2", "cursor=" + cursor} {
		if !strings.Contains(link, want) {
			t.Fatalf("Link %q lacks %q", link, want)
		}
	}
	// New runs do not shift the pages after a cursor.
	_, _, c1 := f.getRuns("/runs?limit=3")
	before, _ := f.allRuns("/runs?limit=3&cursor=" + c1)
	f.trigger("ok")
	after, _ := f.allRuns("/runs?limit=3&cursor=" + c1)
	if strings.Join(ids(before), ",") != strings.Join(ids(after), ",") {
		t.Fatalf("a new run shifted the pages after a cursor")
	}
}

// TestPageRunsCursorOfAGoneRun: a cursor whose run no longer exists goes on
// from the runs created before it.
func TestPageRunsCursorOfAGoneRun(t *testing.T) {
	f := newFixture(t)
	f.put("name: w\ntasks:\n  t: {executor: noop}\n")
	for i := 0; i < 10; i++ {
		f.trigger("w")
	}
	runs := f.eng.Runs(engine.RunFilter{}) // newest first
	gone := "01a20513-4449-7a72-88e6-f0b8c447588e"
	page, more := f.eng.RunPage(runsQuery{limit: 3, after: &cursor{at: runs[4].CreatedAt.UnixNano() + 1, id: gone}}.engineQuery())
	if got, want := strings.Join(ids(page), ","), strings.Join(ids(runs[4:7]), ","); got != want || !more {
		t.Fatalf("after a gone run: %s more=%v, want %s", got, more, want)
	}
	page, more = f.eng.RunPage(runsQuery{limit: 3, after: &cursor{at: runs[9].CreatedAt.UnixNano(), id: gone}}.engineQuery())
	if len(page) != 0 || more {
		t.Fatalf("after the oldest: %v %v", ids(page), more)
	}
	// Round trip of the encoding.
	c := cursor{at: 1234567890123456789, id: gone}
	back, err := decodeCursor(c.encode())
	if err != nil || *back != c {
		t.Fatalf("cursor round trip: %+v %v", back, err)
	}
}

// TestRunsByIDPrefix: GET /runs?id_prefix= lists the runs whose id starts
// with it, by id, from the engine's sorted index.
func TestRunsByIDPrefix(t *testing.T) {
	f := newFixture(t)
	f.put("name: ok\ntasks:\n  t: {executor: noop}\n")
	a, b := f.trigger("ok"), f.trigger("ok")
	if got, _, _ := f.getRuns("/runs?id_prefix=" + a[:30]); len(got) != 1 || got[0].ID != a {
		t.Fatalf("prefix of %s: %v", a, ids(got))
	}
	if got, _, _ := f.getRuns("/runs?id_prefix=" + strings.ToUpper(b[:30])); len(got) != 1 || got[0].ID != b {
		t.Fatalf("upper-case prefix of %s: %v", b, ids(got))
	}
	want := []string{a, b}
	if b < a {
		want = []string{b, a}
	}
	if got, _, _ := f.getRuns("/runs?id_prefix=0"); strings.Join(ids(got), ",") != strings.Join(want, ",") {
		t.Fatalf("prefix 0: %v, want %v", ids(got), want)
	}
	if got, _, _ := f.getRuns("/runs?id_prefix=0&limit=1"); len(got) != 1 {
		t.Fatalf("limit 1: %v", ids(got))
	}
	if got, _, _ := f.getRuns("/runs?id_prefix=f"); len(got) != 0 {
		t.Fatalf("prefix f: %v", ids(got))
	}
	for _, q := range []string{"id_prefix=", "id_prefix=xyz", "id_prefix=0&workflow=ok", "id_prefix=0&limit=0"} {
		if code, body := f.do("GET", "/runs?"+q, ""); code != 400 || !strings.Contains(body, "id_prefix") && !strings.Contains(body, "limit") {
			t.Errorf("GET /runs?%s: %d %s, want 400 naming it", q, code, body)
		}
	}
}

// TestSummaryCountsRunsByWorkflowAndStatus: GET /summary gives each
// workflow's runs by status and its newest run, from the counts the state
// keeps.
func TestSummaryCountsRunsByWorkflowAndStatus(t *testing.T) {
	f := newFixture(t)
	f.put("name: ok\ntasks:\n  t: {executor: noop}\n")
	f.put("name: wait\ntasks:\n  t: {executor: noop, delay: 1h}\n")
	f.waitRun(f.trigger("ok"))
	last := f.trigger("ok")
	f.waitRun(last)
	f.trigger("wait")
	waiting := f.trigger("wait")
	code, body := f.do("GET", "/summary", "")
	var sum struct {
		Workflows map[string]engine.WorkflowRuns
	}
	if err := json.Unmarshal([]byte(body), &sum); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	got := sum.Workflows
	if c := got["ok"].Counts; len(c) != 1 || c["success"] != 2 || got["ok"].Last.ID != last {
		t.Errorf("ok: %+v, last %v; want 2 success, last %s", c, got["ok"].Last, last)
	}
	if c := got["wait"].Counts; len(c) != 1 || c["pending"] != 2 || got["wait"].Last.ID != waiting {
		t.Errorf("wait: %+v; want 2 pending, last %s", c, waiting)
	}
}
