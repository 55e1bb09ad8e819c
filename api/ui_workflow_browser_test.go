package api

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// workflowFetches is how many times the page fetched the workflow
// "versioned" (with its source) and its versions list.
const workflowFetches = `performance.getEntriesByType("resource").filter((e) =>
  /^\/workflows\/versioned(\/versions)?$/.test(new URL(e.name).pathname)).length`

// openWorkflowPage opens the page of the workflow yaml (named
// "versioned") once it shows the selector shown.
func openWorkflowPage(t *testing.T, yaml, shown string) (*daemon, context.Context) {
	d := startDaemon(t)
	d.put(yaml)
	ctx := browse(t)
	do(t, ctx, chromedp.Navigate(d.url("/ui/workflows/versioned")), chromedp.WaitVisible(css(shown)))
	return d, ctx
}

// TestBrowserWorkflowPageLive: a workflow's page shows its new runs live
// without fetching the workflow's source or its versions again; a new
// version is fetched, and shown, when it is applied.
func TestBrowserWorkflowPageLive(t *testing.T) {
	d, ctx := openWorkflowPage(t, wfVersion1, `#source[data-version="1"]`)
	do(t, ctx, until(`document.querySelector("#live").textContent === "live"`))
	before := value[float64](t, ctx, workflowFetches)
	if before != 2 {
		t.Fatalf("opening the page fetched the workflow and its versions %v times, want 2", before)
	}
	for range 3 {
		d.trigger("versioned")
	}
	// The recent runs: the page's last table.
	do(t, ctx, until(`[...document.querySelectorAll("#main table")].pop().querySelectorAll("[data-status=success]").length === 3`))
	if n := value[float64](t, ctx, workflowFetches); n != before {
		t.Fatalf("3 runs made the page fetch the workflow or its versions %v more times, want none", n-before)
	}
	d.put(wfVersion2)
	do(t, ctx,
		chromedp.WaitVisible(css(`#source[data-version="2"]`)),
		chromedp.WaitVisible(css(`#versions tr[data-version="2"].sel`)),
	)
	if got := value[string](t, ctx, versionNodes); got != "fetch,transform,load" {
		t.Fatalf("the new version's graph: %q", got)
	}
}

// TestBrowserStaticGraphHasNoRunStatus: a workflow's graph is drawn
// neutral: its nodes are "defined", and none shows or says a run's status
// (they were drawn pending).
func TestBrowserStaticGraphHasNoRunStatus(t *testing.T) {
	_, ctx := openWorkflowPage(t, wfVersion2, `#version-graph g.node[data-task="load"]`)
	nodes := value[string](t, ctx, `[...document.querySelectorAll("#version-graph g.node")].map((n) =>
	  [n.dataset.status, n.getAttribute("class"), n.getAttribute("aria-label"), n.textContent].join(" | ")).join("\n")`)
	lines := strings.Split(nodes, "\n")
	if len(lines) != 3 {
		t.Fatalf("nodes:\n%s", nodes)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "defined | node s-defined | ") {
			t.Errorf("a node not drawn as defined: %s", line)
		}
		for _, status := range []string{"pending", "dispatched", "running", "success", "failed", "skipped", "cancel", "interrupted", "paused"} {
			if strings.Contains(line, status) {
				t.Errorf("a node of the static graph says %q: %s", status, line)
			}
		}
	}
}
