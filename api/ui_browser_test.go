package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

// The page driven by headless Chromium (Debian's chromium package; .ci/run
// installs it). A missing browser fails these tests: in CI (CI=true)
// always, elsewhere unless ORKWAL_BROWSER_TESTS=skip says to skip them.

// chromium finds the browser.
func chromium(t testing.TB) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "" && os.Getenv("ORKWAL_BROWSER_TESTS") == "skip" {
		t.Skip("no Chromium, and ORKWAL_BROWSER_TESTS=skip")
	}
	t.Fatal("the page's tests need Chromium: apt-get install chromium (or set ORKWAL_BROWSER_TESTS=skip outside CI)")
	return ""
}

// browse starts a headless browser; every action of the test must be done
// within the returned context's minute.
func browse(t testing.TB) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.WindowSize(1400, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// daemon is an engine and its API on a real listener, which can be stopped
// and started again on the same address and data folder.
type daemon struct {
	t    testing.TB
	dir  string
	addr string
	opts []Option
	wrap func(http.Handler) http.Handler // when set, what the listener serves around the API
	eng  *engine.Engine
	api  *Server
	srv  *http.Server
}

func startDaemon(t testing.TB, opts ...Option) *daemon { return startDaemonWrapped(t, nil, opts...) }

// startDaemonWrapped is startDaemon serving wrap(the API): a test sees
// every request the page makes.
func startDaemonWrapped(t testing.TB, wrap func(http.Handler) http.Handler, opts ...Option) *daemon {
	d := &daemon{t: t, dir: t.TempDir(), addr: "127.0.0.1:0", opts: opts, wrap: wrap}
	d.start()
	t.Cleanup(d.stop)
	return d
}

func (d *daemon) start() {
	eng, err := engine.Open(engine.Config{DataDir: d.dir, Logger: quiet, KillGrace: time.Second,
		Executors: map[string]executors.Executor{"process": executors.NewProcess(executors.ProcessConfig{}), "noop": executors.Noop{}}})
	if err != nil {
		d.t.Fatal(err)
	}
	eng.Start()
	ln, err := net.Listen("tcp", d.addr)
	if err != nil {
		eng.Close()
		d.t.Fatal(err)
	}
	d.addr, d.eng, d.api = ln.Addr().String(), eng, New(eng, quiet, d.opts...)
	var h http.Handler = d.api
	if d.wrap != nil {
		h = d.wrap(h)
	}
	d.srv = &http.Server{Handler: h}
	go d.srv.Serve(ln)
}

func (d *daemon) stop() {
	if d.srv == nil {
		return
	}
	d.api.StopStreams()
	d.srv.Close()
	d.eng.Close()
	d.srv = nil
}

func (d *daemon) url(path string) string { return "http://" + d.addr + path }

// put stores a workflow (its text may name the data folder as DIR).
func (d *daemon) put(yaml string) {
	d.t.Helper()
	req, _ := http.NewRequest("POST", d.url("/workflows"), strings.NewReader(strings.ReplaceAll(yaml, "DIR", d.dir)))
	if d.api.hasToken {
		req.Header.Set("Authorization", "Bearer "+testToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		d.t.Fatalf("put workflow: %v %v", err, resp)
	}
	resp.Body.Close()
}

func (d *daemon) trigger(name string) string {
	d.t.Helper()
	id, err := d.eng.Trigger(name, nil, "api")
	if err != nil {
		d.t.Fatal(err)
	}
	return id
}

const testToken = "s3cret-token"

const (
	wfGreet = `name: greet
description: Greets whoever it is told to.
params: {who: world}
tasks:
  hello:
    command: echo "hello $WHO"
    env: {WHO: "{{params.who}}"}
  shout: {command: "echo DONE", depends_on: [hello]}
`
	wfFlaky = `name: flaky
tasks:
  prepare: {command: "echo preparing"}
  boom:
    depends_on: [prepare]
    command: 'if [ -e DIR/fixed ]; then echo fixed; else touch DIR/fixed; echo "boom: the first run fails" >&2; exit 3; fi'
`
	wfSlow = `name: slow
tasks:
  wait: {command: "sleep 60"}
`
	wfGated = `name: gated
tasks:
  first: {command: "echo first"}
  gate:
    depends_on: [first]
    command: 'while [ ! -e DIR/gate ]; do sleep 0.02; done; echo through'
`
)

// node is the selector of a task's node in the DAG with a status.
func node(task, status string) string {
	return fmt.Sprintf(`#dag g.node[data-task=%q][data-status=%q]`, task, status)
}

func runStatusIs(status string) string { return fmt.Sprintf(`#run-status [data-status=%q]`, status) }

// do runs steps in the page, failing the test on the first error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// value evaluates a JavaScript expression in the page.
func value[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// until waits for a JavaScript condition to hold in the page.
func until(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }

// press clicks what sel selects once it is there and shown, found and
// clicked in one turn of the page's script. The run page redraws its live
// parts (graph, facts, instances) whenever an event or a fetch comes, even
// after the run ended (the reload when its stream opens, a debounced
// fetch): chromedp.Click finds the element in one call and clicks it in
// others, and fails with "Could not find node with given id" when a
// redraw replaced it in between.
func press(sel string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`((e) => {
		if (!e || !e.getClientRects().length) return false;
		e.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, view: window}));
		return true;
	})(document.querySelector(%q))`, sel))
}

// logHas waits for the task panel's log to contain text.
func logHas(text string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`document.querySelector("#log") && document.querySelector("#log").textContent.includes(%q)`, text))
}

// TestBrowserTriggerAndWatch: a person triggers a workflow from its form
// with a param, sees its DAG nodes turn success without reloading, and the
// task's log shows the param.
func TestBrowserTriggerAndWatch(t *testing.T) {
	d := startDaemon(t)
	d.put(wfGreet)
	ctx := browse(t)
	row := `#workflows tr[data-workflow="greet"]`
	do(t, ctx,
		chromedp.Navigate(d.url("/")),
		chromedp.WaitVisible(css(row+` button.primary`)),
		chromedp.Click(css(row+` button.primary`)),
		chromedp.WaitVisible(css(`#param-who`)),
		chromedp.SetValue(css(`#param-who`), "chromedp"),
		chromedp.Click(css(`#trigger-submit`)),
		chromedp.WaitVisible(css(`#dag g.node[data-task="hello"]`)),
		chromedp.Evaluate[chromedp.Void](`window.pageMarker = "same page"`),
		chromedp.WaitVisible(css(node("hello", "success"))),
		chromedp.WaitVisible(css(node("shout", "success"))),
		chromedp.WaitVisible(css(runStatusIs("success"))),
	)
	if marker := value[string](t, ctx, `window.pageMarker`); marker != "same page" {
		t.Fatalf("the page reloaded (marker %q)", marker)
	}
	do(t, ctx, press(node("hello", "success")), logHas("hello chromedp"))
	if url := value[string](t, ctx, `location.href`); !strings.Contains(url, "/ui/runs/") || !strings.Contains(url, "task=hello") {
		t.Fatalf("url %s", url)
	}
}

// TestBrowserFailedLogRetryAndCancel: a failed task's log is opened, the
// failed run is retried (and succeeds), a running run is cancelled.
func TestBrowserFailedLogRetryAndCancel(t *testing.T) {
	d := startDaemon(t)
	d.put(wfFlaky)
	d.put(wfSlow)
	ctx := browse(t)
	flaky := d.trigger("flaky")
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+flaky)),
		chromedp.WaitVisible(css(node("boom", "failed"))),
		press(node("boom", "failed")),
		logHas("boom: the first run fails"),
		chromedp.WaitVisible(css(runStatusIs("failed"))),
		press(`#retry-run`),
		chromedp.WaitVisible(css(node("boom", "success"))),
		chromedp.WaitVisible(css(runStatusIs("success"))),
		// The retried task lists both attempts, each with how it ended,
		// and the timeline draws a bar per attempt.
		chromedp.WaitVisible(css(`#attempt-list tr[data-attempt="2"][data-status="success"]`)),
	)
	first := value[string](t, ctx, `document.querySelector('#attempt-list tr[data-attempt="1"]').textContent`)
	if !strings.Contains(first, "failed") || !strings.Contains(first, "exit 3") {
		t.Fatalf("attempt 1's row %q: want failed, exit 3", first)
	}
	if n := value[int](t, ctx, `document.querySelectorAll('#attempt-list tbody tr').length`); n != 2 {
		t.Fatalf("%d attempts listed, want 2", n)
	}
	bars := value[string](t, ctx, `[...document.querySelectorAll('#gantt .row[data-task="boom"] .bar')].map((b) => b.dataset.status).join(",")`)
	if bars != "failed,success" {
		t.Fatalf("boom's timeline bars %q, want failed,success", bars)
	}
	slow := d.trigger("slow")
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+slow)),
		chromedp.WaitVisible(css(node("wait", "running"))),
		press(`#cancel-run`),
		chromedp.WaitVisible(css(runStatusIs("cancelled"))),
		chromedp.WaitVisible(css(node("wait", "cancelled"))),
	)
}

// TestBrowserEventsSurviveRestart: a page following a run keeps every
// event across a daemon restart: its stream reconnects with its last id
// and gets what happened while it was away (the interrupted attempt, its
// rerun) from the log, then the rest live.
func TestBrowserEventsSurviveRestart(t *testing.T) {
	d := startDaemon(t)
	d.put(wfGated)
	ctx := browse(t)
	id := d.trigger("gated")
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id)),
		chromedp.WaitVisible(css(node("gate", "running"))),
		chromedp.WaitVisible(css(`#live.on`)),
	)
	d.stop() // the gate's attempt is interrupted
	do(t, ctx, chromedp.WaitVisible(css(`#live.off`)))
	d.start() // same address, same data folder
	if err := os.WriteFile(filepath.Join(d.dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	do(t, ctx,
		chromedp.WaitVisible(css(runStatusIs("success"))),
		chromedp.WaitVisible(css(node("gate", "success"))),
		until(`window.orkwalEvents.length > 0 && window.orkwalEvents[window.orkwalEvents.length-1].endsWith(".1")`),
	)
	got := value[[]string](t, ctx, `window.orkwalEvents`)
	var want []string         // from the page's first event on
	var wantTasks [][2]string // their task events: id, task
	err := d.eng.EventsAfter(engine.EventPos{}, d.eng.EventsEnd(), func(b *engine.EventBatch) error {
		for _, ev := range b.Events {
			if ev.Run == id && (len(want) > 0 || ev.ID == got[0]) {
				want = append(want, ev.ID+" "+ev.Type)
				if ev.Task != "" {
					wantTasks = append(wantTasks, [2]string{ev.ID, ev.Task})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The run page asks for each task's latest event per write
	// (?latest=1): what it received is the log's events in order, less
	// some of a task's that a later one of the same write replaced, and
	// every task's last event is among them.
	i := 0
	for _, g := range got {
		for i < len(want) && !strings.HasPrefix(want[i], g+" ") {
			i++
		}
		if i == len(want) {
			t.Fatalf("the page received %s out of the log's order, or not in it\n%v\n%v", g, got, want)
		}
	}
	lastOf := map[string]string{}
	for _, w := range wantTasks {
		lastOf[w[1]] = w[0]
	}
	for task, last := range lastOf {
		if !slices.Contains(got, last) {
			t.Fatalf("the page missed %s's last event %s\n%v\n%v", task, last, got, want)
		}
	}
	if !strings.Contains(strings.Join(want, ","), "task_interrupted") {
		t.Fatalf("no interruption among %v", want)
	}
}

const wfShowcase = `name: nightly-etl
description: Extract, transform in parallel, load, report.
params: {day: "2026-03-01"}
tasks:
  extract:
    command: 'echo "extracting {{params.day}}"; echo "{\"parts\": [\"eu\", \"us\", \"apac\", \"latam\", \"mena\", \"oc\"]}" > "$ORKWAL_OUTPUT"'
  transform:
    depends_on: [extract]
    foreach: extract.parts
    command: 'echo "transforming part $ORKWAL_PARALLEL_INDEX"'
  validate:
    depends_on: [extract]
    retries: 1
    retry_backoff: {initial: 10ms}
    command: '[ "$ORKWAL_ATTEMPT" -ge 2 ] || { echo "schema drift: retrying" >&2; exit 1; }; echo "schema ok"'
  load:
    depends_on: [transform, validate]
    command: 'for i in 1 2 3; do echo "loaded batch $i of 3"; done'
  report: {command: "echo report sent", depends_on: [load]}
  notify: {command: "echo notified", depends_on: [load]}
`

// TestBrowserRunPageScreenshot: the run page of a finished run shows every
// task's name and status as text (the graph's nodes), the fan-out as one
// node counting its instances, the timeline and the selected task's log.
// ORKWAL_UPDATE_SCREENSHOT=1 writes it to docs/ui-run.png (the README's).
func TestBrowserRunPageScreenshot(t *testing.T) {
	d := startDaemon(t)
	d.put(wfShowcase)
	id := d.trigger("nightly-etl")
	ctx := browse(t)
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id+"?task=load")),
		chromedp.WaitVisible(css(runStatusIs("success"))),
		logHas("loaded batch 3 of 3"),
	)
	for _, task := range []string{"extract", "transform", "validate", "load", "report", "notify"} {
		text := value[string](t, ctx, fmt.Sprintf(`document.querySelector('#dag g.node[data-task=%q]').textContent`, task))
		if !strings.Contains(text, task) || !strings.Contains(text, "success") {
			t.Errorf("node %s reads %q: want its name and its status as text", task, text)
		}
	}
	if text := value[string](t, ctx, `document.querySelector('#dag g.node[data-task="transform"]').textContent`); !strings.Contains(text, "6 instances") {
		t.Errorf("the fan-out node reads %q", text)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil || len(png) < 1000 {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
	if os.Getenv("ORKWAL_UPDATE_SCREENSHOT") != "" {
		if err := os.WriteFile("../docs/ui-run.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserLogin: with a token the page asks for it once: a wrong one is
// a clear message, the right one opens the page, whose session cookie the
// page's scripts cannot read and whose URL never holds the token.
func TestBrowserLogin(t *testing.T) {
	d := startDaemon(t, WithToken(testToken))
	d.put(wfGreet)
	ctx := browse(t)
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/")),
		chromedp.WaitVisible(css(`#login #token`)),
		chromedp.SendKeys(css(`#token`), "not-the-token"),
		chromedp.Click(css(`#login button[type=submit]`)),
		until(`document.querySelector("#login-msg").textContent.includes("wrong token")`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#token").value = ""`),
		chromedp.SendKeys(css(`#token`), testToken),
		chromedp.Click(css(`#login button[type=submit]`)),
		chromedp.WaitVisible(css(`#workflows tr[data-workflow="greet"]`)),
		chromedp.WaitVisible(css(`#live.on`)),
	)
	if c := value[string](t, ctx, `document.cookie`); strings.Contains(c, SessionCookie) {
		t.Fatalf("the page's script reads the session cookie: %q", c)
	}
	if u := value[string](t, ctx, `location.href`); strings.Contains(u, testToken) {
		t.Fatalf("the token is in the URL %s", u)
	}
}

// TestBrowserPagesCloseTheirStreams: going from page to page does not
// leave event streams open (a browser has six connections per host: the
// seventh page would wait for ever), nor does a followed log.
func TestBrowserPagesCloseTheirStreams(t *testing.T) {
	d := startDaemon(t)
	d.put(wfGated)
	id := d.trigger("gated")
	ctx := browse(t)
	for i := 0; i < 4; i++ {
		do(t, ctx,
			chromedp.Navigate(d.url("/ui/runs/"+id+"?task=gate")),
			chromedp.WaitVisible(css(node("gate", "running"))),
			chromedp.WaitVisible(css(`#live.on`)),
			until(`document.querySelector("#log-state").textContent.includes("following")`),
			chromedp.Navigate(d.url("/ui/")),
			chromedp.WaitVisible(css(`#workflows tr[data-workflow="gated"]`)),
			chromedp.WaitVisible(css(`#live.on`)),
		)
	}
}

// TestBrowserShowsTheFolderProblems: a --workflows folder with a bad file
// is kept out whole while the daemon serves; the page says so, with every
// problem, and marks the workflows a file manages.
func TestBrowserShowsTheFolderProblems(t *testing.T) {
	d := startDaemon(t)
	folder := t.TempDir()
	os.WriteFile(filepath.Join(folder, "good.yaml"), []byte("name: good\ntasks:\n  t: {executor: noop}\n"), 0o600)
	if _, err := d.eng.LoadFolder(folder); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(folder, "bad.yaml"), []byte("name: bad\ntasks: [oops]\n"), 0o600)
	if _, err := d.eng.LoadFolder(folder); err == nil {
		t.Fatal("the bad folder loaded")
	}
	ctx := browse(t)
	do(t, ctx, chromedp.Navigate(d.url("/ui/")), chromedp.WaitVisible(css(`#folder-problems li`)))
	problems := value[string](t, ctx, `document.querySelector("#folder-problems").textContent`)
	managed := value[string](t, ctx, `document.querySelector('tr[data-workflow="good"] .managed').textContent`)
	if !strings.Contains(problems, "bad.yaml") || !strings.Contains(problems, "was not loaded") {
		t.Errorf("the page's folder problems: %q", problems)
	}
	if !strings.Contains(managed, filepath.Join(folder, "good.yaml")) {
		t.Errorf("the good workflow's row: %q, want it managed by its file", managed)
	}
}

const wfFanLive = `name: fanlive
tasks:
  each:
    parallel: 4
    command: 'while [ ! -e DIR/go-$ORKWAL_PARALLEL_INDEX ]; do sleep 0.02; done'
  after: {command: "echo after", depends_on: [each]}
`

// TestBrowserFanOutCountsLive: a run page's fan-out node counts its
// instances live from the stream's instance_counts events: as instances
// end, its counts change without the page fetching the run again (nor
// reloading); once all have ended it is drawn success.
func TestBrowserFanOutCountsLive(t *testing.T) {
	d := startDaemon(t)
	d.put(wfFanLive)
	id := d.trigger("fanlive")
	ctx := browse(t)
	each := `document.querySelector('#dag g.node[data-task="each"]').textContent`
	fetches := `performance.getEntriesByType("resource").filter((e) => new URL(e.name).pathname === "/runs/` + id + `").length`
	do(t, ctx,
		chromedp.Navigate(d.url("/ui/runs/"+id)),
		chromedp.WaitVisible(css(`#live.on`)),
		until(each+`.includes("▶ 4")`),
		chromedp.Evaluate[chromedp.Void](`window.pageMarker = "same page"`),
	)
	before := value[float64](t, ctx, fetches)
	d.release("0", "1")
	do(t, ctx, until(each+`.includes("✓ 2") && `+each+`.includes("▶ 2")`))
	if n := value[float64](t, ctx, fetches); n != before {
		t.Errorf("two instances ending made the page fetch the run %v times, want none: the counts come from the stream", n-before)
	}
	d.release("2", "3")
	do(t, ctx, chromedp.WaitVisible(css(node("each", "success"))), chromedp.WaitVisible(css(runStatusIs("success"))),
		until(each+`.includes("✓ 4")`))
	if marker := value[string](t, ctx, `window.pageMarker`); marker != "same page" {
		t.Fatalf("the page reloaded (marker %q)", marker)
	}
}
