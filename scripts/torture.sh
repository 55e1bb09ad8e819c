#!/usr/bin/env bash
# The long crash-recovery torture of docs/reliability.md: the power-loss
# simulation (fuzz/TestPowerLoss) until 100,000 simulated power cuts, then
# 1,000 kill -9s of the real daemon (fuzz/TestKill9), 100 lives of a daemon
# killed at each compaction (fuzz/TestCrashLoop), a disk filled and emptied
# under load (fuzz/TestDiskFill, root only), then a summary. On the
# 2-core development machine this takes about 35 minutes (power loss ~12,
# kill -9 ~23: it waits for compactions and boots load snapshots). Any failure stops it with the failing seed and the command
# that replays it. The raw output is kept in bin/torture.txt.
#
#   CRASHES  simulated power cuts to inject (100000)
#   KILLS    kill -9s of the daemon (1000)
#   LIVES    lives of the crash-loop harness (100)
#   BASE     first power-loss seed (default: from the time; each scenario is
#            BASE+i, and a failing one is printed)
#   SEED     the kill -9 run's seed (default: from the time)
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
CRASHES=${CRASHES:-100000}
KILLS=${KILLS:-1000}
LIVES=${LIVES:-100}
export ORKWAL_TORTURE=long
[ -n "${BASE:-}" ] && export ORKWAL_TORTURE_BASE=$BASE
seedflag=()
[ -n "${SEED:-}" ] && seedflag=(-seed "$SEED")

mkdir -p bin
raw=bin/torture.txt
: >"$raw"
start=$(date +%s)

echo "== power loss: $CRASHES simulated power cuts (go test ./fuzz -run '^TestPowerLoss\$' -torture.crashes $CRASHES)"
$GO test ./fuzz -count=1 -v -timeout 0 -run '^TestPowerLoss$' -torture.crashes "$CRASHES" 2>&1 |
	tee -a "$raw" | grep -E '^(TORTURE|--- |FAIL|ok|PASS|panic)|powerloss_test.go' || true
grep -q '^TORTURE powerloss' "$raw" || { tail -n 80 "$raw"; echo "torture: the power-loss harness failed (all output: $raw)"; exit 1; }

echo "== kill -9: $KILLS kills of the real daemon (go test ./fuzz -run '^TestKill9\$' -torture.kills $KILLS ${seedflag[*]})"
$GO test ./fuzz -count=1 -v -timeout 0 -run '^TestKill9$' -torture.kills "$KILLS" "${seedflag[@]}" 2>&1 |
	tee -a "$raw" | grep -E '^(TORTURE|--- |FAIL|ok|PASS|panic)|kill9_test.go' || true
grep -q '^TORTURE kill9' "$raw" || { tail -n 80 "$raw"; echo "torture: the kill -9 harness failed (all output: $raw)"; exit 1; }

echo "== crash loop: $LIVES lives of the daemon, each cut at its compaction (go test ./fuzz -run '^TestCrashLoop\$' -torture.lives $LIVES ${seedflag[*]})"
$GO test ./fuzz -count=1 -v -timeout 0 -run '^TestCrashLoop$' -torture.lives "$LIVES" "${seedflag[@]}" 2>&1 |
	tee -a "$raw" | grep -E '^(--- |FAIL|ok|PASS|panic)|crashloop_test.go:[0-9]+: (TORTURE|boot)' || true
grep -q 'TORTURE crashloop' "$raw" || { tail -n 80 "$raw"; echo "torture: the crash-loop harness failed (all output: $raw)"; exit 1; }

echo "== disk fill: a 32 MiB tmpfs filled and emptied 3 times under load (go test ./fuzz -run '^TestDiskFill\$'; root only)"
$GO test ./fuzz -count=1 -v -timeout 0 -run '^TestDiskFill$' "${seedflag[@]}" 2>&1 |
	tee -a "$raw" | grep -E '^(--- |FAIL|ok|PASS|panic)|diskfill_test.go' || true
grep -q 'TORTURE diskfill\|SKIP: TestDiskFill' "$raw" || { tail -n 80 "$raw"; echo "torture: the disk-fill harness failed (all output: $raw)"; exit 1; }

# get <harness> <key>: a value of a TORTURE summary line (harnesses that
# print it through t.Logf have the file:line before it).
get() {
	awk -v h="$1" -v k="$2" '{ sub(/^ *[a-z0-9_]+\.go:[0-9]+: /, "") }
		$1 == "TORTURE" && $2 == h {
		for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$raw"
}
pl_cuts=$(get powerloss crashes)
k9_kills=$(get kill9 kills)
cat <<EOF

orkwal torture summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(($(date +%s) - start))s)
  crashes injected   $((pl_cuts + k9_kills)): $pl_cuts simulated power cuts ($(get powerloss boot_crashes) during a boot's own appends) in $(get powerloss scenarios) scenarios, $k9_kills kill -9s ($(get kill9 boot_kills) during boot)
  runs               $(($(get powerloss runs) + $(get kill9 runs))) (power loss $(get powerloss runs), kill -9 $(get kill9 runs), of which $(get kill9 acked) acknowledged triggers)
  tasks              $(($(get powerloss tasks) + $(get kill9 tasks)))
  lost               $(($(get powerloss lost) + $(get kill9 lost)))
  re-executions      kill -9: $(get kill9 reexecutions) ledger lines beyond one per task; power loss: $(get powerloss reexecutions) attempts interrupted and run again
  crash-loop fails   $(get kill9 crash_loops) runs (a task in flight at 3 kills in a row fails by design)
  longest recovery   $(get kill9 max_recovery_ms) ms from restart to a healthy /healthz (median $(get kill9 median_recovery_ms) ms; the final log: $(get kill9 log_bytes) bytes after the snapshot)
  lock after kill    $(get kill9 lock_waits) kills left the LOCK held for a moment by a fork child of the dead daemon
  power-loss images  $(get powerloss unacked_survived) kept an unacknowledged frame, $(get powerloss torn_cut) ended in a partial or torn frame, $(get powerloss segments_lost) lost a new segment file
  tail rot           a byte of the last acknowledged frame changed: $(get powerloss tail_rot_refused) boots refused it (corruption, at that frame), $(get powerloss tail_rot_booted) booted with nothing lost
  compaction         power loss: $(get powerloss compactions) compactions, $(get powerloss compaction_crashes) cuts at a compaction step, $(get powerloss truncated_boots) boots on a truncated log, $(get powerloss pruned) runs pruned; kill -9: $(get kill9 compaction_kills) kills timed on a compaction ($(get kill9 tmp_kills) left a snapshot .tmp), $(get kill9 snapshots) snapshots, $(get kill9 pruned) runs pruned
  cron               $(get kill9 cron_fires) fires across the kills, none twice, none lost
  disk bound         kill -9: WAL at most $(get kill9 max_wal_bytes) bytes, largest snapshot $(get kill9 max_snapshot_bytes), data folder at most $(get kill9 max_data_bytes) (--compact-bytes 1 MiB)
  crash loop         $(get crashloop lives) lives cut at their compaction: at most $(get crashloop max_log_since_snapshot) bytes of log since the snapshot at a boot (bound $(get crashloop bound)), boots at most $(get crashloop max_boot_ms) ms (median $(get crashloop median_boot_ms) ms)
  disk fill          $(get diskfill cycles) fills of the disk: $(get diskfill acked) acknowledged runs, $(get diskfill failed) failed, $(get diskfill lost) lost; $(get diskfill refused) triggers refused (503), $(get diskfill not_prepared) attempts not prepared and run again, $(get diskfill wal_recoveries) WAL recoveries
EOF
