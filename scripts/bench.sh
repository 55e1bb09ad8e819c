#!/usr/bin/env bash
# Runs the wal benchmarks and regenerates docs/benchmarks.md from their
# output (scripts/benchdoc). About 2 minutes when the disk is quiet (the
# appends are fsync-bound: a busy disk makes it longer); the raw output is
# kept in bin/bench.txt.
#
#   ROUNDS        rounds of BenchmarkRawFsync, BenchmarkAppend and
#                 BenchmarkSegmentSizeConcurrent (3)
#   APPEND_TIME   -benchtime of each of them per round (1s)
#   REPLAY_TIME   -benchtime of BenchmarkReplay's two cases (1s)
#   STALL_APPENDS appends per BenchmarkSegmentSize case (40000)
#   OUT           the page to write (docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
ROUNDS=${ROUNDS:-3}
APPEND_TIME=${APPEND_TIME:-1s}
REPLAY_TIME=${REPLAY_TIME:-1s}
STALL_APPENDS=${STALL_APPENDS:-40000}
OUT=${OUT:-docs/benchmarks.md}
TMP=${TMPDIR:-/tmp}

mkdir -p bin
raw=bin/bench.txt
: >"$raw"
bench() { # bench <label> <go test args...>
	local label=$1
	shift
	echo "# $label: go test -count=1 -run '^\$' $*" | tee -a "$raw"
	"$GO" test -count=1 -run '^$' "$@" ./wal/ 2>&1 | tee -a "$raw"
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
for r in $(seq 1 "$ROUNDS"); do
	bench "round $r of $ROUNDS" -bench '^(BenchmarkRawFsync|BenchmarkAppend|BenchmarkSegmentSizeConcurrent)$' -benchtime="$APPEND_TIME"
done
bench replay -bench '^BenchmarkReplay$' -benchtime="$REPLAY_TIME"
bench "segment size" -bench '^BenchmarkSegmentSize$' -benchtime="${STALL_APPENDS}x"
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
	-params "$ROUNDS rounds of RawFsync+Append+SegmentSizeConcurrent at -benchtime=$APPEND_TIME; Replay at -benchtime=$REPLAY_TIME; SegmentSize at -benchtime=${STALL_APPENDS}x; ${elapsed}s in all"
echo "wrote $OUT"
