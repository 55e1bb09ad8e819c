package wal_test

// Segment-size stall measurement (issue "A WAL you can trust", item 4).
//
// tidwall/wal keeps the whole tail segment in memory (one []byte that grows
// by append, about 1.25x at a time once large) and, when the tail is full,
// fsyncs and closes it and creates the next file, all inside Write. The
// claim under test: the larger the segment, the larger the buffer copies and
// the longer the stalls, so small segments keep tail latency low.

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/orkwal/orkwal/wal"
)

// stallThreshold is the p99.9 target; appends slower than it are
// counted.
const stallThreshold = 5 * time.Millisecond

// bigGrowth is the smallest new capacity of the tail buffer that counts as
// a growth in growth-max-µs.
const bigGrowth = 256 << 10

// BenchmarkSegmentSize appends b.N single-record frames of 128 bytes with one
// appender, for each segment size, and reports the tail of the latency
// distribution. Every 4th append is preceded by its baseline, one plain
// write+fsync of 144 bytes to another file on the same disk, so that both
// see the same disk weather (metrics raw-*). The time before the fsync of an
// append (encoding, tidwall's Write, write(2)) is told apart from the rest
// through Options.Fault, and each append is classified afterwards:
//
//   - growth-max-µs: the longest pre-fsync time of an append during which
//     tidwall's tail buffer grew to bigGrowth or more (found by replaying
//     the same entry sizes through a []byte the way tidwall appends them);
//     growths: how many such appends there were, largest-growth-KiB the
//     largest capacity they reached.
//   - write-max-µs: the same for every other append that did not switch
//     segments; compare raw-write-max-µs (write(2) alone).
//   - switch-max-µs: the longest append that switched segments (tidwall
//     fsyncs and closes the full segment and creates the next one inside
//     Write, then Append fsyncs the new segment and the folder).
//   - segments-created: segment switches during the measured appends.
//
// Crossing several 20 MiB segments one fsynced 128-byte frame at a time
// takes minutes (about 145,000 appends per segment). So the tail is first
// prefilled (untimed, with frames of 1,000 records) to S-0.9*stream bytes,
// at most 0.75*S, where S is the segment size and stream the bytes of the b.N
// measured appends: a stream shorter than a segment then still holds the
// last and largest growth of the tail buffer (its capacity grows about 1.25x
// at a time, so the last growth happens between about 0.78*S and S) and, if
// it is long enough, the switch to the next segment. Streams longer than
// about 1.1 segments are not prefilled.
func BenchmarkSegmentSize(b *testing.B) {
	for _, s := range []struct {
		name string
		size int
	}{
		{"1MiB", wal.DefaultSegmentSize},
		{"4MiB", 4 << 20},
		{"20MiB", 20 << 20}, // tidwall/wal's own default
	} {
		b.Run(s.name, func(b *testing.B) { benchSegmentSize(b, s.size) })
	}
}

// BenchmarkSegmentSizeConcurrent is BenchmarkAppend/appenders=256 with
// several segment sizes (1MiB, the default, is the baseline). Under load the
// commit path is busy all the time, so whatever tidwall's Write spends on
// growing the tail buffer, under the log's lock, delays every caller queued
// behind that commit.
func BenchmarkSegmentSizeConcurrent(b *testing.B) {
	for _, s := range []struct {
		name string
		size int
	}{
		{"256KiB", 256 << 10},
		{"1MiB", wal.DefaultSegmentSize},
		{"4MiB", 4 << 20},
		{"20MiB", 20 << 20},
	} {
		b.Run(s.name, func(b *testing.B) { benchAppend(b, 256, s.size) })
	}
}

func benchSegmentSize(b *testing.B, size int) {
	var fs fsyncCounter
	var wrote time.Time // set from the Fault hook, in the appending goroutine
	fs.onWrite = func() { wrote = time.Now() }
	l := openBench(b, size, &fs)
	defer l.Close()
	raw := createRaw(b)
	defer raw.Close()

	rec := record(1)
	var frames []int // length of every frame appended: the prefill, then b.N
	if b.N >= 1000 {
		// Bytes of the measured appends (indexes from 2^14 to 2^21 take 3
		// bytes as uvarints).
		frame := frameBytes(1<<20, [][]byte{rec})
		stream := b.N * (uvarintLen(uint64(frame)) + frame)
		frames = prefill(b, l, min(size-stream*9/10, size*3/4))
	}
	first := len(frames)
	runtime.GC()
	lat := make([]time.Duration, 0, b.N)
	pre := make([]time.Duration, 0, b.N) // time before the fsync
	switched := make([]bool, 0, b.N)
	rawLat := make([]time.Duration, 0, b.N/4+1)
	var rawWriteMax time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%4 == 0 {
			t0 := time.Now()
			rawWrote, err := raw.writeSync()
			if err != nil {
				b.Fatal(err)
			}
			rawLat = append(rawLat, time.Since(t0))
			rawWriteMax = max(rawWriteMax, rawWrote.Sub(t0))
		}
		folders := fs.folder.Load()
		t1 := time.Now()
		index, err := l.Append([][]byte{rec})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		lat = append(lat, t2.Sub(t1))
		pre = append(pre, wrote.Sub(t1))
		switched = append(switched, fs.folder.Load() != folders)
		frames = append(frames, frameBytes(index, [][]byte{rec}))
	}
	b.StopTimer()

	grew := tailGrowths(frames, size)
	var growthMax, writeMax, switchMax time.Duration
	growths, switches, largest := 0, 0, 0
	for i := range lat {
		switch {
		case switched[i]:
			switches++
			switchMax = max(switchMax, lat[i])
		case grew[first+i] >= bigGrowth:
			growths++
			growthMax = max(growthMax, pre[i])
			largest = max(largest, grew[first+i])
		default:
			writeMax = max(writeMax, pre[i])
		}
	}
	b.ReportMetric(float64(countOver(lat, stallThreshold)), "appends>5ms")
	b.ReportMetric(float64(countOver(rawLat, stallThreshold)), "raw-syncs>5ms")
	reportLatencies(b, "", lat)
	reportLatencies(b, "raw-", rawLat)
	b.ReportMetric(us(growthMax), "growth-max-µs")
	b.ReportMetric(float64(growths), "growths")
	b.ReportMetric(float64(largest)/1024, "largest-growth-KiB")
	b.ReportMetric(us(writeMax), "write-max-µs")
	b.ReportMetric(us(rawWriteMax), "raw-write-max-µs")
	b.ReportMetric(us(switchMax), "switch-max-µs")
	b.ReportMetric(float64(switches), "segments-created")
}

// tailGrowths replays frames of the given lengths through a []byte the way
// tidwall/wal v1.2.1 builds its tail segment buffer (a new segment starts
// from nil; each entry is appended as uvarint length, then the frame; after
// an entry brings the buffer to segmentSize or more, the next entry starts a
// new segment) and returns, for each frame, the capacity the buffer grew to
// while appending it, or 0 if it did not grow.
func tailGrowths(frames []int, segmentSize int) []int {
	grew := make([]int, len(frames))
	var buf, frame []byte
	for i, n := range frames {
		c := cap(buf)
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		buf = binary.AppendUvarint(buf, uint64(n))
		buf = append(buf, frame[:n]...)
		if cap(buf) != c {
			grew[i] = cap(buf)
		}
		if len(buf) >= segmentSize {
			buf = nil
		}
	}
	return grew
}

func countOver(lat []time.Duration, limit time.Duration) int {
	n := 0
	for _, d := range lat {
		if d > limit {
			n++
		}
	}
	return n
}

// prefill appends frames of 1,000 records to an empty log while the tail
// segment stays under bytes (nothing when bytes <= 0) and returns the
// lengths of the frames it appended.
func prefill(b *testing.B, l *wal.Log, bytes int) []int {
	b.Helper()
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = record(i)
	}
	var frames []int
	done := 0
	for {
		n := frameBytes(l.LastIndex()+1, batch)
		if done += uvarintLen(uint64(n)) + n; done >= bytes {
			return frames
		}
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		frames = append(frames, n)
	}
}

// frameBytes is the length of the frame of records at index
// (docs/format.md): version, index, count, records, checksum. In a segment
// it is preceded by its uvarint length.
func frameBytes(index uint64, records [][]byte) int {
	n := 1 + uvarintLen(index) + uvarintLen(uint64(len(records))) + 8
	for _, r := range records {
		n += uvarintLen(uint64(len(r))) + len(r)
	}
	return n
}

func uvarintLen(x uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], x)
}
