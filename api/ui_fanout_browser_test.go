package api

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserFanOutListLiveWithoutTheRun: with a running fan-out open to
// its instances, the page keeps the list, the node's counts and the
// timeline live as instances end without fetching the run again (no
// GET /runs/{id}, summarised or not): the list comes a page at a time
// (GET /runs/{id}/tasks?fanout=&limit=), the counts from the stream. An
// instance picked in the list shows in the task panel.
func TestBrowserFanOutListLiveWithoutTheRun(t *testing.T) {
	d := startDaemon(t)
	d.put(wfFanLive)
	id := d.trigger("fanlive")
	ctx := browse(t)
	each := `document.querySelector('#dag g.node[data-task="each"]').textContent`
	row := func(i, status string) string {
		return `#instances tr[data-task="each[` + i + `]"] [data-status="` + status + `"]`
	}
	fetched := func(kind string) string {
		return `performance.getEntriesByType("resource").filter((e) => { const u = new URL(e.name);
			return u.pathname === "/runs/` + id + kind + `" && (u.pathname.endsWith("/tasks") ? u.searchParams.get("fanout") === "each" && +u.searchParams.get("limit") <= 100 : true); }).length`
	}
	runs, pages := fetched(""), fetched("/tasks")
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id)),
		chromedp.WaitVisible(css(`#live.on`)),
		until(each+`.includes("▶ 4")`),
		press(`#dag g.node[data-task="each"]`),
		chromedp.WaitVisible(css(row("3", "running"))),
		chromedp.WaitVisible(css(`#gantt .row[data-task="each"] .bar`)),
		chromedp.Evaluate[chromedp.Void](`window.pageMarker = "same page"`),
	)
	runsBefore, pagesBefore := value[float64](t, ctx, runs), value[float64](t, ctx, pages)
	d.release("0", "1")
	do(t, ctx, chromedp.WaitVisible(css(row("0", "success"))), chromedp.WaitVisible(css(row("1", "success"))),
		chromedp.WaitVisible(css(row("2", "running"))), until(each+`.includes("✓ 2") && `+each+`.includes("▶ 2")`))
	if n := value[float64](t, ctx, runs); n != runsBefore {
		t.Errorf("instances ending made the page fetch the run %v times, want none: the list comes a page at a time", n-runsBefore)
	}
	if n := value[float64](t, ctx, pages); n <= pagesBefore {
		t.Errorf("the list changed with no page of instances fetched (%v before, %v after)", pagesBefore, n)
	}
	do(t, ctx, press(`#instances tr[data-task="each[0]"] a`),
		until(`document.querySelector("#task-name") && document.querySelector("#task-name").textContent === "each[0]"`))
	if n := value[float64](t, ctx, runs); n != runsBefore {
		t.Errorf("picking an instance fetched the run %v times, want none", n-runsBefore)
	}
	d.release("2", "3")
	do(t, ctx, chromedp.WaitVisible(css(row("3", "success"))), chromedp.WaitVisible(css(node("each", "success"))),
		chromedp.WaitVisible(css(runStatusIs("success"))))
	if marker := value[string](t, ctx, `window.pageMarker`); marker != "same page" {
		t.Fatalf("the page reloaded (marker %q)", marker)
	}
}

// release lets wfFanLive's instances end (each waits for its file).
func (d *daemon) release(instances ...string) {
	for _, i := range instances {
		if err := os.WriteFile(filepath.Join(d.dir, "go-"+i), nil, 0o600); err != nil {
			d.t.Fatal(err)
		}
	}
}

const wfFanWide = `name: fanwide
tasks:
  each: {executor: noop, parallel: 250}
`

// fanWideEnded runs fanwide on d to its end and opens a browser: the
// start of the tests that look at a fan-out's instances once they are all
// done.
func fanWideEnded(t *testing.T, d *daemon) (string, context.Context) {
	t.Helper()
	d.put(wfFanWide)
	id := d.trigger("fanwide")
	ctx := browse(t)
	if err := d.eng.WaitRunEnd(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id, ctx
}

// TestBrowserFanOutInstancesPaged: a fan-out's instances are listed 100 at
// a time, with the way to the next and previous pages.
func TestBrowserFanOutInstancesPaged(t *testing.T) {
	d := startDaemon(t)
	d.put(wfFanWide)
	id := d.trigger("fanwide")
	ctx := browse(t)
	where := `document.querySelector("#inst-where").textContent`
	rows := `document.querySelectorAll("#instances tr[data-task]").length`
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id)),
		chromedp.WaitVisible(css(runStatusIs("success"))),
		press(`#dag g.node[data-task="each"]`),
		until(where+` === "(1–100 of 250)" && `+rows+` === 100`),
		press(`#inst-next`),
		until(where+` === "(101–200 of 250)" && document.querySelector('#instances tr[data-task="each[100]"]') !== null`),
		press(`#inst-next`),
		until(where+` === "(201–250 of 250)" && `+rows+` === 50 && document.querySelector("#inst-next") === null`),
		press(`#inst-prev`),
		until(where+` === "(101–200 of 250)"`),
	)
	// An instance named by the URL opens its fan-out at its page.
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id+"?task=each[201]")),
		until(where+` === "(201–250 of 250)"`),
		chromedp.WaitVisible(css(`#instances tr.sel[data-task="each[201]"]`)),
		until(`document.querySelector("#task-name") && document.querySelector("#task-name").textContent === "each[201]"`),
	)
}

// TestBrowserFanOutListFetchedOnceOnOpen: a run page opened with a
// fan-out's list shown (?task= names the fan-out) fetches its page of
// instances once, with the run, when its stream opens (the page it is
// served in holds the run, not the instances); the next page is then
// fetched alone.
func TestBrowserFanOutListFetchedOnceOnOpen(t *testing.T) {
	reqs := make(chan string, 64) // the page's reads of the run and of instances, in order
	d := startDaemonWrapped(t, func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if q.Has("fanout") {
				reqs <- "instances after " + q.Get("after")
			} else if strings.HasPrefix(r.URL.Path, "/runs/") && q.Get("instances") == "counts" {
				reqs <- "run"
			}
			api.ServeHTTP(w, r)
		})
	})
	id, ctx := fanWideEnded(t, d) // no event comes while the page is open
	var seen []string
	readUntil := func(last string) {
		t.Helper()
		for len(seen) == 0 || seen[len(seen)-1] != last || !slices.Contains(seen, "run") {
			select {
			case r := <-reqs:
				seen = append(seen, r)
			case <-ctx.Done():
				t.Fatalf("waiting for %q after the run's fetch: %v; the page read %q", last, ctx.Err(), seen)
			}
		}
	}
	do(t, ctx, chromedp.Navigate(d.url("/ui/runs/"+id+"?task=each")), chromedp.WaitVisible(css(`#live.on`)))
	readUntil("instances after ")
	do(t, ctx, until(`document.querySelector("#inst-where").textContent === "(1–100 of 250)"`), press(`#inst-next`))
	readUntil("instances after 99")
	if want := []string{"run", "instances after ", "instances after 99"}; !slices.Equal(seen, want) {
		t.Fatalf("the page read %q, want %q: the first page of instances once, with the run", seen, want)
	}
}

// TestBrowserFanOutListWithoutTheStream: a run page opened with a
// fan-out's list shown waits on its stream's opening to fetch the list;
// when the stream fails instead (here /events answers 503 every time), the
// page reads the run and the list at once rather than showing
// "250, loading…" for as long as the stream stays down.
func TestBrowserFanOutListWithoutTheStream(t *testing.T) {
	d := startDaemonWrapped(t, func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/events" {
				http.Error(w, "no stream here", http.StatusServiceUnavailable)
				return
			}
			api.ServeHTTP(w, r)
		})
	})
	id, ctx := fanWideEnded(t, d)
	do(t, ctx, chromedp.Navigate(d.url("/ui/runs/"+id+"?task=each")),
		chromedp.WaitVisible(css(`#live.off`)),
		until(`document.querySelector("#inst-where").textContent === "(1–100 of 250)"`),
		chromedp.WaitVisible(css(`#instances tr[data-task="each[0]"]`)))
}

// TestBrowserFanOutPanelPointsToItsInstances: a fan-out picked in the
// graph has no attempt of its own (its instances have them); its task
// panel says so and points to the instances rather than "no attempt yet",
// which read as if nothing had run.
func TestBrowserFanOutPanelPointsToItsInstances(t *testing.T) {
	d := startDaemon(t)
	id, ctx := fanWideEnded(t, d)
	do(t, ctx, chromedp.Navigate(d.url("/ui/runs/"+id+"?task=each")),
		chromedp.WaitVisible(css(`#task-name`)))
	for _, sel := range []string{"#attempts", "#task-attempts"} {
		if text := value[string](t, ctx, `document.querySelector("`+sel+`").textContent`); !strings.Contains(text, "pick one of its 250 instances") {
			t.Errorf("%s of the fan-out's panel reads %q, want it to point to its instances", sel, text)
		}
	}
}
