#!/bin/bash
# Tasks that wait for writeback they caused: the predicted task time against
# the task's real time, on a fast drive and a slow one, for two builds (the
# dependency model before and after a change).
#
# Drives: F, a loop device over a file on a private tmpfs; H, the same over
# a tmpfs-backed medium loop device throttled with blk-throttle (cgroup v1
# root group) to a hard disk's rates, 150 MB/s and 300 IOPS each way, as
# bench/validity/drives.sh does. Each drive holds an ext4 filesystem made
# for the run; its bdi has strict_limit and max_bytes 32 MiB, so a large
# buffered write meets dirty throttling on either drive (private to the
# drive: the machine's own dirty limits stay as they are).
#
# Tasks (in the filesystem, files removed and the fs synced between runs):
#   dd-sync     256 MiB buffered, then sync
#   fsync-loop  64 x (1 MiB buffered write, fsync)
#   journal     128 x (4 KiB buffered write, fsync): journal commits
#   odirect     256 MiB of 1 MiB O_DIRECT writes
#   osync       512 x 64 KiB O_SYNC writes
#   throttled   384 MiB buffered, no sync: dirty throttling
#
# Method: each task timed REPS times on each drive (real time, untraced);
# captured once on F with `tracemark capture --untraced <median on F>`
# (done mark: the command's exit); for each build, the trace calibrated by
# replay on F (`tracemark calibrate`; of REPLAYS replays, the one with the
# median prediction), then replayed REPLAYS times on F and H at the
# defaults (identity mapping onto the unmounted drive, no
# preconditioning, one scored pass after the warm-up); the median
# predicted time (blocking model) set against the median real time on
# that drive.
#
# Usage: bench/writeback_model.sh BEFORE_BIN AFTER_BIN [REPS] [REPLAYS]
#   (root; writes OUT=${TM_WB_OUT:-/var/tmp/tracemark-writeback}/table.txt)
set -euo pipefail

BEFORE=${1:?usage: writeback_model.sh BEFORE_BIN AFTER_BIN [REPS]}
AFTER=${2:?usage: writeback_model.sh BEFORE_BIN AFTER_BIN [REPS]}
REPS=${3:-5}
REPLAYS=${4:-3}
OUT=${TM_WB_OUT:-/var/tmp/tracemark-writeback}
TASKS="dd-sync fsync-loop journal odirect osync throttled"
BLKIO=/sys/fs/cgroup/blkio

die() { echo "writeback_model.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (loop devices, tracefs, blk-throttle)"
for b in "$BEFORE" "$AFTER"; do [ -x "$b" ] || die "$b is not an executable"; done
[ -f "$BLKIO/blkio.throttle.write_bps_device" ] || die "no cgroup v1 blk-throttle under $BLKIO"
command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 missing (apt-get install e2fsprogs)"
mkdir -p "$OUT"
rm -f "$OUT"/times-*.txt

TMPFS='' MNT='' F_DEV='' H_DEV='' M_DEV='' M_DEVNO=
cleanup() {
  set +e
  mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
  [ -n "$MNT" ] && rmdir "$MNT"
  local d
  for d in "$F_DEV" "$H_DEV"; do
    [ -n "$d" ] || continue
    echo 0 > "/sys/block/${d#/dev/}/bdi/strict_limit"
    echo 100 > "/sys/block/${d#/dev/}/bdi/max_ratio"
    losetup -d "$d"
  done
  if [ -n "$M_DEVNO" ]; then
    for f in read_bps_device write_bps_device read_iops_device write_iops_device; do
      echo "$M_DEVNO 0" > "$BLKIO/blkio.throttle.$f"
    done
  fi
  [ -n "$M_DEV" ] && losetup -d "$M_DEV"
  if [ -n "$TMPFS" ]; then umount "$TMPFS" && rmdir "$TMPFS"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

TMPFS=$(mktemp -d /tmp/tm-wb-tmpfs.XXXXXX)
mount -t tmpfs -o size=1200m tmpfs "$TMPFS"
MNT=$(mktemp -d /tmp/tm-wb-mnt.XXXXXX)
truncate -s 560M "$TMPFS/f.img" "$TMPFS/h.img"
F_DEV=$(losetup --find --show "$TMPFS/f.img")
M_DEV=$(losetup --find --show --direct-io=on "$TMPFS/h.img")
M_DEVNO=$(cat "/sys/block/${M_DEV#/dev/}/dev")
cat "/sys/block/${M_DEV#/dev/}/queue/max_hw_sectors_kb" > "/sys/block/${M_DEV#/dev/}/queue/max_sectors_kb"
echo "$M_DEVNO 150000000" > "$BLKIO/blkio.throttle.read_bps_device"
echo "$M_DEVNO 150000000" > "$BLKIO/blkio.throttle.write_bps_device"
echo "$M_DEVNO 300" > "$BLKIO/blkio.throttle.read_iops_device"
echo "$M_DEVNO 300" > "$BLKIO/blkio.throttle.write_iops_device"
H_DEV=$(losetup --find --show --direct-io=on "$M_DEV")
for d in "$F_DEV" "$H_DEV"; do
  echo 1 > "/sys/block/${d#/dev/}/bdi/strict_limit"
  echo $((32 << 20)) > "/sys/block/${d#/dev/}/bdi/max_bytes"
done
dev_of() { case $1 in F) echo "$F_DEV" ;; H) echo "$H_DEV" ;; esac; }

# The task's command, run in the mounted filesystem (by sh -c: the loops'
# variables expand there).
# shellcheck disable=SC2016
task_cmd() {
  case $1 in
    dd-sync) echo 'dd if=/dev/zero of=f bs=1M count=256 status=none && sync' ;;
    fsync-loop) echo 'for i in $(seq 64); do dd if=/dev/zero of=f$i bs=1M count=1 conv=fsync status=none; done' ;;
    journal) echo 'for i in $(seq 128); do dd if=/dev/zero of=j$i bs=4k count=1 conv=fsync status=none; done' ;;
    odirect) echo 'dd if=/dev/zero of=f bs=1M count=256 oflag=direct status=none' ;;
    osync) echo 'dd if=/dev/zero of=f bs=64k count=512 oflag=sync status=none' ;;
    throttled) echo 'dd if=/dev/zero of=f bs=1M count=384 status=none' ;;
    *) die "unknown task $1" ;;
  esac
}

fresh_fs() {
  mountpoint -q "$MNT" && umount "$MNT"
  mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$1"
  mount "$1" "$MNT"
}
# Between runs: the files gone, everything written, the cache of the fs
# dropped (the machine's other caches are left alone).
settle() {
  (cd "$MNT" && rm -f f f* j*)
  sync -f "$MNT"
  sleep 1
  umount "$MNT" && mount "$1" "$MNT"
}

echo "== $(date -u +%FT%TZ) writeback model bench: $REPS runs per task and drive; load $(cut -d' ' -f1-3 /proc/loadavg)"
for drive in F H; do
  dev=$(dev_of $drive)
  fresh_fs "$dev"
  for task in $TASKS; do
    cmd=$(task_cmd "$task")
    for ((r = 0; r < REPS; r++)); do
      settle "$dev"
      t0=$EPOCHREALTIME
      (cd "$MNT" && sh -c "$cmd")
      t1=$EPOCHREALTIME
      awk -v a="$t0" -v b="$t1" -v t="$task" 'BEGIN { printf "%s %.6f\n", t, b - a }' >> "$OUT/times-$drive.txt"
    done
  done
  if [ $drive = F ]; then
    # Captures on F, with the median untraced time there.
    for task in $TASKS; do
      u=$(awk -v t="$task" '$1 == t { print $2 }' "$OUT/times-F.txt" | sort -n |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
      settle "$dev"
      (cd "$MNT" && "$AFTER" capture --device "$dev" --untraced "${u}s" -q -o "$OUT/$task.tmt" \
        --name "$task" -- sh -c "$(task_cmd "$task")")
    done
  fi
  umount "$MNT"
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
predicted() {
  python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["traces"][0]["task"]; print("%.6f" % t["models"]["blocking"])' "$1"
}
# replay BIN TRACE DEV OUT.json: REPLAYS replays; OUT.json is the one with
# the median prediction.
replay() {
  local i
  for ((i = 0; i < REPLAYS; i++)); do
    "$1" replay "$2" --target "$3" --allow-write --mapping identity --precondition skip --passes 1 \
      --no-db --json "$4.$i" > "$4.$i.log" 2>&1 || die "replay of $2 on $3 failed (see $4.$i.log)"
    echo "$(predicted "$4.$i") $i"
  done | sort -n | awk -v n="$REPLAYS" 'NR == int((n + 1) / 2) { print $2 }' | {
    read -r m
    cp "$4.$m" "$4"
  }
}

printf '%-11s %-5s %9s %11s %8s %11s %8s\n' task drive "real s" "before s" "err %" "after s" "err %" | tee "$OUT/table.txt"
for task in $TASKS; do
  for build in before after; do
    bin=$BEFORE
    [ $build = after ] && bin=$AFTER
    cp "$OUT/$task.tmt" "$OUT/$task-$build.tmt"
    replay "$bin" "$OUT/$task-$build.tmt" "$F_DEV" "$OUT/calib-$task-$build.json"
    "$bin" calibrate "$OUT/$task-$build.tmt" --from "$OUT/calib-$task-$build.json" > /dev/null
    for drive in F H; do
      replay "$bin" "$OUT/$task-$build.tmt" "$(dev_of $drive)" "$OUT/replay-$drive-$task-$build.json"
    done
  done
  for drive in F H; do
    real=$(awk -v t="$task" '$1 == t { print $2 }' "$OUT/times-$drive.txt" | median)
    b=$(predicted "$OUT/replay-$drive-$task-before.json")
    a=$(predicted "$OUT/replay-$drive-$task-after.json")
    awk -v t="$task" -v d="$drive" -v r="$real" -v b="$b" -v a="$a" 'BEGIN {
      printf "%-11s %-5s %9.3f %11.3f %+8.1f %11.3f %+8.1f\n", t, d, r, b, (b / r - 1) * 100, a, (a / r - 1) * 100 }' |
      tee -a "$OUT/table.txt"
  done
done
echo "== done $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
