#!/usr/bin/env bash
# Several tracemark builds against fio at one paced rate, round by round: CPU
# per I/O at the same achieved rate, the A/B tool for a change to
# realtime mode's waiting. Each round replays one evenly paced trace with
# fio's timed iolog replay and with every build in realtime mode (round r
# starting with build r), each run on a freshly made device state and under
# bench/cpu_run.py (user + sys of the whole process, io-wq workers included).
# The figure per build is the median of its per-round CPU ratios to that
# round's fio run; beside it the IOPS achieved and the engine's own issue
# lateness p99 (from its result file), so a build cannot buy CPU with timing.
#
#   bash bench/rate_rounds.sh [--device zram|loop] [--rate IOPS] [--ios N] [--rounds N]
#                             [--cpu-idle os|poll] BIN...
#
#   --device    zram (private, io-wq path) or loop (private, over /dev/shm,
#               inline path), reset and filled with the same random data
#               before every run; default loop
#   --rate      IOPS of the trace (default 20000): 4 KiB random 70/30
#               read/write over 512 MiB, evenly spaced (bench/gen_iolog.py)
#   --ios       I/Os in the trace (default 60000)
#   --rounds    rounds (default 4)
#   --cpu-idle  the CPU idle policy of the tracemark runs (default os; with
#               poll this script holds the same request for fio's runs)
#   BIN         a tracemark executable (a copy of a build, or a wrapper script)
#
# Root; needs fio and python3. Devices are removed at the end, also on failure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KIND=loop
RATE=20000
IOS=60000
ROUNDS=4
CPU_IDLE=os
while [ $# -gt 0 ]; do
    case "$1" in
        --device) KIND=$2; shift 2 ;;
        --rate) RATE=$2; shift 2 ;;
        --ios) IOS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --cpu-idle) CPU_IDLE=$2; shift 2 ;;
        --) shift; break ;;
        -*) die "unknown option $1 (see the header of $0)" ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || die "usage: bash bench/rate_rounds.sh [--device zram|loop] [--rate IOPS] [--ios N] [--rounds N] [--cpu-idle os|poll] BIN..."
case $KIND in zram|loop) ;; *) die "--device must be zram or loop" ;; esac
case $CPU_IDLE in os|poll) ;; *) die "--cpu-idle must be os or poll" ;; esac
for n in "$RATE" "$IOS" "$ROUNDS"; do
    case $n in ''|*[!0-9]*) die "--rate, --ios and --rounds take whole numbers" ;; esac
done
SPAN_MIB=512
rounds_setup rate "$@"

# fresh: the device in its known state (lib.sh); sets DEV.
fresh() { fresh_device "$KIND"; }

if [ "$CPU_IDLE" = poll ]; then
    [ -w /dev/cpu_dma_latency ] || die "--cpu-idle poll needs /dev/cpu_dma_latency"
    exec 3>/dev/cpu_dma_latency
    printf '\0\0\0\0' >&3
fi

echo "# rate_rounds: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $(fio --version), $KIND, $RATE IOPS, $IOS I/Os, $ROUNDS rounds, --cpu-idle $CPU_IDLE, load $(cut -d' ' -f1 /proc/loadavg)"
python3 "$BENCH_ROOT/bench/gen_iolog.py" "$WORK/src.iolog" "$IOS" "$SPAN_MIB" 70 "$RATE" --file /dev/placeholder
"$1" convert "$WORK/src.iolog" -o "$WORK/rate.tmt" --name rate -q
"$1" export "$WORK/rate.tmt" --to fio --fio-file /dev/placeholder -o "$WORK/rate.iolog"

# cpu_per_mio CPU.json IOS: (user + sys) s per million I/Os
cpu_per_mio() { awk -v c="$(tm_result "$1" cpu_s)" -v n="$2" 'BEGIN { print c * 1e6 / n }'; }

declare -A RATIOS LATE
for r in $(seq 1 "$ROUNDS"); do
    fresh
    python3 "$BENCH_ROOT/bench/cpu_run.py" "$WORK/fio.cpu" -- \
        fio --name=rep --read_iolog="$WORK/rate.iolog" --replay_redirect="$DEV" --ioengine=io_uring \
        --direct=1 --iodepth=32 --output-format=json > "$WORK/fio.json"
    read -r fio_iops fio_ios < <(tm_result "$WORK/fio.json" fio_iops fio_ios)
    fio_cpu=$(cpu_per_mio "$WORK/fio.cpu" "$fio_ios")
    line=$(printf 'round %d: fio %.0f IOPS %.1f CPU s/MIO' "$r" "$fio_iops" "$fio_cpu")
    BINS=("$@")
    n=${#BINS[@]}
    declare -A OUT=()
    for k in $(seq 0 $((n - 1))); do
        i=$(((k + r - 1) % n + 1))
        fresh
        python3 "$BENCH_ROOT/bench/cpu_run.py" "$WORK/tm.cpu" -- \
            "${BINS[$((i - 1))]}" replay --allow-write --mapping identity --passes 1 --no-warmup \
            --cpu-idle "$CPU_IDLE" --target "$DEV" "$WORK/rate.tmt" --mode realtime --queue-depth 32 \
            --json "$WORK/tm.json" > /dev/null
        read -r tm_iops tm_ios late_p99 < <(tm_result "$WORK/tm.json" replay_iops traces.0.ios traces.0.passes.0.fidelity.lateness_us.p99)
        tm_cpu=$(cpu_per_mio "$WORK/tm.cpu" "$tm_ios")
        OUT[$i]=$(printf '%s %.0f IOPS %.1f CPU s/MIO, lateness p99 %.1f µs' "$(basename "${BINS[$((i - 1))]}")" "$tm_iops" "$tm_cpu" "$late_p99")
        RATIOS[$i]="${RATIOS[$i]:-} $(ratio "$tm_cpu" "$fio_cpu")"
        LATE[$i]="${LATE[$i]:-} $late_p99"
    done
    for i in $(seq 1 "$n"); do line="$line | ${OUT[$i]}"; done
    echo "$line"
done
echo
echo "| build | per-round CPU ratios to fio (tracemark / fio, CPU s per million I/Os) | median | median lateness p99, µs |"
echo "|---|---|---|---|"
i=0
for bin in "$@"; do
    i=$((i + 1))
    ratios=${RATIOS[$i]# }
    # shellcheck disable=SC2086 # lists of figures
    printf '| %s | %s | **%s** | %s |\n' "$(basename "$bin")" "${ratios// /, }" \
        "$(median ${RATIOS[$i]})" "$(median ${LATE[$i]})"
done
