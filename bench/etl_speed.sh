#!/usr/bin/env bash
# Conversion speed of an ETW log (.etl, plain and compressed) against the
# xperf text path (`xperf -a dumper` lines) on the same disk requests: one
# synthetic request list written both ways (recorder/examples/etl_tool.rs),
# each converted RUNS times with `tracemark convert` on one core; the median
# records per second of each input and the ratios to the xperf text.
#
#   bench/etl_speed.sh [REQUESTS] [RUNS]     (defaults: 500000, 5)
#
# The machine's load average is printed first: the figures are only
# comparable within one run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REQUESTS=${1:-500000}
RUNS=${2:-5}
need taskset util-linux
build_tracemark
(cd "$BENCH_ROOT" && cargo build --release -q -p recorder --example etl_tool) || die "building etl_tool failed"
TOOL=$BENCH_TARGET/release/examples/etl_tool
work_in_scratch

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
"$TOOL" synth "$REQUESTS" plain.etl xperf.txt
"$TOOL" synth "$REQUESTS" packed.etl unused.txt --compressed
for f in plain.etl packed.etl xperf.txt; do
    echo "input $f: $(stat -c %s "$f") bytes"
done

# seconds INPUT: wall time of one conversion.
seconds() {
    local start end
    rm -f out.tmt
    start=$(date +%s.%N)
    taskset -c 0 "$TRACEMARK" convert "$1" -o out.tmt -q >/dev/null 2>&1 \
        || die "converting $1 failed"
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f\n", b - a }'
}

declare -A RATE
for f in xperf.txt plain.etl packed.etl; do
    times=()
    for _ in $(seq "$RUNS"); do
        times+=("$(seconds "$f")")
    done
    med=$(median "${times[@]}")
    RATE[$f]=$(awk -v n="$REQUESTS" -v s="$med" 'BEGIN { printf "%.0f", n / s }')
    echo "$f: runs ${times[*]} s; median $med s; ${RATE[$f]} records/s"
done
echo "ratio plain .etl / xperf text: $(ratio "${RATE[plain.etl]}" "${RATE[xperf.txt]}")"
echo "ratio compressed .etl / xperf text: $(ratio "${RATE[packed.etl]}" "${RATE[xperf.txt]}")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
