#!/bin/bash
# How the suite's idle handling changes each trace's score and the order of
# two targets: every trace of a suite replayed in realtime with idle periods
# capped at 10 ms, 100 ms, 1 s and kept whole, on
#   file: the default scratch file, in DIR (default /var/tmp: the machine's disk)
#   zram: a private zram device (hot_add; removed on exit), filled by the replay's writes only
# Each target first gets one compressed pass of the suite (unscored: it fills
# and warms the target), then one realtime pass per policy (--passes 1
# --no-warmup, to keep the uncapped runs within minutes).
# Prints a Markdown table: per trace and policy the score on each target and
# the zram/file ratio; the suite's geometric mean last.
# Usage (root): bench/idle_policy.sh [--suite FILE | --profile NAME] [DIR]
# Results: $OUT (default /var/tmp/tracemark-idle-policy/) holds every result JSON.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
need python3
SUITE_ARGS=()
case "${1:-}" in
    --suite|--profile) SUITE_ARGS=("$1" "$2"); shift 2 ;;
esac
DIR=${1:-/var/tmp}
OUT=${OUT:-/var/tmp/tracemark-idle-policy}
CAPS=${CAPS:-"10ms 100ms 1s none"}
ZRAM_SIZE=${ZRAM_SIZE:-8G}
build_tracemark
mkdir -p "$OUT" "$DIR/tracemark-idle-file"
SCRATCH=$DIR/tracemark-idle-file/scratch.bin
# A copy of the binary: a rebuild during the (long) run changes nothing.
cp "$TRACEMARK" "$OUT/tracemark"
TRACEMARK=$OUT/tracemark

ZRAM=
cleanup() {
    if [ -n "$ZRAM" ]; then
        echo 1 > "/sys/block/zram$ZRAM/reset" 2>/dev/null || true
        echo "$ZRAM" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    fi
    rm -f "$SCRATCH"
    rmdir "$DIR/tracemark-idle-file" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
modprobe zram 2>/dev/null || true
ZRAM=$(cat /sys/class/zram-control/hot_add)
echo "$ZRAM_SIZE" > "/sys/block/zram$ZRAM/disksize"

declare -A TARGET=([file]=$SCRATCH [zram]=/dev/zram$ZRAM)
run() { # NAME TARGET ARGS...
    local name=$1 target=$2; shift 2
    echo "+ tracemark suite ${SUITE_ARGS[*]} --target $target $* --json $OUT/$name.json" >&2
    "$TRACEMARK" suite "${SUITE_ARGS[@]}" --target "$target" --allow-write "$@" --json "$OUT/$name.json" >"$OUT/$name.txt"
}
for t in file zram; do
    run "warm-$t" "${TARGET[$t]}" --mode compressed --passes 1 --no-warmup
done
for cap in $CAPS; do
    if [ "$cap" = none ]; then policy=(--keep-idle); else policy=(--idle-cap "$cap"); fi
    for t in file zram; do
        run "$t-$cap" "${TARGET[$t]}" --passes 1 --no-warmup "${policy[@]}"
    done
done

# shellcheck disable=SC2086 # CAPS is a list
tm_result caps "$OUT" $CAPS
