#!/usr/bin/env bash
# One trace's score on a freshly reset zram device against the same device
# right after dd filled it with random data, in alternating rounds (the
# order within a round alternates too, so a drift of the machine does not
# favour one state): which side moves between two runs, with what each run
# recorded about itself and what the device and the machine did meanwhile.
#
#   usage: bash bench/fresh_vs_filled.sh [ROUNDS] [TRACE]   (root; 3 rounds, traces/game-0ad.tmt)
#
# Each replay: realtime, default options, --passes 1 (as the check that saw a
# 2.67x move); REPLAY_ARGS adds options (e.g. REPLAY_ARGS="--idle-cap 0.1"
# for rounds of seconds instead of minutes). HOLD_REPORTING=1 holds freed
# memory back from the hypervisor for the run (lib.sh hold_page_reporting),
# to tell the device's state from the guest's memory being handed back and
# faulted in again. BUILDS as in bursty_fidelity.sh (default: this tree's).
#
# Per replay: the machine's load, the scored pass's score, read and write
# latency (p50 and p99, µs: the score moves with a few slow I/Os, the
# medians with the device), what preconditioning wrote and the target state
# the result recorded (sampled blocks holding data before the run: the
# space, the read regions before and when scoring started), zram's stored
# pages (all, incompressible "huge", same-filled) after the replay, memory
# the guest handed back to the hypervisor during it (free page reporting,
# MiB; a reset frees the whole device's memory), and how long the replay's
# threads waited for a CPU. At the end: each round's fresh/filled score
# ratio, their median and the worst (farthest from 1).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROUNDS=${1:-3}
TRACE=${2:-$BENCH_ROOT/traces/game-0ad.tmt}
SIZE_MIB=${SIZE_MIB:-4096}
read -r -a EXTRA <<< "${REPLAY_ARGS:-}"
need_root
need python3
build_tracemark
BUILDS=${BUILDS:-"tracemark=$TRACEMARK"}
REPORTED=/sys/module/page_reporting/parameters/reported_kib

WORK=$(mktemp -d /var/tmp/tracemark-fresh.XXXXXX)
ZRAM_N=""
cleanup() {
    release_page_reporting
    [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N"
    rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ "${HOLD_REPORTING:-0}" = 1 ]; then hold_page_reporting; fi
[ "$PAGE_REPORTING" != absent ] || [ ! -r "$REPORTED" ] || PAGE_REPORTING=as-is
# shellcheck disable=SC2119 # sized per round by fresh()
zram_new
fresh() {
    zram_reset "$ZRAM_N"
    echo $((SIZE_MIB << 20)) > "/sys/block/zram$ZRAM_N/disksize"
}
reported_kib() { if [ -r "$REPORTED" ]; then cat "$REPORTED"; else echo 0; fi; }
# The preconditioning markers of this run only, not the user's.
export TRACEMARK_STATE_DIR=$WORK/state

echo "# fresh_vs_filled: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), tracemark commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD), $(basename "$TRACE"), $ZRAM ${SIZE_MIB} MiB, replay options: realtime --passes 1 ${REPLAY_ARGS:-}, free page reporting $PAGE_REPORTING, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| round | device | build | load | score | read p50/p99 µs | write p50/p99 µs | precondition written MiB | space / read regions before / at start (blocks with data) | zram pages stored / huge / same | reported MiB | CPU wait ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then order="fresh filled"; else order="filled fresh"; fi
    for state in $order; do
        for b in $BUILDS; do
            fresh
            [ "$state" = filled ] && dd if=/dev/urandom of="$ZRAM" bs=1M count="$SIZE_MIB" oflag=direct status=none
            load=$(cut -d' ' -f1 /proc/loadavg)
            rep0=$(reported_kib)
            "${b#*=}" replay "$TRACE" --target "$ZRAM" --mode realtime --passes 1 --allow-write \
                --no-db "${EXTRA[@]}" --json "$WORK/r.json" > /dev/null
            rep=$(( ($(reported_kib) - rep0) / 1024 ))
            mm=$(cat "/sys/block/zram$ZRAM_N/mm_stat")
            tm_result fresh_row "$WORK/r.json" "$round" "$state" "${b%%=*}" \
                "$load" "$rep" "$mm" >> "$WORK/rows"
            tail -n 1 "$WORK/rows"
        done
    done
done
# Per build: each round's fresh/filled ratio, the median and the worst.
tm_result fresh_ratios "$WORK/rows"
