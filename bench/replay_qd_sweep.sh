#!/usr/bin/env bash
# Compressed replay against fio's replay at every queue depth, on a
# private zram device (io-wq path) and on a private loop device over a file in
# /dev/shm (inline path), with the CPU each program spends per I/O.
#
#   usage: bash bench/replay_qd_sweep.sh [RUNS]          (root; RUNS defaults to 5)
#
# For each queue depth QD (QDS, default "1 2 4 8 16 32 64"): fio writes a
# trace of IOS (default 200000) 4 KiB random 70/30 read/write I/Os at that
# depth (--write_iolog), tracemark converts it; then RUNS paired runs on each
# device (DEVICES, default "zram loop"), the first program alternating:
#   fio --read_iolog --replay_redirect=DEV --replay_no_stall=1 --iodepth=QD
#   tracemark replay --mode compressed --queue-depth QD --mapping identity
# Before every single run the device state is made fresh: the zram device is
# reset, sized and filled with the same random data; the loop device gets a
# fresh backing file (a copy of the same random data). IOPS: fio's read.iops +
# write.iops; tracemark's ios / playback_s. CPU: user + system seconds of the
# whole process (io-wq workers included; bench/cpu_run.py) per million I/Os,
# with the split per thread kind. The figure to quote is the median of the
# per-run ratios (tracemark / fio).
# Then CPU per I/O at the same achieved rate: a RATE (default 20000) IOPS
# trace of RATE_IOS (default 60000) I/Os, tracemark realtime (closed loop)
# against fio's timed iolog replay (same records), RUNS pairs per device.
# CPU_IDLE=os (default) or poll: with poll, a 0 us CPU latency request
# (/dev/cpu_dma_latency) is held for the whole sweep, so neither program's
# CPUs enter idle states (tracemark's default for suites, `--cpu-idle poll`);
# with os both keep them. Either way both programs run under the same policy.
# Devices are private (zram via /sys/class/zram-control/hot_add, loop via
# losetup -f) and removed at the end, also on failure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNS=${1:-5}
case $RUNS in ''|*[!0-9]*) die "usage: bash bench/replay_qd_sweep.sh [RUNS]";; esac
QDS=${QDS:-"1 2 4 8 16 32 64"}
IOS=${IOS:-200000}
DEVICES=${DEVICES:-"zram loop"}
RATE=${RATE:-20000}
RATE_IOS=${RATE_IOS:-60000}
SPAN_MIB=1024
CPU_IDLE=${CPU_IDLE:-os}
case $CPU_IDLE in os|poll) ;; *) die "CPU_IDLE must be os or poll";; esac

need_root
need fio
need python3
need losetup mount
build_tracemark

WORK=$(mktemp -d /var/tmp/tracemark-sweep.XXXXXX)
SHM=$(mktemp -d /dev/shm/tracemark-sweep.XXXXXX)
LOOP=""
cleanup() {
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
    [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N"
    rm -rf "$WORK" "$SHM"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

zram_new

echo "# replay_qd_sweep: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $(fio --version), tracemark $($TRACEMARK --version | awk '{print $2}'), commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); CPU idle states: $CPU_IDLE; devices: $ZRAM (zram, private), loop over $SHM (tmpfs)"
head -c $((SPAN_MIB << 20)) /dev/urandom > "$SHM/random"

# fresh KIND: a device in a known state; sets DEV.
fresh() {
    case $1 in
    zram)
        zram_reset "$ZRAM_N"
        echo $(((SPAN_MIB + 64) << 20)) > "/sys/block/zram$ZRAM_N/disksize"
        dd if="$SHM/random" of="$ZRAM" bs=1M oflag=direct status=none
        DEV=$ZRAM
        ;;
    loop)
        [ -n "$LOOP" ] && losetup -d "$LOOP"
        LOOP=""
        rm -f "$SHM/backing"
        cp "$SHM/random" "$SHM/backing"
        truncate -s $(((SPAN_MIB + 200) << 20)) "$SHM/backing"
        LOOP=$(losetup -f --show "$SHM/backing")
        DEV=$LOOP
        ;;
    esac
}

# Both programs under one CPU idle policy: with os the CPUs keep their idle
# states; with poll this shell holds the request that tracemark's own
# `--cpu-idle poll` would, for fio too (the kernel drops it with fd 3).
if [ "$CPU_IDLE" = poll ]; then
    [ -w /dev/cpu_dma_latency ] || die "CPU_IDLE=poll needs /dev/cpu_dma_latency"
    exec 3>/dev/cpu_dma_latency
    printf '\0\0\0\0' >&3
fi
TM_REPLAY=("$TRACEMARK" replay --allow-write --mapping identity --passes 1 --no-warmup --cpu-idle "$CPU_IDLE")
tm_iops() { tm_result "$1" replay_iops; }
tm_ios() { tm_result "$1" traces.0.ios; }
fio_iops() { tm_result "$1" fio_iops; }
fio_ios() { tm_result "$1" fio_ios; }
# cpu_per_mio CPU.json IOS: (user + sys) s per million I/Os
cpu_per_mio() { awk -v c="$(tm_result "$1" cpu_s)" -v n="$2" 'BEGIN { print c * 1e6 / n }'; }
threads() { tm_result "$1" busy_threads; }

# run_tm KIND OUT TRACE MODE QD [args]; run_fio KIND OUT IOLOG QD [args]:
# each on a fresh device, under cpu_run.py (OUT.cpu).
run_tm() {
    local kind=$1 out=$2 trace=$3 mode=$4 qd=$5; shift 5
    fresh "$kind"
    python3 "$BENCH_ROOT/bench/cpu_run.py" "$out.cpu" -- \
        "${TM_REPLAY[@]}" --target "$DEV" "$trace" --mode "$mode" --queue-depth "$qd" --json "$out" "$@" >/dev/null
}
run_fio() {
    local kind=$1 out=$2 log=$3 qd=$4; shift 4
    fresh "$kind"
    python3 "$BENCH_ROOT/bench/cpu_run.py" "$out.cpu" -- \
        fio --name=rep --read_iolog="$log" --replay_redirect="$DEV" --ioengine=io_uring --direct=1 \
        --iodepth="$qd" --output-format=json "$@" > "$out"
}

declare -A R   # R[key]="v1 v2 ..."
add() { R[$1]="${R[$1]:-} $2"; }

# Traces, one per queue depth, written by fio on the zram device.
for qd in $QDS; do
    fresh zram
    fio --name=gen --filename="$DEV" --rw=randrw --rwmixread=70 --bs=4k --size=1g --direct=1 \
        --ioengine=io_uring --iodepth="$qd" --number_ios="$IOS" --write_iolog="$WORK/gen$qd.iolog" \
        --output-format=json > /dev/null
    "$TRACEMARK" convert "$WORK/gen$qd.iolog" -o "$WORK/gen$qd.tmt" --name "gen$qd" -q
done
python3 "$BENCH_ROOT/bench/gen_iolog.py" "$WORK/rate.src.iolog" "$RATE_IOS" "$SPAN_MIB" 70 "$RATE" --file "$ZRAM"
"$TRACEMARK" convert "$WORK/rate.src.iolog" -o "$WORK/rate.tmt" --name rate -q
"$TRACEMARK" export "$WORK/rate.tmt" --to fio --fio-file "$ZRAM" -o "$WORK/rate.iolog"

for run in $(seq 1 "$RUNS"); do
    echo "# run $run/$RUNS (load $(cut -d' ' -f1 /proc/loadavg))"
    for kind in $DEVICES; do
        for qd in $QDS; do
            if [ $(((run + qd) % 2)) = 1 ]; then
                run_tm "$kind" "$WORK/tm.json" "$WORK/gen$qd.tmt" compressed "$qd"
                run_fio "$kind" "$WORK/fio.json" "$WORK/gen$qd.iolog" "$qd" --replay_no_stall=1
            else
                run_fio "$kind" "$WORK/fio.json" "$WORK/gen$qd.iolog" "$qd" --replay_no_stall=1
                run_tm "$kind" "$WORK/tm.json" "$WORK/gen$qd.tmt" compressed "$qd"
            fi
            n_tm=$(tm_ios "$WORK/tm.json"); n_fio=$(fio_ios "$WORK/fio.json")
            [ "$n_fio" = "$n_tm" ] || echo "warning: $kind QD$qd: fio replayed $n_fio I/Os, tracemark $n_tm" >&2
            k=$kind.$qd
            add "$k.tm" "$(tm_iops "$WORK/tm.json")"; add "$k.fio" "$(fio_iops "$WORK/fio.json")"
            add "$k.r" "$(ratio "${R[$k.tm]##* }" "${R[$k.fio]##* }")"
            add "$k.ctm" "$(cpu_per_mio "$WORK/tm.json.cpu" "$n_tm")"; add "$k.cfio" "$(cpu_per_mio "$WORK/fio.json.cpu" "$n_fio")"
            add "$k.cr" "$(ratio "${R[$k.ctm]##* }" "${R[$k.cfio]##* }")"
            printf '  %-5s QD%-3s tracemark %8.0f IOPS %6.2f CPU s/MIO | fio %8.0f IOPS %6.2f CPU s/MIO | ratio %s, CPU ratio %s\n' \
                "$kind" "$qd" "${R[$k.tm]##* }" "${R[$k.ctm]##* }" "${R[$k.fio]##* }" "${R[$k.cfio]##* }" "${R[$k.r]##* }" "${R[$k.cr]##* }"
            if [ "$run" = 1 ] && { [ "$qd" = 4 ] || [ "$qd" = 32 ]; }; then
                echo "        CPU by thread: tracemark: $(threads "$WORK/tm.json.cpu") | fio: $(threads "$WORK/fio.json.cpu")"
            fi
        done
        # The same achieved rate: tracemark realtime (closed loop) vs fio's timed replay.
        if [ $((run % 2)) = 1 ]; then
            run_tm "$kind" "$WORK/tm.json" "$WORK/rate.tmt" realtime 32
            run_fio "$kind" "$WORK/fio.json" "$WORK/rate.iolog" 32
        else
            run_fio "$kind" "$WORK/fio.json" "$WORK/rate.iolog" 32
            run_tm "$kind" "$WORK/tm.json" "$WORK/rate.tmt" realtime 32
        fi
        k=$kind.rate
        n_tm=$(tm_ios "$WORK/tm.json"); n_fio=$(fio_ios "$WORK/fio.json")
        add "$k.tm" "$(tm_iops "$WORK/tm.json")"; add "$k.fio" "$(fio_iops "$WORK/fio.json")"
        add "$k.ctm" "$(cpu_per_mio "$WORK/tm.json.cpu" "$n_tm")"; add "$k.cfio" "$(cpu_per_mio "$WORK/fio.json.cpu" "$n_fio")"
        add "$k.cr" "$(ratio "${R[$k.ctm]##* }" "${R[$k.cfio]##* }")"
        printf '  %-5s %s IOPS realtime: tracemark %6.0f IOPS %6.2f CPU s/MIO | fio timed %6.0f IOPS %6.2f CPU s/MIO | CPU ratio %s\n' \
            "$kind" "$RATE" "${R[$k.tm]##* }" "${R[$k.ctm]##* }" "${R[$k.fio]##* }" "${R[$k.cfio]##* }" "${R[$k.cr]##* }"
        [ "$run" = 1 ] && echo "        CPU by thread: tracemark: $(threads "$WORK/tm.json.cpu") | fio: $(threads "$WORK/fio.json.cpu")"
    done
done

# shellcheck disable=SC2086 # R[KEY] is a list of figures
m() { median ${R[$1]}; }
echo
echo "## Compressed replay, tracemark / fio replay, medians of $RUNS paired runs (load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
for kind in $DEVICES; do
    echo
    echo "$kind ($([ "$kind" = zram ] && echo io-wq || echo inline) path):"
    echo
    echo "| QD | tracemark IOPS | fio IOPS | median of per-run ratios | per-run ratios | CPU s/MIO tracemark | fio | median CPU ratio |"
    echo "|---|---|---|---|---|---|---|---|"
    for qd in $QDS; do
        k=$kind.$qd
        printf '| %s | %.0f | %.0f | **%s** | %s | %.2f | %.2f | %s |\n' "$qd" "$(m "$k.tm")" "$(m "$k.fio")" "$(m "$k.r")" \
            "$(echo "${R[$k.r]# }" | tr ' ' ',' | sed 's/,/, /g')" "$(m "$k.ctm")" "$(m "$k.cfio")" "$(m "$k.cr")"
    done
    k=$kind.rate
    printf '\nAt %s IOPS (realtime vs fio timed replay): tracemark %.0f IOPS, %.2f CPU s/MIO; fio %.0f IOPS, %.2f CPU s/MIO; median CPU ratio **%s** (per run: %s)\n' \
        "$RATE" "$(m "$k.tm")" "$(m "$k.ctm")" "$(m "$k.fio")" "$(m "$k.cfio")" "$(m "$k.cr")" "${R[$k.cr]# }"
done
