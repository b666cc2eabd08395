#!/usr/bin/env bash
# Replay on several rings: one ring against two, on two private zram
# devices, and one device's stream split over two rings.
#
#   usage: bash bench/replay_scaling.sh [RUNS]           (root; RUNS defaults to 5)
#
# (1) A trace of IOS (default 400000) 4 KiB random 70/30 I/Os on two devices
#     (the device chosen at random per I/O), with original latencies (MSR
#     CSV) and without (fio iolog: original order only), replayed in
#     compressed mode at queue depth QD (default 32) onto two private zram
#     devices: `--threads 1` (one ring issues to both) against the default
#     (one ring per target).
# (2) The one-device trace with latencies on one zram: `--threads 1` against
#     `--threads 2` (the stream dealt in chunks of 64 to two rings).
# Paired runs, order alternating, each on freshly reset and filled devices;
# IOPS = ios / playback_s; CPU = user + system s of the whole process per
# million I/Os (bench/cpu_run.py). Prints medians of per-run ratios.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RUNS=${1:-5}
case $RUNS in ''|*[!0-9]*) die "usage: bash bench/replay_scaling.sh [RUNS]";; esac
IOS=${IOS:-400000}
QD=${QD:-32}
SPAN_MIB=512

need_root
need python3
build_tracemark

WORK=$(mktemp -d /var/tmp/tracemark-scaling.XXXXXX)
SHM=$(mktemp -d /dev/shm/tracemark-scaling.XXXXXX)
ZRAMS=()
cleanup() {
    for n in "${ZRAMS[@]}"; do
        echo 1 > "/sys/block/zram$n/reset" 2>/dev/null || true
        echo "$n" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    done
    rm -rf "$WORK" "$SHM"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -e /sys/class/zram-control/hot_add ] || modprobe zram 2>/dev/null || true
[ -e /sys/class/zram-control/hot_add ] || die "no /sys/class/zram-control (modprobe zram)"
for _ in 1 2; do ZRAMS+=("$(cat /sys/class/zram-control/hot_add)"); done
A=/dev/zram${ZRAMS[0]}
B=/dev/zram${ZRAMS[1]}
for _ in 1 2 3 4 5; do [ -b "$A" ] && [ -b "$B" ] && break; sleep 0.2; done
head -c $((SPAN_MIB << 20)) /dev/urandom > "$SHM/random"
fresh() { # reset and fill both devices
    local n
    for n in "${ZRAMS[@]}"; do
        zram_reset "$n"
        echo $(((SPAN_MIB + 64) << 20)) > "/sys/block/zram$n/disksize"
        dd if="$SHM/random" of="/dev/zram$n" bs=1M oflag=direct status=none
    done
}

echo "# replay_scaling: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), tracemark commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $A and $B (private zram); $IOS I/Os, QD$QD"
# Traces: MSR Cambridge CSV with original latencies (I/Os 10 us apart,
# 20-200 us each, so about ten in flight in the original and dependencies
# between them), on two disks or one; and the same as fio iologs (no
# latencies: original order only).
python3 - "$WORK" "$IOS" "$SPAN_MIB" <<'EOF'
import random, sys
work, ios, span = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for name, disks in (("two", 2), ("one", 1)):
    rng = random.Random(7)
    with open(f"{work}/{name}.csv", "w") as f, open(f"{work}/{name}.iolog", "w") as g:
        g.write("fio version 3 iolog\n")
        for d in range(disks):
            g.write(f"0 /dev/dev{d} add\n")
        for d in range(disks):
            g.write(f"0 /dev/dev{d} open\n")
        for i in range(ios):
            d = rng.randrange(disks)
            op = "Read" if rng.randrange(100) < 70 else "Write"
            off = rng.randrange(span * 256) * 4096
            f.write(f"{128166372000000000 + i * 100},h,{d},{op},{off},4096,{rng.randrange(200, 2000)}\n")
            g.write(f"0 /dev/dev{d} {op.lower()} {off} 4096\n")
        for d in range(disks):
            g.write(f"0 /dev/dev{d} close\n")
EOF
for t in two one; do
    "$TRACEMARK" convert "$WORK/$t.csv" -o "$WORK/$t.dep.tmt" --name "$t-dep" -q
    "$TRACEMARK" convert "$WORK/$t.iolog" -o "$WORK/$t.ord.tmt" --name "$t-ord" -q
done

# --cpu-idle os: the CPUs keep their idle states, as they do for fio.
TM=("$TRACEMARK" replay --allow-write --mapping identity --passes 1 --no-warmup --mode compressed --queue-depth "$QD" --cpu-idle os)
tm_iops() { tm_result "$1" replay_iops; }
cpu_per_mio() { awk -v c="$(tm_result "$1.cpu" cpu_s)" -v n="$(tm_result "$1" traces.0.ios)" 'BEGIN { print c * 1e6 / n }'; }
run() { # OUT ARGS...
    local out=$1; shift
    fresh
    python3 "$BENCH_ROOT/bench/cpu_run.py" "$out.cpu" -- "${TM[@]}" --json "$out" "$@" >/dev/null
}
declare -A R
add() { R[$1]="${R[$1]:-} $2"; }

for run in $(seq 1 "$RUNS"); do
    echo "# run $run/$RUNS (load $(cut -d' ' -f1 /proc/loadavg))"
    for case in two.dep two.ord one.dep; do
        case $case in
        two.*)
            base=("$WORK/$case.tmt" --target "$A" --target "$B" --threads 1)
            more=("$WORK/$case.tmt" --target "$A" --target "$B") ;;
        *)
            base=("$WORK/$case.tmt" --target "$A" --threads 1)
            more=("$WORK/$case.tmt" --target "$A" --threads 2) ;;
        esac
        if [ $((run % 2)) = 1 ]; then
            run "$WORK/1.json" "${base[@]}"; run "$WORK/2.json" "${more[@]}"
        else
            run "$WORK/2.json" "${more[@]}"; run "$WORK/1.json" "${base[@]}"
        fi
        add "$case.1" "$(tm_iops "$WORK/1.json")"; add "$case.2" "$(tm_iops "$WORK/2.json")"
        add "$case.r" "$(ratio "${R[$case.2]##* }" "${R[$case.1]##* }")"
        add "$case.c1" "$(cpu_per_mio "$WORK/1.json")"; add "$case.c2" "$(cpu_per_mio "$WORK/2.json")"
        printf '  %-3s one ring %8.0f IOPS %5.2f CPU s/MIO | two rings %8.0f IOPS %5.2f CPU s/MIO | ratio %s\n' "$case" \
            "${R[$case.1]##* }" "${R[$case.c1]##* }" "${R[$case.2]##* }" "${R[$case.c2]##* }" "${R[$case.r]##* }"
    done
done

# shellcheck disable=SC2086 # R[KEY] is a list of figures
m() { median ${R[$1]}; }
echo
echo "## One ring against two, compressed QD$QD, medians of $RUNS paired runs (load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| case | one ring IOPS | two rings IOPS | median of per-run ratios | per-run ratios | CPU s/MIO one | two |"
echo "|---|---|---|---|---|---|---|"
row() { # CASE LABEL
    printf '| %s | %.0f | %.0f | **%s** | %s | %.2f | %.2f |\n' "$2" "$(m "$1.1")" "$(m "$1.2")" "$(m "$1.r")" "${R[$1.r]# }" "$(m "$1.c1")" "$(m "$1.c2")"
}
row two.dep "two zram devices, with original latencies: one ring vs one per device"
row two.ord "two zram devices, original order only (fio iolog): one ring vs one per device"
row one.dep "one zram device, with original latencies: --threads 1 vs 2"
