#!/usr/bin/env bash
# Two tracemark binaries (an A/B of two commits) replaying one trace,
# alternated run by run on one private zram device after one replay that
# preconditions it; per binary the scores, median, spread ((max - min) /
# median) and mean access time.
#
#   bench/ab_pairs.sh BIN_A BIN_B [-n PAIRS] [--trace T.tmt] [--zram SIZE] [-- REPLAY-ARGS...]
#
#   -n PAIRS      alternating A/B pairs (default 4)
#   --trace T     the trace (default traces/game-launch-0ad.tmt)
#   --zram SIZE   the private zram's size (default 4G; never /dev/zram0)
#   REPLAY-ARGS   passed to every `tracemark replay` (default: --passes 3)
#
# Needs root (zram).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: bench/ab_pairs.sh BIN_A BIN_B [-n PAIRS] [--trace T] [--zram SIZE] [-- ARGS]"
BIN_A=$1
BIN_B=$2
shift 2
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
for b in "$BIN_A" "$BIN_B"; do [ -x "$b" ] || die "$b is not an executable"; done
[ -r "$TRACE" ] || die "no trace $TRACE"

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
echo "A: $BIN_A"
echo "B: $BIN_B"
echo "load before: $(uptime)"
"$BIN_A" replay "$TRACE" --target "$DEV" --allow-write --passes 1 > "$WORK/precondition.txt" 2>&1 \
    || { cat "$WORK/precondition.txt" >&2; die "the preconditioning replay failed"; }
for i in $(seq "$PAIRS"); do
    for side in A B; do
        if [ "$side" = A ]; then bin=$BIN_A; else bin=$BIN_B; fi
        "$bin" replay "$TRACE" --target "$DEV" --allow-write \
            --json "$WORK/$side-$i.json" "$@" > "$WORK/$side-$i.txt" 2>&1 \
            || { cat "$WORK/$side-$i.txt" >&2; die "$side run $i failed"; }
    done
done
echo "load after: $(uptime)"
python3 - "$WORK" "$PAIRS" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
print("| binary | scores, run by run | median | spread | mean access time, µs |")
print("|---|---|---|---|---|")
for side in ("A", "B"):
    runs = [json.load(open(f"{work}/{side}-{i}.json")) for i in range(1, pairs + 1)]
    scores = [r["traces"][0]["score"] for r in runs]
    access = [r["traces"][0]["access_time_us"] for r in runs]
    med = statistics.median(scores)
    print(f"| {side} | {', '.join(f'{s:.0f}' for s in scores)} | {med:.0f} "
          f"| {100 * (max(scores) - min(scores)) / med:.1f} % | {', '.join(f'{a:.1f}' for a in access)} |")
a = [json.load(open(f"{work}/A-{i}.json"))["traces"][0]["score"] for i in range(1, pairs + 1)]
b = [json.load(open(f"{work}/B-{i}.json"))["traces"][0]["score"] for i in range(1, pairs + 1)]
print(f"B above A in {sum(y > x for x, y in zip(a, b))} of {pairs} pairs; median B/A per pair "
      f"{statistics.median(y / x for x, y in zip(a, b)):.3f}")
PY
