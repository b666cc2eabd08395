#!/bin/bash
# The reference traces the way the validity study captures them
# (docs/validity.md), so a suite's task times are calibrated predictions:
# for each job, its task timed untraced REPS times on the capture drive
# (the guest's partition copied to a loop device on the virtio disk, class
# V of bench/validity/drives.sh, restored to pristine before each job: no
# run, capture or replay writes onto guest.img), captured once with task
# marks and the median untraced time (`capture --untraced`), replayed five
# times on the capture drive and calibrated from the median of the five
# (`tracemark calibrate --from`), then copied into traces/. Five, not three:
# V's latency has bursts (2 of 12 replays of copy-photos-out, minutes apart,
# predicted 1.0 s where the other ten predicted 0.52-0.59), and a median of
# three is a burst's once in about 13 calibrations, of five once in 28.
# bench/validity.sh does the work; a job stopped part way goes on where it
# stopped (its done markers in OUT). The machine's load before and after
# each job goes to OUT/load.txt.
#
# Usage: traces/capture/calibrated.sh [--reps N] [--out DIR] JOB...
#   (as root, after build-guest.sh; TRACEMARK=a copy of the binary, so a
#   rebuild during the run cannot change it). A job is native.sh's
#   (copy-photos gives copy-photos-into, -within and -out); LAUNCH_TAIL_S
#   in the environment reaches native.sh (game-launch-*: 20).
# Afterwards: traces/capture/table.sh traces/*.tmt for the README's tables,
# traces/capture/suite.sh for full.toml.
set -euo pipefail
CAPTURE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$CAPTURE_DIR/../.." && pwd)
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
REPS=5
OUT=/var/tmp/tracemark-reference/study
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set /{/^set /!p}' "$0"; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || die "name at least one job (see --help)"
need_root "loop devices, chroot, cgroups, tracing"
TRACEMARK=${TRACEMARK:-$REPO/target/release/tracemark}
[ -x "$TRACEMARK" ] || die "$TRACEMARK missing; cargo build --release first"
export TRACEMARK
# The capture drive's copies live beside the study, not in the study's own
# default directory.
export TM_VALIDITY_DIR=${TM_VALIDITY_DIR:-${OUT%/*}/drives}
mkdir -p "$OUT"
for job in "$@"; do
  echo "$job start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
  bash "$REPO/bench/validity.sh" --capture-drive V --drives V --reps "$REPS" --passes 1 \
    --calibration-replays 5 --replay-tries 1 --jobs "$job" --out "$OUT" || log "validity.sh for $job exited $?"
  echo "$job end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
  for t in "$OUT"/traces/*.tmt; do
    n=$(basename "$t" .tmt)
    [ -f "$OUT/done-calibrate-$n" ] || continue
    cmp -s "$t" "$REPO/traces/$n.tmt" && continue
    cp "$t" "$REPO/traces/$n.tmt"
    echo "calibrated.sh: traces/$n.tmt replaced"
    "$TRACEMARK" info "$REPO/traces/$n.tmt" | grep -E 'task:' || true
  done
done
