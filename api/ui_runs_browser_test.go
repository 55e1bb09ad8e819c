package api

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserRunsTellApart: two runs triggered a few milliseconds apart
// show apart in the runs list and on their pages. A run id is a UUIDv7
// whose first 8 digits are its time to about a minute, so the page shows
// it through its 13th (its time to the millisecond), a prefix of the id
// that the CLI takes.
func TestBrowserRunsTellApart(t *testing.T) {
	d := startDaemon(t)
	d.put(wfFanWide)
	a := d.trigger("fanwide")
	ctx := browse(t)
	if err := d.eng.WaitRunEnd(ctx, a); err != nil { // 250 tasks: b is made milliseconds later
		t.Fatal(err)
	}
	b := d.trigger("fanwide")
	shown := func(id string) string {
		return `document.querySelector('tr[data-run="` + id + `"] a.mono').textContent`
	}
	do(t, ctx, chromedp.Navigate(d.url("/ui/runs")),
		chromedp.WaitVisible(css(`tr[data-run="`+a+`"]`)), chromedp.WaitVisible(css(`tr[data-run="`+b+`"]`)))
	for _, id := range []string{a, b} {
		if got, want := value[string](t, ctx, shown(id)), id[:13]; got != want {
			t.Errorf("runs list shows run %s as %q, want %q", id, got, want)
		}
	}
	do(t, ctx, chromedp.Navigate(d.url("/ui/runs/"+a)), chromedp.WaitVisible(css(`#run-workflow`)))
	if got, want := value[string](t, ctx, `document.querySelector("h1 .mono").textContent`), a[:13]; got != want {
		t.Errorf("run page's title shows run %s as %q, want %q", a, got, want)
	}
}
