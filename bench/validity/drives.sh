#!/bin/bash
# Drives of different classes for the validity study, each holding the capture
# guest's aged ext4 (guest.img's partition), restored to its pristine bytes
# before every run.
#
#   drives.sh classes               NAME<TAB>description, one line per class
#   drives.sh prepare               the pristine copy (once; idempotent)
#   drives.sh up CLASS              makes the drive; prints only its device path
#   drives.sh restore CLASS         the working copy back to pristine (unmounted)
#   drives.sh verify CLASS          byte equality with pristine (slow)
#   drives.sh down CLASS            removes everything the class made
#   drives.sh down-all              the same for every class, and leftovers
#   drives.sh characterise CLASS... fio on each drive: markdown table, drives.json
#
# The classes:
#   F  loop device over a file in a private tmpfs (direct I/O).
#   V  loop device over a file on the virtio disk (/var/tmp), direct I/O, as
#      the capture attached guest.img (traces/capture/native.sh); the file
#      is written whole (pristine's holes as zeros), so a write into the
#      ext4's free space costs no block allocation on the virtio disk (a
#      discard punches a hole again: validity.sh has native.sh skip its
#      fstrim on V).
#   S, U, H  the tmpfs drive throttled with blk-throttle (cgroup v1 root
#      group: blkio.throttle.*_device, which also holds back writeback) to
#      the data-sheet or review rates of a SATA SSD, a USB 3.0 stick and a
#      7200 rpm hard disk (the rates and their sources are in class_rates).
#      The rules sit on a second loop device under the drive's ("the
#      medium": drive loop -> medium loop -> tmpfs file), because
#      blk-throttle counts bios as they are submitted, before they are merged
#      into requests: on the drive's own loop device a page-cache reader's
#      contiguous 4 KiB bios each paid an I/O of the IOPS cap where a drive
#      sees one merged request (and a replay, which submits the requests,
#      paid one). Below the drive, each request the drive dispatches is one
#      bio of the medium, so the caps apply to requests, as a drive's do.
#   L  loop device over a file served by latency_fuse (FUSE, C), which adds
#      a SATA SSD's QD1 service time to every request: throttling caps rates
#      but adds no latency at queue depth 1 (see class_latency).
# F, S, U, H and L share one tmpfs working copy (about as large as the
# image's used blocks), so only one of them can be up at a time; V's working
# copy is a file under $TM_VALIDITY_DIR.
#
# Every drive gets the capture's queue limits (scheduler none,
# max_sectors_kb 512, read_ahead_kb 128). While a drive is up, a private
# tracefs instance (tmvalidity-N-CLASS, its own tracefs mount under run/)
# records the block_rq_issue events of its writes and discards; `restore`
# copies back only those ranges (and falls back to a full copy, saying so,
# when the instance lost events or was changed), then drops the loop
# device's cached pages. The caller must unmount the drive before `restore`.
#
# Environment: TM_VALIDITY_DIR (default /var/tmp/tracemark-validity),
# TM_GUEST_IMG (default /var/tmp/tracemark-guest/guest.img),
# TM_TMPFS_HEADROOM_MIB (tmpfs room for new data beyond the image's; default
# 8192), TM_TRACK_BUFFER_KB (per-CPU ring buffer of the tracking instance;
# default 65536), TM_FIO_SECONDS (per fio job; default 10), LAT_READ_US,
# LAT_WRITE_US, LAT_SEQ_US, LAT_MBPS, LAT_CHANNELS (class L's model).
# Runs as root. Needs losetup, blockdev, dumpe2fs, fio (characterise), gcc,
# pkg-config and libfuse3-dev (class L).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$HERE/../lib.sh"
GUEST_IMG=${TM_GUEST_IMG:-/var/tmp/tracemark-guest/guest.img}
DIR=${TM_VALIDITY_DIR:-/var/tmp/tracemark-validity}
PRISTINE=$DIR/pristine.img
PRISTINE_INFO=$DIR/pristine.info
RUN=$DIR/run
TRACEFS=$RUN/tracefs
TMPFS=$RUN/tmpfs
TMPFS_WORK=$TMPFS/work.img
FUSE_MNT=$RUN/fuse
FUSE_BIN=$RUN/bin/latency_fuse
V_WORK=$DIR/v-work.img
# V's working copy survives `down V` when a tracked restore made it pristine
# again (writing it on the virtio disk takes minutes): this file then holds
# v_clean_line, and the next `up V` takes the copy as it is.
V_CLEAN=$DIR/v-work.clean
PY="python3 $HERE/drive_image.py"
BLKIO=/sys/fs/cgroup/blkio
TRACK_BUFFER_KB=${TM_TRACK_BUFFER_KB:-65536}
TMPFS_HEADROOM_MIB=${TM_TMPFS_HEADROOM_MIB:-8192}
# Tracing instances are global: their names carry this directory's checksum,
# so a second copy of the script on another directory (the self-test) keeps
# to its own.
INSTANCE_PREFIX=tmvalidity-$(printf '%s' "$DIR" | cksum | cut -d' ' -f1)-
TMPFS_NAME=tmvalidity

CLASSES=(F V S U H L)


class_description() {
  case $1 in
    F) echo "fast: loop over a file in a private tmpfs (direct I/O)" ;;
    V) echo "virtio: loop over a file on the virtio disk (direct I/O, written whole), as the capture" ;;
    S) echo "SATA SSD rates: tmpfs drive throttled to 560/530 MB/s, 98,000/88,000 IOPS (Samsung 870 EVO data sheet)" ;;
    U) echo "USB 3.0 stick rates: tmpfs drive throttled to 136/98 MB/s, 1,250/190 IOPS (Lexar JumpDrive S75, CrystalDiskMark)" ;;
    H) echo "hard disk rates: tmpfs drive throttled to 150/150 MB/s, 300/300 IOPS (WD Blue 1 TB 7200 rpm data sheet)" ;;
    L) echo "SATA SSD latency: loop over a FUSE file adding 70 us per read, 20 us per write, 560 MB/s, 8 channels (Samsung 870 EVO QD1)" ;;
    *) return 1 ;;
  esac
}

# class_rates CLASS: "READ_BPS WRITE_BPS READ_IOPS WRITE_IOPS" for
# blk-throttle (MB = 10^6 bytes), or nothing.
#  S  Samsung 870 EVO (SATA 6 Gb/s TLC SSD), Samsung's data sheet as quoted
#     by Tom's Hardware (news "Samsung announces 870 EVO", 2021-01-19) and
#     KitGuru's review (which measured 561/531 MB/s and 94,003/84,058 IOPS):
#     sequential 560 MB/s read, 530 MB/s write; 4 KiB random QD32
#     98,000 IOPS read, 88,000 IOPS write.
#  U  Lexar JumpDrive S75 128 GB (USB 3.0), CrystalDiskMark 5.2 run published
#     by acex.com.au ("USB 3.0 flash drive read/write performance"):
#     sequential Q1 136.3 MB/s read, 98.1 MB/s write; 4 KiB Q32 1,246 IOPS
#     read, 156 IOPS write. Write IOPS set to 190, not 156: the cap counts
#     each request (on the medium, below the drive's merging), and 98 MB/s
#     in 512 KiB requests (max_sectors_kb) needs 187 of them a second.
#  H  WD Blue 1 TB 7200 rpm (WD10EZEX): WD's data sheet gives 150 MB/s
#     sustained host to/from drive. IOPS 300: the rate at which 512 KiB
#     requests carry 150 MB/s (286/s); a 7200 rpm disk reaches about that
#     many 4 KiB random IOPS only at high queue depth with NCQ; at QD1 it
#     does about 80 (average seek 7.4-8.2 ms plus 4.16 ms rotational latency,
#     WD's Ultrastar specification), which a rate cap cannot model (L does
#     latency).
class_rates() {
  case $1 in
    S) echo "560000000 530000000 98000 88000" ;;
    U) echo "136000000 98000000 1250 190" ;;
    H) echo "150000000 150000000 300 300" ;;
  esac
}

# class_latency: latency_fuse's model for L (environment LAT_* overrides).
# A SATA SSD at queue depth 1, the same Samsung 870 EVO as S: Samsung
# specifies 13,000 IOPS 4 KiB random read and 36,000 IOPS write at QD1
# (KitGuru's review quotes the data sheet), i.e. 77 us and 28 us per
# request, of which a 4 KiB transfer at 560 MB/s is 7 us: read access 70 us,
# write access 20 us (the write cache acknowledges), sequential continuation
# 0 us, 560 MB/s over one shared link, 8 channels (98,000 / 13,000 IOPS at
# QD32). Why an SSD and not a disk's seek model: L is S's drive with its
# latency, so the pair S/L isolates what QD1 latency does to a task, and H
# already covers a slow drive; a disk model (LAT_READ_US=8000
# LAT_WRITE_US=8000 LAT_MBPS=150 LAT_CHANNELS=1) makes every ground-truth
# run minutes long.
class_latency() {
  echo "LAT_READ_US=${LAT_READ_US:-70} LAT_WRITE_US=${LAT_WRITE_US:-20} LAT_SEQ_US=${LAT_SEQ_US:-0} LAT_MBPS=${LAT_MBPS:-560} LAT_CHANNELS=${LAT_CHANNELS:-8}"
}

class_backing() {
  case $1 in
    V) echo disk ;;
    L) echo fuse ;;
    *) echo tmpfs ;;
  esac
}

valid_class() {
  class_description "$1" >/dev/null 2>&1 || die "unknown class '$1' (the classes: ${CLASSES[*]})"
}

# --- state: $RUN/CLASS.state, KEY=VALUE lines, the last one of a key wins,
# written before (or right after) each thing is made, so `down` undoes it
# after a crash too.
state_file() { echo "$RUN/$1.state"; }
state_set() { echo "$2=$3" >> "$(state_file "$1")"; }
state_get() {
  local f; f=$(state_file "$1")
  [ -f "$f" ] || return 0
  awk -F= -v k="$2" '$1 == k { v = substr($0, length(k) + 2) } END { if (v != "") print v }' "$f"
}
is_up() { [ -f "$(state_file "$1")" ]; }
up_tmpfs_class() {
  local c
  for c in "${CLASSES[@]}"; do
    [ "$(class_backing "$c")" = disk ] && continue
    is_up "$c" && { echo "$c"; return 0; }
  done
  return 0
}

work_file() {
  if [ "$(class_backing "$1")" = disk ]; then echo "$V_WORK"; else echo "$TMPFS_WORK"; fi
}

# The device's mount points (from mountinfo, by major:minor).
device_mounts() {
  awk -v d="$1" '$3 == d { print $5 }' /proc/self/mountinfo
}

lock() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock -w 600 9 || die "another drives.sh holds $DIR/.lock"
}

# --- prepare ------------------------------------------------------------------
image_id() { stat -c '%s %Y' "$GUEST_IMG"; }

cmd_prepare() {
  [ -f "$GUEST_IMG" ] || die "$GUEST_IMG missing: build it with traces/capture/build-guest.sh (or set TM_GUEST_IMG)"
  if [ -f "$PRISTINE" ] && [ -f "$PRISTINE_INFO" ] && [ "$(cat "$PRISTINE_INFO")" = "$(image_id)" ]; then
    log "prepare: $PRISTINE is up to date with $GUEST_IMG"
    return 0
  fi
  local c
  for c in "${CLASSES[@]}"; do is_up "$c" && die "prepare: class $c is up; drives.sh down-all first"; done
  local attached users
  attached=$(losetup -j "$GUEST_IMG" | cut -d: -f1 | tr '\n' ' ')
  [ -z "$attached" ] || die "prepare: $GUEST_IMG is attached to $attached(a build or capture running?); try again when it is done"
  # (find fails on processes that exit while it looks)
  users=$({ find /proc/[0-9]*/fd -lname "$(readlink -f "$GUEST_IMG")" 2>/dev/null || true; } | cut -d/ -f3 | sort -u | tr '\n' ' ')
  [ -z "$users" ] || die "prepare: $GUEST_IMG is open in process(es) $users(a build or guest running?)"
  local start size
  read -r start size < <($PY partition "$GUEST_IMG") || die "prepare: cannot read the partition table of $GUEST_IMG"
  log "prepare: $GUEST_IMG partition 1 at byte $start, $size bytes; copying its used blocks to $PRISTINE"
  rm -f "$PRISTINE" "$PRISTINE_INFO" "$V_WORK" "$V_CLEAN"
  $PY pristine "$GUEST_IMG" "$start" "$size" "$PRISTINE"
  chmod 0444 "$PRISTINE"
  image_id > "$PRISTINE_INFO"
  log "prepare: done: $PRISTINE holds $(du -m "$PRISTINE" | cut -f1) MiB"
}

need_pristine() {
  [ -f "$PRISTINE" ] || die "$PRISTINE missing: run drives.sh prepare first"
}

# --- pieces of a drive ----------------------------------------------------------
track_filter() {
  local maj=${1%:*} min=${1#*:}
  echo "dev == $(((maj << 20) | min)) && !(rwbs ~ \"*R*\")"
}

# Starts recording CLASS's device's writes and discards.
start_tracking() {
  local class=$1 dev=$2 inst
  ensure_tracefs
  inst=$TRACEFS/instances/$INSTANCE_PREFIX$class
  state_set "$class" TRACE "$inst"
  [ -d "$inst" ] && rmdir "$inst"
  mkdir "$inst"
  echo "$TRACK_BUFFER_KB" > "$inst/buffer_size_kb"
  echo 0 > "$inst/options/overwrite"   # a full buffer drops (and counts) new events
  track_filter "$dev" > "$inst/events/block/block_rq_issue/filter"
  echo 1 > "$inst/events/block/block_rq_issue/enable"
  echo 1 > "$inst/tracing_on"
  log "$class: tracking writes and discards of $dev in $inst (${TRACK_BUFFER_KB} KiB per CPU)"
}

tracking_intact() {
  local inst=$1 ev=$1/events/block/block_rq_issue
  [ -d "$ev" ] && [ "$(cat "$inst/tracing_on")" = 1 ] && [ "$(cat "$ev/enable")" = 1 ] &&
    [ "$(cat "$ev/filter")" = "$(track_filter "$2")" ]
}

# The capture's queue limits (traces/capture/native.sh).
set_queue_limits() {
  local q=/sys/block/${1#/dev/}/queue
  echo none > "$q/scheduler"
  echo 512 > "$q/max_sectors_kb"   # first: a limit change resets read_ahead_kb
  echo 128 > "$q/read_ahead_kb"
  [ "$(cat "$q/read_ahead_kb")" = 128 ] && [ "$(cat "$q/max_sectors_kb")" = 512 ] &&
    grep -q '\[none\]' "$q/scheduler" ||
    die "$1: queue limits not as set (scheduler $(cat "$q/scheduler"), read_ahead_kb $(cat "$q/read_ahead_kb"), max_sectors_kb $(cat "$q/max_sectors_kb"))"
}

THROTTLE_FILES=(read_bps_device write_bps_device read_iops_device write_iops_device)

throttle_rule() { awk -v d="$1" '$1 == d { print $2 }' "$BLKIO/blkio.throttle.$2"; }

# No rule may be on a fresh drive: it would be someone else's, and measure
# nothing we meant.
check_no_throttle() {
  local f v
  [ -d "$BLKIO" ] || return 0
  for f in "${THROTTLE_FILES[@]}"; do
    v=$(throttle_rule "$1" "$f")
    [ -z "$v" ] || die "$1 already has a blk-throttle rule in blkio.throttle.$f ($v) that this script did not set; remove it (echo '$1 0' > $BLKIO/blkio.throttle.$f)"
  done
}

set_throttle() {
  local class=$1 dev=$2 rates i=0 r
  read -r -a rates <<< "$(class_rates "$class")"
  [ -f "$BLKIO/blkio.throttle.read_bps_device" ] ||
    die "$class: no cgroup v1 blkio throttle files under $BLKIO; on a cgroup v2 host io.max exists only in child cgroups, which this script does not set up"
  state_set "$class" THROTTLE "$dev"
  for r in "${rates[@]}"; do
    echo "$dev $r" > "$BLKIO/blkio.throttle.${THROTTLE_FILES[i]}"
    [ "$(throttle_rule "$dev" "${THROTTLE_FILES[i]}")" = "$r" ] || die "$class: blkio.throttle.${THROTTLE_FILES[i]} did not take $dev $r"
    i=$((i + 1))
  done
  log "$class: blk-throttle on $dev: read $((rates[0] / 1000000)) MB/s, write $((rates[1] / 1000000)) MB/s, read ${rates[2]} IOPS, write ${rates[3]} IOPS"
}

clear_throttle() {
  local dev=$1 f
  for f in "${THROTTLE_FILES[@]}"; do
    [ -n "$(throttle_rule "$dev" "$f" 2>/dev/null)" ] && echo "$dev 0" > "$BLKIO/blkio.throttle.$f"
  done
  return 0
}

# The medium of a throttled class: a loop device over BACKING, throttled,
# with room for the drive's largest request in one bio; prints its path.
start_medium() {
  local class=$1 backing=$2 medium mdev q
  medium=$(losetup --find --show --direct-io=on "$backing")
  state_set "$class" MEDIUM "$medium"
  mdev=$(cat "/sys/block/${medium#/dev/}/dev")
  q=/sys/block/${medium#/dev/}/queue
  echo none > "$q/scheduler"
  cat "$q/max_hw_sectors_kb" > "$q/max_sectors_kb"
  [ "$(cat "$q/max_sectors_kb")" -ge 512 ] || die "$class: the medium $medium takes only $(cat "$q/max_sectors_kb") KiB per request"
  [ "$(cat "/sys/block/${medium#/dev/}/loop/dio")" = 1 ] || log "$class: warning: the medium $medium is not in direct I/O mode"
  check_no_throttle "$mdev"
  set_throttle "$class" "$mdev"
  log "$class: medium $medium ($mdev) over $backing"
  echo "$medium"
}

build_fuse() {
  local src=$HERE/latency_fuse.c
  if [ ! -x "$FUSE_BIN" ] || [ "$src" -nt "$FUSE_BIN" ]; then
    command -v gcc >/dev/null || die "L needs gcc"
    pkg-config --exists fuse3 || die "L needs libfuse3 (apt-get install fuse3 libfuse3-dev pkg-config)"
    mkdir -p "${FUSE_BIN%/*}"
    # shellcheck disable=SC2046 # pkg-config prints one option per word
    gcc -O2 -Wall -Wextra -o "$FUSE_BIN.tmp" "$src" $(pkg-config --cflags --libs fuse3) || die "building $src failed"
    mv "$FUSE_BIN.tmp" "$FUSE_BIN"
  fi
}

start_fuse() {
  local class=$1 backing=$2
  build_fuse
  mkdir -p "$FUSE_MNT"
  mountpoint -q "$FUSE_MNT" && die "$FUSE_MNT is already mounted (drives.sh down-all cleans leftovers)"
  state_set "$class" FUSE "$FUSE_MNT"
  # At nice -10: a drive's service time is not to wait for the CPU that the
  # task under test keeps busy (each request wakes this program twice).
  # shellcheck disable=SC2046
  env $(class_latency) setsid nice -n -10 "$FUSE_BIN" "$backing" "$FUSE_MNT" -f \
    -o fsname=tmvalidity-latency,max_threads=64,max_idle_threads=64 \
    </dev/null >>"$RUN/$class-fuse.log" 2>&1 9>&- &
  state_set "$class" FUSE_PID $!
  local _
  for _ in $(seq 100); do [ -f "$FUSE_MNT/disk" ] && break; sleep 0.1; done
  [ -f "$FUSE_MNT/disk" ] || die "$class: latency_fuse did not come up (see $RUN/$class-fuse.log)"
  log "$class: latency_fuse serving $backing at $FUSE_MNT/disk: $(class_latency)"
}

mount_tmpfs() {
  local class=$1 data_mib size_mib
  mkdir -p "$TMPFS"
  mountpoint -q "$TMPFS" && die "$TMPFS is already mounted (drives.sh down-all cleans leftovers)"
  data_mib=$(du -m "$PRISTINE" | cut -f1)
  size_mib=$((data_mib + TMPFS_HEADROOM_MIB))
  state_set "$class" TMPFS "$TMPFS"
  mount -t tmpfs -o "size=${size_mib}m,mode=0700" "$TMPFS_NAME" "$TMPFS"
  log "$class: tmpfs $TMPFS of $size_mib MiB ($data_mib MiB of image data + $TMPFS_HEADROOM_MIB MiB for new data)"
}

# --- up -------------------------------------------------------------------------
cmd_up() {
  local class=$1
  # A drive that is up belongs to whoever made it (a study may be using it,
  # its ext4 mounted between two restores): never handed out twice.
  if is_up "$class"; then
    local loop; loop=$(state_get "$class" LOOP)
    die "$class is already up${loop:+ on $loop} ($(state_file "$class")); drives.sh down $class first if it is yours"
  fi
  need_pristine
  local kind other
  kind=$(class_backing "$class")
  if [ "$kind" != disk ]; then
    other=$(up_tmpfs_class)
    [ -z "$other" ] || die "$class: class $other is up and holds the one tmpfs working copy (F, S, U, H and L share it; memory allows one); drives.sh down $other first"
  fi
  mkdir -p "$RUN"
  local started=$SECONDS
  echo "CLASS=$class" > "$(state_file "$class")"
  UP_CLASS=$class
  trap 'up_failed' EXIT

  local work backing
  work=$(work_file "$class")
  local reuse=0
  if [ "$kind" = disk ]; then
    if [ -f "$work" ] && [ -f "$V_CLEAN" ] && [ "$(cat "$V_CLEAN")" = "$(v_clean_line)" ]; then
      reuse=1
    else
      rm -f "$work"
      local need_mib avail_mib
      # Written whole (drive_image.py fill_holes): the partition's size.
      need_mib=$(($(du -m --apparent-size "$PRISTINE" | cut -f1) + 1024))
      avail_mib=$(df -m --output=avail "$DIR" | tail -1 | tr -d ' ')
      [ "$avail_mib" -gt "$need_mib" ] || die "$class: $DIR has $avail_mib MiB free, the working copy needs $need_mib"
    fi
    rm -f "$V_CLEAN"
  else
    mount_tmpfs "$class"
  fi
  state_set "$class" WORK "$work"
  if [ "$reuse" = 1 ]; then
    log "$class: working copy $work is pristine (restored by the last down)"
  else
    log "$class: working copy $work from $PRISTINE"
    $PY clone "$PRISTINE" "$work"
  fi
  backing=$work
  [ "$kind" = fuse ] && { start_fuse "$class" "$work"; backing=$FUSE_MNT/disk; }
  [ -z "$(class_rates "$class")" ] || backing=$(start_medium "$class" "$backing")

  local loop dev
  loop=$(losetup --find --show --direct-io=on "$backing")
  state_set "$class" LOOP "$loop"
  dev=$(cat "/sys/block/${loop#/dev/}/dev")
  state_set "$class" DEV "$dev"
  start_tracking "$class" "$dev"
  [ "$(cat "/sys/block/${loop#/dev/}/loop/dio")" = 1 ] || log "$class: warning: $loop is not in direct I/O mode (the backing file refused O_DIRECT)"
  set_queue_limits "$loop"
  check_no_throttle "$dev"
  state_set "$class" CLEAN 1
  trap - EXIT
  log "$class: up on $loop ($dev) in $((SECONDS - started)) s: $(class_description "$class")"
  echo "$loop"
}

up_failed() {
  local rc=$?
  [ "$rc" = 0 ] && return 0
  log "$UP_CLASS: up failed; removing what it made"
  down_class "$UP_CLASS"
  exit "$rc"
}

# --- restore / verify -----------------------------------------------------------
require_up() {
  is_up "$1" || die "$1 is not up (drives.sh up $1)"
  [ -n "$(state_get "$1" LOOP)" ] || die "$1 is half up (a failed up?); drives.sh down $1"
}

cmd_restore() {
  local class=$1 loop dev mounts
  require_up "$class"
  loop=$(state_get "$class" LOOP)
  dev=$(state_get "$class" DEV)
  mounts=$(device_mounts "$dev" | tr '\n' ' ')
  [ -z "$mounts" ] || die "$class: $loop is mounted at $mounts; unmount it before restore"
  # Dirty pages of the device's own cache go out first (and are traced).
  blockdev --flushbufs "$loop"
  state_set "$class" CLEAN 0
  local start=$SECONDS
  $PY restore "$PRISTINE" "$(state_get "$class" WORK)" --trace "$(state_get "$class" TRACE)" \
    --dev "$dev" --filter "$(track_filter "$dev")"
  # The device's cached pages are now stale.
  blockdev --flushbufs "$loop"
  # Tracking switched off or changed behind our back: a new instance, so the
  # next restore is a tracked one again (the copy is pristine now).
  tracking_intact "$(state_get "$class" TRACE)" "$dev" || start_tracking "$class" "$dev"
  state_set "$class" CLEAN 1
  log "$class: restored in $((SECONDS - start)) s"
}

cmd_verify() {
  local class=$1
  require_up "$class"
  $PY verify "$PRISTINE" "$(state_get "$class" WORK)" || die "$class: the working copy differs from $PRISTINE"
}

# --- down -----------------------------------------------------------------------
kill_fuse() {
  local pid=$1 _
  [ -n "$pid" ] || return 0
  # only the process we started (its command line names our binary)
  { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -q "^$FUSE_BIN " || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

unmount_fuse() {
  local _
  mountpoint -q "$FUSE_MNT" 2>/dev/null || return 0
  for _ in $(seq 30); do
    fusermount3 -u "$FUSE_MNT" 2>/dev/null && return 0
    sleep 0.2
  done
  log "unmounting $FUSE_MNT lazily"
  fusermount3 -u -z "$FUSE_MNT" || umount -l "$FUSE_MNT"
}

detach_loop() {
  local loop=$1 dev m _
  [ -b "$loop" ] || return 0
  dev=$(cat "/sys/block/${loop#/dev/}/dev" 2>/dev/null) || return 0
  for m in $(device_mounts "$dev"); do
    log "$loop is still mounted at $m; unmounting it"
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  losetup -d "$loop" 2>/dev/null || true
  for _ in $(seq 50); do
    [ -z "$(cat "/sys/block/${loop#/dev/}/loop/backing_file" 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  log "warning: $loop still has a backing file"
}

remove_instance() {
  local inst=$1 _
  [ -d "$inst" ] || return 0
  echo 0 > "$inst/tracing_on" 2>/dev/null || true
  for _ in $(seq 30); do rmdir "$inst" 2>/dev/null && return 0; sleep 0.1; done
  log "warning: could not remove tracing instance $inst"
}

# Unmounts the private tracefs once no instance of this directory's is left.
release_private_tracefs() {
  mountpoint -q "$TRACEFS" 2>/dev/null || return 0
  compgen -G "$TRACEFS/instances/$INSTANCE_PREFIX*" >/dev/null && return 0
  umount "$TRACEFS" 2>/dev/null || true
}

# V at down: a tracked restore (no full copy) makes the working copy
# pristine for the next up; anything less and the copy is deleted.
# What v-work.clean holds for a copy `up V` may take: pristine.info's line,
# and that the copy is written whole (an older, sparse copy is not taken).
v_clean_line() {
  cat "$PRISTINE_INFO"
  echo "written whole: pristine's holes as zeros"
}

keep_clean_copy() {
  local class=$1 loop dev trace work
  loop=$(state_get "$class" LOOP)
  dev=$(state_get "$class" DEV)
  trace=$(state_get "$class" TRACE)
  work=$(state_get "$class" WORK)
  rm -f "$V_CLEAN"
  [ -n "$loop" ] && [ -b "$loop" ] && [ -n "$trace" ] && [ -f "$work" ] && [ -f "$PRISTINE_INFO" ] || return 0
  [ "$(state_get "$class" CLEAN)" = 1 ] || return 0   # a restore died half way
  [ -z "$(device_mounts "$dev")" ] || return 0
  tracking_intact "$trace" "$dev" || return 0
  blockdev --flushbufs "$loop" || return 0
  if $PY restore "$PRISTINE" "$work" --trace "$trace" --dev "$dev" --filter "$(track_filter "$dev")" --tracked-only; then
    v_clean_line > "$V_CLEAN"
    log "$class: working copy kept, pristine, for the next up"
  fi
}

# Undoes everything the class's state file records, in reverse order of
# making; each step on its own, so a failed one does not stop the rest.
down_class() {
  local class=$1 loop dev fuse pid tmpfs trace work medium
  set +e
  loop=$(state_get "$class" LOOP)
  medium=$(state_get "$class" MEDIUM)
  dev=$(state_get "$class" THROTTLE)
  trace=$(state_get "$class" TRACE)
  fuse=$(state_get "$class" FUSE)
  pid=$(state_get "$class" FUSE_PID)
  tmpfs=$(state_get "$class" TMPFS)
  work=$(state_get "$class" WORK)
  [ -n "$dev" ] && clear_throttle "$dev"
  [ "$(class_backing "$class")" = disk ] && keep_clean_copy "$class"
  [ -n "$loop" ] && detach_loop "$loop"
  [ -n "$medium" ] && detach_loop "$medium"
  [ -n "$trace" ] && remove_instance "$trace"
  if [ -n "$fuse" ]; then unmount_fuse; kill_fuse "$pid"; fi
  if [ -n "$tmpfs" ]; then
    mountpoint -q "$TMPFS" && { umount "$TMPFS" || umount -l "$TMPFS"; }
  elif [ -n "$work" ] && [ ! -f "$V_CLEAN" ]; then
    rm -f "$work"
  fi
  rm -f "$(state_file "$class")"
  release_private_tracefs
  set -e
  log "$class: down"
}

cmd_down() {
  local class=$1
  if ! is_up "$class"; then log "$class: not up"; return 0; fi
  down_class "$class"
}

# Every class, then whatever a crash left that is recognisably ours: loop
# devices over our files, our tmpfs and FUSE mounts, tmvalidity-* tracing
# instances, V's working copy.
cmd_down_all() {
  local c loop back
  for c in "${CLASSES[@]}"; do is_up "$c" && down_class "$c"; done
  set +e
  # a drive over a medium first (its backing file is the medium's device)
  local ours=()
  while read -r loop back; do
    case $back in "$DIR"/*) ours+=("$loop") ;; esac
  done < <(losetup --list --noheadings --raw --output NAME,BACK-FILE 2>/dev/null)
  while read -r loop back; do
    [[ " ${ours[*]} " == *" $back "* ]] && { log "leftover $loop over $back"; detach_loop "$loop"; }
  done < <(losetup --list --noheadings --raw --output NAME,BACK-FILE 2>/dev/null)
  for loop in "${ours[@]}"; do
    log "leftover $loop over $(cat "/sys/block/${loop#/dev/}/loop/backing_file" 2>/dev/null)"
    detach_loop "$loop"
  done
  if mountpoint -q "$FUSE_MNT" 2>/dev/null; then
    log "leftover FUSE mount $FUSE_MNT"
    unmount_fuse
  fi
  local p
  for p in /proc/[0-9]*; do
    { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -q "^$FUSE_BIN " && { log "leftover latency_fuse ${p#/proc/}"; kill_fuse "${p#/proc/}"; }
  done
  if mountpoint -q "$TMPFS" 2>/dev/null; then log "leftover tmpfs $TMPFS"; umount "$TMPFS" || umount -l "$TMPFS"; fi
  if [ -d "$RUN" ] || [ -e "$TRACEFS" ]; then
    mkdir -p "$TRACEFS"
    mountpoint -q "$TRACEFS" || mount -t tracefs nodev "$TRACEFS"
    local inst
    for inst in "$TRACEFS"/instances/"$INSTANCE_PREFIX"*; do
      [ -d "$inst" ] && { log "leftover tracing instance ${inst##*/}"; remove_instance "$inst"; }
    done
    umount "$TRACEFS" 2>/dev/null
  fi
  [ -f "$V_WORK" ] && { log "removing $V_WORK"; rm -f "$V_WORK" "$V_CLEAN"; }
  rm -f "$RUN"/*.state
  set -e
  log "down-all: done"
}

# --- characterise ---------------------------------------------------------------
FIO_SECONDS=${TM_FIO_SECONDS:-10}
REGION=$((1 << 30))   # fio's region: 1 GiB at 1 GiB, prefilled, restored after

fio_job() {
  local out=$1 loop=$2; shift 2
  fio --name=drive --filename="$loop" --direct=1 --offset=$REGION --size=$REGION \
    --output-format=json --output="$out" "$@" >/dev/null ||
    die "fio $* on $loop failed"
}

characterise_one() {
  local class=$1 out=$2 loop made=0
  if ! is_up "$class"; then
    loop=$(cmd_up "$class")
    made=1
    CHAR_MADE=$class
  else
    loop=$(state_get "$class" LOOP)
    [ -z "$(device_mounts "$(state_get "$class" DEV)")" ] || die "$class: its drive is mounted; characterise needs it unmounted"
  fi
  local t=(--runtime="$FIO_SECONDS" --time_based --ramp_time=1)
  log "$class: fio on $loop (${FIO_SECONDS} s per job)"
  # the region holds data first (a hole of V's file would never reach the disk)
  fio_job "$out/$class-fill.json" "$loop" --rw=write --bs=1M --iodepth=8 --ioengine=libaio
  fio_job "$out/$class-qd1-read.json" "$loop" --rw=randread --bs=4k --iodepth=1 --ioengine=psync "${t[@]}"
  fio_job "$out/$class-qd1-write.json" "$loop" --rw=randwrite --bs=4k --iodepth=1 --ioengine=psync "${t[@]}"
  fio_job "$out/$class-qd32-read.json" "$loop" --rw=randread --bs=4k --iodepth=32 --ioengine=libaio "${t[@]}"
  fio_job "$out/$class-seq-read.json" "$loop" --rw=read --bs=1M --iodepth=8 --ioengine=libaio "${t[@]}"
  fio_job "$out/$class-seq-write.json" "$loop" --rw=write --bs=1M --iodepth=8 --ioengine=libaio "${t[@]}"
  cmd_restore "$class"
  [ "$made" = 1 ] && down_class "$class"
  CHAR_MADE=
  return 0
}

# A drive characterise made is taken down again when it fails.
CHAR_MADE=
characterise_failed() {
  local rc=$?
  [ "$rc" = 0 ] || [ -z "$CHAR_MADE" ] || { log "$CHAR_MADE: characterise failed; taking the drive down"; down_class "$CHAR_MADE"; }
}

cmd_characterise() {
  command -v fio >/dev/null || die "characterise needs fio (apt-get install fio)"
  local out class
  out=$(mktemp -d "$DIR/fio.XXXXXX")
  trap characterise_failed EXIT
  for class in "$@"; do characterise_one "$class" "$out"; done
  local args=()
  for class in "$@"; do args+=("$class=$(class_description "$class")"); done
  python3 "$HERE/fio_summary.py" "$out" "$DIR/drives.json" "$FIO_SECONDS" "${args[@]}"
  rm -rf "$out"
}

# --- main -----------------------------------------------------------------------
usage() { sed -n '6,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
cmd=$1; shift
case $cmd in
  classes)
    [ $# = 0 ] || usage
    for c in "${CLASSES[@]}"; do printf '%s\t%s\n' "$c" "$(class_description "$c")"; done ;;
  prepare)
    [ $# = 0 ] || usage
    need_root "loop devices, tracefs, blk-throttle"; lock; cmd_prepare ;;
  up|restore|verify|down)
    [ $# = 1 ] || usage
    valid_class "$1"; need_root "loop devices, tracefs, blk-throttle"; lock
    case $cmd in
      up) cmd_up "$1" ;;
      restore) cmd_restore "$1" ;;
      verify) cmd_verify "$1" ;;
      down) cmd_down "$1" ;;
    esac ;;
  down-all)
    [ $# = 0 ] || usage
    need_root "loop devices, tracefs, blk-throttle"; lock; cmd_down_all ;;
  characterise)
    [ $# -ge 1 ] || usage
    for c in "$@"; do valid_class "$c"; done
    need_root "loop devices, tracefs, blk-throttle"; lock; need_pristine; cmd_characterise "$@" ;;
  *) usage ;;
esac
