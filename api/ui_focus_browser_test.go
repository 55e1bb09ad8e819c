package api

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// focusOn focuses what sel selects once it is there, in one turn of the
// page's script (a redraw may replace it at any time), and keeps it as
// window.was: a redraw is seen when sel selects another element.
func focusOn(sel string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`((e) => {
		if (!e) return false;
		e.focus();
		window.was = e;
		return document.activeElement === e;
	})(document.querySelector(%q))`, sel))
}

// redrawn waits until sel selects an element other than the one focused
// by focusOn, and cond holds: the page has redrawn it since.
func redrawn(sel, cond string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`((e) => e && e !== window.was && (%s))(document.querySelector(%q))`, cond, sel))
}

// focused is whether the focused element is the one sel selects.
func focused(sel string) string {
	return fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, sel)
}

// TestBrowserRedrawsKeepTheFocus: on a live run page, each event redraws
// the graph and the open fan-out's instances; the keyboard keeps its
// place: the node of the same task, then the link of the same instance,
// is focused after the redraws (Enter on the kept node still picks it),
// and a page where nothing was focused gets no focus from a redraw.
func TestBrowserRedrawsKeepTheFocus(t *testing.T) {
	d := startDaemon(t)
	d.put(wfFanLive)
	id := d.trigger("fanlive")
	ctx := browse(t)
	each := `#dag g.node[data-task="each"]`
	link := `#instances tr[data-task="each[3]"] a`
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id)),
		chromedp.WaitVisible(css(`#live.on`)),
		until(`document.querySelector('`+each+`').textContent.includes("▶ 4")`),
		focusOn(each),
	)
	d.release("0")
	do(t, ctx, redrawn(each, `e.textContent.includes("✓ 1")`))
	if !value[bool](t, ctx, focused(each)) {
		t.Fatalf("the graph was redrawn and the focus left the node of task each for %s",
			value[string](t, ctx, `document.activeElement.outerHTML.slice(0, 80)`))
	}
	do(t, ctx, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(link)), focusOn(link))
	d.release("1")
	do(t, ctx, redrawn(link, `document.querySelector('#instances tr[data-task="each[1]"] [data-status="success"]')`))
	if !value[bool](t, ctx, focused(link)) {
		t.Fatalf("the instances were redrawn and the focus left the link of each[3] for %s",
			value[string](t, ctx, `document.activeElement.outerHTML.slice(0, 80)`))
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.was = document.querySelector('`+each+`')`))
	d.release("2", "3")
	do(t, ctx, redrawn(each, `e.dataset.status === "success"`), chromedp.WaitVisible(css(runStatusIs("success"))))
	if !value[bool](t, ctx, `document.activeElement === document.body`) {
		t.Fatalf("nothing was focused, and a redraw focused %s", value[string](t, ctx, `document.activeElement.outerHTML.slice(0, 80)`))
	}
}

// TestBrowserPagerKeepsTheFocus: turning a fan-out's page of instances
// from the keyboard (Enter on "next »") keeps the focus on the pager's
// "next »" of the new page, which the turn redrew.
func TestBrowserPagerKeepsTheFocus(t *testing.T) {
	d := startDaemon(t)
	d.put(wfFanWide)
	id := d.trigger("fanwide")
	ctx := browse(t)
	where := `document.querySelector("#inst-where").textContent`
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id+"?task=each")),
		chromedp.WaitVisible(css(runStatusIs("success"))),
		until(where+` === "(1–100 of 250)"`),
		focusOn(`#inst-next`),
		chromedp.KeyEvent(kb.Enter),
		redrawn(`#inst-next`, where+` === "(101–200 of 250)"`),
	)
	if !value[bool](t, ctx, focused(`#inst-next`)) {
		t.Fatalf("the page turned and the focus left next » for %s", value[string](t, ctx, `document.activeElement.outerHTML.slice(0, 80)`))
	}
}
