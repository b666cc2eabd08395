#!/usr/bin/env bash
# Realtime fidelity measured from outside, on a private zram device
# (io-wq path) and a private loop device over a file in /dev/shm (inline path).
#
#   usage: bash bench/replay_fidelity.sh [RUNS]          (root; RUNS defaults to 5)
#
# A RATE (default 20000) IOPS, DURATION_S (default 3) s trace of 4 KiB random
# reads (READ_PCT=100; set 70 for a 70/30 mix) made by bench/gen_iolog.py is
# replayed by tracemark realtime open loop, tracemark realtime closed loop,
# and fio's timed iolog replay of the same records, each RUNS times per
# device. The time each I/O reaches the device is recorded by the kernel:
# tracefs block:block_bio_queue in a private tracing instance, filtered on the
# device. bench/lateness.py gives, in µs: lateness (against the schedule
# anchored at the least-late I/O), jitter (|lateness - median lateness|), the
# inter-arrival error, and how many I/Os reached the device out of trace
# order. Medians over runs are printed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNS=${1:-5}
case $RUNS in ''|*[!0-9]*) die "usage: bash bench/replay_fidelity.sh [RUNS]";; esac
RATE=${RATE:-20000}
DURATION_S=${DURATION_S:-3}
READ_PCT=${READ_PCT:-100}
DEVICES=${DEVICES:-"zram loop"}
SPAN_MIB=512
IOS=$((RATE * DURATION_S))

need_root
need fio
need python3
need losetup mount
build_tracemark

WORK=$(mktemp -d /var/tmp/tracemark-fidelity.XXXXXX)
SHM=$(mktemp -d /dev/shm/tracemark-fidelity.XXXXXX)
LOOP=""
cleanup() {
    trace_instance_release
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
    [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N"
    rm -rf --one-file-system "$WORK" "$SHM"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

zram_new "$SPAN_MIB"
truncate -s $(((SPAN_MIB + 64) << 20)) "$SHM/backing"
LOOP=$(losetup -f --show "$SHM/backing")
dd if=/dev/urandom of="$LOOP" bs=1M count="$SPAN_MIB" oflag=direct status=none

echo "# replay_fidelity: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $(fio --version), tracemark commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $RATE IOPS, $IOS I/Os, ${READ_PCT}% reads; $ZRAM (zram), $LOOP (loop over tmpfs)"

python3 "$BENCH_ROOT/bench/gen_iolog.py" "$WORK/rt.src.iolog" "$IOS" "$SPAN_MIB" "$READ_PCT" "$RATE" --file "$ZRAM"
"$TRACEMARK" convert "$WORK/rt.src.iolog" -o "$WORK/rt.tmt" --name rt -q
"$TRACEMARK" export "$WORK/rt.tmt" --to fio --fio-file "$ZRAM" -o "$WORK/rt.iolog"
"$TRACEMARK" export "$WORK/rt.tmt" --to csv -o "$WORK/rt.csv"
write=$([ "$READ_PCT" = 100 ] && echo --read-only || echo --allow-write)

trace_instance fidelity private
late() { # NAME -> "lat_p50 lat_p99 jitter_p99 gap_p99 out_of_order observed achieved_s"
    python3 "$BENCH_ROOT/bench/lateness.py" "$WORK/rt.csv" "$WORK/$1.trace" "$DEVNUM" > "$WORK/$1.late.json"
    tm_result "$WORK/$1.late.json" lateness_us.p50 lateness_us.p99 jitter_us.p99 interarrival_error_us.p99 out_of_order observed achieved_s
}

declare -A R
add() { R[$1]="${R[$1]:-} $2"; }
record() { # KEY NAME
    local p50 p99 jit gap ooo seen ach
    read -r p50 p99 jit gap ooo seen ach < <(late "$2")
    add "$1.p50" "$p50"; add "$1.p99" "$p99"; add "$1.jit" "$jit"; add "$1.gap" "$gap"; add "$1.ooo" "$ooo"; add "$1.dur" "$ach"
    printf '  %-22s lateness p50 %8.1f p99 %10.1f | jitter p99 %8.1f | inter-arrival p99 %7.1f | out of order %5s of %s | %.3f s\n' "$1" "$p50" "$p99" "$jit" "$gap" "$ooo" "$seen" "$ach"
}
# --cpu-idle os: the CPUs keep their idle states, as they do for fio.
TM=("$TRACEMARK" replay "$WORK/rt.tmt" --mode realtime --mapping identity --passes 1 --no-warmup --queue-depth 32 "$write" --cpu-idle os)

for run in $(seq 1 "$RUNS"); do
    echo "# run $run/$RUNS (load $(cut -d' ' -f1 /proc/loadavg))"
    for kind in $DEVICES; do
        dev=$([ "$kind" = zram ] && echo "$ZRAM" || echo "$LOOP")
        trace_device "$dev"
        traced ol "${TM[@]}" --target "$dev" --open-loop --json "$WORK/ol.json" >/dev/null
        record "$kind.tm_open" ol
        traced cl "${TM[@]}" --target "$dev" --json "$WORK/cl.json" >/dev/null
        record "$kind.tm_closed" cl
        traced fio fio --name=replay --read_iolog="$WORK/rt.iolog" --replay_redirect="$dev" --iodepth=32 \
            --direct=1 --ioengine=io_uring --output-format=json --output="$WORK/fio.json"
        record "$kind.fio" fio
    done
done

# shellcheck disable=SC2086 # R[KEY] is a list of figures
m() { median ${R[$1]}; }
echo
echo "## Realtime fidelity, $RATE IOPS, ${DURATION_S} s, from outside (block_bio_queue), medians of $RUNS runs, µs (load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| device | replayer | lateness p50 | lateness p99 | jitter p99 | inter-arrival error p99 | out of order (of $IOS) | achieved s |"
echo "|---|---|---|---|---|---|---|---|"
for kind in $DEVICES; do
    for who in tm_open:"tracemark --open-loop" tm_closed:"tracemark (closed loop)" fio:"fio timed replay"; do
        k=$kind.${who%%:*}
        printf '| %s | %s | %.0f | %.0f | **%.0f** | %.0f | %.0f | %.3f |\n' "$kind" "${who#*:}" "$(m "$k.p50")" "$(m "$k.p99")" "$(m "$k.jit")" "$(m "$k.gap")" "$(m "$k.ooo")" "$(m "$k.dur")"
    done
done
echo
for k in $(printf '%s\n' "${!R[@]}" | sort); do echo "- $k:${R[$k]}"; done
