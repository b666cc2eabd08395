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
# for rounds of seconds instead of minutes). BUILDS as in bursty_fidelity.sh
# (default: this tree's).
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
    [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N"
    rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# shellcheck disable=SC2119 # sized per round by fresh()
zram_new
fresh() {
    zram_reset "$ZRAM_N"
    echo $((SIZE_MIB << 20)) > "/sys/block/zram$ZRAM_N/disksize"
}
reported_kib() { if [ -r "$REPORTED" ]; then cat "$REPORTED"; else echo 0; fi; }
# The preconditioning markers of this run only, not the user's.
export TRACEMARK_STATE_DIR=$WORK/state

echo "# fresh_vs_filled: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), tracemark commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD), $(basename "$TRACE"), $ZRAM ${SIZE_MIB} MiB, replay options: realtime --passes 1 ${REPLAY_ARGS:-}"
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
            python3 - "$WORK/r.json" "$round" "$state" "${b%%=*}" "$load" "$rep" "$mm" \
                >> "$WORK/rows" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["traces"][0]
p = t["passes"][-1]
f = p["fidelity"]
pre = r.get("precondition") or {}
fs = pre.get("found")
def s(k):
    return f"{fs[k]['with_data']}/{fs[k]['blocks']}" if fs else "-"
def lat(op):
    o = p["ops"].get(op)
    return f"{o['latency_us']['p50']:.0f}/{o['latency_us']['p99']:.0f}" if o and o["count"] else "-"
mm = sys.argv[7].split()
w = f.get("cpu_wait_s")
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {p['score']:.0f} | {lat('read')} | {lat('write')} | "
      f"{pre.get('written_bytes', 0) / 2**20:.0f} | {s('space_before')} / {s('read_regions_before')} / {s('read_regions_at_start')} | "
      f"{int(mm[0]) // 4096} / {mm[7]} / {mm[5]} | {sys.argv[6]} | {'-' if w is None else f'{w * 1e3:.0f}'} |")
PY
            tail -n 1 "$WORK/rows"
        done
    done
done
# Per build: each round's fresh/filled ratio, the median and the worst.
python3 - "$WORK/rows" <<'PY'
import math, statistics, sys
score = {}
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    score[(c[2], c[0], c[1])] = float(c[4])
for build in sorted({k[0] for k in score}):
    rounds = sorted({int(k[1]) for k in score if k[0] == build})
    ratios = [score[(build, str(r), "fresh")] / score[(build, str(r), "filled")]
              for r in rounds if (build, str(r), "fresh") in score and (build, str(r), "filled") in score]
    if not ratios:
        continue
    worst = max(ratios, key=lambda x: abs(math.log(x)))
    print(f"\n{build}: fresh/filled by round: {' '.join(f'{x:.2f}' for x in ratios)}; "
          f"median {statistics.median(ratios):.2f}, worst {worst:.2f}, fresh above filled in {sum(x > 1 for x in ratios)} of {len(ratios)}")
PY
