#!/usr/bin/env bash
# tracemark replay against fio on a private zram device, same device, same run.
#
#   usage: bash bench/replay_vs_fio.sh [RUNS]        (root; RUNS defaults to 5)
#
# (a) compressed replay of a 4 KiB random 70/30 read/write trace against fio
#     replaying the same I/O (the exported iolog, replay_no_stall=1, io_uring,
#     iodepth 32, direct): IOPS ratio.
# (b) back-to-back 4 KiB random reads at QD1 and QD32: tracemark compressed
#     replay against fio's own io_uring engine (randread): IOPS ratio.
# (c) realtime fidelity at 20,000 IOPS (50 us spacing, 70/30): tracemark
#     realtime against fio's timed iolog replay; issue lateness measured from
#     outside with tracefs block_bio_queue (zram is bio-based: block_rq_issue
#     never fires for it) and bench/lateness.py.
# (a') the same as (a) on a loop device over a file in /dev/shm: a RAM-speed
#     device that takes non-blocking I/O, so io_uring issues inline (the path
#     of an NVMe drive) and the engines' own cost weighs more; skipped when
#     /dev/shm has no room (LOOP_SHM=0 skips it too).
# Each is run RUNS times (alternating tracemark and fio); medians are printed.
# Sizes can be changed with IOS_A, IOS_B1, IOS_B32, IOS_C, SPAN_MIB.
# The zram device is a private one (/sys/class/zram-control/hot_add, 2 GiB),
# removed at the end; /dev/zram0 is never touched.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNS=${1:-5}
case $RUNS in ''|*[!0-9]*) die "usage: bash bench/replay_vs_fio.sh [RUNS]";; esac
IOS_A=${IOS_A:-1000000}
IOS_B1=${IOS_B1:-300000}
IOS_B32=${IOS_B32:-1000000}
IOS_C=${IOS_C:-100000}
SPAN_MIB=${SPAN_MIB:-512}

need_root
need fio
need python3
build_tracemark

SHM_LOOP=""
SHM_IMG=""
WORK=$(mktemp -d /var/tmp/tracemark-bench.XXXXXX)
cleanup() {
    trace_instance_release
    [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N"
    [ -n "$SHM_LOOP" ] && losetup -d "$SHM_LOOP" 2>/dev/null || true
    [ -n "$SHM_IMG" ] && rm -f "$SHM_IMG"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

zram_new
DEV=$ZRAM
echo 2G > "/sys/block/zram$ZRAM_N/disksize"
DEVNUM=$(cat "/sys/block/zram$ZRAM_N/dev")

echo "# replay_vs_fio: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $(fio --version), tracemark $($TRACEMARK --version | awk '{print $2}'), commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD)"
echo "# filling the first $SPAN_MIB MiB of $DEV with random data"
dd if=/dev/urandom of="$DEV" bs=1M count="$SPAN_MIB" oflag=direct status=none

# Traces: a fio v3 iolog generated here, converted to .tmt; fio replays the
# iolog that tracemark exports from that .tmt, so both play the same records.
make_trace() { # NAME IOS READ_PCT [IOPS]
    python3 "$BENCH_ROOT/bench/gen_iolog.py" "$WORK/$1.src.iolog" "$2" "$SPAN_MIB" "$3" ${4:+"$4"}
    "$TRACEMARK" convert "$WORK/$1.src.iolog" -o "$WORK/$1.tmt" --name "$1" -q
    "$TRACEMARK" export "$WORK/$1.tmt" --to fio --fio-file "$DEV" -o "$WORK/$1.iolog"
}
make_trace mix "$IOS_A" 70
if [ "${LOOP_SHM:-1}" != 0 ] && command -v losetup >/dev/null \
    && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -gt $(((SPAN_MIB + 64) * 1024)) ]; then
    SHM_IMG=$(mktemp /dev/shm/tracemark-bench.XXXXXX)
    truncate -s "$((SPAN_MIB + 16))M" "$SHM_IMG"
    SHM_LOOP=$(losetup -f --show "$SHM_IMG")
    dd if=/dev/urandom of="$SHM_LOOP" bs=1M count="$SPAN_MIB" oflag=direct status=none
    sed "s#$DEV#$SHM_LOOP#g" "$WORK/mix.iolog" > "$WORK/mix.loop.iolog"
    echo "# (a') on $SHM_LOOP over $SHM_IMG (tmpfs)"
fi
make_trace rr1 "$IOS_B1" 100
make_trace rr32 "$IOS_B32" 100
make_trace rt "$IOS_C" 70 20000
"$TRACEMARK" export "$WORK/rt.tmt" --to csv -o "$WORK/rt.csv"

# --cpu-idle os: the CPUs keep their idle states, as they do for fio.
TM_REPLAY=("$TRACEMARK" replay --allow-write --mapping identity --passes 1 --no-warmup --cpu-idle os)
FIO_COMMON=(--direct=1 --ioengine=io_uring --output-format=json)

tm_iops() { tm_result "$1" traces.0.iops; }
fio_iops() { tm_result "$1" fio_iops; }
fio_ios() { tm_result "$1" fio_ios; }

run_tm() { # OUT.json TRACE MODE QD [more tracemark args]; env ON=DEVICE (default $DEV)
    local out=$1 trace=$2 mode=$3 qd=$4; shift 4
    "${TM_REPLAY[@]}" --target "${ON:-$DEV}" "$trace" --mode "$mode" --queue-depth "$qd" --json "$out" "$@" >/dev/null
}
run_fio_replay() { # OUT.json IOLOG [extra fio args]; env ON=DEVICE (default $DEV)
    local out=$1 log=$2; shift 2
    fio --name=replay --read_iolog="$log" --replay_redirect="${ON:-$DEV}" --iodepth=32 "${FIO_COMMON[@]}" "$@" > "$out"
}
run_fio_randread() { # OUT.json QD IOS
    fio --name=randread --filename="$DEV" --rw=randread --bs=4k --iodepth="$2" --size="${SPAN_MIB}M" \
        --io_size=$(($3 * 4))k --norandommap --randrepeat=0 "${FIO_COMMON[@]}" > "$1"
}

declare -A R   # R[key]="v1 v2 ..."
add() { R[$1]="${R[$1]:-} $2"; }

# Which path the kernel took: io_uring requests punted to io-wq workers
# (io_uring_queue_async_work) out of all submitted (io_uring_submit_req),
# counted once per engine with perf, outside the timed runs.
punts() { # LABEL CMD...
    local label=$1; shift
    if ! command -v perf >/dev/null; then echo "$label: perf not installed, io-wq path not checked"; return; fi
    ensure_tracefs
    perf stat -x, -e io_uring:io_uring_queue_async_work,io_uring:io_uring_submit_req -o "$WORK/perf.txt" -- "$@" >/dev/null 2>&1 \
        || { echo "$label: perf stat failed"; return; }
    awk -F, -v l="$label" '/queue_async_work/ { a = $1 } /submit_req/ { s = $1 }
        END { printf "%s: %s of %s io_uring submissions punted to io-wq workers\n", l, a, s }' "$WORK/perf.txt"
}
# Where the CPU goes: share of all CPU samples (both cores, whole run) per
# thread kind; iou-wrk-* are the io-wq workers doing zram's synchronous copy.
cpu_split() { # LABEL CMD...
    local label=$1; shift
    command -v perf >/dev/null || return 0
    perf record -a -q -F 997 -o "$WORK/perf.data" -- "$@" >/dev/null 2>&1 || { echo "$label: perf record failed"; return; }
    perf report -i "$WORK/perf.data" --no-children --sort comm -q -g none 2>/dev/null \
        | awk -v l="$label" '{ c = $2; sub(/-[0-9]+$/, "-*", c); s[c] += $1 }
            END { printf "%s: CPU samples by thread:", l; for (c in s) if (s[c] >= 1) printf " %s %.0f%%", c, s[c]; printf "\n" }'
}
echo "# io_uring path (perf stat, one untimed run each):"
punts "tracemark compressed QD32" "${TM_REPLAY[@]}" --target "$DEV" "$WORK/rr32.tmt" --mode compressed --queue-depth 32
punts "fio io_uring randread QD32" fio --name=randread --filename="$DEV" --rw=randread --bs=4k --iodepth=32 --size="${SPAN_MIB}M" --io_size=$((IOS_B32 * 4))k --norandommap --randrepeat=0 "${FIO_COMMON[@]}"
cpu_split "tracemark compressed 70/30 QD32" "${TM_REPLAY[@]}" --target "$DEV" "$WORK/mix.tmt" --mode compressed --queue-depth 32
cpu_split "fio iolog replay 70/30 QD32" fio --name=replay --read_iolog="$WORK/mix.iolog" --replay_redirect="$DEV" --iodepth=32 --replay_no_stall=1 "${FIO_COMMON[@]}"

# Tracing for (c): a private tracefs instance so other tracing users are not disturbed.
trace_instance bench
trace_device "$DEV"
late() { # NAME -> "p50 p99 same_offset_share observed"
    python3 "$BENCH_ROOT/bench/lateness.py" "$WORK/rt.csv" "$WORK/$1.trace" "$DEVNUM" > "$WORK/$1.late.json"
    tm_result "$WORK/$1.late.json" lateness_us.p50 lateness_us.p99 interarrival_error_us.p50 interarrival_error_us.p99 observed same_offset_share achieved_s
}

for run in $(seq 1 "$RUNS"); do
    echo "# run $run/$RUNS"
    # (a) (odd runs start with tracemark, even runs with fio)
    if [ $((run % 2)) = 1 ]; then
        run_tm "$WORK/a.tm.json" "$WORK/mix.tmt" compressed 32
        run_fio_replay "$WORK/a.fio.json" "$WORK/mix.iolog" --replay_no_stall=1
    else
        run_fio_replay "$WORK/a.fio.json" "$WORK/mix.iolog" --replay_no_stall=1
        run_tm "$WORK/a.tm.json" "$WORK/mix.tmt" compressed 32
    fi
    [ "$(fio_ios "$WORK/a.fio.json")" = "$IOS_A" ] || echo "warning: fio replayed $(fio_ios "$WORK/a.fio.json") of $IOS_A I/Os" >&2
    add a_tm "$(tm_iops "$WORK/a.tm.json")"; add a_fio "$(fio_iops "$WORK/a.fio.json")"
    add a_r "$(ratio "${R[a_tm]##* }" "${R[a_fio]##* }")"
    if [ -n "$SHM_LOOP" ]; then
        if [ $((run % 2)) = 1 ]; then
            ON=$SHM_LOOP run_tm "$WORK/l.tm.json" "$WORK/mix.tmt" compressed 32
            ON=$SHM_LOOP run_fio_replay "$WORK/l.fio.json" "$WORK/mix.loop.iolog" --replay_no_stall=1
        else
            ON=$SHM_LOOP run_fio_replay "$WORK/l.fio.json" "$WORK/mix.loop.iolog" --replay_no_stall=1
            ON=$SHM_LOOP run_tm "$WORK/l.tm.json" "$WORK/mix.tmt" compressed 32
        fi
        add l_tm "$(tm_iops "$WORK/l.tm.json")"; add l_fio "$(fio_iops "$WORK/l.fio.json")"
        add l_r "$(ratio "${R[l_tm]##* }" "${R[l_fio]##* }")"
    fi
    # (b)
    for qd in 1 32; do
        n=$([ $qd = 1 ] && echo "$IOS_B1" || echo "$IOS_B32")
        if [ $((run % 2)) = 1 ]; then
            run_tm "$WORK/b.tm.json" "$WORK/rr$qd.tmt" compressed "$qd"
            run_fio_randread "$WORK/b.fio.json" "$qd" "$n"
        else
            run_fio_randread "$WORK/b.fio.json" "$qd" "$n"
            run_tm "$WORK/b.tm.json" "$WORK/rr$qd.tmt" compressed "$qd"
        fi
        add "b${qd}_tm" "$(tm_iops "$WORK/b.tm.json")"; add "b${qd}_fio" "$(fio_iops "$WORK/b.fio.json")"
        add "b${qd}_r" "$(ratio "${R[b${qd}_tm]##* }" "${R[b${qd}_fio]##* }")"
    done
    # (c)
    traced c_tm run_tm "$WORK/c.tm.json" "$WORK/rt.tmt" realtime 32
    traced c_fio run_fio_replay "$WORK/c.fio.json" "$WORK/rt.iolog"
    read -r p50 p99 g50 g99 seen same ach < <(late c_tm)
    add c_tm_p50 "$p50"; add c_tm_p99 "$p99"; add c_tm_g50 "$g50"; add c_tm_g99 "$g99"; add c_tm_dur "$ach"
    echo "  tracemark realtime: observed $seen I/Os, same offset share $same"
    add c_tm_self_p50 "$(tm_result "$WORK/c.tm.json" traces.0.fidelity.lateness_us.p50)"
    add c_tm_self_p99 "$(tm_result "$WORK/c.tm.json" traces.0.fidelity.lateness_us.p99)"
    read -r p50 p99 g50 g99 seen same ach < <(late c_fio)
    add c_fio_p50 "$p50"; add c_fio_p99 "$p99"; add c_fio_g50 "$g50"; add c_fio_g99 "$g99"; add c_fio_dur "$ach"
    echo "  fio timed replay: observed $seen I/Os, same offset share $same"
    # tracemark --open-loop: the original absolute schedule, no closed-loop shift.
    traced c_ol run_tm "$WORK/c.ol.json" "$WORK/rt.tmt" realtime 32 --open-loop
    read -r p50 p99 g50 g99 seen same ach < <(late c_ol)
    add c_ol_p50 "$p50"; add c_ol_p99 "$p99"; add c_ol_g50 "$g50"; add c_ol_g99 "$g99"; add c_ol_dur "$ach"
    for k in a_tm a_fio b1_tm b1_fio b32_tm b32_fio c_tm_p50 c_tm_p99 c_ol_p50 c_ol_p99 c_fio_p50 c_fio_p99; do
        printf '  %-10s %s\n' "$k" "${R[$k]##* }"
    done
done

# shellcheck disable=SC2086 # R[KEY] is a list of figures
m() { median ${R[$1]}; }
echo
echo "## Medians of $RUNS runs (per-run values below)"
echo
echo "| benchmark | tracemark | fio | ratio of medians | median of per-run ratios |"
echo "|---|---|---|---|---|"
iops_row() { # KEY LABEL
    printf '| %s | %.0f | %.0f | %s | %s |\n' "$2" "$(m "$1_tm")" "$(m "$1_fio")" "$(ratio "$(m "$1_tm")" "$(m "$1_fio")")" "$(m "$1_r")"
}
iops_row a "(a) compressed replay IOPS, 4 KiB 70/30 random, QD32, $IOS_A I/Os (fio: replay_no_stall)"
[ -n "$SHM_LOOP" ] && iops_row l "(a') the same on a loop device over tmpfs (inline io_uring path)"
iops_row b1 "(b) IOPS, 4 KiB random reads QD1, $IOS_B1 I/Os (fio: randread)"
iops_row b32 "(b) IOPS, 4 KiB random reads QD32, $IOS_B32 I/Os (fio: randread)"
echo
echo "(c) realtime at 20,000 IOPS, $IOS_C I/Os, a $(awk -v n="$IOS_C" 'BEGIN { print (n - 1) / 20000 }') s schedule; tracefs-measured, us:"
echo
echo "| replayer | lateness p50 | lateness p99 | inter-arrival error p50 | inter-arrival error p99 | achieved duration s |"
echo "|---|---|---|---|---|---|"
lat_row() { # KEY LABEL
    printf '| %s | %.0f | %.0f | %.1f | %.1f | %.3f |\n' "$2" "$(m "$1_p50")" "$(m "$1_p99")" "$(m "$1_g50")" "$(m "$1_g99")" "$(m "$1_dur")"
}
lat_row c_tm "tracemark --mode realtime (closed loop)"
lat_row c_ol "tracemark --mode realtime --open-loop"
lat_row c_fio "fio timed iolog replay"
printf '\ntracemark'"'"'s own lateness (--json, closed loop) p50 / p99: %.1f / %.1f us\n' "$(m c_tm_self_p50)" "$(m c_tm_self_p99)"
echo
for k in a_tm a_fio a_r l_tm l_fio l_r b1_tm b1_fio b1_r b32_tm b32_fio b32_r c_tm_p50 c_tm_p99 c_ol_p50 c_ol_p99 c_fio_p50 c_fio_p99 c_tm_g99 c_ol_g99 c_fio_g99 c_tm_dur c_ol_dur c_fio_dur; do
    echo "- $k:${R[$k]}"
done
