#!/usr/bin/env bash
# Runs the wal benchmarks and issue 10's engine, API and daemon benchmarks,
# and regenerates docs/benchmarks.md from their output (scripts/benchdoc).
# About 9 minutes when the disk is quiet (the wal appends are fsync-bound: a
# busy disk makes it longer; the first cross builds of BenchmarkBinarySize
# add a few minutes on a cold build cache); the raw output is kept in
# bin/bench.txt.
#
#   ROUNDS        rounds of BenchmarkRawFsync, BenchmarkAppend and
#                 BenchmarkSegmentSizeConcurrent (3)
#   APPEND_TIME   -benchtime of each of them per round (1s)
#   REPLAY_TIME   -benchtime of BenchmarkReplay's two cases (1s)
#   STALL_APPENDS appends per BenchmarkSegmentSize case (40000)
#   ENGINE_TIME   -benchtime of the engine, API and Dagu benchmarks (1x)
#   BURST         triggers per burst of BenchmarkBacklogBursts (10000)
#   ACTIVE        pending runs of BenchmarkMetricsBacklog (100000)
#   ENGINE_COUNT  -count of the engine throughput, process and latency
#                 benchmarks and of BenchmarkOutside: the page shows the
#                 median (3)
#   DAGU_COUNT    -count of BenchmarkDagu (Dagu's workloads, each against its
#                 floor): the page shows the median (5)
#   DAGU_TIME     -benchtime of BenchmarkDagu: the daemon's CPU time is read
#                 in 10 ms ticks, so each run adds up a few iterations (3x)
#   RECOVERY_TIME -benchtime of BenchmarkRecovery (3x)
#   QUEUED        waiting runs of BenchmarkQueuedRunMemory and of
#                 BenchmarkOutside/queued (60000)
#   PAUSE_TIME    -benchtime of BenchmarkCompactionPause: snapshots of each
#                 kind (100x, about a minute)
#   IDLE_SECONDS  idle time of BenchmarkIdleCPU (60)
#   SLEEP_SECONDS length of BenchmarkDaemonRSS's sleep tasks (120)
#   ONLY          "wal" or "engine": run only that part (the page then shows
#                 the other part as not measured)
#   OUT           the page to write (docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
ROUNDS=${ROUNDS:-3}
APPEND_TIME=${APPEND_TIME:-1s}
REPLAY_TIME=${REPLAY_TIME:-1s}
STALL_APPENDS=${STALL_APPENDS:-40000}
ENGINE_TIME=${ENGINE_TIME:-1x}
ENGINE_COUNT=${ENGINE_COUNT:-3}
DAGU_COUNT=${DAGU_COUNT:-5}
DAGU_TIME=${DAGU_TIME:-3x}
RECOVERY_TIME=${RECOVERY_TIME:-3x}
PAUSE_TIME=${PAUSE_TIME:-100x}
export IDLE_SECONDS=${IDLE_SECONDS:-60}
export SLEEP_SECONDS=${SLEEP_SECONDS:-120}
ONLY=${ONLY:-}
OUT=${OUT:-docs/benchmarks.md}
TMP=${TMPDIR:-/tmp}

mkdir -p bin
raw=bin/bench.txt
: >"$raw"
bench() { # bench <label> <go test args...> (the wal package)
	pkgbench "$1" ./wal/ "${@:2}"
}
pkgbench() { # pkgbench <label> <package> <go test args...>
	local label=$1 pkg=$2
	shift 2
	echo "# $label: go test -count=1 -run '^\$' $* $pkg" | tee -a "$raw"
	"$GO" test -count=1 -timeout 30m -run '^$' "$@" "$pkg" 2>&1 | tee -a "$raw"
}

# The commit the benchmarks are built from (taken before they start).
commit=$(git rev-parse --short HEAD)
# --no-optional-locks: look at the work tree without touching the index.
if [ -n "$(git --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit="$commit (work tree with uncommitted changes)"
fi

date=$(date -u '+%Y-%m-%d %H:%M:%S')
start=$(date +%s)
# The baseline runs right before the cases it is compared with, in every round.
if [ "$ONLY" != engine ]; then
	for r in $(seq 1 "$ROUNDS"); do
		bench "round $r of $ROUNDS" -bench '^(BenchmarkRawFsync|BenchmarkAppend|BenchmarkSegmentSizeConcurrent)$' -benchtime="$APPEND_TIME"
	done
	bench replay -bench '^BenchmarkReplay$' -benchtime="$REPLAY_TIME"
	bench "segment size" -bench '^BenchmarkSegmentSize$' -benchtime="${STALL_APPENDS}x"
fi
if [ "$ONLY" != wal ]; then
	# Issue 10: engine throughput, process executor, latency, recovery.
	# A single run of a spawn benchmark moves by 10-20% with the shared
	# machine: the page takes the median of several.
	pkgbench engine ./engine/ -bench '^(BenchmarkFanOut20k|BenchmarkProcessVsBare|BenchmarkLatency50)$' -benchtime="$ENGINE_TIME" -count="$ENGINE_COUNT"
	pkgbench recovery ./engine/ -bench '^BenchmarkRecovery$' -benchtime="$RECOVERY_TIME"
	# Issue 27: memory per waiting run (QUEUED runs, 60000 by default).
	pkgbench "queued runs" ./engine/ -bench '^BenchmarkQueuedRunMemory$' -benchtime=1x
	# Issue 6: the loop's pause when a compaction starts, old way beside new.
	pkgbench "compaction pause" ./engine/ -bench '^BenchmarkCompactionPause$' -benchtime="$PAUSE_TIME"
	pkgbench "api runs" ./api/ -bench '^BenchmarkRunsToCompletion$' -benchtime="$ENGINE_TIME"
	# Issue 21: the cost of a trigger and of a scrape must not grow with the backlog.
	pkgbench backlog ./api/ -bench '^(BenchmarkBacklogBursts|BenchmarkMetricsBacklog)$' -benchtime="$ENGINE_TIME"
	# Issue 23: 20 pages following /events against none, in the same run.
	pkgbench "event followers" ./api/ -bench '^BenchmarkEventFollowers$' -benchtime=10x -count="$ENGINE_COUNT"
	pkgbench "web pages" ./api/ -bench '^BenchmarkUIPages$' -benchtime=1x
	# The real binary: memory, Dagu's workloads, kill -9, idle CPU, sizes.
	pkgbench daemon ./cmd/orkwal/ -bench '^(BenchmarkDaemonRSS|BenchmarkIdleCPU|BenchmarkBinarySize)$' -benchtime="$ENGINE_TIME"
	pkgbench dagu ./cmd/orkwal/ -bench '^BenchmarkDagu$' -benchtime="$DAGU_TIME" -count="$DAGU_COUNT"
	# Issue 27 from outside: its workloads on the release binary over the
	# API, timed by the daemon's own timestamps (beside the figures above).
	pkgbench outside ./cmd/orkwal/ -bench '^BenchmarkOutside$' -benchtime=1x -count="$ENGINE_COUNT"
fi
elapsed=$(($(date +%s) - start))
echo "# benchmarks took ${elapsed}s" | tee -a "$raw"

"$GO" run ./scripts/benchdoc -in "$raw" -out "$OUT" \
	-date "$date" \
	-commit "$commit" \
	-go "$("$GO" version)" \
	-nproc "$(nproc)" \
	-cpu "$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
	-mem "$(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)" \
	-kernel "$(uname -srm)" \
	-tmp "$TMP" \
	-fs "$(df -T "$TMP" | awk 'NR == 2 {print $2 " on " $1 ", mounted at " $7}')" \
	-params "$ROUNDS rounds of RawFsync+Append+SegmentSizeConcurrent at -benchtime=$APPEND_TIME; Replay at -benchtime=$REPLAY_TIME; SegmentSize at -benchtime=${STALL_APPENDS}x; engine/API/daemon at -benchtime=$ENGINE_TIME (FanOut20k, ProcessVsBare, Latency50 and Outside -count=$ENGINE_COUNT, Dagu -benchtime=$DAGU_TIME -count=$DAGU_COUNT: medians), Recovery at -benchtime=$RECOVERY_TIME, CompactionPause at -benchtime=$PAUSE_TIME, idle CPU over ${IDLE_SECONDS}s${ONLY:+; only $ONLY this run}; ${elapsed}s in all"
echo "wrote $OUT"
