package wal_test

// Benchmarks for the write-ahead log (issue "A WAL you can trust", items 4
// and 9). They are meant to be read as ratios against the baselines measured
// in the same run (BenchmarkRawFsync, BenchmarkReplay/read, the raw-*
// metrics of BenchmarkSegmentSize and BenchmarkSegmentSizeConcurrent/1MiB):
// the disk is shared and noisy, so absolute numbers move from run to run.
// scripts/bench.sh runs them and writes docs/benchmarks.md.
//
// Metrics: records/s counts durable records (Append returned nil); latencies
// are per Append call, in µs; records/frame and frames/fsync come from the
// log's last index and from counting fsyncs through Options.Fault (which
// returns nil, so nothing is injected). max-led/append is the largest
// number of commits (frame + fsync) one Append call ran itself as the group
// commit's leader: its own frame needs one, anything more is time spent
// committing other callers' frames after its own was durable. held-appends
// counts the calls that led more than one commit, and p999-not-held-µs is
// p99.9 without them.

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/wal"

	"github.com/orkwal/orkwal/internal/benchtest"
)

// recordSize is the payload size of every benchmark record.
const recordSize = 128

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// record returns a recordSize payload that differs per seed.
func record(seed int) []byte {
	r := make([]byte, recordSize)
	x := uint32(seed)*2654435761 + 1
	for i := range r {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		r[i] = byte(x)
	}
	return r
}

// fsyncCounter counts the fsyncs a Log makes, through Options.Fault.
type fsyncCounter struct {
	segment atomic.Int64 // OpSync: the segment file after each frame
	folder  atomic.Int64 // OpDirSync: the folder after a segment was created
	onWrite func()       // called after each frame was handed to the file
	onSync  func()       // called before each segment fsync
}

func (c *fsyncCounter) fault(op wal.Op, _ uint64) error {
	switch op {
	case wal.OpWrite:
		if c.onWrite != nil {
			c.onWrite()
		}
	case wal.OpSync:
		c.segment.Add(1)
		if c.onSync != nil {
			c.onSync()
		}
	case wal.OpDirSync:
		c.folder.Add(1)
	}
	return nil
}

func openBench(b *testing.B, segmentSize int, c *fsyncCounter) *wal.Log {
	b.Helper()
	opts := wal.Options{SegmentSize: segmentSize, Logger: quietLog}
	if c != nil {
		opts.Fault = c.fault
	}
	l, err := wal.Open(filepath.Join(b.TempDir(), "wal"), opts)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// reportLatencies sorts d and reports its percentiles in µs, as metrics
// named prefix+"p50-µs" and so on.
func reportLatencies(b *testing.B, prefix string, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(us(benchtest.Percentile(d, 0.50)), prefix+"p50-µs")
	b.ReportMetric(us(benchtest.Percentile(d, 0.99)), prefix+"p99-µs")
	b.ReportMetric(us(benchtest.Percentile(d, 0.999)), prefix+"p999-µs")
	b.ReportMetric(us(d[len(d)-1]), prefix+"max-µs")
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func reportRate(b *testing.B, records int) {
	b.Helper()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(records)/s, "records/s")
	}
}

// BenchmarkRawFsync is the baseline of BenchmarkAppend: one goroutine writes
// 128+16 bytes (a record and about a frame's overhead) to a plain file and
// fsyncs it, in a loop.
func BenchmarkRawFsync(b *testing.B) {
	raw := createRaw(b)
	defer raw.Close()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := raw.writeSync(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportRate(b, b.N)
	reportLatencies(b, "", lat)
}

// rawFile is a plain file in a temp dir, appended to 144 bytes at a time.
type rawFile struct {
	*os.File
	buf []byte
}

func createRaw(b *testing.B) *rawFile {
	b.Helper()
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	return &rawFile{File: f, buf: append(record(0), make([]byte, 16)...)}
}

// writeSync writes 144 bytes and fsyncs the file; it returns when the write
// returned, for the caller to split the time between write and fsync.
func (r *rawFile) writeSync() (wrote time.Time, err error) {
	if _, err := r.Write(r.buf); err != nil {
		return time.Time{}, err
	}
	wrote = time.Now()
	return wrote, r.Sync()
}

// BenchmarkAppend: n concurrent appenders, each calling
// Append([][]byte{rec}) with a 128-byte record in a loop; b.N is the total
// number of appends, split between them. Default segment size (1 MiB).
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{1, 8, 64, 256} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) { benchAppend(b, n, 0) })
	}
}

// benchAppend runs b.N appends from appenders goroutines on a log with the
// given segment size (0: the default).
func benchAppend(b *testing.B, appenders, segmentSize int) {
	// Which appender leads each commit: Options.Fault runs on the committing
	// goroutine, which is the leader's own, so led[g] is only ever touched
	// by appender g.
	ids := map[uint64]int{} // goroutine id -> appender; read-only once started
	led := make([]int64, appenders)
	var fs fsyncCounter
	fs.onSync = func() {
		if g, ok := ids[goid()]; ok {
			led[g]++
		}
	}
	l := openBench(b, segmentSize, &fs)
	defer l.Close()

	lat := make([][]time.Duration, appenders)  // per appender, of every Append
	held := make([][]time.Duration, appenders) // of those that led > 1 commit
	maxLed := make([]int64, appenders)         // most commits led by one Append
	errs := make(chan error, appenders)
	start := make(chan struct{})
	var mu sync.Mutex
	var ready, done sync.WaitGroup
	for g := range appenders {
		n := b.N / appenders
		if g < b.N%appenders {
			n++
		}
		lat[g] = make([]time.Duration, 0, n)
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			mu.Lock()
			ids[goid()] = g
			mu.Unlock()
			ready.Done()
			rec := record(g)
			<-start
			for range n {
				led0 := led[g]
				t0 := time.Now()
				if _, err := l.Append([][]byte{rec}); err != nil {
					errs <- err
					return
				}
				d, k := time.Since(t0), led[g]-led0
				lat[g] = append(lat[g], d)
				if k > 1 {
					held[g] = append(held[g], d)
				}
				maxLed[g] = max(maxLed[g], k)
			}
		}()
	}
	ready.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	close(start)
	done.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	reportRate(b, b.N)
	all := slices.Concat(lat...)
	reportLatencies(b, "", all)
	// The same p99.9 without the held appends: all is sorted, so drop each
	// held latency once from it.
	heldAll := slices.Concat(held...)
	slices.Sort(heldAll)
	free := make([]time.Duration, 0, len(all)-len(heldAll))
	i := 0
	for _, d := range all {
		if i < len(heldAll) && heldAll[i] == d {
			i++
			continue
		}
		free = append(free, d)
	}
	if len(free) > 0 {
		b.ReportMetric(us(benchtest.Percentile(free, 0.999)), "p999-not-held-µs")
	}
	b.ReportMetric(float64(len(heldAll)), "held-appends")
	b.ReportMetric(float64(slices.Max(maxLed)), "max-led/append")
	frames := l.LastIndex()
	fsyncs := fs.segment.Load() + fs.folder.Load()
	if frames > 0 && fsyncs > 0 {
		b.ReportMetric(float64(b.N)/float64(frames), "records/frame")
		b.ReportMetric(float64(frames)/float64(fsyncs), "frames/fsync")
	}
}

// goid is the current goroutine's id, from the first line of its stack
// trace ("goroutine 123 [running]:"), without allocating. Tests only.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = b[min(len(b), len("goroutine ")):]
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// Replay log shape: 10,000 frames of 100 records of 128 bytes.
const (
	replayFrames   = 10_000
	replayPerFrame = 100
	replayRecords  = replayFrames * replayPerFrame
)

// BenchmarkReplay builds a log of 1,000,000 records once (untimed, with
// Open + Append, default segment size), then times ReplayDir over it
// (ReplayDir) against reading the same segment files into memory (read, the
// baseline). Both read from the page cache: the log was just written.
func BenchmarkReplay(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "wal")
	l, err := wal.Open(dir, wal.Options{Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([][]byte, replayPerFrame)
	for i := range batch {
		batch[i] = record(i)
	}
	for range replayFrames {
		if _, err := l.Append(batch); err != nil {
			l.Close()
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var files []string
	var size int64
	for _, de := range des {
		if fi, err := de.Info(); err == nil && fi.Mode().IsRegular() && len(de.Name()) == 20 {
			files = append(files, filepath.Join(dir, de.Name()))
			size += fi.Size()
		}
	}

	b.Run("read", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, f := range files {
				if _, err := os.ReadFile(f); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRate(b, b.N*replayRecords)
	})
	b.Run("ReplayDir", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			err := wal.ReplayDir(dir, 1, func(_ uint64, records [][]byte) error {
				n += len(records)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			if n != replayRecords {
				b.Fatalf("replayed %d records, want %d", n, replayRecords)
			}
		}
		reportRate(b, b.N*replayRecords)
	})
}
