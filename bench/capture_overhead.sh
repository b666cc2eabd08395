#!/usr/bin/env bash
# What `tracemark capture` costs a busy device: binary ring buffer vs text pipe.
#
#   usage: bash bench/capture_overhead.sh [RUNS]        (root; RUNS defaults to 3)
#
# A loop device (direct I/O) over an image in /var/tmp takes fio 4 KiB random
# reads at QD32 (io_uring, O_DIRECT, 5 s), four ways per run, in rotating order:
#   alone    fio only;
#   kernel   fio with the capture's tracing set up by hand (a private instance,
#            mono clock, the three block_rq events filtered on the device) and
#            nothing reading it: the kernel's share of the cost;
#   raw      fio while `tracemark capture --device LOOP --duration 7s` runs
#            (the default reader: per-CPU trace_pipe_raw);
#   text     the same with the hidden `--text-pipe` (the text trace_pipe).
# Printed per case (medians over RUNS): fio IOPS, I/Os captured, lost events,
# capture's CPU time (user + system, from /usr/bin/time -v).
# IMG_MIB sets the image size (default 1024).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNS=${1:-3}
case $RUNS in ''|*[!0-9]*|0) die "usage: bash bench/capture_overhead.sh [RUNS]";; esac
IMG_MIB=${IMG_MIB:-1024}

need_root
need fio
need python3
need losetup mount
need flock util-linux
need_gnu_time
build_tracemark

# Tracing is shared with the capture tests: one user at a time.
exec 9>/tmp/tracemark-tests-tracefs.lock
flock -w 600 9 || die "another user holds /tmp/tracemark-tests-tracefs.lock"

WORK=$(mktemp -d /var/tmp/tracemark-capbench.XXXXXX)
LOOP=""
CAPTURE_PID=""
cleanup() {
    trace_instance_release
    if [ -n "$CAPTURE_PID" ]; then
        kill -INT "$CAPTURE_PID" 2>/dev/null || true
        wait "$CAPTURE_PID" 2>/dev/null || true
    fi
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fallocate -l "${IMG_MIB}M" "$WORK/img" 2>/dev/null || truncate -s "${IMG_MIB}M" "$WORK/img"
LOOP=$(losetup -f --show --direct-io=on "$WORK/img")

# run_fio OUT.json: the fixed random-read job on the loop device.
run_fio() {
    fio --name=randread --filename="$LOOP" --rw=randread --bs=4k --iodepth=32 \
        --ioengine=io_uring --direct=1 --time_based --runtime=5 \
        --output-format=json --output="$1" >/dev/null
}

fio_iops() {
    printf '%.0f\n' "$(tm_result "$1" jobs.0.read.iops)"
}

# run_case NAME RUN: one measurement; appends "iops ios lost cpu" to $WORK/NAME.
run_case() {
    local name=$1 run=$2 dir=$WORK/$1-$2
    mkdir -p "$dir"
    if [ "$name" = alone ]; then
        run_fio "$dir/fio.json"
        echo "$(fio_iops "$dir/fio.json") - - -" >> "$WORK/$name"
        return
    fi
    if [ "$name" = kernel ]; then
        ensure_tracefs
        INSTANCE=$TRACEFS/instances/tracemark-capbench-$$
        mkdir "$INSTANCE"
        echo 0 > "$INSTANCE/tracing_on"
        echo mono > "$INSTANCE/trace_clock"
        echo 65536 > "$INSTANCE/buffer_size_kb"
        local majmin dev_t
        majmin=$(cat "/sys/block/$(basename "$LOOP")/dev")
        dev_t=$(( (${majmin%%:*} << 20) | ${majmin##*:} ))
        for ev in block_rq_issue block_rq_complete block_rq_requeue; do
            echo "dev == $dev_t" > "$INSTANCE/events/block/$ev/filter"
            echo 1 > "$INSTANCE/events/block/$ev/enable"
        done
        echo 1 > "$INSTANCE/tracing_on"
        run_fio "$dir/fio.json"
        echo 0 > "$INSTANCE/tracing_on"
        echo 0 > "$INSTANCE/events/enable"
        rmdir "$INSTANCE"
        INSTANCE=""
        release_tracefs
        echo "$(fio_iops "$dir/fio.json") - - -" >> "$WORK/$name"
        return
    fi
    local extra=()
    [ "$name" = text ] && extra=(--text-pipe)
    /usr/bin/time -v -o "$dir/time" "$TRACEMARK" capture --device "$LOOP" --duration 7s \
        -o "$dir/t.tmt" "${extra[@]}" > "$dir/out" 2> "$dir/err" &
    CAPTURE_PID=$!
    # fio starts once tracing is on.
    for _ in $(seq 100); do
        grep -q "tracing" "$dir/err" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "tracing" "$dir/err" || die "capture did not start: $(cat "$dir/err")"
    run_fio "$dir/fio.json"
    wait "$CAPTURE_PID" || die "capture failed: $(cat "$dir/err")"
    CAPTURE_PID=""
    local ios lost cpu
    ios=$(sed -n 's/^.*: \([0-9]*\) I\/Os on .*$/\1/p' "$dir/out")
    lost=$(sed -n 's/^.*lost events: \([0-9]*\).*$/\1/p' "$dir/out")
    cpu=$(awk -F': ' '/User time \(seconds\)/ { u = $2 } /System time \(seconds\)/ { s = $2 }
        END { printf "%.2f\n", u + s }' "$dir/time")
    [ -n "$ios" ] && [ -n "$lost" ] || die "cannot read the capture's summary: $(cat "$dir/out")"
    if [ "$name" = raw ] && grep -q "reading the text trace_pipe" "$dir/err"; then
        die "the raw case fell back to the text pipe: $(cat "$dir/err")"
    fi
    echo "$(fio_iops "$dir/fio.json") $ios $lost $cpu" >> "$WORK/$name"
}

CASES=(alone kernel raw text)
for run in $(seq "$RUNS"); do
    # Rotate the order so no case always runs first (cache, turbo, thermal).
    shift_by=$(( (run - 1) % ${#CASES[@]} ))
    order=("${CASES[@]:$shift_by}" "${CASES[@]:0:$shift_by}")
    for name in "${order[@]}"; do
        run_case "$name" "$run"
        echo "run $run $name: $(tail -n 1 "$WORK/$name")" >&2
    done
done

# shellcheck disable=SC2046 # one argument per figure
column_median() { median $(awk -v c="$2" '{ print $c }' "$WORK/$1"); }

base=$(column_median alone 1)
echo
echo "capture overhead: fio randread 4k QD32 io_uring O_DIRECT 5 s on $LOOP (${IMG_MIB} MiB image), medians of $RUNS"
printf '%-8s %10s %8s %12s %8s %12s\n' case "fio IOPS" "vs alone" "I/Os kept" lost "capture CPU"
printf '%-8s %10s %8s %12s %8s %12s\n' alone "$base" 1.000 - - -
kernel=$(column_median kernel 1)
printf '%-8s %10s %8s %12s %8s %12s\n' kernel "$kernel" "$(ratio "$kernel" "$base")" - - -
for name in raw text; do
    iops=$(column_median "$name" 1)
    printf '%-8s %10s %8s %12s %8s %11ss\n' "$name" "$iops" "$(ratio "$iops" "$base")" \
        "$(column_median "$name" 2)" "$(column_median "$name" 3)" "$(column_median "$name" 4)"
done
