#!/usr/bin/env bash
# What the CPUs' idle states do to a trace's score: `--cpu-idle os` and
# `--cpu-idle poll` alternated run by run on one private zram device, after
# one replay that preconditions it, then per policy the scores, median,
# spread ((max - min) / median) and mean access time.
#
#   bench/cpu_idle_pairs.sh [-n PAIRS] [--trace T.tmt] [--zram SIZE] [-- REPLAY-ARGS...]
#
#   -n PAIRS      alternating os/poll pairs (default 4)
#   --trace T     the trace (default traces/game-launch-0ad.tmt: sparse reads,
#                 where every I/O may find its CPU idle)
#   --zram SIZE   the private zram's size (default 4G; never /dev/zram0)
#   REPLAY-ARGS   passed to every `tracemark replay` (default: --passes 3)
#
# Needs root (zram, and /dev/cpu_dma_latency for poll).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PAIRS=4
TRACE=$BENCH_ROOT/traces/game-launch-0ad.tmt
ZRAM_SIZE=4G
while [ $# -gt 0 ]; do
    case "$1" in
        -n) PAIRS=$2; shift 2 ;;
        --trace) TRACE=$2; shift 2 ;;
        --zram) ZRAM_SIZE=$2; shift 2 ;;
        --) shift; break ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[ $# -gt 0 ] || set -- --passes 3
need_root
need python3
[ -r "$TRACE" ] || die "no trace $TRACE"
build_tracemark

WORK=$(mktemp -d /var/tmp/tracemark-bench.XXXXXX)
ZRAM_ID=
cleanup() {
    [ -z "$ZRAM_ID" ] || zram_remove "$ZRAM_ID"
    rm -rf "$WORK"
}
trap cleanup EXIT
ZRAM_ID=$(zram_add "$ZRAM_SIZE") || exit 1
DEV=/dev/zram$ZRAM_ID
export TRACEMARK_STATE_DIR=$WORK/state

echo "trace $(basename "$TRACE"), target $DEV, $PAIRS pairs, replay args: $*"
echo "load before: $(uptime)"
"$TRACEMARK" replay "$TRACE" --target "$DEV" --allow-write --passes 1 > "$WORK/precondition.txt" 2>&1 \
    || { cat "$WORK/precondition.txt" >&2; die "the preconditioning replay failed"; }
for i in $(seq "$PAIRS"); do
    for policy in os poll; do
        "$TRACEMARK" replay "$TRACE" --target "$DEV" --allow-write --cpu-idle "$policy" \
            --json "$WORK/$policy-$i.json" "$@" > "$WORK/$policy-$i.txt" 2>&1 \
            || { cat "$WORK/$policy-$i.txt" >&2; die "$policy run $i failed"; }
    done
done
echo "load after: $(uptime)"
python3 - "$WORK" "$PAIRS" <<'EOF'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
print("| --cpu-idle | in effect | scores, run by run | median | spread | mean access time, µs |")
print("|---|---|---|---|---|---|")
for policy in ("os", "poll"):
    runs = [json.load(open(f"{work}/{policy}-{i}.json")) for i in range(1, pairs + 1)]
    effect = sorted({r["options"].get("cpu_idle", "os") for r in runs})
    scores = [r["traces"][0]["score"] for r in runs]
    access = [r["traces"][0]["access_time_us"] for r in runs]
    med = statistics.median(scores)
    print(f"| {policy} | {', '.join(effect)} | {', '.join(f'{s:.0f}' for s in scores)} | {med:.0f} "
          f"| {100 * (max(scores) - min(scores)) / med:.1f} % | {', '.join(f'{a:.1f}' for a in access)} |")
EOF
