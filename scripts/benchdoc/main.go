// Command benchdoc turns the output of the benchmarks (go test -bench, as
// run by scripts/bench.sh: the wal's, and issue 10's engine, API and daemon
// benchmarks) into docs/benchmarks.md: every figure next to its baseline
// from the same run, the ratio, and the issues' targets.
//
//	go run ./scripts/benchdoc -in bench.txt -out docs/benchmarks.md \
//		-date ... -commit ... -go ... -nproc ... -cpu ... -kernel ... -fs ...
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// result is one benchmark line: name (without the -GOMAXPROCS suffix),
// iterations and metrics by unit.
type result struct {
	name string
	n    int
	m    map[string]float64
}

// results holds every line of the output, in order, by name: a benchmark
// run in several rounds has one result per round.
type results map[string][]result

var suffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) (results, []string, error) {
	rs := results{}
	var lines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		res := result{name: suffix.ReplaceAllString(f[0], ""), n: n, m: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %w", line, err)
			}
			res.m[f[i+1]] = v
		}
		rs[res.name] = append(rs[res.name], res)
	}
	return rs, lines, sc.Err()
}

// values is metric unit of every round of benchmark name (NaN when absent).
func (rs results) values(name, unit string) []float64 {
	var out []float64
	for _, r := range rs[name] {
		if v, ok := r.m[unit]; ok {
			out = append(out, v)
		} else {
			out = append(out, math.NaN())
		}
	}
	return out
}

func median(xs []float64) float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func span(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if !math.IsNaN(x) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	return lo, hi
}

// med is the median of a metric over the rounds.
func (rs results) med(name, unit string) float64 { return median(rs.values(name, unit)) }

// ratio is the median over rounds of name's unit divided by the baseline's
// unit in the same round (rounds pair up by order).
func (rs results) ratio(name, unit, base, baseUnit string) float64 {
	a, b := rs.values(name, unit), rs.values(base, baseUnit)
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return median(r)
}

// f3 formats a ratio to three decimals, "–" when it was not measured.
func f3(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// num formats x with thousands separators, one decimal below 10.
func num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "–"
	case math.Abs(x) < 10 && x != math.Trunc(x):
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func times(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	if x >= 100 {
		return num(x) + "×"
	}
	return strconv.FormatFloat(x, 'f', 2, 64) + "×"
}

func pct(n, of float64) string {
	if math.IsNaN(n) || of == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*n/of, 'f', 2, 64) + "%"
}

func ms(us float64) string {
	if math.IsNaN(us) {
		return "–"
	}
	return strconv.FormatFloat(us/1000, 'f', 1, 64) + " ms"
}

// verdict says whether got meets the target (at least, or at most, want).
func verdict(got, want float64, atLeast bool) string {
	switch {
	case math.IsNaN(got):
		return "not measured"
	case atLeast && got >= want:
		return fmt.Sprintf("**met** (%s of the target)", times(got/want))
	case atLeast && 100*(1-got/want) < 1: // "by 0%" would read as met
		return fmt.Sprintf("**missed** by %.1f%% (%s of the target)", 100*(1-got/want), times(got/want))
	case atLeast:
		return fmt.Sprintf("**missed** by %.0f%% (%s of the target)", 100*(1-got/want), times(got/want))
	case got <= want:
		return fmt.Sprintf("**met** (%s of the limit)", times(got/want))
	default:
		return fmt.Sprintf("**missed**: %s the limit", times(got/want))
	}
}

// latencyVerdict is verdict for a p99.9 limit of 5 ms, noting when the raw
// baseline alone is over it.
func latencyVerdict(got, raw float64) string {
	v := verdict(got, 5000, false)
	if raw > 5000 {
		v += fmt.Sprintf("; the raw baseline alone is at %s", ms(raw))
	}
	return v
}

type machine struct {
	date, commit, goVersion, nproc, cpu, kernel, fs, mem, tmp, params string
}

const (
	rawName    = "BenchmarkRawFsync"
	appendName = "BenchmarkAppend/appenders="
	readName   = "BenchmarkReplay/read"
	replayName = "BenchmarkReplay/ReplayDir"
	segName    = "BenchmarkSegmentSize/"
	concName   = "BenchmarkSegmentSizeConcurrent/"
)

var appenders = []string{"1", "8", "64", "256"}
var segSizes = []string{"1MiB", "4MiB", "20MiB"}
var concSizes = []string{"256KiB", "1MiB", "4MiB", "20MiB"}

func write(w io.Writer, rs results, lines []string, mc machine) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	rounds := len(rs[rawName])

	p("# Benchmarks")
	p("")
	p("Generated by `make bench` (`scripts/bench.sh`, then `scripts/benchdoc`) from")
	p("one run on the machine below; rerun it rather than editing this page. The")
	p("WAL benchmarks are in `wal/bench_test.go` and `wal/stall_test.go`; the")
	p("engine, API and daemon benchmarks (issue 10) in `engine/bench_test.go`,")
	p("`engine/bench_perf_test.go`, `api/bench_runs_test.go`,")
	p("`cmd/orkwal/bench_daemon_test.go` and `cmd/orkwal/bench_dagu_test.go`;")
	p("issue 27's checks from outside in `cmd/orkwal/bench_outside_test.go`.")
	p("")
	p("The disk is shared and noisy: absolute figures move from run to run (and")
	p("within a run). Read each figure against its **baseline measured in the same")
	p("run**, a plain file on the same filesystem appended to and fsynced the way a")
	p("simple log would, and read the ratio.")
	p("")
	p("## Machine and run")
	p("")
	p("| | |")
	p("|---|---|")
	p("| date (UTC) | %s |", mc.date)
	p("| commit | `%s` |", mc.commit)
	p("| Go | %s |", mc.goVersion)
	p("| CPUs (`nproc`) | %s |", mc.nproc)
	p("| CPU model (`/proc/cpuinfo`) | %s |", mc.cpu)
	p("| memory | %s |", mc.mem)
	p("| kernel | %s |", mc.kernel)
	p("| temp dir (`b.TempDir()`: logs and baselines) | `%s`: %s |", mc.tmp, mc.fs)
	p("| parameters | %s |", mc.params)
	p("")

	writeEngine(w, rs)
	writeOutside(w, rs)

	// Targets.
	r1 := appendName + "1"
	p("## Targets (issue \"A WAL you can trust\")")
	p("")
	p("Append figures are medians over %d rounds; the sections below give the", rounds)
	p("baselines and the details.")
	p("")
	p("| target | measured | baseline (same run) | verdict |")
	p("|---|---|---|---|")
	p("| ≥ 3,000 records/s with 1 appender | %s records/s | raw write+fsync %s/s | %s |",
		num(rs.med(r1, "records/s")), num(rs.med(rawName, "records/s")), verdict(rs.med(r1, "records/s"), 3000, true))
	p("| 1-appender latency within 1.3× of raw write+fsync (p50) | %s | p50 %s µs vs raw %s µs | %s |",
		times(rs.ratio(r1, "p50-µs", rawName, "p50-µs")), num(rs.med(r1, "p50-µs")), num(rs.med(rawName, "p50-µs")),
		verdict(rs.ratio(r1, "p50-µs", rawName, "p50-µs"), 1.3, false))
	p("| (context, not a target) the same ratio at p99 / p99.9 | %s / %s | p99 %s µs vs raw %s µs; p99.9 %s µs vs raw %s µs | – |",
		times(rs.ratio(r1, "p99-µs", rawName, "p99-µs")), times(rs.ratio(r1, "p999-µs", rawName, "p999-µs")),
		num(rs.med(r1, "p99-µs")), num(rs.med(rawName, "p99-µs")), num(rs.med(r1, "p999-µs")), num(rs.med(rawName, "p999-µs")))
	for _, t := range []struct {
		n    string
		want float64
	}{{"64", 100_000}, {"256", 300_000}} {
		name := appendName + t.n
		p("| ≥ %s records/s at %s appenders | %s records/s | raw write+fsync %s/s (%s) | %s |",
			num(t.want), t.n, num(rs.med(name, "records/s")), num(rs.med(rawName, "records/s")),
			times(rs.ratio(name, "records/s", rawName, "records/s")), verdict(rs.med(name, "records/s"), t.want, true))
		// The targets assume a disk doing about 4,000 fsyncs/s; the
		// shared disk here often does far fewer. The same target as a ratio
		// to the raw fsync rate measured in the same round:
		p("| the same as a ratio: ≥ %s× raw write+fsync at %s appenders (%s ÷ the issue's ~4,000 fsyncs/s) | %s | raw write+fsync %s/s | %s |",
			strconv.FormatFloat(t.want/4000, 'f', 0, 64), t.n, num(t.want),
			times(rs.ratio(name, "records/s", rawName, "records/s")), num(rs.med(rawName, "records/s")),
			verdict(rs.ratio(name, "records/s", rawName, "records/s"), t.want/4000, true))
	}
	for _, n := range appenders {
		name := appendName + n
		p("| p99.9 append ≤ 5 ms, %s | %s | raw p99.9 %s | %s |",
			label(n), ms(rs.med(name, "p999-µs")), ms(rs.med(rawName, "p999-µs")), latencyVerdict(rs.med(name, "p999-µs"), rs.med(rawName, "p999-µs")))
	}
	for _, s := range segSizes {
		name := segName + s
		p("| p99.9 append ≤ 5 ms, 1 appender, %s segments | %s | raw p99.9 %s | %s |",
			s, ms(rs.med(name, "p999-µs")), ms(rs.med(name, "raw-p999-µs")), latencyVerdict(rs.med(name, "p999-µs"), rs.med(name, "raw-p999-µs")))
	}
	p("| replay ≥ 500,000 records/s | %s records/s | reading the files %s records/s | %s |",
		num(rs.med(replayName, "records/s")), num(rs.med(readName, "records/s")), verdict(rs.med(replayName, "records/s"), 500_000, true))
	p("")

	// Append.
	p("## Append: group commit against raw write+fsync")
	p("")
	p("`BenchmarkAppend/appenders=N`: N goroutines each call `Append([][]byte{rec})`")
	p("with a 128-byte record in a loop (default 1 MiB segments); b.N appends are")
	p("split between them. `BenchmarkRawFsync`, the baseline: one goroutine appends")
	p("144 bytes to a plain file and fsyncs it, in a loop (the file grows at every")
	p("write; the WAL writes inside its tail's zero padding and fdatasyncs, which")
	p("spares the file system the block allocation and the inode: see \"WAL")
	p("segments\" in docs/format.md). The %d rounds each run the", rounds)
	p("baseline and then the cases back to back, so each ratio is taken within a")
	p("round; the tables show medians over rounds, and the records/s range.")
	p("")
	p("frames/s is records/s ÷ records/frame: commits per second, against the raw")
	p("loop's fsyncs per second.")
	p("")
	p("| case | records/s (range) | × raw | frames/s | × raw | records/frame | frames/fsync |")
	p("|---|---|---|---|---|---|---|")
	lo, hi := span(rs.values(rawName, "records/s"))
	p("| raw write+fsync (baseline) | %s (%s–%s) | 1 | %s | 1 | – | – |",
		num(rs.med(rawName, "records/s")), num(lo), num(hi), num(rs.med(rawName, "records/s")))
	for _, n := range appenders {
		name := appendName + n
		lo, hi := span(rs.values(name, "records/s"))
		var fps, fpsRatio []float64
		recs, per, raw := rs.values(name, "records/s"), rs.values(name, "records/frame"), rs.values(rawName, "records/s")
		for i := range min(len(recs), len(per), len(raw)) {
			fps = append(fps, recs[i]/per[i])
			fpsRatio = append(fpsRatio, recs[i]/per[i]/raw[i])
		}
		p("| %s | %s (%s–%s) | %s | %s | %s | %s | %s |", label(n),
			num(rs.med(name, "records/s")), num(lo), num(hi), times(rs.ratio(name, "records/s", rawName, "records/s")),
			num(median(fps)), times(median(fpsRatio)),
			strconv.FormatFloat(rs.med(name, "records/frame"), 'f', 1, 64),
			f3(rs.med(name, "frames/fsync")))
	}
	p("")
	var fill, rate []string
	for _, n := range appenders[1:] {
		c, _ := strconv.ParseFloat(n, 64)
		name := appendName + n
		fill = append(fill, fmt.Sprintf("%.0f%% (%s)", 100*rs.med(name, "records/frame")/c, n))
		rate = append(rate, fmt.Sprintf("%s (%s)", times(rs.ratio(name, "records/s", rawName, "records/s")/rs.med(name, "records/frame")), n))
	}
	p("Throughput is records/frame × frames/s. records/frame is %s of the", strings.Join(fill, ", "))
	p("number of appenders, and commits run at %s the raw fsync rate:", strings.Join(rate, ", "))
	p("a busy log gathers the appenders woken by one commit back into the next one")
	p("(`gather` in `wal/log.go`), so a frame carries nearly every appender; the")
	p("commit rate is the raw fsync rate less the time they take to come back (the")
	p("gather, at most an eighth of the last commit) and the frame's write, plus")
	p("what the padding and fdatasync save.")
	p("")
	p("Latency of each Append call. *Led* is the number of commits (frame + fsync)")
	p("one Append call ran itself as the group commit's leader (seen through")
	p("`Options.Fault`, which runs on the committing goroutine): its own frame needs")
	p("one; a *held* call led more than one, committing other callers' frames after")
	p("its own was durable.")
	p("")
	p("| case | p50 µs | × raw | p99 µs | × raw | p99.9 µs | × raw | p99.9 µs without held calls | max µs | most commits led by one call | held calls |")
	p("|---|---|---|---|---|---|---|---|---|---|---|")
	p("| raw write+fsync (baseline) | %s | 1 | %s | 1 | %s | 1 | – | %s | – | – |",
		num(rs.med(rawName, "p50-µs")), num(rs.med(rawName, "p99-µs")), num(rs.med(rawName, "p999-µs")), num(rs.med(rawName, "max-µs")))
	for _, n := range appenders {
		name := appendName + n
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", label(n),
			num(rs.med(name, "p50-µs")), times(rs.ratio(name, "p50-µs", rawName, "p50-µs")),
			num(rs.med(name, "p99-µs")), times(rs.ratio(name, "p99-µs", rawName, "p99-µs")),
			num(rs.med(name, "p999-µs")), times(rs.ratio(name, "p999-µs", rawName, "p999-µs")),
			num(rs.med(name, "p999-not-held-µs")), num(rs.med(name, "max-µs")),
			num(rs.med(name, "max-led/append")), heldShare(rs, name))
	}
	p("")
	p("1 appender latency within %s of raw write+fsync at p50 (%s at p99, %s at p99.9).",
		times(rs.ratio(r1, "p50-µs", rawName, "p50-µs")), times(rs.ratio(r1, "p99-µs", rawName, "p99-µs")),
		times(rs.ratio(r1, "p999-µs", rawName, "p999-µs")))
	p("")
	var held []string
	for _, n := range appenders {
		if v := rs.med(appendName+n, "max-led/append"); v > 1 {
			held = append(held, fmt.Sprintf("%s commits with %s (max latency %s)", num(v), label(n), ms(rs.med(appendName+n, "max-µs"))))
		}
	}
	if len(held) > 0 {
		p("**Leader hold.** One Append call ran up to %s.", strings.Join(held, "; "))
		p("No Append call should run more than its own commit (`Log.Append` commits at")
		p("most one frame itself and leaves the rest to the committer goroutine): a")
		p("value above 1 is a regression in the group commit. A held call appends")
		p("nothing")
		p("itself while it commits. It sets the max at every concurrency above 1, and p99.9 where held")
		p("calls are a large part of the tail (compare p99.9 with and without them).")
		p("")
	}

	// Replay.
	p("## Replay")
	p("")
	p("`BenchmarkReplay`: a log of 1,000,000 records (10,000 frames of 100 records of")
	p("128 bytes, default 1 MiB segments) is built once with `wal.Open` + `Append`,")
	p("untimed; then `ReplayDir` is timed over it (`ReplayDir`), against reading the")
	p("same segment files into memory with `os.ReadFile` (`read`, the baseline).")
	p("Both read from the page cache (the log was just written).")
	p("")
	p("| case | records/s | MB/s | × read | B/op | allocs/op |")
	p("|---|---|---|---|---|---|")
	for _, c := range []struct{ label, name string }{{"read the files (baseline)", readName}, {"`ReplayDir`", replayName}} {
		p("| %s | %s | %s | %s | %s | %s |", c.label, num(rs.med(c.name, "records/s")), num(rs.med(c.name, "MB/s")),
			times(rs.ratio(c.name, "records/s", readName, "records/s")), num(rs.med(c.name, "B/op")), num(rs.med(c.name, "allocs/op")))
	}
	p("")

	// Segment size.
	p("## Segment size and write stalls")
	p("")
	p("`BenchmarkSegmentSize/<size>`: one appender, single-record frames of 128")
	p("bytes, %s appends per size; every 4th append is preceded by a raw", num(float64(first(rs, segName+"1MiB").n)))
	p("write+fsync of 144 bytes to another file on the same disk, the baseline")
	p("(`raw`), so both see the same disk weather. No segment is held in memory")
	p("(`wal/segment.go`; tidwall/wal's tail buffer, which grew inside every write,")
	p("was the reason p99.9 grew with the segment size before 2026-11-23).")
	p("`write max` is the longest time before the fsync of an append that did not")
	p("create a segment (compare `raw write max`, write(2) alone), `switch max` the")
	p("longest append that created one.")
	p("")
	p("**Scaled down:** crossing several 20 MiB segments one fsynced 128-byte frame")
	p("at a time takes about 145,000 appends per segment (minutes here). So the")
	p("tail is prefilled, untimed, with frames of 1,000 records to 0.9×stream")
	p("before the end of the segment, at most 0.75× the segment size: the measured")
	p("appends then hold appends to a nearly full segment and the")
	var prefilled, whole []string
	for _, s := range segSizes {
		size, _ := strconv.ParseFloat(strings.TrimSuffix(s, "MiB"), 64)
		if n := first(rs, segName+s).n; n >= 1000 && size*(1<<20) > 0.9*145*float64(n) {
			prefilled = append(prefilled, s)
		} else {
			whole = append(whole, s)
		}
	}
	p("switch to the next. In this run: prefilled %s; not prefilled, covering", orNone(prefilled))
	p("whole segments, %s.", orNone(whole))
	p("")
	p("| segment size | segments created | p50 µs (raw) | p99 µs (raw) | p99.9 µs (raw) | × raw | max µs (raw) | × raw | appends > 5 ms (raw) | write max µs (raw write max) | switch max µs |")
	p("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range segSizes {
		name := segName + s
		p("| %s | %s | %s (%s) | %s (%s) | %s (%s) | %s | %s (%s) | %s | %s (%s) | %s (%s) | %s |", s,
			num(rs.med(name, "segments-created")),
			num(rs.med(name, "p50-µs")), num(rs.med(name, "raw-p50-µs")),
			num(rs.med(name, "p99-µs")), num(rs.med(name, "raw-p99-µs")),
			num(rs.med(name, "p999-µs")), num(rs.med(name, "raw-p999-µs")), times(rs.ratio(name, "p999-µs", name, "raw-p999-µs")),
			num(rs.med(name, "max-µs")), num(rs.med(name, "raw-max-µs")), times(rs.ratio(name, "max-µs", name, "raw-max-µs")),
			pct(rs.med(name, "appends>5ms"), float64(first(rs, name).n)), pct(rs.med(name, "raw-syncs>5ms"), math.Ceil(float64(first(rs, name).n)/4)),
			num(rs.med(name, "write-max-µs")), num(rs.med(name, "raw-write-max-µs")),
			num(rs.med(name, "switch-max-µs")))
	}
	p("")
	if len(rs[concName+"1MiB"]) > 0 {
		base := concName + "1MiB"
		p("### Under load: 256 appenders")
		p("")
		p("`BenchmarkSegmentSizeConcurrent/<size>` is `BenchmarkAppend/appenders=256` with")
		p("other segment sizes, in the same rounds; the baseline is the default, 1 MiB.")
		p("With the commit path busy all the time, whatever a commit spends beyond")
		p("its write and fsync (creating a segment) delays every caller queued")
		p("behind it.")
		p("")
		p("| segment size | records/s | × 1 MiB | p50 µs | p99 µs | p99.9 µs | × 1 MiB | p99.9 µs without held calls | max µs | p99.9 ≤ 5 ms |")
		p("|---|---|---|---|---|---|---|---|---|---|")
		for _, s := range concSizes {
			name := concName + s
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", s,
				num(rs.med(name, "records/s")), times(rs.ratio(name, "records/s", base, "records/s")),
				num(rs.med(name, "p50-µs")), num(rs.med(name, "p99-µs")),
				num(rs.med(name, "p999-µs")), times(rs.ratio(name, "p999-µs", base, "p999-µs")),
				num(rs.med(name, "p999-not-held-µs")), num(rs.med(name, "max-µs")),
				verdict(rs.med(name, "p999-µs"), 5000, false))
		}
		p("")
	}

	p("## Raw output")
	p("")
	p("```")
	for _, l := range lines {
		if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "cpu:") || strings.HasPrefix(l, "#") ||
			strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "---") {
			p("%s", l)
		}
	}
	p("```")
}

// heldShare is the median share of held calls among b.N appends.
func heldShare(rs results, name string) string {
	var r []float64
	for _, res := range rs[name] {
		if v, ok := res.m["held-appends"]; ok && res.n > 0 {
			r = append(r, 100*v/float64(res.n))
		}
	}
	if v := median(r); !math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', 2, 64) + "%"
	}
	return "–"
}

func label(appenders string) string {
	if appenders == "1" {
		return "1 appender"
	}
	return appenders + " appenders"
}

func first(rs results, name string) result {
	if len(rs[name]) == 0 {
		return result{}
	}
	return rs[name][0]
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func main() {
	var mc machine
	in := flag.String("in", "", "benchmark output (go test -bench)")
	out := flag.String("out", "", "markdown to write (stdout when empty)")
	flag.StringVar(&mc.date, "date", "", "")
	flag.StringVar(&mc.commit, "commit", "", "")
	flag.StringVar(&mc.goVersion, "go", "", "")
	flag.StringVar(&mc.nproc, "nproc", "", "")
	flag.StringVar(&mc.cpu, "cpu", "", "")
	flag.StringVar(&mc.kernel, "kernel", "", "")
	flag.StringVar(&mc.fs, "fs", "", "filesystem of the temp dir")
	flag.StringVar(&mc.tmp, "tmp", "", "temp dir")
	flag.StringVar(&mc.mem, "mem", "", "")
	flag.StringVar(&mc.params, "params", "", "benchtimes and rounds")
	flag.Parse()

	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
	rs, lines, err := parse(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
	// A run may hold only the wal part or only the engine part (bench.sh's
	// ONLY); the other's figures then read "not measured".
	if len(rs[rawName]) == 0 && len(rs[fanOutName]) == 0 {
		fmt.Fprintf(os.Stderr, "benchdoc: no %s or %s in %s\n", rawName, fanOutName, *in)
		os.Exit(1)
	}
	var sb strings.Builder
	write(&sb, rs, lines, mc)
	if *out == "" {
		fmt.Print(sb.String())
		return
	}
	if err := os.WriteFile(*out, []byte(sb.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}
