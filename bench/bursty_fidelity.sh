#!/usr/bin/env bash
# Realtime fidelity from outside on two trace shapes: evenly spaced I/Os
# (bench/gen_iolog.py) and the bursts a real program issues (an iolog written
# by fio itself: `fio --rw=randread --bs=4k --iodepth=4 --rate_iops=RATE
# --write_iolog`, I/Os in small bursts at the same microsecond).
#
#   usage: bash bench/bursty_fidelity.sh [RUNS]          (root; RUNS defaults to 5)
#
# On a private zram device filled with random data, each run replays each
# shape with every build named in BUILDS (default: this tree's; e.g.
# BUILDS="before=/tmp/tm-before after=target/release/tracemark", taken in
# turn within a run, so a loaded machine weighs on all alike), realtime, open
# loop, default options (as the issue's measurement), and with fio's timed
# replay of the same iolog (the reference: what a C replayer does with the
# same bursts). The time each I/O reaches the device comes from tracefs
# block:block_bio_queue in a private instance (bench/lateness.py): jitter
# p99 = p99 of |lateness - median lateness|. Also printed: the lateness by
# position in a burst (where the later I/Os of a burst lose their time) and
# tracemark's own record of how long its threads waited for a CPU
# (fidelity.cpu_wait_s). The table gives per shape and replayer the median
# and the worst of the RUNS runs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNS=${1:-5}
case $RUNS in ''|*[!0-9]*) die "usage: bash bench/bursty_fidelity.sh [RUNS]";; esac
RATE=${RATE:-20000}
DURATION_S=${DURATION_S:-3}
SPAN_MIB=512
IOS=$((RATE * DURATION_S))

need_root
need fio
need python3
need mount
build_tracemark
BUILDS=${BUILDS:-"tracemark=$TRACEMARK"}
for b in $BUILDS; do [ -x "${b#*=}" ] || die "${b#*=} is not an executable"; done

WORK=$(mktemp -d /var/tmp/tracemark-bursty.XXXXXX)
cleanup() {
    trace_instance_release
    [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N"
    rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

zram_new "$SPAN_MIB"

echo "# bursty_fidelity: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $(fio --version), tracemark commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $RATE IOPS, ${DURATION_S} s; $ZRAM (zram, io-wq path); builds: $BUILDS"

# The two shapes, each as .tmt (replayed), fio iolog (fio's replay) and csv
# (the schedule bench/lateness.py compares against).
python3 "$BENCH_ROOT/bench/gen_iolog.py" "$WORK/even.src.iolog" "$IOS" "$SPAN_MIB" 100 "$RATE" --file "$ZRAM"
fio --name=bursty --filename="$ZRAM" --rw=randread --bs=4k --iodepth=4 --rate_iops="$RATE" \
    --ioengine=io_uring --direct=1 --size="${SPAN_MIB}M" --runtime="$DURATION_S" --time_based \
    --write_iolog="$WORK/bursty.src.iolog" --output="$WORK/bursty.fio.txt" >/dev/null
for shape in even bursty; do
    "$TRACEMARK" convert "$WORK/$shape.src.iolog" -o "$WORK/$shape.tmt" --name "$shape" -q
    "$TRACEMARK" export "$WORK/$shape.tmt" --to fio --fio-file "$ZRAM" -o "$WORK/$shape.iolog"
    "$TRACEMARK" export "$WORK/$shape.tmt" --to csv -o "$WORK/$shape.csv"
    python3 - "$WORK/$shape.csv" <<'PY'
import sys
t = [int(l.split(",")[0]) for l in list(open(sys.argv[1]))[1:] if l.split(",")[1] in ("read", "write")]
same = sum(1 for a, b in zip(t, t[1:]) if b - a <= 1000)
print(f"# {sys.argv[1].rsplit('/', 1)[1]}: {len(t)} I/Os, {same} of them ({100 * same / max(1, len(t)):.0f} %) within 1 µs of the one before")
PY
done

trace_instance bursty private
trace_device "$ZRAM"

declare -A R
add() { R[$1]="${R[$1]:-} $2"; }
record() { # KEY SHAPE NAME [RESULT.json]
    local key=$1 shape=$2 name=$3 json=${4:-}
    python3 "$BENCH_ROOT/bench/lateness.py" "$WORK/$shape.csv" "$WORK/$name.trace" "$DEVNUM" > "$WORK/$name.late.json"
    local jit p99 seen spread last wait=nan own=nan
    read -r jit p99 seen spread last < <(tm_result "$WORK/$name.late.json" \
        jitter_us.p99 lateness_us.p99 observed burst_spread)
    if [ -n "$json" ]; then
        read -r wait own < <(tm_result "$json" traces.0.fidelity.cpu_wait_s? traces.0.fidelity.lateness_us.p99)
        [ "$wait" = nan ] || wait=$(awk -v w="$wait" 'BEGIN { printf "%.1f", w * 1e3 }')
        own=$(awk -v o="$own" 'BEGIN { printf "%.1f", o }')
    fi
    add "$key.jit" "$jit"; add "$key.p99" "$p99"; add "$key.wait" "$wait"; add "$key.spread" "$spread"
    add "$key.own" "$own"
    printf '  %-26s jitter p99 %8.1f µs | lateness p99 %8.1f µs | own p99 %s µs | %s seen | CPU wait %s ms | burst position %s - first, p50: %s µs\n' \
        "$key" "$jit" "$p99" "$own" "$seen" "$wait" "$last" "$spread"
}

KEYS=()
for run in $(seq 1 "$RUNS"); do
    echo "# run $run/$RUNS (load $(cut -d' ' -f1 /proc/loadavg))"
    for shape in even bursty; do
        for b in $BUILDS; do
            name=${b%%=*}
            traced "$shape-$name" "${b#*=}" replay "$WORK/$shape.tmt" --target "$ZRAM" --mode realtime \
                --mapping identity --passes 1 --no-warmup --read-only --open-loop \
                --precondition skip --json "$WORK/$shape-$name.json" >/dev/null
            record "$shape.$name" "$shape" "$shape-$name" "$WORK/$shape-$name.json"
            [ "$run" = 1 ] && KEYS+=("$shape.$name")
        done
        traced "$shape-fio" fio --name=replay --read_iolog="$WORK/$shape.iolog" --replay_redirect="$ZRAM" \
            --iodepth=32 --direct=1 --ioengine=io_uring --output-format=json --output="$WORK/fio.json"
        record "$shape.fio" "$shape" "$shape-fio"
        [ "$run" = 1 ] && KEYS+=("$shape.fio")
    done
done

worst() { printf '%s\n' "$@" | sort -g | tail -1; }
echo
echo "## Realtime jitter by trace shape, $RATE IOPS, ${DURATION_S} s, zram, from outside (block_bio_queue), $RUNS runs (load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| shape | replayer | jitter p99 µs, median | jitter p99 µs, worst run | lateness p99 µs, median | own lateness p99 µs, median | last burst position's p50 - first's, µs, median | CPU wait ms, median | CPU wait ms, worst run |"
echo "|---|---|---|---|---|---|---|---|---|"
for k in "${KEYS[@]}"; do
    # shellcheck disable=SC2086 # R[KEY] is a list of figures
    printf '| %s | %s | **%.0f** | %.0f | %.0f | %s | %.1f | %s | %s |\n' "${k%%.*}" "${k#*.}" \
        "$(median ${R[$k.jit]})" "$(worst ${R[$k.jit]})" "$(median ${R[$k.p99]})" "$(median ${R[$k.own]})" \
        "$(median ${R[$k.spread]})" \
        "$(median ${R[$k.wait]})" "$(worst ${R[$k.wait]})"
done
echo
echo "own lateness: the replayer's record of when it submitted each I/O against the schedule"
echo "(fidelity.lateness_us; fio keeps none); the rest of the lateness at block_bio_queue is"
echo "the kernel's hand-off to the io-wq worker that runs zram's I/O."
echo
for k in $(printf '%s\n' "${!R[@]}" | sort); do echo "- $k:${R[$k]}"; done
