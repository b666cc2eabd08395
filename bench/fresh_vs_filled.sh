#!/usr/bin/env bash
# One trace's score on a freshly reset zram device against the same device
# right after dd filled it with random data, in alternating rounds: which
# side moves between two runs, with what each run recorded about itself
# (preconditioning written, issue lateness, and how long the replay's threads
# waited for a CPU: fidelity.cpu_wait_s).
#
#   usage: bash bench/fresh_vs_filled.sh [ROUNDS] [TRACE]   (root; 3 rounds, traces/game-0ad.tmt)
#
# Each replay: realtime, default options, --passes 1 (as the check that saw a
# 2.67x move). BUILDS as in bursty_fidelity.sh (default: this tree's).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=${1:-3}
TRACE=${2:-$BENCH_ROOT/traces/game-0ad.tmt}
SIZE_MIB=${SIZE_MIB:-4096}
need_root
need python3
build_tracemark
BUILDS=${BUILDS:-"tracemark=$TRACEMARK"}

WORK=$(mktemp -d /var/tmp/tracemark-fresh.XXXXXX)
cleanup() {
    [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N"
    rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
zram_new
fresh() {
    echo 1 > "/sys/block/zram$ZRAM_N/reset"
    echo $((SIZE_MIB << 20)) > "/sys/block/zram$ZRAM_N/disksize"
}
# The preconditioning markers of this run only, not the user's.
export TRACEMARK_STATE_DIR=$WORK/state

echo "# fresh_vs_filled: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), tracemark commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD), $(basename "$TRACE"), $ZRAM ${SIZE_MIB} MiB"
echo "| round | device | build | load | score | access time µs | precondition written MiB | lateness p99 µs | CPU wait ms | CPU wait % of playback |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
    for state in fresh filled; do
        fresh
        [ "$state" = filled ] && dd if=/dev/urandom of="$ZRAM" bs=1M count="$SIZE_MIB" oflag=direct status=none
        for b in $BUILDS; do
            load=$(cut -d' ' -f1 /proc/loadavg)
            "${b#*=}" replay "$TRACE" --target "$ZRAM" --mode realtime --passes 1 --allow-write \
                --json "$WORK/r.json" > /dev/null
            tm_result "$WORK/r.json" traces.0.score traces.0.access_time_us precondition.written_bytes? \
                traces.0.fidelity.lateness_us.p99 traces.0.fidelity.cpu_wait_s? traces.0.fidelity.achieved_s |
                awk -v round="$round" -v state="$state" -v build="${b%%=*}" -v load="$load" '{
                    written = $3 == "nan" ? 0 : $3
                    wait = $5 == "nan" ? "-" : sprintf("%.1f", $5 * 1e3)
                    share = ($5 != "nan" && $6 + 0) ? sprintf("%.1f", 100 * $5 / $6) : "-"
                    printf "| %s | %s | %s | %s | %.0f | %.1f | %.0f | %.1f | %s | %s |\n",
                        round, state, build, load, $1, $2, written / 1048576, $4, wait, share }'
        done
    done
done
