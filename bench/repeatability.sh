#!/usr/bin/env bash
# Run-to-run repeatability of the suite score: N consecutive `tracemark suite`
# runs on one target, then per trace and for the suite the median score, the
# spread ((max - min) / median) and the coefficient of variation (sample
# standard deviation / mean), and `tracemark compare` of the first two runs.
#
#   bench/repeatability.sh [-n RUNS] [--zram SIZE | --target PATH] [-o DIR]
#                          [--after-dd K] [--versus DIR2] [--fio-floor SECONDS]
#                          [--fresh-each]
#                          [-- SUITE-ARGS...]
#
#   -n RUNS       consecutive runs (default 5)
#   --zram SIZE   a private zram device of SIZE (e.g. 8G), fresh before run 1,
#                 removed at the end (needs root; never /dev/zram0)
#   --target P    a file or block device (default: the scratch file in DIR)
#   -o DIR        where the result files go (default: a new temp dir, kept)
#   --after-dd K  (--zram) then fill the whole device with `dd if=/dev/urandom
#                 oflag=direct` and run K more times: the suite score after the
#                 fill over the median before (preconditioning should make the
#                 fresh device score like the filled one: within 5 %)
#   --fresh-each  (--zram) reset the device before every run, not only the
#                 first: every run starts from the same state (each run's
#                 preconditioning writes the regions again), so a drift that
#                 stays is not the device's accumulated state
#   --versus DIR2 then `tracemark compare` every run of DIR2 (another
#                 repeatability.sh result directory, e.g. another target)
#                 against this one's: the suite line says whether the
#                 difference is significant given the runs' spread
#   --fio-floor S after each suite run, fio's own io_uring engine reads the same
#                 target for S seconds (4 KiB random reads at QD1, paced at
#                 2000 IOPS like a desktop trace's idle-separated I/O, over the
#                 first 256 MiB, which run 1's preconditioning wrote; read-only)
#                 and the spread of its mean latency over the runs is printed
#                 beside the suite's: the machine's own run-to-run noise floor,
#                 measured in the same minutes by a tool that is not tracemark;
#                 under the suite's CPU idle policy (a 0 us CPU latency
#                 request held for fio too, unless SUITE-ARGS say --cpu-idle os)
#   SUITE-ARGS    passed to every `tracemark suite` (e.g. --passes 3 --profile quick)
#
# Prints the load (uptime) before and after: on a shared machine say what ran.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNS=5
ZRAM_SIZE=
TARGET=
OUT=
AFTER_DD=0
VERSUS=
FIO_FLOOR=0
FRESH_EACH=0
while [ $# -gt 0 ]; do
    case "$1" in
        -n) RUNS=$2; shift 2 ;;
        --zram) ZRAM_SIZE=$2; shift 2 ;;
        --target) TARGET=$2; shift 2 ;;
        -o) OUT=$2; shift 2 ;;
        --after-dd) AFTER_DD=$2; shift 2 ;;
        --versus) VERSUS=$2; shift 2 ;;
        --fio-floor) FIO_FLOOR=$2; shift 2 ;;
        --fresh-each) FRESH_EACH=1; shift ;;
        --) shift; break ;;
        *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[ -n "$ZRAM_SIZE" ] && [ -n "$TARGET" ] && die "give --zram or --target, not both"
[ "$FRESH_EACH" = 1 ] && [ -z "$ZRAM_SIZE" ] && die "--fresh-each needs --zram (it resets the device)"
[ "$AFTER_DD" -gt 0 ] && [ -z "$ZRAM_SIZE" ] && die "--after-dd needs --zram (it overwrites the device)"
[ -z "$VERSUS" ] || ls "$VERSUS"/run-*.json >/dev/null 2>&1 || die "no run-*.json in $VERSUS"
need python3
[ "$FIO_FLOOR" -gt 0 ] && need fio
# (TRACEMARK_BIN: measure that binary instead of building the tree's; lib.sh.)
build_tracemark
OUT=${OUT:-$(mktemp -d /tmp/tracemark-repeatability.XXXXXX)}
mkdir -p "$OUT"

ZRAM_ID=
cleanup() {
    [ -z "$ZRAM_ID" ] || zram_remove "$ZRAM_ID"
}
trap cleanup EXIT

EXTRA=()
if [ -n "$ZRAM_SIZE" ]; then
    need_root
    ZRAM_ID=$(zram_add "$ZRAM_SIZE") || exit 1
    TARGET=/dev/zram$ZRAM_ID
    EXTRA=(--allow-write)
fi
if [ -z "$TARGET" ]; then
    TARGET=$OUT/tracemark-scratch.bin
fi
# The precondition marker of this run's target stays with the results.
export TRACEMARK_STATE_DIR=${TRACEMARK_STATE_DIR:-$OUT/state}

echo "target $TARGET, $RUNS runs, results in $OUT"
echo "load before: $(uptime)"
for i in $(seq "$RUNS"); do
    if [ "$FRESH_EACH" = 1 ] && [ "$i" -gt 1 ]; then
        zram_reset "$ZRAM_ID"
        echo "$ZRAM_SIZE" > "/sys/block/zram$ZRAM_ID/disksize"
    fi
    "$TRACEMARK" suite --target "$TARGET" "${EXTRA[@]}" --json "$OUT/run-$i.json" "$@" \
        > "$OUT/run-$i.txt" 2>&1 || { cat "$OUT/run-$i.txt" >&2; die "run $i failed"; }
    grep -E '^suite \(geometric mean\)' "$OUT/run-$i.txt" | sed "s/^/run $i: /"
    if [ "$FIO_FLOOR" -gt 0 ]; then
        # fio under the suite's CPU idle policy: tracemark's default (poll)
        # holds a 0 us CPU latency request while it runs, so fio gets one too.
        if [[ " $* " != *" --cpu-idle os "* ]] && [ -w /dev/cpu_dma_latency ]; then
            exec 3>/dev/cpu_dma_latency
            printf '\0\0\0\0' >&3
        fi
        fio --name=floor --filename="$TARGET" --readonly --rw=randread --bs=4k --size=256m \
            --direct=1 --ioengine=io_uring --iodepth=1 --rate_iops=2000 --time_based \
            --runtime="$FIO_FLOOR" --output-format=json > "$OUT/fio-floor-$i.json" 2>/dev/null \
            || die "fio on $TARGET failed (run $i)"
        exec 3>&-
        read -r lat_ns iops < <(tm_result "$OUT/fio-floor-$i.json" jobs.0.read.lat_ns.mean jobs.0.read.iops)
        awk -v i="$i" -v l="$lat_ns" -v n="$iops" 'BEGIN { printf "run %s: fio QD1 paced 4 KiB reads: mean latency %.1f us (total: submission to completion), %.0f IOPS\n", i, l / 1e3, n }'
    fi
done
echo "load after: $(uptime)"

tm_result runs "$OUT" "$RUNS"
if [ "$RUNS" -ge 2 ]; then
    echo
    "$TRACEMARK" compare "$OUT/run-1.json" "$OUT/run-2.json" | grep -E 'significant|^suite|^score' || true
fi

suite_score() { printf '%.0f\n' "$(tm_result "$1" suite.score)"; }

if [ "$AFTER_DD" -gt 0 ]; then
    echo
    echo "filling $TARGET with dd (load $(cut -d' ' -f1-3 /proc/loadavg))"
    dd if=/dev/urandom of="$TARGET" bs=4M oflag=direct status=none 2>/dev/null || true
    before=()
    for i in $(seq "$RUNS"); do before+=("$(suite_score "$OUT/run-$i.json")"); done
    after=()
    for i in $(seq "$AFTER_DD"); do
        "$TRACEMARK" suite --target "$TARGET" "${EXTRA[@]}" --json "$OUT/after-dd-$i.json" "$@" \
            > "$OUT/after-dd-$i.txt" 2>&1 || { cat "$OUT/after-dd-$i.txt" >&2; die "after-dd run $i failed"; }
        after+=("$(suite_score "$OUT/after-dd-$i.json")")
        echo "after dd, run $i: suite score ${after[-1]} (load $(cut -d' ' -f1-3 /proc/loadavg))"
    done
    b=$(median "${before[@]}"); a=$(median "${after[@]}")
    echo "suite score: median $b before the fill (fresh device, preconditioned), median $a after: after/before $(ratio "$a" "$b")"
fi

if [ -n "$VERSUS" ]; then
    echo
    echo "tracemark compare $VERSUS/run-*.json $OUT/run-*.json (suite line; n.s. = not significant):"
    "$TRACEMARK" compare "$VERSUS"/run-*.json "$OUT"/run-*.json | grep -E -m2 '^(suite|n\.s\.)' || true
fi
