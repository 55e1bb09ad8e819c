package fuzz

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

// TestKill9 is harness 1 of docs/reliability.md: the real binary, kill -9.
// A daemon runs a mixed workload (a DAG, retries, a foreach fan-out,
// sleeping tasks, a workflow that must fail, tasks with large outputs, and a
// cron schedule firing every second) on a data folder while a goroutine
// triggers runs over HTTP. It compacts often (--compact-bytes 1 MiB, the
// least it accepts; --keep-runs 3; --retention 1m), so snapshots, log
// truncation and retention happen every few seconds. The test kill -9s it
// at seeded moments (some during the boot itself, some right after a
// snapshot's .tmp file or a new snapshot appears in the data folder: during
// compaction) and restarts it on the same folder, K times. A tail
// (walTail) reads every WAL frame as it is written, from outside. Then it
// stops triggering, waits for every run to end and checks:
//
//   - every acknowledged trigger (a 201) exists as a run, or was pruned by
//     retention (a runs_pruned record the tail read);
//   - every run, retained or pruned, ended as its workflow implies (k-fail:
//     failed; every other workflow: success, unless a task hit the
//     crash-loop rule, which is counted and must show 3 interruptions);
//   - every task recorded as succeeded left a ledger line (its effect
//     happened), so every task of a successful run ran at least once; and
//     every ledger line belongs to a run the log holds (no effect of a run
//     that was never recorded);
//   - cron: the schedule's fire times, across every kill, are distinct and
//     one second apart (none ran twice, none was lost: catchup all), each
//     made exactly one run, whose fire time is its own;
//   - after SIGTERM the daemon exits 0, `orkwal wal verify` exits 0, two
//     fresh replays of the log (the newest snapshot plus the frames after
//     it) give the same state hash, which is also the hash of the tail's
//     fold of every frame ever written;
//   - after every kill and after the clean stop, a copy of the data folder,
//     booted as the daemon boots it, holds exactly the tail's fold of every
//     frame written so far (checkFolderMatchesTail): a snapshot or a
//     truncation that lost anything is caught at the kill after it;
//   - the data folder is within the bound its settings imply (see
//     checkDisk), after every kill and at the end.
//
// On a failure the data folder, the folder as the last kill left it, and
// every frame ever written (as one log: `orkwal wal inspect --data`) are
// kept under $TMPDIR/orkwal-kill9-*-<seed>.
//
// It reports re-executions (ledger lines beyond one per task: the price of
// at-least-once) and the longest recovery (restart to a healthy /healthz).
//
// The seed fixes the workload and the kill schedule; the interleaving with
// the OS scheduler is not reproducible, so a seed replays the same kind of
// run rather than the same run.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kill -9s it")
	}
	k := newKill9(t, harnessSeed(), budget(*tortureKills, 8, 1000))
	k.run()
}

type kill9 struct {
	t      *testing.T
	seed   int64
	kills  int
	bin    string
	work   string
	data   string
	ledger string
	wfDir  string
	logf   *os.File
	client *http.Client
	// keepRuns, retention: the daemon's --keep-runs and --retention
	// (k9KeepRuns and 1m; TestCrashLoop keeps more, for big snapshots).
	keepRuns  int
	retention string

	addr   atomic.Value // string: the current daemon's address
	cur    *daemonProc
	acked  []string // run ids answered 201
	ackMu  sync.Mutex
	trigs  atomic.Int64 // triggers sent
	stopTr atomic.Bool

	tail *walTail

	killed      int // kills so far
	bootKills   int
	lockWaits   int // kills after which a fork child still held LOCK for a moment
	compactKill int // kills timed on a compaction (a .tmp or a new snapshot seen)
	tmpKills    int // kills that left a snapshot .tmp behind: mid-write
	snapKills   int // kills within 20 ms after a new snapshot appeared
	disk        diskStats
	stoppedAt   time.Time // SIGTERM sent
	maxRecovery time.Duration
	recoveries  []time.Duration
}

type daemonProc struct {
	cmd     *exec.Cmd
	addr    string
	started time.Time
	exited  chan struct{}
	err     error // set before exited is closed
}

// The kill -9 workload. Every task that succeeds appends
// "<run> <task id> <attempt>" to $LEDGER just before it exits 0.
var k9Workflows = map[string]string{
	"k-dag.yaml": `name: k-dag
tasks:
  extract: {command: 'echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"'}
  left: {command: 'echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"', depends_on: [extract]}
  right: {command: 'sleep 0.1; echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"', depends_on: [extract]}
  load: {command: 'echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"', depends_on: [left, right]}
`,
	"k-retry.yaml": `name: k-retry
tasks:
  flaky:
    command: 'if [ "$ORKWAL_ATTEMPT" = 1 ]; then exit 1; fi; echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"'
    retries: 3
    retry_backoff: {initial: 100ms, max: 1s, factor: 2}
  after: {command: 'echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"', depends_on: [flaky]}
`,
	"k-fan.yaml": `name: k-fan
tasks:
  gen: {command: 'echo "{\"items\": [1, 2, 3]}" > "$ORKWAL_OUTPUT"; echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"'}
  each:
    command: 'sleep 0.05; echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"'
    depends_on: [gen]
    foreach: gen.items
    concurrency: 2
  join: {command: 'echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"', depends_on: [each]}
`,
	"k-sleep.yaml": `name: k-sleep
tasks:
  nap: {command: 'sleep 0.2; echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"'}
`,
	"k-fail.yaml": `name: k-fail
tasks:
  bad: {command: 'exit 3', retries: 1, retry_backoff: {initial: 100ms, max: 1s, factor: 2}}
  never: {command: 'echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"', depends_on: [bad]}
  cleanup: {command: 'echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"', depends_on: [bad], on_failure: run}
`,
}

// bigOutput writes a 120 KB JSON output: the task_finished records that
// carry it make the log grow fast enough for a compaction every few seconds
// at the least --compact-bytes the daemon accepts (1 MiB).
const bigOutput = `{ printf "{\"pad\": \""; head -c 120000 /dev/zero | tr "\0" x; printf "\"}"; } > "$ORKWAL_OUTPUT"; `

func init() {
	k9Workflows["k-big.yaml"] = `name: k-big
tasks:
  blob: {command: '` + bigOutput + `echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"'}
`
	// Every second, every missed fire run after a restart (catchup: all),
	// fires never skipped for an active run (overlap: allow): the fire times
	// must be exactly one second apart across every kill.
	k9Workflows["k-cron.yaml"] = `name: k-cron
schedule: "@every 1s"
catchup: all
overlap: allow
tasks:
  tick: {command: '` + bigOutput + `echo "$ORKWAL_RUN_ID $ORKWAL_TASK_ID $ORKWAL_ATTEMPT" >> "$LEDGER"'}
`
}

var k9Expected = map[string]string{"k-dag": "success", "k-retry": "success", "k-fan": "success",
	"k-sleep": "success", "k-fail": "failed", "k-big": "success", "k-cron": "success"}

// k9Names are the workflows triggered over HTTP (k-cron runs by its schedule).
var k9Names = []string{"k-dag", "k-retry", "k-fan", "k-sleep", "k-fail", "k-big"}

// The daemon's compaction settings (see checkDisk for the bound they imply).
const (
	k9CompactBytes = 1 << 20 // --compact-bytes: the least the daemon accepts
	k9KeepRuns     = 3       // --keep-runs
	k9Segment      = 4 << 20 // slack for segments in the bound: wal.DefaultSegmentSize (1 MiB) is what the daemon uses, the tail's padding included
)

func newKill9(t *testing.T, sd int64, kills int) *kill9 {
	work := t.TempDir()
	k := &kill9{t: t, seed: sd, kills: kills, work: work, data: filepath.Join(work, "data"),
		ledger: filepath.Join(work, "ledger"), wfDir: filepath.Join(work, "workflows"),
		client:   &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		keepRuns: k9KeepRuns, retention: "1m"}
	if err := os.MkdirAll(k.wfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range k9Workflows {
		if err := os.WriteFile(filepath.Join(k.wfDir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(work, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	k.logf = f
	t.Cleanup(func() { f.Close() })
	k.bin = buildOrkwal(t)
	t.Cleanup(func() {
		if k.cur != nil {
			k.cur.cmd.Process.Kill()
			<-k.cur.exited
		}
	})
	return k
}

// buildOrkwal builds the daemon from the module root (go env GOMOD).
func buildOrkwal(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		t.Fatalf("go env GOMOD: %q %v", gomod, err)
	}
	bin := filepath.Join(t.TempDir(), "orkwal")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/orkwal")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/orkwal: %v\n%s", err, out)
	}
	return bin
}

// fatalf fails with the seed and the command that replays it.
func (k *kill9) fatalf(format string, args ...any) {
	k.t.Helper()
	k.t.Fatalf("%s\n%s\nreproduce: go test ./fuzz -run '^TestKill9$' -seed %d -torture.kills %d -v",
		fmt.Sprintf(format, args...), k.logTail(), k.seed, k.kills)
}

func (k *kill9) logTail() string {
	b, _ := os.ReadFile(k.logf.Name())
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return "daemon log (last lines):\n  " + strings.Join(lines, "\n  ")
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start launches the daemon on a fresh free port.
func (k *kill9) start() *daemonProc {
	addr := freePort(k.t)
	fmt.Fprintf(k.logf, "=== start on %s\n", addr)
	cmd := exec.Command(k.bin, "run", "--data", k.data, "--addr", addr, "--workflows", k.wfDir,
		"--max-concurrent", "8", "--kill-grace", "2s", "--compact-bytes", fmt.Sprint(k9CompactBytes),
		"--keep-runs", fmt.Sprint(k.keepRuns), "--retention", k.retention)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORKWAL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LEDGER="+k.ledger)
	cmd.Stdout, cmd.Stderr = k.logf, k.logf
	d := &daemonProc{cmd: cmd, addr: addr, started: time.Now(), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		k.fatalf("start daemon: %v", err)
	}
	go func() { d.err = cmd.Wait(); close(d.exited) }()
	k.cur = d
	k.addr.Store(addr)
	return d
}

// healthy polls /healthz (an external process: short sleeps, a deadline)
// and returns how long the daemon took from its start.
func (k *kill9) healthy(d *daemonProc) time.Duration {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-d.exited:
			k.fatalf("the daemon exited during boot: %v\nprocesses holding %s:\n%s",
				d.err, filepath.Join(k.data, "LOCK"), describeHolders(lockHolders(filepath.Join(k.data, "LOCK"))))
		default:
		}
		if code, _, _ := k.call(d.addr, "GET", "/healthz"); code == 200 {
			return time.Since(d.started)
		}
		if time.Now().After(deadline) {
			k.fatalf("the daemon is not healthy 60s after its start")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive fails if the daemon exited by itself.
func (k *kill9) alive(d *daemonProc, what string) {
	select {
	case <-d.exited:
		k.fatalf("%s: %v", what, d.err)
	default:
	}
}

func (k *kill9) kill(d *daemonProc) {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
	fmt.Fprintf(k.logf, "=== kill -9 (pid %d)\n", d.cmd.Process.Pid)
	k.waitLockFree(d.cmd.Process.Pid)
	for _, n := range listNames(filepath.Join(k.data, "snapshots")) {
		if strings.HasSuffix(n, ".tmp") {
			k.tmpKills++
			break
		}
	}
	// The folder is quiet: read what the tail has not, and measure it.
	if err := k.tail.poll(); err != nil {
		k.fatalf("WAL tail: %v", err)
	}
	k.killed++
	k.checkFolderMatchesTail(fmt.Sprintf("kill %d", k.killed))
	k.checkDisk(false)
}

func (k *kill9) call(addr, method, path string) (int, []byte, http.Header) {
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		return 0, nil, nil
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil
	}
	return resp.StatusCode, b, resp.Header
}

// triggers posts runs until stopTr, recording every 201 as acknowledged.
func (k *kill9) triggers(rng *rand.Rand, done chan<- struct{}) {
	defer close(done)
	for !k.stopTr.Load() {
		name := k9Names[rng.IntN(len(k9Names))]
		addr := k.addr.Load().(string)
		k.trigs.Add(1)
		code, body, _ := k.call(addr, "POST", "/workflows/"+name+"/runs")
		if code == http.StatusCreated {
			var r struct{ ID string }
			if err := json.Unmarshal(body, &r); err != nil || r.ID == "" {
				k.t.Errorf("trigger %s: 201 with body %q", name, body)
			} else {
				k.ackMu.Lock()
				k.acked = append(k.acked, r.ID)
				k.ackMu.Unlock()
			}
		}
		time.Sleep(time.Duration(20+rng.IntN(130)) * time.Millisecond) // pacing, not synchronisation
	}
}

func (k *kill9) run() {
	start := time.Now()
	rng := rand.New(rand.NewPCG(uint64(k.seed), 1))
	var err error
	if k.tail, err = newWALTail(k.data, filepath.Join(k.work, "history")); err != nil {
		k.t.Fatalf("WAL tail: %v", err)
	}
	d := k.start()
	k.healthy(d)
	tailStop, tailDone := make(chan struct{}), make(chan error, 1)
	go func() { tailDone <- k.tail.follow(tailStop) }()
	done := make(chan struct{})
	go k.triggers(rand.New(rand.NewPCG(uint64(k.seed), 2)), done)
	for i := 0; i < k.kills; {
		switch r := rng.IntN(10); {
		case r < 2: // as soon as a snapshot is being written
			k.killOnCompaction(d, "tmp", time.Duration(rng.IntN(3))*time.Millisecond)
		case r < 3: // as soon as a new snapshot is in place: truncation, removals
			k.killOnCompaction(d, "snap", time.Duration(rng.IntN(5))*time.Millisecond)
		default:
			time.Sleep(time.Duration(100+rng.IntN(900)) * time.Millisecond)
		}
		k.alive(d, "the daemon died on its own")
		k.kill(d)
		i++
		d = k.start()
		for i < k.kills && rng.IntN(10) == 0 {
			// kill it again during its boot: recovery itself must survive a kill -9
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			k.alive(d, "the daemon exited during boot")
			k.kill(d)
			i++
			k.bootKills++
			d = k.start()
		}
		took := k.healthy(d)
		k.recoveries = append(k.recoveries, took)
		k.maxRecovery = max(k.maxRecovery, took)
	}
	k.healthy(d)
	k.stopTr.Store(true)
	<-done
	if k.t.Failed() {
		k.fatalf("trigger goroutine failed")
	}
	// The tail keeps following through the checks: the daemon goes on
	// writing (cron fires, retention, compaction, whose truncation removes
	// frames) until it is stopped, and a frame the tail never read is a
	// runs_pruned it never saw.
	k.check(d, start, func() {
		close(tailStop)
		if err := <-tailDone; err != nil {
			k.fatalf("WAL tail: %v", err)
		}
	})
}

// killOnCompaction waits (polling the data folder: an external process) for
// the daemon's next compaction to show: what "tmp", a snapshot .tmp file
// being written; "snap", a snapshot file that was not there before (renamed
// in place; the truncation and removals follow). Then it waits delay and
// returns, for the caller to kill. A compaction that does not show within
// 10 s is no failure (the kill then lands at a random moment).
func (k *kill9) killOnCompaction(d *daemonProc, what string, delay time.Duration) {
	dir := filepath.Join(k.data, "snapshots")
	before := map[string]bool{}
	if what == "snap" {
		for _, n := range listNames(dir) {
			before[n] = true
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			return // alive() reports it
		default:
		}
		for _, n := range listNames(dir) {
			if what == "tmp" && strings.HasSuffix(n, ".snap.tmp") || what == "snap" && strings.HasSuffix(n, ".snap") && !before[n] {
				time.Sleep(delay)
				k.compactKill++
				if what == "snap" {
					k.snapKills++
				}
				return
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// listNames lists a folder's file names (none if it does not exist).
func listNames(dir string) []string {
	des, _ := os.ReadDir(dir)
	out := make([]string, 0, len(des))
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// runView is what the checks read of GET /runs/{id}.
type runView struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Status   string `json:"status"`
	Tasks    []struct {
		ID            string `json:"id"`
		Name          string `json:"name"`
		Status        string `json:"status"`
		Attempt       int    `json:"attempt"`
		Instances     int    `json:"instances"`
		Interruptions int    `json:"interruptions"`
		Error         string `json:"error"`
	} `json:"tasks"`
}

// listRuns pages through GET /runs (following X-Next-Cursor).
func (k *kill9) listRuns(addr string) ([]runView, error) {
	var out []runView
	q := url.Values{"limit": {"1000"}}
	for {
		code, body, hdr := k.call(addr, "GET", "/runs?"+q.Encode())
		if code != 200 {
			return nil, fmt.Errorf("GET /runs: %d %s", code, body)
		}
		var page []runView
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("GET /runs: %v", err)
		}
		out = append(out, page...)
		c := hdr.Get("X-Next-Cursor")
		if c == "" || len(page) == 0 {
			return out, nil
		}
		q.Set("cursor", c)
	}
}

// check runs the final checks; stopTail stops the tail's following once
// the daemon has stopped.
func (k *kill9) check(d *daemonProc, start time.Time, stopTail func()) {
	// Every run ends (an external process: poll with a deadline).
	deadline := time.Now().Add(120 * time.Second)
	var runs []runView
	for {
		var err error
		runs, err = k.listRuns(d.addr)
		if err != nil {
			k.fatalf("%v", err)
		}
		open := 0
		for _, r := range runs {
			if r.Status != "success" && r.Status != "failed" && r.Status != "cancelled" {
				open++
			}
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			k.fatalf("%d of %d runs still not finished 120s after the last kill", open, len(runs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	byID := map[string]bool{}
	for _, r := range runs {
		byID[r.ID] = true
	}
	ledger := readLedger(k.t, k.ledger)
	tasks, crashLoops := 0, 0
	for _, sum := range runs {
		code, body, _ := k.call(d.addr, "GET", "/runs/"+sum.ID)
		if code == http.StatusNotFound {
			// Pruned by a compaction since the listing (cron keeps adding
			// runs): the tail has it, and checkPruned checks it.
			if err := k.tail.poll(); err != nil {
				k.fatalf("WAL tail: %v", err)
			}
			k.tail.mu.Lock()
			gone := k.tail.pruned[sum.ID]
			k.tail.mu.Unlock()
			if gone != nil {
				n, loop := k.checkRun(viewOf(gone), ledger, "(pruned by retention since the listing; as it was then)")
				tasks += n
				if loop {
					crashLoops++
				}
				continue
			}
		}
		var r runView
		if code != 200 || json.Unmarshal(body, &r) != nil {
			k.fatalf("GET /runs/%s: %d %s", sum.ID, code, body)
		}
		n, loop := k.checkRun(r, ledger, string(body))
		tasks += n
		if loop {
			crashLoops++
		}
	}
	lines, reexec := 0, 0
	for _, n := range ledger {
		lines += n
		reexec += n - 1
	}

	// Clean stop, then the log must verify and replay to the same state twice.
	k.stoppedAt = time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(60 * time.Second):
		k.fatalf("the daemon did not stop within 60s of SIGTERM")
	}
	if d.err != nil {
		k.fatalf("exit after SIGTERM: %v", d.err)
	}
	k.cur = nil
	// Everything the daemon wrote, up to its clean stop, must be in the tail
	// now, and the folder must boot to the tail's fold. (This was once a
	// plain poll, which returned quietly when the stop's compaction had
	// truncated frames the tail had not read: a run pruned by them then
	// looked lost.)
	stopTail()
	k.checkFolderMatchesTail("the clean stop")
	pruned, prunedTasks, prunedLoops := k.checkPruned(byID, ledger)
	tasks += prunedTasks
	crashLoops += prunedLoops
	for _, id := range k.acked {
		if !byID[id] && k.tail.pruned[id] == nil {
			where := "the WAL never recorded its creation"
			if at, ok := k.tail.born[id]; ok {
				where = fmt.Sprintf("the WAL recorded its creation at index %d", at)
				if run := k.tail.st.Runs[id]; run != nil {
					where += fmt.Sprintf(", and the fold of every frame has it %s (workflow %s); its records: %v", run.Status, run.Workflow, k.tail.trail[id])
				}
			}
			where += k.keepEvidence("lost")
			k.fatalf("LOST: acknowledged run %s is neither in GET /runs nor pruned by retention (no runs_pruned record names it): %s", id, where)
		}
	}
	fires := k.checkCron(byID)
	k.checkLedgerRuns(ledger)
	if out, err := exec.Command(k.bin, "wal", "verify", "--data", k.data).CombinedOutput(); err != nil {
		k.fatalf("orkwal wal verify: %v\n%s", err, out)
	}
	h1, n1 := k.replayHash(false)
	h2, n2 := k.replayHash(false)
	if h1 != h2 || n1 != n2 {
		k.fatalf("two replays of the final log differ: %016x (%d records) vs %016x (%d records)", h1, n1, h2, n2)
	}
	if hs, _ := k.replayHash(true); hs != h1 {
		k.fatalf("the newest snapshot plus the log after it gives state %016x, the log alone %016x", hs, h1)
	}
	if ht, err := k.tail.st.Hash(); err != nil || ht != h1 {
		k.fatalf("the fold of every frame the daemon ever wrote (%d frames, read as they were written) gives state %016x (%v), "+
			"the final snapshot and log %016x", k.tail.frames, ht, err, h1)
	}
	final := k.checkDisk(true)
	logBytes := final.wal
	sort.Slice(k.recoveries, func(i, j int) bool { return k.recoveries[i] < k.recoveries[j] })
	var median time.Duration
	if len(k.recoveries) > 0 {
		median = k.recoveries[len(k.recoveries)/2]
	}
	took := time.Since(start)
	allRuns := len(runs) + pruned
	k.t.Logf("seed %d: %d kill -9s (%d during boot, %d timed on a compaction: %d left a snapshot .tmp, %d just after a new snapshot) "+
		"in %s (%.1f kills/min); %d triggers, %d acknowledged, %d runs (%d pruned by retention), "+
		"%d tasks, %d cron fires, 0 lost; %d ledger lines, %d re-executions (at-least-once), %d crash-loop failures; "+
		"recovery median %s, longest %s; LOCK briefly held by a dying fork child after %d kills; "+
		"%d WAL frames written, %d snapshots seen; final log %d bytes, %d records after the snapshot replay to %016x; %s",
		k.seed, k.kills, k.bootKills, k.compactKill, k.tmpKills, k.snapKills, took.Round(time.Millisecond),
		float64(k.kills)/took.Minutes(), k.trigs.Load(), len(k.acked), allRuns, pruned, tasks, fires, lines, reexec, crashLoops,
		median.Round(time.Millisecond), k.maxRecovery.Round(time.Millisecond), k.lockWaits, k.tail.frames, len(k.disk.snaps),
		logBytes, n1, h1, k.disk.String())
	fmt.Printf("TORTURE kill9 kills=%d boot_kills=%d compaction_kills=%d tmp_kills=%d snap_kills=%d acked=%d runs=%d pruned=%d "+
		"tasks=%d cron_fires=%d lost=0 reexecutions=%d crash_loops=%d max_recovery_ms=%d median_recovery_ms=%d lock_waits=%d "+
		"frames=%d snapshots=%d log_bytes=%d records=%d max_wal_bytes=%d max_snapshot_bytes=%d max_data_bytes=%d seconds=%.1f\n",
		k.kills, k.bootKills, k.compactKill, k.tmpKills, k.snapKills, len(k.acked), allRuns, pruned, tasks, fires,
		reexec, crashLoops, k.maxRecovery.Milliseconds(), median.Milliseconds(), k.lockWaits, k.tail.frames, len(k.disk.snaps),
		logBytes, n1, k.disk.maxWAL, k.disk.maxSnap, k.disk.maxTotal, took.Seconds())
}

// readLedger counts ledger lines per task id.
func readLedger(t *testing.T, path string) map[string]int {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return map[string]int{}
		}
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 {
			out[fields[1]]++
		}
	}
	return out
}

// replayHash folds the stopped daemon's log into a fresh state and returns
// its hash and the number of records applied. The log is read from index 1
// when it still starts there (no compaction truncated it); otherwise, or
// with fromSnapshot, the newest snapshot (engine.LoadSnapshot) is the start
// and only the frames after it are applied.
func (k *kill9) replayHash(fromSnapshot bool) (uint64, int) {
	dir := filepath.Join(k.data, "wal")
	st, from := replay.New(), uint64(1)
	first := uint64(0)
	wal.ReplayDir(dir, 0, func(index uint64, _ [][]byte) error {
		first = index
		return errStop
	})
	if fromSnapshot || first > 1 {
		snap, idx, err := engine.LoadSnapshot(k.data, quiet)
		if err != nil {
			k.fatalf("load snapshot: %v", err)
		}
		st, from = snap, idx+1
	}
	n := 0
	err := wal.ReplayDir(dir, from, func(index uint64, recs [][]byte) error {
		for _, p := range recs {
			r, err := replay.Decode(bytes.Clone(p))
			if err == nil {
				err = st.Apply(r)
			}
			if err != nil {
				return fmt.Errorf("index %d: %w", index, err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		k.fatalf("replay of the final log from index %d: %v", from, err)
	}
	h, err := st.Hash()
	if err != nil {
		k.fatalf("hash: %v", err)
	}
	return h, n
}

var errStop = errors.New("stop")

// lockHolder is a process that has the data folder's LOCK open.
type lockHolder struct {
	pid, exe, desc string
}

// lockHolders lists the processes that have path open.
func lockHolders(path string) []lockHolder {
	var out []lockHolder
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, f := range fds {
		if t, err := os.Readlink(f); err != nil || t != path {
			continue
		}
		pid := strings.Split(f, "/")[2]
		exe, _ := os.Readlink("/proc/" + pid + "/exe")
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		info, _ := os.ReadFile("/proc/" + pid + "/fdinfo/" + filepath.Base(f))
		out = append(out, lockHolder{pid: pid, exe: exe, desc: fmt.Sprintf("pid %s exe %s %q fd %s; stat: %s; fdinfo: %s",
			pid, exe, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), filepath.Base(f),
			strings.TrimSpace(string(stat)), strings.Join(strings.Fields(string(info)), " "))})
	}
	return out
}

func describeHolders(hs []lockHolder) string {
	if len(hs) == 0 {
		return "  (none)"
	}
	var lines []string
	for _, h := range hs {
		lines = append(lines, "  "+h.desc)
	}
	return strings.Join(lines, "\n")
}

// waitLockFree is called after a kill -9: the kernel drops the flock once no
// process has the LOCK file open. A child the daemon was forking when it died
// (same executable, not yet exec'd) still holds a copy of every descriptor
// until Pdeathsig ends it: wait for it (a restart would otherwise be refused
// "in use" by the dead daemon's pid; seen about once per thousand kills).
// Any other holder, such as a task that inherited the descriptor, is a bug:
// the lock would outlive the daemon for as long as that task runs.
func (k *kill9) waitLockFree(dead int) {
	lock := filepath.Join(k.data, "LOCK")
	deadline := time.Now().Add(10 * time.Second)
	waited := false
	for {
		hs := lockHolders(lock)
		if len(hs) == 0 {
			return
		}
		for _, h := range hs {
			if h.exe != k.bin && h.exe != "" { // "": exiting, /proc/PID/exe is gone
				k.fatalf("after the kill -9 of daemon pid %d, a process that is not a daemon fork still holds %s; "+
					"a restart is refused as \"in use\" until it exits:\n%s", dead, lock, describeHolders(hs))
			}
		}
		if !waited {
			waited = true
			k.lockWaits++
			fmt.Fprintf(k.logf, "=== LOCK still held after kill -9 of %d by a fork child:\n%s\n", dead, describeHolders(hs))
		}
		if time.Now().After(deadline) {
			k.fatalf("%s still held 10s after the kill -9 of pid %d:\n%s", lock, dead, describeHolders(hs))
		}
		time.Sleep(2 * time.Millisecond)
	}
}
