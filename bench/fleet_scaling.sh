#!/usr/bin/env bash
# fleet_scaling.sh [--ranks "1 2 4"] [--rounds N] [--rows N] [--spacing-us US]
#                  [--mode compressed|realtime]
#
# A fleet replay on this machine: a generated Alibaba-format trace of 8
# volumes (converted with `tracemark convert`) replayed by 1, 2 and 4 ranks
# under `mpirun` from one --start-at, each rank on its own private zram
# device, then `tracemark merge`. Per rank count, the medians over the rounds
# of the fleet's IOPS and MB/s over the common interval, the merged
# read+write p99, the worst start error and how long after the fastest rank
# the slowest finished. The rank counts are taken in a rotated order each
# round. compressed (default) measures what the ranks can issue together;
# realtime (rows --spacing-us apart) whether they keep the shared timeline.
#
# Needs root, mpirun (apt-get install -y openmpi-bin), python3, zram.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RANKS="1 2 4"
ROUNDS=3
ROWS=200000
SPACING_US=50
MODE=compressed
while [ $# -gt 0 ]; do
    case $1 in
        --ranks) RANKS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --rows) ROWS=$2; shift 2 ;;
        --spacing-us) SPACING_US=$2; shift 2 ;;
        --mode) MODE=$2; shift 2 ;;
        *) die "unknown option $1" ;;
    esac
done
need_root
need mpirun openmpi-bin
need python3
build_tracemark

WORK=$(mktemp -d /var/tmp/tracemark-bench.XXXXXX)
ZRAMS=()
cleanup() {
    for id in "${ZRAMS[@]}"; do zram_remove "$id"; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

"$(dirname "$0")/gen_alibaba.sh" "$ROWS" "$SPACING_US" > "$WORK/io_traces.csv"
echo "trace: $ROWS rows over 8 volumes, $SPACING_US µs apart (up to 300 µs out of order)"
"$TRACEMARK" convert --format alibaba "$WORK/io_traces.csv" -o "$WORK/dc.tmt" | sed -n 1p
echo "mode $MODE, ranks: $RANKS, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"

declare -A IOPS MBS P99 START SLOW SPAN
round_of() { # N: one fleet run of N ranks; appends its figures
    local n=$1 dir="$WORK/n$1" start
    rm -rf "$dir"; mkdir -p "$dir"
    for r in $(seq 0 $((n - 1))); do
        local id; id=$(zram_add 640M)
        ZRAMS+=("$id")
        ln -s "/dev/zram$id" "$dir/dev$r"
    done
    start=$(($(date +%s) + 3))
    (cd "$dir" && mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$n" "$TRACEMARK" replay "$WORK/dc.tmt" \
        --shard auto --target 'dev{rank}' --allow-write --precondition skip --mode "$MODE" \
        --passes 1 --no-warmup --start-at "$start" --json 'r{rank}.json' >run.log 2>&1) \
        || die "mpirun -n $n failed: $(tail -5 "$dir/run.log")"
    (cd "$dir" && "$TRACEMARK" merge r*.json -o fleet.json >merge.log) || die "merge failed: $(cat "$dir/merge.log")"
    local slow_s
    read -r iops mbs p99 start_err slow_s span < <(tm_result "$dir/fleet.json" iops bandwidth_mb_s \
        access_latency_us.p99? worst_start_error_us? slowest_rank.after_fastest_s? interval_s)
    [ "$slow_s" != nan ] || slow_s=0
    slow=$(awk -v s="$slow_s" 'BEGIN { print s * 1e3 }')
    IOPS[$n]+=" $iops"; MBS[$n]+=" $mbs"; P99[$n]+=" $p99"
    START[$n]+=" $start_err"; SLOW[$n]+=" $slow"; SPAN[$n]+=" $span"
    for id in "${ZRAMS[@]}"; do zram_remove "$id"; done
    ZRAMS=()
}

read -r -a order <<< "$RANKS"
for round in $(seq 1 "$ROUNDS"); do
    for i in "${!order[@]}"; do
        n=${order[$(((i + round - 1) % ${#order[@]}))]}
        round_of "$n"
    done
done

printf '%5s %12s %10s %12s %16s %18s %10s\n' ranks "IOPS" "MB/s" "p99 µs" "worst start µs" "slowest after ms" "span s"
for n in "${order[@]}"; do
    # shellcheck disable=SC2086
    printf '%5s %12.0f %10.1f %12.1f %16.1f %18.1f %10.3f\n' "$n" \
        "$(median ${IOPS[$n]})" "$(median ${MBS[$n]})" "$(median ${P99[$n]})" \
        "$(median ${START[$n]})" "$(median ${SLOW[$n]})" "$(median ${SPAN[$n]})"
done
