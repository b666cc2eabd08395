#!/usr/bin/env bash
# Two sides of an A/B (two tracemark binaries, or one binary with two sets
# of options) replaying one trace, alternated run by run on one private zram
# device after one replay that preconditions it; per side the CPU idle policy
# in effect, the scores, median, spread ((max - min) / median) and mean
# access time, then the pairs B won and the median ratio B / A.
#
#   bench/ab_pairs.sh BIN_A BIN_B [-n PAIRS] [--trace T.tmt] [--zram SIZE]
#                     [--args-a "ARGS"] [--args-b "ARGS"] [--names A,B] [-- REPLAY-ARGS...]
#
#   -n PAIRS      alternating A/B pairs (default 4)
#   --trace T     the trace (default traces/game-launch-0ad.tmt: sparse reads)
#   --zram SIZE   the private zram's size (default 4G; never /dev/zram0)
#   --args-a/-b   options for one side's replays only (e.g. "--cpu-idle os")
#   --names A,B   the sides' names in the table (default A,B)
#   REPLAY-ARGS   passed to every `tracemark replay` (default: --passes 3)
#
# Needs root (zram; /dev/cpu_dma_latency for `--cpu-idle poll`).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: bench/ab_pairs.sh BIN_A BIN_B [-n PAIRS] [--trace T] [--zram SIZE] [--args-a ARGS] [--args-b ARGS] [--names A,B] [-- ARGS]"
BIN_A=$1
BIN_B=$2
shift 2
PAIRS=4
TRACE=$BENCH_ROOT/traces/game-launch-0ad.tmt
ZRAM_SIZE=4G
ARGS_A=()
ARGS_B=()
NAMES=A,B
while [ $# -gt 0 ]; do
    case "$1" in
        -n) PAIRS=$2; shift 2 ;;
        --trace) TRACE=$2; shift 2 ;;
        --zram) ZRAM_SIZE=$2; shift 2 ;;
        --args-a) read -ra ARGS_A <<< "$2"; shift 2 ;;
        --args-b) read -ra ARGS_B <<< "$2"; shift 2 ;;
        --names) NAMES=$2; shift 2 ;;
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
echo "A: $BIN_A ${ARGS_A[*]}"
echo "B: $BIN_B ${ARGS_B[*]}"
echo "load before: $(uptime)"
"$BIN_A" replay "$TRACE" --target "$DEV" --allow-write --passes 1 > "$WORK/precondition.txt" 2>&1 \
    || { cat "$WORK/precondition.txt" >&2; die "the preconditioning replay failed"; }
for i in $(seq "$PAIRS"); do
    for side in A B; do
        if [ "$side" = A ]; then cmd=("$BIN_A" "${ARGS_A[@]}"); else cmd=("$BIN_B" "${ARGS_B[@]}"); fi
        "${cmd[0]}" replay "$TRACE" --target "$DEV" --allow-write "${cmd[@]:1}" \
            --json "$WORK/$side-$i.json" "$@" > "$WORK/$side-$i.txt" 2>&1 \
            || { cat "$WORK/$side-$i.txt" >&2; die "$side run $i failed"; }
    done
done
echo "load after: $(uptime)"
tm_result pairs "$WORK" "$PAIRS" "$NAMES"
