package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

const (
	wfVersion1 = `name: versioned
tasks:
  fetch: {executor: noop}
# first version
`
	wfVersion2 = `name: versioned
tasks:
  fetch: {executor: noop}
  transform: {executor: noop, depends_on: [fetch]}
  load: {executor: noop, depends_on: [transform]}
# second version
`
)

// versionNodes is the task names of the graph the workflow page shows.
const versionNodes = `[...document.querySelectorAll("#version-graph g.node")].map((n) => n.dataset.task).join(",")`

// TestBrowserWorkflowVersions: a workflow applied twice lists both versions
// on its page, the current one shown by default; selecting version 1 shows
// its own source and graph under a URL of its own; a run of version 1
// links to it; once 20 more versions have pushed version 1 out of the
// history, its run and its URL say its source is no longer kept.
func TestBrowserWorkflowVersions(t *testing.T) {
	d := startDaemon(t)
	d.put(wfVersion1)
	run1 := d.trigger("versioned")
	d.put(wfVersion2)
	ctx := browse(t)
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/workflows/versioned")),
		chromedp.WaitVisible(css(`#versions tr[data-version="2"].sel`)),
		chromedp.WaitVisible(css(`#versions tr[data-version="1"]`)),
		chromedp.WaitVisible(css(`#source[data-version="2"]`)),
	)
	if got := value[string](t, ctx, versionNodes); got != "fetch,transform,load" {
		t.Fatalf("version 2's graph: %q, want fetch,transform,load", got)
	}
	if src := value[string](t, ctx, `document.querySelector("#source").textContent`); !strings.Contains(src, "# second version") {
		t.Fatalf("version 2's source: %q", src)
	}
	do(t, ctx,
		chromedp.Evaluate[chromedp.Void](`window.pageMarker = "same page"`),
		chromedp.Click(css(`#versions tr[data-version="1"] a`)),
		chromedp.WaitVisible(css(`#source[data-version="1"]`)),
		chromedp.WaitVisible(css(`#versions tr[data-version="1"].sel`)),
	)
	if got := value[string](t, ctx, versionNodes); got != "fetch" {
		t.Fatalf("version 1's graph: %q, want fetch", got)
	}
	src := value[string](t, ctx, `document.querySelector("#source").textContent`)
	if !strings.Contains(src, "# first version") || strings.Contains(src, "transform") {
		t.Fatalf("version 1's source: %q", src)
	}
	if url := value[string](t, ctx, `location.pathname + location.search + " " + window.pageMarker`); url != "/ui/workflows/versioned?version=1 same page" {
		t.Fatalf("after selecting version 1: %q, want its own URL without a reload", url)
	}
	// A run links to the version it ran.
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+run1)),
		chromedp.WaitVisible(css(`#run-version`)),
		press(`#run-version`),
		chromedp.WaitVisible(css(`#source[data-version="1"]`)),
	)
	for i := 3; i <= 22; i++ {
		d.put(fmt.Sprintf("name: versioned\ntasks:\n  fetch: {executor: noop}\n# version %d\n", i))
	}
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+run1)),
		chromedp.WaitVisible(css(`#version-gone`)),
		chromedp.Navigate(d.url("/ui/workflows/versioned?version=1")),
		chromedp.WaitVisible(css(`#version-missing`)),
		chromedp.WaitVisible(css(`#versions tr[data-version="22"]`)),
	)
	if msg := value[string](t, ctx, `document.querySelector("#version-missing").textContent`); !strings.Contains(msg, "version 1 source no longer kept") {
		t.Fatalf("version 1 after 22 versions: %q", msg)
	}
	if n := value[int](t, ctx, `document.querySelectorAll("#versions tbody tr").length`); n != 20 {
		t.Fatalf("%d versions listed, want the 20 kept", n)
	}
}
