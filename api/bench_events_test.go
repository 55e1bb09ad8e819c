package api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/internal/benchtest"
)

// BenchmarkEventFollowers: what 20 open pages following /events cost the
// engine. On one durable engine over loopback, each iteration runs a
// 5,000-instance noop fan-out in pairs: with no stream open and with 20
// streams open, for each of four kinds of stream (every event: an API
// client taking all; ?tasks=0: the workflows and runs pages;
// ?latest=1&instances=counts: what a run page asks for; ?latest=1: what
// it asked for before, as context), the pair's order alternating from
// one iteration to the next; and a pair with no stream on either side
// (-noise), whose ratios are what the machine's noise alone gives the
// others. Each round starts after a collection (runtime.GC, outside its
// clock), so that no round is charged the garbage of the one before, and
// once its streams have begun (each has read its first id line), so that
// their setup is not in it either. The 20 streams are read by another process
// (this test binary again, see TestMain), as a browser would, reading and
// discarding what it is sent: its CPU is not the daemon's, and is
// reported apart (reader-ms/run). Per kind, the median over the
// iterations of each pair's
//
//   - ratio: tasks/s with the streams over tasks/s without (the target:
//     ≥ 0.9, under 10% lost). Wall time on a shared 2-core machine: the
//     reader process competes for the cores as a browser on the box would.
//   - cpu-ratio: the daemon's CPU time (this process's rusage, the engine
//     and the HTTP server) without the streams over with them, from the
//     trigger until the streams are closed (their tail included), and
//     one write window (100 ms) past the run's end at least, in both.
//   - µs/task-stream: the daemon's added CPU per task per stream.
//
// plus the streams dropped for falling behind and the bytes a stream read.
//
//	go test -run '^$' -bench BenchmarkEventFollowers -benchtime 3x ./api/
func BenchmarkEventFollowers(b *testing.B) {
	const n, followers = 5000, 20
	srv, eng := loadServer(b)
	req, _ := http.NewRequest("POST", srv.URL+"/workflows", strings.NewReader("name: fan\ntasks:\n  each: {executor: noop, parallel: 5000}\n"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		b.Fatalf("put workflow: %v %v", resp, err)
	}
	kinds := []struct {
		name, query string
		k           int // streams in the pair's "with" round
	}{{"", "", followers}, {"-run-events", "?tasks=0", followers}, {"-latest", "?latest=1", followers},
		{"-counts", "?latest=1&instances=counts", followers}, {"-noise", "", 0}}
	wall, cpu, extra := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	bytes, readerCPU := map[string]int64{}, map[string]time.Duration{}
	var tasksNone, tasksWith float64
	_, dropped0 := eng.EventSubscribers()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, kind := range kinds {
			var none, with followerRound
			if (i+k)%2 == 0 {
				none = followRound(b, eng, srv.URL, "", 0, n)
				with = followRound(b, eng, srv.URL, kind.query, kind.k, n)
			} else {
				with = followRound(b, eng, srv.URL, kind.query, kind.k, n)
				none = followRound(b, eng, srv.URL, "", 0, n)
			}
			wall[kind.name] = append(wall[kind.name], none.wall.Seconds()/with.wall.Seconds())
			cpu[kind.name] = append(cpu[kind.name], none.cpu.Seconds()/with.cpu.Seconds())
			extra[kind.name] = append(extra[kind.name], float64(with.cpu-none.cpu)/float64(time.Microsecond)/(n*followers))
			bytes[kind.name] += with.bytes
			readerCPU[kind.name] += with.readerCPU
			if kind.name == "" {
				tasksNone += n / none.wall.Seconds()
				tasksWith += n / with.wall.Seconds()
			}
		}
	}
	b.StopTimer()
	_, dropped := eng.EventSubscribers()
	for _, kind := range kinds {
		b.ReportMetric(median(wall[kind.name]), "ratio"+kind.name)
		b.ReportMetric(median(cpu[kind.name]), "cpu-ratio"+kind.name)
		if kind.k == 0 {
			continue // the noise pair: no stream to charge
		}
		b.ReportMetric(median(extra[kind.name]), "µs/task-stream"+kind.name)
		b.ReportMetric(float64(bytes[kind.name])/float64(b.N*followers), "bytes/stream-run"+kind.name)
		b.ReportMetric(float64(readerCPU[kind.name].Milliseconds())/float64(b.N), "reader-ms/run"+kind.name)
	}
	b.ReportMetric(tasksNone/float64(b.N), "tasks/s-none")
	b.ReportMetric(tasksWith/float64(b.N), "tasks/s-20-pages")
	b.ReportMetric(float64(dropped-dropped0), "dropped")
}

// followerRound is one run of the fan-out: its wall time, the daemon's CPU
// time, and what its streams' reader read and spent.
type followerRound struct {
	wall, cpu, readerCPU time.Duration
	bytes                int64
}

// followRound runs the fan-out "fan" once with k streams of query open,
// read by another process.
func followRound(b *testing.B, eng *engine.Engine, url, query string, k, n int) followerRound {
	var r followerRound
	var readers *eventReaders
	if k > 0 {
		readers = startEventReaders(b, url+"/events"+query, k)
	}
	// The garbage of the rounds before is collected now, not in this one,
	// whichever kind it is.
	runtime.GC()
	cpu0 := benchtest.SelfCPU()
	start := time.Now()
	id, err := eng.Trigger("fan", nil, "bench")
	if err != nil {
		b.Fatal(err)
	}
	for {
		ch := eng.Changed()
		if s, _ := eng.RunStatus(id); s == "success" {
			break
		}
		<-ch
	}
	r.wall = time.Since(start)
	if readers != nil {
		r.bytes, r.readerCPU = readers.stop(b)
		for open, _ := eng.EventSubscribers(); open > 0; open, _ = eng.EventSubscribers() {
			time.Sleep(time.Millisecond) // the server's handlers see the streams closed
		}
	}
	// Both rounds count the CPU of one write window past the run's end at
	// least: the streams' tail takes that long, and a round without them
	// counts what the run left running (a collection) as they do, rather
	// than hand it to the next round.
	time.Sleep(r.wall + eventFlushEvery - time.Since(start))
	r.cpu = benchtest.SelfCPU() - cpu0
	return r
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// eventReaders is a process reading k event streams (readEventStreams).
type eventReaders struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

const readersEnv = "ORKWAL_BENCH_EVENT_READERS" // "k url"

// startEventReaders starts this test binary as a reader of k streams of
// url, and returns once they are all open.
func startEventReaders(b *testing.B, url string, k int) *eventReaders {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), readersEnv+"="+strconv.Itoa(k)+" "+url)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &eventReaders{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	if line, err := r.out.ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("event readers: %q %v", line, err)
	}
	return r
}

// stop closes the streams and returns the bytes read and the reader's CPU.
func (r *eventReaders) stop(b *testing.B) (int64, time.Duration) {
	r.stdin.Close()
	line, err := r.out.ReadString('\n')
	if err != nil {
		b.Fatalf("event readers: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		b.Fatalf("event readers: %q", line)
	}
	if err := r.cmd.Wait(); err != nil {
		b.Fatalf("event readers: %v", err)
	}
	return n, r.cmd.ProcessState.UserTime() + r.cmd.ProcessState.SystemTime()
}

// readEventStreams is the reader process: spec is "k url". It opens k
// streams, reads each up to its start (the id line a stream sends once
// the server has joined it to its feed and written its first lines: its
// setup is done before the round's clock starts), prints "ready", and reads and discards each until it has the
// round's run_finished (the streams open before the round's run is
// triggered and join at the log's end, so the first one is that run's) or
// the server ends it (a dropped stream). Once its stdin closes and every
// stream is so read, it closes them and prints the bytes read: a round
// ends only once every stream has been sent all of its run, so the
// daemon's CPU counted includes the streams' tail, however quickly the
// run ended.
func readEventStreams(spec string) int {
	ks, url, _ := strings.Cut(spec, " ")
	k, err := strconv.Atoi(ks)
	if err != nil {
		fmt.Fprintln(os.Stderr, "event readers:", spec, err)
		return 2
	}
	var wg sync.WaitGroup
	var total atomic.Int64
	var bodies []io.Closer
	for j := 0; j < k; j++ {
		resp, err := http.Get(url)
		if err != nil || resp.StatusCode != 200 {
			fmt.Fprintln(os.Stderr, "event readers:", url, resp, err)
			return 2
		}
		bodies = append(bodies, resp.Body)
		r := bufio.NewReaderSize(resp.Body, 64<<10)
		n, err := readUntil(r, []byte("id: "))
		if err != nil {
			fmt.Fprintln(os.Stderr, "event readers: no start id:", url, err)
			return 2
		}
		total.Add(n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _ := readUntil(r, []byte(`data: {"id":`), []byte(`"type":"run_finished"`))
			total.Add(n)
		}()
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	wg.Wait()
	for _, body := range bodies {
		body.Close()
	}
	fmt.Println(total.Load())
	return 0
}

// readUntil reads an event stream line by line until a line that begins
// with prefix and holds every one of has (a run_finished event's data,
// say), or the stream's end, and returns the bytes read.
func readUntil(r *bufio.Reader, prefix []byte, has ...[]byte) (int64, error) {
	var n int64
	for {
		line, err := r.ReadSlice('\n')
		n += int64(len(line))
		if bytes.HasPrefix(line, prefix) && !slices.ContainsFunc(has, func(h []byte) bool { return !bytes.Contains(line, h) }) {
			return n, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return n, err
		}
	}
}
