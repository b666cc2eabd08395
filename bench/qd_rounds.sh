#!/usr/bin/env bash
# Several tracemark builds against fio's replay at one queue depth, round by
# round: the A/B tool for an engine change. Each round replays one
# fio-made trace with fio and with every build in turn (round r starting
# with the r-th of them, so that none always runs first or last), each run
# on a freshly made device state (or one per round, --fresh round); the
# figure per build is the median of its per-round ratios to that round's fio
# run, which cancels most of a shared machine's drift (fio alone moved
# 155k-227k IOPS within one series).
#
#   bash bench/qd_rounds.sh [--device zram|loop] [--qd N] [--rounds N] [--ios N] [--fresh run|round] BIN...
#
#   --device   zram: a private zram device (io-wq path), reset, sized and
#              filled with the same random data before every run; loop: a
#              private loop device over a fresh copy of that data in /dev/shm
#              (inline path). Default zram.
#   --qd       queue depth of the trace and of both replays (default 8)
#   --rounds   rounds (default 6)
#   --ios      I/Os in the trace: 4 KiB random 70/30 read/write, written by
#              fio at that depth as in replay_qd_sweep.sh (default 400000)
#   --fresh    run: a freshly made device for every run (default); round:
#              one per round, which fio and every build then replay in turn.
#              On a loop device over /dev/shm the fresh copy's pages are laid
#              out anew each time, and that alone moved one program's IOPS by
#              25 % from run to run (the same program 6 times at QD32: fresh
#              each run 240-305k, on one device 269-297k); within a round all
#              then replay the same layout.
#   BIN        a tracemark executable (a copy of a build, or a wrapper script
#              that sets an environment variable for a test build)
#
# Prints one line per round (IOPS of fio and of each build), then per build
# its per-round ratios, their median, and in how many rounds it beat the
# first build. Root; needs fio. Devices are removed at the end, also on failure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KIND=zram
QD=8
ROUNDS=6
IOS=400000
FRESH=run
while [ $# -gt 0 ]; do
    case "$1" in
        --device) KIND=$2; shift 2 ;;
        --qd) QD=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --ios) IOS=$2; shift 2 ;;
        --fresh) FRESH=$2; shift 2 ;;
        --) shift; break ;;
        -*) die "unknown option $1 (see the header of $0)" ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || die "usage: bash bench/qd_rounds.sh [--device zram|loop] [--qd N] [--rounds N] [--ios N] [--fresh run|round] BIN..."
case $KIND in zram|loop) ;; *) die "--device must be zram or loop" ;; esac
case $FRESH in run|round) ;; *) die "--fresh must be run or round" ;; esac
for n in "$QD" "$ROUNDS" "$IOS"; do
    case $n in ''|*[!0-9]*) die "--qd, --rounds and --ios take whole numbers" ;; esac
done
SPAN_MIB=1024
rounds_setup rounds "$@"

# fresh: the device in its known state (lib.sh); sets DEV.
fresh() { fresh_device "$KIND"; }

echo "# qd_rounds: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $(fio --version), $KIND, QD$QD, $IOS I/Os, $ROUNDS rounds, a fresh device per $FRESH, load $(cut -d' ' -f1 /proc/loadavg)"
fresh
fio --name=gen --filename="$DEV" --rw=randrw --rwmixread=70 --bs=4k --size=1g --direct=1 \
    --ioengine=io_uring --iodepth="$QD" --number_ios="$IOS" --write_iolog="$WORK/gen.iolog" \
    --output-format=json > /dev/null
"$1" convert "$WORK/gen.iolog" -o "$WORK/gen.tmt" --name gen -q

declare -A RATIOS
WINS=()
for r in $(seq 1 "$ROUNDS"); do
    [ "$FRESH" = run ] || fresh
    # fio (player 0) and the builds take turns at going first (round r
    # starts with player r - 1): a fixed order gave the later build an edge
    # in some series.
    BINS=("$@")
    n=${#BINS[@]}
    declare -A IOPS=()
    for k in $(seq 0 "$n"); do
        i=$(((k + r - 1) % (n + 1)))
        [ "$FRESH" = round ] || fresh
        if [ "$i" = 0 ]; then
            fio --name=rep --read_iolog="$WORK/gen.iolog" --replay_redirect="$DEV" --ioengine=io_uring \
                --direct=1 --iodepth="$QD" --replay_no_stall=1 --output-format=json > "$WORK/fio.json"
            fio_iops=$(tm_result "$WORK/fio.json" fio_iops)
        else
            "${BINS[$((i - 1))]}" replay --allow-write --mapping identity --passes 1 --no-warmup --cpu-idle os \
                --target "$DEV" "$WORK/gen.tmt" --mode compressed --queue-depth "$QD" \
                --json "$WORK/tm.json" > /dev/null
            IOPS[$i]=$(tm_result "$WORK/tm.json" replay_iops)
        fi
    done
    line=$(printf 'round %d: fio %.0f' "$r" "$fio_iops")
    for i in $(seq 1 "$n"); do
        tm_iops=${IOPS[$i]}
        RATIOS[$i]="${RATIOS[$i]:-} $(ratio "$tm_iops" "$fio_iops")"
        if awk -v a="$tm_iops" -v b="${IOPS[1]}" 'BEGIN { exit !(a > b) }'; then
            WINS[i]=$((${WINS[i]:-0} + 1))
        fi
        line="$line | $(basename "${BINS[$((i - 1))]}") $(printf '%.0f' "$tm_iops")"
    done
    echo "$line"
done
echo
echo "| build | per-round ratios to fio's replay | median | rounds above the first build |"
echo "|---|---|---|---|"
i=0
for bin in "$@"; do
    i=$((i + 1))
    ratios=${RATIOS[$i]# }
    # shellcheck disable=SC2086 # lists of figures
    printf '| %s | %s | **%s** | %s |\n' "$(basename "$bin")" "${ratios// /, }" \
        "$(median ${RATIOS[$i]})" "$([ "$i" = 1 ] && echo - || echo "${WINS[i]:-0} of $ROUNDS")"
done
