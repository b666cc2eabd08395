#!/bin/bash
# Does the score predict what a user feels? The reference tasks run for real
# on drives of different classes (bench/validity/drives.sh), each job from
# the same pristine copy of the aged filesystem the traces were captured on,
# its task timed REPS times back to back from its start to its own "done"
# point (traces/capture/native.sh in TM_MODE=time: page cache dropped before
# each run, 5 GiB memory cgroup, the capture's writeback settings); the
# tasks are captured once on the capture drive (V), with their untraced
# time there; each trace is replayed on every drive (realtime, idle kept,
# identity mapping onto the drive itself); the report
# (bench/validity/report.py) sets the measured time ratios between drives
# against the predicted task-time ratios and the score ratios.
#
# Usage: bench/validity.sh [--reps N] [--drives "V F S U H L"]
#                          [--jobs "copy-photos install-krita ..."]
#                          [--passes N] [--out DIR] [--report-only]
#                          [--capture-drive V] [--replay-tries 3]
#                          [--cpu-idle poll|os] [--calibration-replays 5]
#                          [--quiet-busy 10] [--quiet-wait 1800] [--rounds 1]
#                          [--steal-max 5] [--steal-tries 2]
#   (as root, after traces/capture/build-guest.sh and cargo build --release;
#   do not rebuild the binary while a study runs)
# Jobs are native.sh's (copy-photos gives three tasks: into, within, out).
# --cpu-idle: the replays' `tracemark replay --cpu-idle` (default poll: the
# CPUs kept out of idle states, the replayer's own default; os: the idle
# policy the real runs had). The replays run at replay's defaults but for
# the options a study needs (identity mapping onto the drive, one pass);
# every option and the default queue depth are recorded in
# OUT/replay-settings.txt, and a study continued with other settings is
# refused. Preconditioning is replay's default (read-regions): the drive is
# restored to pristine before each replay, and a trace can read blocks its
# task's own setup wrote (a copy reads the files the previous copy made),
# which pristine holds as holes; a hole reads without touching the disk
# (a sparse file's zeros), so unpreconditioned replays found V as fast as
# F for the copies. Each replay has a private state directory, so every
# replay preconditions its read regions afresh.
# --capture-drive: the drive the tasks are captured on, and whose untraced
# times the traces carry (default V, where the reference traces were
# captured; V's speed drifted between runs in the study of
# docs/measurements/validity-10-tasks-2026-12-02.md). A replay that waited more than 5 % of its playback for a CPU is
# run again, up to --replay-tries times, and the least disturbed one kept.
# --calibration-replays: each trace is calibrated from the median of this
# many replays on the capture drive (`tracemark calibrate --from A B C`):
# V's latency moves from one replay to the next and comes in bursts (2 of 12
# replays of copy-photos-out predicted 1.0 s, the other ten 0.52-0.59 s;
# docs/measurements/v-calibration-draws-2026-12-06.md), and a calibration
# carries its draw into every prediction of the trace.
# The capture drive goes first (real runs, captures, replays), then each
# other drive (real runs, replays); what is done is kept in OUT (done-*
# markers, replay-*.json), so the same command run again goes on where a
# stopped study stopped, and the report covers every drive finished.
# --quiet-busy, --quiet-wait: each job's real runs and each replay start only
# once the host's CPUs were at most --quiet-busy % busy over 3 s, waiting up
# to --quiet-wait seconds (then the study stops, and goes on when run
# again): game-launch-0ad's runs on S, started as other work on the host
# ended, took 0.46 to 0.61 s with 0.38 s of CPU, and 0.25 to 0.31 s with
# 0.22 s of CPU on a quiet host.
# --rounds N: the real runs in N rounds, each visiting every drive (the first
# drive of a round rotating) and running each job REPS/N times there (the
# remainder in the first rounds), all before the captures. A vCPU of this
# host ran fixed work at 1.0 to 1.7 times its fastest pace (p90) within
# seconds, and a CPU-bound task on one drive at 09:24 used 40 % more
# CPU than at 15:10 the same day
# (docs/measurements/host-cpu-speed-2026-12-06.md): with one round, each
# drive's runs sit in their own hour, and the drives' ratio carries the
# hours' difference. With N rounds every drive's runs spread over the same
# hours, and so do the capture drive's, whose median untraced time the
# traces are calibrated to. The default, 1, runs each drive's runs just
# before its replays. A continued study must keep its --reps and --rounds.
# --steal-max PCT, --steal-tries N: a job's runs are taken again (up to N
# times) when the hypervisor stole more than PCT % of a run's wall time
# (the guest's steal counter): in a study with 4 rounds, S's runs of two
# rounds lost 0.26-1.14 s each to it and took up to twice their other runs'
# time (docs/measurements/validity-rounds-2026-12-06.md).
# Output: DIR/times-<drive>.txt ("task seconds" per run), DIR/cpu-<drive>.txt
# (the task's CPU time and the rest of the host's per run), DIR/pace.txt (the
# host's pace at fixed work, bench/cpu_pace.py, before each job's runs) and
# DIR/pace-<drive>.txt (that pace beside each run, in cpu-<drive>.txt's
# order), DIR/host-<drive>.txt
# (the host's counters per run: stolen CPU, reclaim, faults),
# DIR/cpurep-<drive>-<task>.txt (the same for the replay), DIR/traces/*.tmt
# (calibrated), DIR/calib-<capture drive>-<task>.json, calib2-..., calib3-...
# (the calibration replays), DIR/replay-<drive>-<task>.json, DIR/validity.txt and
# DIR/validity.html.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
REPO=$(cd "$BENCH/.." && pwd)
TRACEMARK=${TRACEMARK:-$REPO/target/release/tracemark}
DRIVES_SH=$BENCH/validity/drives.sh
NATIVE=$REPO/traces/capture/native.sh
REPS=5
DRIVES="V F S U H L"
CAPTURE_DRIVE=V
JOBS="copy-photos install-krita game-supertuxkart photo-light launch-gimp launch-inkscape launch-darktable launch-firefox"
PASSES=3
REPLAY_TRIES=3
CALIBRATION_REPLAYS=5
CPU_IDLE=poll
ROUNDS=1
STEAL_MAX=5
STEAL_TRIES=2
QUIET_BUSY=10
QUIET_WAIT=1800
OUT=${TM_VALIDITY_OUT:-/var/tmp/tracemark-validity/study}
REPORT_ONLY=

while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --drives) DRIVES=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --passes) PASSES=$2; shift 2 ;;
    --capture-drive) CAPTURE_DRIVE=$2; shift 2 ;;
    --replay-tries) REPLAY_TRIES=$2; shift 2 ;;
    --calibration-replays) CALIBRATION_REPLAYS=$2; shift 2 ;;
    --cpu-idle) CPU_IDLE=$2; shift 2 ;;
    --quiet-busy) QUIET_BUSY=$2; shift 2 ;;
    --quiet-wait) QUIET_WAIT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --steal-max) STEAL_MAX=$2; shift 2 ;;
    --steal-tries) STEAL_TRIES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --report-only) REPORT_ONLY=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
# Every argument is checked before anything is made.
[ "$CPU_IDLE" = poll ] || [ "$CPU_IDLE" = os ] || die "--cpu-idle takes poll or os, not $CPU_IDLE"
[[ "$QUIET_BUSY" =~ ^[0-9]+$ ]] && [ "$QUIET_BUSY" -le 100 ] || die "--quiet-busy takes a percentage (0 to 100), not $QUIET_BUSY"
[[ "$QUIET_WAIT" =~ ^[0-9]+$ ]] || die "--quiet-wait takes seconds, not $QUIET_WAIT"
[[ "$REPS" =~ ^[0-9]+$ ]] || die "--reps takes a count, not $REPS"
[[ "$STEAL_MAX" =~ ^[0-9]+$ ]] && [ "$STEAL_MAX" -le 100 ] || die "--steal-max takes a percentage (0 to 100), not $STEAL_MAX"
[[ "$STEAL_TRIES" =~ ^[0-9]+$ ]] || die "--steal-tries takes a count, not $STEAL_TRIES"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] && { [ "$REPS" = 0 ] || [ "$ROUNDS" -le "$REPS" ]; } ||
  die "--rounds takes a count from 1 to --reps ($REPS), not $ROUNDS"
[[ "$CALIBRATION_REPLAYS" =~ ^[1-9][0-9]*$ ]] || die "--calibration-replays takes a count of 1 or more, not $CALIBRATION_REPLAYS"
[[ " $DRIVES " == *" $CAPTURE_DRIVE "* ]] || die "--drives must include the capture drive $CAPTURE_DRIVE"

report() {
  python3 "$BENCH/validity/report.py" "$OUT" --capture-drive "$CAPTURE_DRIVE"
}
if [ -n "$REPORT_ONLY" ]; then report; exit 0; fi

[ -x "$TRACEMARK" ] || die "$TRACEMARK missing; cargo build --release first"
[ -x "$DRIVES_SH" ] || die "$DRIVES_SH missing"
need_root "loop devices, chroot, cgroups, tracing"
mkdir -p "$OUT/traces"
# The replays' results go to the study's own database, never the user's.
export TRACEMARK_DB=$OUT/results.db
# The replays' options, all of them: the study validates these settings.
# The queue depth is replay's default (the one a user gets), read from the
# binary's help so the record says what ran.
QUEUE_DEPTH=$("$TRACEMARK" replay --help |
  awk '/--queue-depth/ { f = 1 } f && /\[default:/ { gsub(/.*\[default: |\].*/, ""); print; exit }')
[ -n "$QUEUE_DEPTH" ] || die "could not read replay's default --queue-depth from $TRACEMARK replay --help"
# So is the pacing (binaries older than the setting paced by the trace).
PACING=$("$TRACEMARK" replay --help |
  awk '/--pacing/ { f = 1 } f && /\[default:/ { gsub(/.*\[default: |\].*/, ""); print; exit }')
REPLAY_OPTS=(--allow-write --mapping identity --passes "$PASSES" --cpu-idle "$CPU_IDLE")
settings="cpu_idle=$CPU_IDLE queue_depth=$QUEUE_DEPTH (default) options: ${REPLAY_OPTS[*]}"
[ -z "$PACING" ] || settings="$settings pacing=$PACING (default)"
# Studies calibrated from one replay recorded nothing for it.
[ "$CALIBRATION_REPLAYS" = 1 ] || settings="$settings calibration_replays=$CALIBRATION_REPLAYS"
# A study begun before the options were recorded ran at an explicit
# --queue-depth 128 with the same other options: its record is completed.
if [ -f "$OUT/replay-settings.txt" ] && [ "$(cat "$OUT/replay-settings.txt")" = "cpu_idle=$CPU_IDLE" ] &&
  [ "$QUEUE_DEPTH" = 128 ]; then
  echo "$settings" > "$OUT/replay-settings.txt"
fi
if [ -f "$OUT/replay-settings.txt" ]; then
  [ "$(cat "$OUT/replay-settings.txt")" = "$settings" ] ||
    die "$OUT's replays were made with $(cat "$OUT/replay-settings.txt"), not $settings: use another --out"
else
  echo "$settings" > "$OUT/replay-settings.txt"
fi
# Runs of one study are medians over the same schedule: a continued study
# keeps its repetitions and rounds.
runs="reps=$REPS rounds=$ROUNDS"
if [ -f "$OUT/real-run-settings.txt" ]; then
  [ "$(cat "$OUT/real-run-settings.txt")" = "$runs" ] ||
    die "$OUT's real runs were made with $(cat "$OUT/real-run-settings.txt"), not $runs: use another --out"
elif compgen -G "$OUT/done-*" > /dev/null && [ "$ROUNDS" != 1 ]; then
  die "$OUT holds a study begun with one round; continue it without --rounds, or use another --out"
else
  echo "$runs" > "$OUT/real-run-settings.txt"
fi
UP='' DATA_TMPFS=''
# The replays run in a private cpuacct cgroup (cgroup v1), so their own CPU
# time can be told from the rest of the host's (the drive's stack).
CPU_CG=
[ -d /sys/fs/cgroup/cpuacct ] && CPU_CG=/sys/fs/cgroup/cpuacct/tm-validity-$$
cleanup() {
  set +e
  release_page_reporting
  [ -n "$CPU_CG" ] && [ -d "$CPU_CG" ] && rmdir "$CPU_CG"
  [ -n "$UP" ] && "$DRIVES_SH" down "$UP"
  if [ -n "$DATA_TMPFS" ]; then umount "$DATA_TMPFS" && rmdir "$DATA_TMPFS"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1 for V, whose file drives.sh writes whole: native.sh's fstrim after a run
# would punch its holes back, and the next run's new files would pay a block
# allocation on the virtio disk that no drive has.
no_trim() { if [ "$1" = V ]; then echo 1; else echo 0; fi; }

drive_up() {
  UP=$1
  DEV=$("$DRIVES_SH" up "$1")
  [ -b "$DEV" ] || die "drives.sh up $1 gave no block device ($DEV)"
}
drive_down() {
  "$DRIVES_SH" down "$UP"
  UP=
}

# runs_stolen TIMES HOST: how many runs (a line of each file) the hypervisor
# took more than STEAL_MAX % of the run's wall time from (the host's steal
# counter, both CPUs, between the run's marks).
runs_stolen() {
  paste -d' ' "$1" "$2" | awk -v hz="$(getconf CLK_TCK)" -v max="$STEAL_MAX" '
    { s = 0; for (i = 4; i <= NF; i++) if ($i ~ /^steal=/) s = substr($i, 7) / hz
      if (s > max / 100 * $2) n++ }
    END { print n + 0 }'
}

# A job's runs on the drive that is up, from pristine: REPS of them, or in
# round R of --rounds its share of them. A job whose runs are all in (a
# marker in OUT) is not run again, so a study stopped part way goes on where
# it stopped; a job that fails is tried once more, and its times count only
# from a run of the job that completed. Runs the hypervisor took CPU time
# from (--steal-max) are taken again, all of the job's runs of the call, up
# to --steal-tries times (each such try's runs go to stolen-DRIVE.txt).
time_job() {
  local drive=$1 job=$2 round=${3:-} part cpart hpart reps=$REPS tag=$2 pace
  if [ -n "$round" ]; then
    reps=$((REPS / ROUNDS + (round <= REPS % ROUNDS ? 1 : 0)))
    tag=$job-r$round
  fi
  part=$OUT/times-$drive-$tag.part
  cpart=$OUT/cpu-$drive-$tag.part
  hpart=$OUT/host-$drive-$tag.part
  [ -f "$OUT/done-$drive-$tag" ] && return 0
  local failed=0 stolen_tries=0 stolen
  while :; do
    rm -f "$part" "$cpart" "$hpart"
    "$DRIVES_SH" restore "$drive"
    wait_quiet "$QUIET_BUSY" "$QUIET_WAIT"
    pace=$(python3 "$BENCH/cpu_pace.py" 2 --label "$(date -u +%FT%TZ)/$drive/$tag")
    echo "$pace" >> "$OUT/pace.txt"
    if TM_DEVICE=$DEV TM_MODE=time TM_REPS=$reps TM_TIMES="$part" TM_CPU_TIMES="$cpart" \
      TM_HOST_STATS="$hpart" TRACEMARK="$TRACEMARK" TM_NO_TRIM=$(no_trim "$drive") \
      "$NATIVE" "$job" > "$OUT/log-$drive-$tag.txt" 2>&1; then
      stolen=$(runs_stolen "$part" "$hpart")
      if [ "$stolen" -gt 0 ] && [ "$stolen_tries" -lt "$STEAL_TRIES" ]; then
        stolen_tries=$((stolen_tries + 1))
        cp "$OUT/log-$drive-$tag.txt" "$OUT/log-$drive-$tag.stolen-$stolen_tries.txt"
        paste -d' ' "$part" "$hpart" >> "$OUT/stolen-$drive.txt"
        echo "note: $job on $drive: the hypervisor took over $STEAL_MAX % of $stolen run(s)' time; again" >&2
        continue
      fi
      [ "$stolen" = 0 ] || echo "note: $job on $drive: $stolen run(s) kept with over $STEAL_MAX % of their time stolen ($STEAL_TRIES tries)" >&2
      cat "$part" >> "$OUT/times-$drive.txt"
      cat "$cpart" >> "$OUT/cpu-$drive.txt"
      cat "$hpart" >> "$OUT/host-$drive.txt"
      # each run beside the probe before it: "task p50_ms", cpu-DRIVE.txt's order
      awk -v pace="$pace" 'BEGIN { n = split(pace, f, " "); for (i = 1; i <= n; i++) if (f[i] ~ /^all\.ms=/) { split(substr(f[i], 8), m, "/"); ms = m[3] } }
        { print $1, ms }' "$cpart" >> "$OUT/pace-$drive.txt"
      sed "s/^/$drive /" "$part"
      rm -f "$part" "$cpart" "$hpart"
      touch "$OUT/done-$drive-$tag"
      return 0
    fi
    failed=$((failed + 1))
    cp "$OUT/log-$drive-$tag.txt" "$OUT/log-$drive-$tag.failed-$failed.txt"
    echo "note: $job on $drive failed (try $failed; see $OUT/log-$drive-$tag.failed-$failed.txt)" >&2
    [ "$failed" -lt 2 ] || break
  done
  die "$job on $drive failed twice"
}

# Free page reporting (a virtio-balloon guest's page_reporting module):
# memory the guest frees, as every run's dropped page cache, goes back to
# the hypervisor within seconds, and the next run's page cache faults it in
# again on the host, which shows as the task's system time. On this machine
# a copy's time varied 2x from run to run with it and 1.2x with freed memory
# held 300 s (docs/measurements/validity-page-reporting-2026-12-04.md). For
# the study, freed memory is held back (bench/lib.sh hold_page_reporting);
# the settings are put back at the end.
hold_page_reporting
[ "$PAGE_REPORTING" = absent ] ||
  echo "page reporting: freed memory reported after $(cat "$PAGE_REPORTING_DIR/min_free_ms") ms free (was ${SAVED_REPORTING[0]#*=})"
"$DRIVES_SH" prepare
# The copies' other end (the guest's second disk) in memory: on the virtio
# disk its reads took 4 to 20 s for the same 451 MB, whatever the drive.
GUEST_DIR=${TRACEMARK_GUEST_DIR:-/var/tmp/tracemark-guest}
DATA_TMPFS=$(mktemp -d /tmp/tm-validity-data.XXXXXX)
# Room for what the copies write to it: a copy out writes a set that came
# from this image (copy-iso's 3.3 GB of disc images, copy-photos' 451 MB)
# into blocks the image may never have held, so as much again as the image
# holds, and 1 GiB (3 GiB of room, sized for the photos, filled up under
# copy-iso-out and aborted the disk's journal). native.sh trims it after
# each run's copies.
data_mib=$(($(du -k "$GUEST_DIR/data.img" | cut -f1) / 1024))
mount -t tmpfs -o size=$((2 * data_mib + 1024))m tmpfs "$DATA_TMPFS"
cp --sparse=always "$GUEST_DIR/data.img" "$DATA_TMPFS/data.img"
export TM_DATA_IMG=$DATA_TMPFS/data.img
read -r -a jobs <<< "$JOBS"
read -r -a drives <<< "$DRIVES"
echo "== $(date -u +%FT%TZ) validity study: drives ${drives[*]}, jobs ${jobs[*]}, $REPS repetitions in $ROUNDS round(s); load $(cut -d' ' -f1-3 /proc/loadavg)"

# Ground truth, from pristine: a job's task REPS times back to back on the
# drive that is up (native.sh's TM_REPS: each run from a dropped page
# cache); the jobs in an order rotated from drive to drive, so drift in the
# machine's load spreads over all of them. real_runs D [ROUND]: drive D's
# runs (ROUND's share of them with --rounds; without ROUND, nothing then:
# rounds run first, in all_rounds).
real_runs() {
  local d=$1 round=${2:-} j
  [ "$REPS" -gt 0 ] || return 0
  [ -n "$round" ] || [ "$ROUNDS" = 1 ] || return 0
  for ((j = 0; j < ${#jobs[@]}; j++)); do
    time_job "${drives[d]}" "${jobs[$(((j + d) % ${#jobs[@]}))]}" "$round"
  done
}
# round_done D ROUND: every job's runs of ROUND on drive D are in.
round_done() {
  local job
  for job in "${jobs[@]}"; do [ -f "$OUT/done-${drives[$1]}-$job-r$2" ] || return 1; done
}
all_rounds() {
  local r k d
  [ "$ROUNDS" -gt 1 ] && [ "$REPS" -gt 0 ] || return 0
  for ((r = 1; r <= ROUNDS; r++)); do
    for ((k = 0; k < ${#drives[@]}; k++)); do
      d=$(((k + r - 1) % ${#drives[@]}))
      round_done "$d" "$r" && continue
      echo "== $(date -u +%FT%TZ) round $r of $ROUNDS: ${drives[d]}; load $(cut -d' ' -f1-3 /proc/loadavg)"
      drive_up "${drives[d]}"
      real_runs "$d" "$r"
      drive_down
    done
  done
}

# cpu_run FILE CMD...: CMD in the private cpuacct cgroup; FILE gets
# "CMD_CPU_S OTHER_CPU_S WALL_S" (its CPU time, the rest of the host's, its
# wall time). Without cgroup v1's cpuacct, CMD alone and no FILE.
cpu_run() {
  local file=$1 h0 h1 t0 t1 own rc=0
  shift
  if [ -z "$CPU_CG" ]; then "$@"; return; fi
  mkdir -p "$CPU_CG"
  h0=$(cat /sys/fs/cgroup/cpuacct/cpuacct.usage) t0=$EPOCHREALTIME
  (echo "$BASHPID" > "$CPU_CG/cgroup.procs" && exec "$@") || rc=$?
  h1=$(cat /sys/fs/cgroup/cpuacct/cpuacct.usage) t1=$EPOCHREALTIME
  own=$(cat "$CPU_CG/cpuacct.usage")
  awk -v own="$own" -v h0="$h0" -v h1="$h1" -v t0="$t0" -v t1="$t1" \
    'BEGIN { printf "%.6f %.6f %.6f\n", own / 1e9, (h1 - h0 - own) / 1e9, t1 - t0 }' > "$file"
  echo 0 > "$CPU_CG/cpuacct.usage"
  return $rc
}

# Predictions and scores: each trace replayed on the drive that is up, into
# OUT/KIND-DRIVE-TASK.json (KIND replay, or calib for the capture drive's
# calibration replays).
replays() {
  local drive=$1 kind=${2:-replay} trace task
  for trace in "$OUT"/traces/*.tmt; do
    task=$(basename "$trace" .tmt)
    [ -s "$OUT/$kind-$drive-$task.json" ] && continue
    # A replay whose threads waited more than 5 % of its playback for a CPU
    # measured the machine's other load along with the drive: it is run
    # again (up to REPLAY_TRIES times) and the least disturbed one kept.
    local try best='' best_wait=
    for ((try = 1; try <= REPLAY_TRIES; try++)); do
      "$DRIVES_SH" restore "$drive"
      rm -rf "$OUT/state" && mkdir "$OUT/state"
      wait_quiet "$QUIET_BUSY" "$QUIET_WAIT"
      TRACEMARK_STATE_DIR=$OUT/state cpu_run "$OUT/try$try-cpurep-$kind-$drive-$task.txt" \
        "$TRACEMARK" replay "$trace" --target "$DEV" "${REPLAY_OPTS[@]}" \
        --json "$OUT/try$try-$kind-$drive-$task.json" > "$OUT/try$try-log-$kind-$drive-$task.txt" 2>&1 ||
        { echo "note: $kind of $task on $drive exited $? (see $OUT/try$try-log-$kind-$drive-$task.txt)" >&2; continue; }
      wait_share=$(printf '%.4f' "$(tm_result "$OUT/try$try-$kind-$drive-$task.json" wait_share)")
      if [ -z "$best" ] || awk -v a="$wait_share" -v b="$best_wait" 'BEGIN { exit !(a < b) }'; then
        best=$try best_wait=$wait_share
      fi
      awk -v a="$wait_share" 'BEGIN { exit !(a <= 0.05) }' && break
      echo "note: replay of $task on $drive waited $wait_share of its playback for a CPU; again" >&2
    done
    [ -n "$best" ] || continue
    cp "$OUT/try$best-$kind-$drive-$task.json" "$OUT/$kind-$drive-$task.json"
    cp "$OUT/try$best-log-$kind-$drive-$task.txt" "$OUT/log-$kind-$drive-$task.txt"
    [ "$kind" != replay ] || [ ! -f "$OUT/try$best-cpurep-$kind-$drive-$task.txt" ] ||
      cp "$OUT/try$best-cpurep-$kind-$drive-$task.txt" "$OUT/cpurep-$drive-$task.txt"
    grep -E "predicted task time" "$OUT/log-$kind-$drive-$task.txt" | sed "s/^/$kind $drive /" || true
  done
  "$DRIVES_SH" restore "$drive"
}

# With --rounds, every drive's real runs first, in rounds (all_rounds).
# Then the capture drive: its real runs, then each job captured once with
# the tasks' median untraced time there, then a calibration replay of each
# trace there (`tracemark calibrate`: later predictions are set against it),
# then the replays; then every other drive, its real runs and its replays
# (so the report covers each drive finished so far). The capture drive's
# own predictions come from replays other than the calibration ones.
for ((d = 0; d < ${#drives[@]}; d++)); do [ "${drives[d]}" = "$CAPTURE_DRIVE" ] && cd_index=$d; done
all_rounds
drive_up "$CAPTURE_DRIVE"
real_runs "$cd_index"
untraced=$(python3 -c '
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, secs = line.split()
    t[name].append(float(secs))
print(",".join(f"{k}={statistics.median(v):.6f}" for k, v in t.items()))' "$OUT/times-$CAPTURE_DRIVE.txt")
for job in "${jobs[@]}"; do
  [ -f "$OUT/done-capture-$job" ] && continue
  "$DRIVES_SH" restore "$CAPTURE_DRIVE"
  TM_DEVICE=$DEV TM_UNTRACED_S=$untraced TRACEMARK_TRACE_DIR="$OUT/traces" TRACEMARK="$TRACEMARK" \
    TM_PROVENANCE="$OUT/provenance.txt" TM_NO_TRIM=$(no_trim "$CAPTURE_DRIVE") \
    TRACEMARK_GUEST_DIR=${TRACEMARK_GUEST_DIR:-/var/tmp/tracemark-guest} \
    "$NATIVE" "$job" > "$OUT/log-capture-$job.txt" 2>&1 || die "capturing $job failed (see $OUT/log-capture-$job.txt)"
  touch "$OUT/done-capture-$job"
done
# The calibration replays' kinds: calib, calib2, calib3, ...
calib_kinds=(calib)
for ((k = 2; k <= CALIBRATION_REPLAYS; k++)); do calib_kinds+=("calib$k"); done
for kind in "${calib_kinds[@]}"; do replays "$CAPTURE_DRIVE" "$kind"; done
for trace in "$OUT"/traces/*.tmt; do
  task=$(basename "$trace" .tmt)
  [ -f "$OUT/done-calibrate-$task" ] && continue
  from=()
  for kind in "${calib_kinds[@]}"; do
    f=$OUT/$kind-$CAPTURE_DRIVE-$task.json
    [ -s "$f" ] || die "no calibration replay $kind of $task (see $OUT/try*-log-$kind-$CAPTURE_DRIVE-$task.txt)"
    from+=("$f")
  done
  "$TRACEMARK" calibrate "$trace" --from "${from[@]}"
  touch "$OUT/done-calibrate-$task"
done
replays "$CAPTURE_DRIVE"
drive_down
for ((d = 0; d < ${#drives[@]}; d++)); do
  [ "$d" = "$cd_index" ] && continue
  drive_up "${drives[d]}"
  real_runs "$d"
  replays "${drives[d]}"
  drive_down
  report > /dev/null
done
report
