#!/bin/bash
# The reference traces at native speed: the guest's own programs and work
# (work-jobs.sh, and the steps of launch.sh, copies.sh and install.sh) run in
# a chroot on the capture guest's own disk image (its aged ext4, its Debian 12
# programs and files), on the host's kernel. The guest runs under TCG here,
# and TCG stretches every CPU-bound phase several-fold, which changes the I/O
# (an encoder's reads spread over minutes, scratch files outliving
# writeback's 30 s expiry, a copy paced by the emulated CPU).
#
# What makes it a desktop rather than a server:
#   - the disk: guest.img's ext4 partition on a loop device (direct I/O, so
#     the host keeps no second copy), with the guest's queue limits of a
#     consumer NVMe drive: scheduler none, max_sectors_kb 512,
#     read_ahead_kb 128;
#   - memory: the programs run in a memory cgroup limited to $MEM_LIMIT (the
#     guest's 6 GiB less its desktop), so page cache and scratch files are
#     reclaimed as on such a machine;
#   - writeback: the dirty thresholds of a 6 GiB machine (10 % and 20 % of
#     about 5 GiB of dirtyable memory: background 512 MiB, limit 1 GiB), set
#     for the capture and put back afterwards; no `sync` anywhere: a trace
#     ends when the cgroup's dirty and writeback pages are under 1 MiB and
#     the disk has been quiet 3 s;
#   - warm program, cold documents: the program runs once untraced, then only
#     the documents are dropped from the page cache (posix_fadvise);
#   - graphics (launches, game-0ad): the guest's Mesa (llvmpipe) on the
#     host's Xvfb (apt-get install xvfb); the X server's files are not on the
#     traced disk, as a desktop's are in memory before anything starts.
#
# Jobs:
#   video-render, photo-light, photo-heavy (the default set, with game-0ad)
#       work.sh's commands, program warm, documents cold;
#   game-0ad  the 0 A.D. match, played until TM_GAME_S s (default 120);
#   game-supertuxkart  the race without graphics, from a dropped page cache;
#   office-writer, office-calc, office-impress, publishing-draw
#       LibreOffice over UNO (lo_office.py): soffice running before the
#       trace, the document evicted, TM_THINK_S (default 5) s pauses;
#   launch-gimp, launch-inkscape, launch-libreoffice, launch-firefox,
#   launch-darktable, game-launch-0ad, game-launch-supertuxkart
#       "until usable" in the guest's own Xfce session (xfce4-session on its
#       own D-Bus): one untraced launch (a returning user), then the page
#       cache dropped and the files the session's processes have mapped read
#       back (desktop warm, application cold), then the traced launch, ending
#       LAUNCH_TAIL_S (default 10) s after its window is mapped and visible;
#   copy-iso, copy-photos  copies.sh's copies into, within and out of the
#       traced disk (the other end the guest's second disk, data.img, on its
#       own untraced loop device at /mnt/data), from a dropped page cache;
#   install-krita  `apt-get install krita` as root from the local repository
#       on data.img (dpkg's fsyncs included), purged again afterwards.
#   unpack-sync, db-commit, file-search  tasks of kinds the reference suite
#       does not hold, for the validity study (work-jobs.sh): a tarball
#       unpacked then synced, SQLite commits, grep through small files.
# Task marks: each job's task starts when its command starts and is "done"
# when the command returns (a launch: when its window is mapped, before the
# LAUNCH_TAIL_S tail); the capture records both (kill -USR2 / -USR1 to
# tracemark capture), and a replay's predicted task time spans them.
#
# Usage: traces/capture/native.sh [JOB]...   (as root; the guest must not be
#        running; build-guest.sh makes guest.img and data.img)
# Environment for the validity study (bench/validity.sh):
#   TM_DEVICE=/dev/loopN  run on this block device (the guest's partition,
#                         already attached, queue limits set) instead of
#                         attaching guest.img;
#   TM_MODE=time          run each task untraced and append "NAME SECONDS"
#                         (start to done) to $TM_TIMES instead of capturing;
#                         after the done mark, no tail: `sync`, then settle;
#   TM_REPS=N             time mode: each job's task N times back to back,
#                         each from its own cold start (page cache dropped;
#                         launches: desktop warm, application killed between
#                         runs; the one-off preparation, the desktop and the
#                         warm-up launch only before the first);
#   TM_UNTRACED_S=NAME=S,...  capture mode: the tasks' untraced times, stored
#                         in their traces (capture --untraced);
#   TM_CPU_TIMES=FILE     time mode: also append "NAME TASK_CPU_S OTHER_CPU_S"
#                         (the task's CPU time, and the rest of the host's,
#                         between the marks);
#   TM_HOST_STATS=FILE    time mode: also append "NAME key=delta ..." of the
#                         host's counters between the marks (host_counters:
#                         stolen CPU time, reclaim, major faults);
#   TM_DESKTOP_GL=0       launches: the desktop without a GL context (the
#                         reference traces before 2026-12-04; default 1: a
#                         compositor's context held by gl_hold.py, so the
#                         graphics stack is warm as on a composited desktop);
#   TM_DATA_IMG=FILE      the second disk's image (default $WORK/data.img);
#   TM_NO_TRIM=1          no fstrim of the disk after a job's run (a drive
#                         over a file written whole would get the holes back).
set -euo pipefail

CAPTURE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$CAPTURE_DIR/../.." && pwd)
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
WORK=${TRACEMARK_GUEST_DIR:-/var/tmp/tracemark-guest}
IMG=$WORK/guest.img
MNT=$WORK/native-mnt
TRACEMARK=${TRACEMARK:-$REPO/target/release/tracemark}
OUT_DIR=${TRACEMARK_TRACE_DIR:-$REPO/traces}
PROVENANCE=${TM_PROVENANCE:-$WORK/provenance.txt}
MEM_LIMIT=${TM_NATIVE_MEM:-5G}
DIRTY_BACKGROUND_BYTES=$((512 << 20))
DIRTY_BYTES=$((1024 << 20))
CHROOT_PATH=/usr/local/bin:/usr/bin:/bin:/usr/games:/usr/sbin:/sbin
# The guest's first (and only) partition starts at sector 2048.
PART_OFFSET=1048576

# As `bench` (uid 1000 in the guest image) with a clean environment.
as_bench() {
  chroot --userspec=1000:1000 --groups=1000 "$MNT" /usr/bin/env -i HOME=/home/bench \
    USER=bench LOGNAME=bench LANG=C.UTF-8 PATH="$CHROOT_PATH" ${DISPLAY:+DISPLAY=$DISPLAY} \
    ${SESSION_BUS:+XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=$SESSION_BUS} sh -c "$1"
}
as_root() { chroot "$MNT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH="$CHROOT_PATH" sh -c "$1"; }

# The cgroup's dirty + writeback bytes (cgroup v1 memory.stat or v2).
cgroup_dirty() {
  awk '$1 == "dirty" || $1 == "writeback" || $1 == "file_dirty" || $1 == "file_writeback" { s += $2 }
       END { print s + 0 }' "$CG/memory.stat"
}
device_ios() { awk '{ print $1 + $5 }' "/sys/block/${LOOP#/dev/}/stat"; }

# Waits until the cgroup's dirty and writeback pages are under 1 MiB
# (SETTLE_DIRTY_MAX bytes) and the disk has been quiet QUIET seconds
# (writeback at the kernel's own pace).
settle() {
  local quiet=${1:-3} timeout=${2:-900} last now since dirty
  last=$(device_ios); since=$SECONDS
  local deadline=$((SECONDS + timeout))
  while [ $SECONDS -lt $deadline ]; do
    sleep 1
    now=$(device_ios)
    if [ "$now" != "$last" ]; then last=$now; since=$SECONDS; fi
    dirty=$(cgroup_dirty)
    if [ "$dirty" -lt "${SETTLE_DIRTY_MAX:-1048576}" ] && [ $((SECONDS - since)) -ge "$quiet" ]; then
      echo "settled: dirty+writeback $((dirty / 1024)) KiB, device quiet $((SECONDS - since)) s" >&2
      return 0
    fi
  done
  die "did not settle within $timeout s"
}

# Drops only the files under PATH from the page cache (after writing them).
evict() {
  sync -f "$MNT/$1/." 2>/dev/null || sync
  find "$MNT$1" -type f -print0 | xargs -0 -r python3 -c '
import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
'
  echo "evict: $(find "$MNT$1" -type f | wc -l) files under $1 dropped from the page cache"
}

# cpu_ns: the CPU time (ns) every process on the host and the task's
# cgroup have used so far: what the host spent beyond the task during a run
# (a drive's loop workers or FUSE server, the X server) is the difference.
cpu_ns() {
  if [ -n "${CPU_CG:-}" ]; then
    echo "$(cat /sys/fs/cgroup/cpuacct/cpuacct.usage) $(cat "$CPU_CG/cpuacct.usage")"
  else
    awk '$1 == "usage_usec" { printf "%s ", $2 * 1000 }' /sys/fs/cgroup/cpu.stat "$CG/cpu.stat"
    echo
  fi
}

# mark start|done: the task's marks, to the capture (signals) and to
# $TM_MARKS (wall-clock seconds, then cpu_ns) when set.
mark() {
  if [ -n "${TRACEMARK_CAPTURE_PID:-}" ]; then
    if [ "$1" = start ]; then kill -USR2 "$TRACEMARK_CAPTURE_PID"; else kill -USR1 "$TRACEMARK_CAPTURE_PID"; fi
  fi
  if [ -n "${TM_MARKS:-}" ]; then
    echo "$1 $EPOCHREALTIME $(cpu_ns)" >> "$TM_MARKS"
    [ -z "${TM_HOST_STATS:-}" ] || host_counters "$1" >> "$TM_MARKS.counters"
  fi
}

# host_counters LABEL: "LABEL key=value ..." of the host's counters that tell
# a run disturbed by something other than its drive: CPU time stolen by the
# hypervisor and spent in each state (/proc/stat, in USER_HZ ticks), major
# faults, reclaim, compaction and THP faults (/proc/vmstat), the task
# cgroup's own reclaim (memory.stat), and the memory handed back to the
# hypervisor (free page reporting, where the guest has it).
host_counters() {
  {
    echo -n "$1"
    awk '$1 == "cpu" { printf " user=%s nice=%s system=%s idle=%s iowait=%s irq=%s softirq=%s steal=%s", $2, $3, $4, $5, $6, $7, $8, $9 }' /proc/stat
    awk '$1 ~ /^(pgmajfault|pgscan_direct|pgscan_kswapd|pgsteal_direct|compact_stall|thp_fault_alloc|pgfault|workingset_refault_file)$/ { printf " %s=%s", $1, $2 }' /proc/vmstat
    [ -f "$CG/memory.stat" ] && awk '$1 ~ /^(pgmajfault|total_pgmajfault|pgscan|total_pgpgin|pgpgin)$/ { printf " cg_%s=%s", $1, $2 }' "$CG/memory.stat"
    # freed memory handed back to the hypervisor (free page reporting)
    [ -r /sys/module/page_reporting/parameters/reported_kib ] &&
      echo -n " reported_kib=$(cat /sys/module/page_reporting/parameters/reported_kib)"
    echo
  }
}

# Inside the capture (`native.sh --traced CMD`): joins the cgroup, runs CMD
# as bench (the task, between its marks), sleeps $TM_TAIL_S (a launch's
# tail), then waits for writeback.
if [ "${1:-}" = --traced ]; then
  echo $$ > "$CG/cgroup.procs"
  [ -z "${CPU_CG:-}" ] || echo $$ > "$CPU_CG/cgroup.procs"
  mark start
  if [ "${3:-}" = root ]; then as_root "$2"; else as_bench "$2"; fi
  mark "done"
  # A timed run ends at its done mark: its writeback is forced out instead
  # of left to expire, so it cannot overlap the next run.
  if [ -n "${TM_MARKS:-}" ]; then sync; exit 0; fi
  [ -n "${TM_TAIL_S:-}" ] && sleep "$TM_TAIL_S"
  [ "${3:-}" = no-settle ] || settle 3 900
  exit 0
fi

need_root "loop devices, chroot, cgroups, tracing"
[ -n "${TM_DEVICE:-}" ] || [ -f "$IMG" ] || die "$IMG missing; build it with traces/capture/build-guest.sh"
[ -x "$TRACEMARK" ] || die "$TRACEMARK missing; build it with cargo build --release"
pgrep -f 'qemu-system.*tracemark-guest' >/dev/null && die "the capture guest is running; stop it first"
mountpoint -q "$MNT" 2>/dev/null && die "$MNT is already mounted (another capture running?)"
source "$CAPTURE_DIR/work-jobs.sh"
jobs=("$@"); [ ${#jobs[@]} -gt 0 ] || jobs=(video-render photo-light photo-heavy game-0ad)
GAME_S=${TM_GAME_S:-120}
REPS=${TM_REPS:-1}
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "TM_REPS=$REPS is not a positive count"
[ "$REPS" = 1 ] || [ "${TM_MODE:-capture}" = time ] || die "TM_REPS is for TM_MODE=time (a capture is one run)"

LOOP='' CG='' CPU_CG='' MOUNTS=() SAVED_VM=() XVFB_PID='' DATA_LOOP=''
# Every process left in the cgroup (a desktop session, an application).
# (KILL is repeated: soffice's oosplash starts a new soffice.bin when its
# child dies, so one round can leave a process that was forked meanwhile.)
cgroup_kill() {
  [ -n "$CG" ] && [ -f "$CG/cgroup.procs" ] || return 0
  # (a process may exit between the read and its kill: not an error)
  xargs -r kill -s TERM < "$CG/cgroup.procs" 2>/dev/null || true
  for _ in $(seq 30); do [ -s "$CG/cgroup.procs" ] || return 0; sleep 0.1; done
  for _ in $(seq 50); do
    xargs -r kill -s KILL < "$CG/cgroup.procs" 2>/dev/null || true
    sleep 0.2
    [ -s "$CG/cgroup.procs" ] || return 0
  done
  echo "$(basename "$0"): processes left in $CG: $(tr '\n' ' ' < "$CG/cgroup.procs")" >&2
}
# Every process whose root is the chroot, in the cgroup or not (an oosplash
# outlived cgroup_kill once and kept the next Xfce session from starting).
chroot_kill() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$MNT" ] && kill -s KILL "${p#/proc/}" 2>/dev/null
  done
  return 0
}
cgroup_runs() {
  local pid
  while read -r pid; do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] && return 0
  done < "$CG/cgroup.procs"
  return 1
}
cleanup() {
  set +e
  cgroup_kill
  chroot_kill
  [ -n "$XVFB_PID" ] && kill "$XVFB_PID" 2>/dev/null
  for ((i=${#MOUNTS[@]}-1; i>=0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}"
  done
  [ -n "$LOOP" ] && [ -n "$OWN_LOOP" ] && losetup -d "$LOOP"
  [ -n "$DATA_LOOP" ] && losetup -d "$DATA_LOOP"
  # (a process killed while its pages are written back leaves the cgroup late)
  if [ -n "$CG" ] && [ -d "$CG" ]; then
    for _ in $(seq 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.2; done
    [ -d "$CG" ] && echo "$(basename "$0"): could not remove $CG" >&2
  fi
  if [ -n "$CPU_CG" ] && [ -d "$CPU_CG" ]; then
    for _ in $(seq 50); do rmdir "$CPU_CG" 2>/dev/null && break; sleep 0.2; done
    [ -d "$CPU_CG" ] && echo "$(basename "$0"): could not remove $CPU_CG" >&2
  fi
  local kv
  for kv in "${SAVED_VM[@]}"; do echo "${kv#*=}" > "/proc/sys/vm/${kv%%=*}"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The partition as its own loop device: the trace's offsets are within it
# (or the device given in TM_DEVICE, attached and set up by its owner).
OWN_LOOP=
if [ -n "${TM_DEVICE:-}" ]; then
  [ -b "$TM_DEVICE" ] || die "TM_DEVICE=$TM_DEVICE is not a block device"
  LOOP=$TM_DEVICE
else
  size=$(( $(stat -c %s "$IMG") - PART_OFFSET ))
  LOOP=$(losetup --find --show --direct-io=on --offset $PART_OFFSET --sizelimit $size "$IMG")
  OWN_LOOP=1
fi
q=/sys/block/${LOOP#/dev/}/queue
# max_sectors_kb first: on recent kernels a change of the queue limits resets
# read_ahead_kb (to twice the optimal I/O size: 1024 on a loop device).
echo none > "$q/scheduler"
echo 512 > "$q/max_sectors_kb"
echo 128 > "$q/read_ahead_kb"
mkdir -p "$MNT"
mount "$LOOP" "$MNT"; MOUNTS+=("$MNT")
[ "$(cat "$q/read_ahead_kb")" = 128 ] && [ "$(cat "$q/max_sectors_kb")" = 512 ] ||
  die "$LOOP: queue limits not as set (read_ahead_kb $(cat "$q/read_ahead_kb"), max_sectors_kb $(cat "$q/max_sectors_kb"))"
echo "disk: $IMG (partition 1) on $LOOP: scheduler $(cat "$q/scheduler"), read_ahead_kb 128, max_sectors_kb 512"
for d in proc sys dev dev/pts; do mount --bind "/$d" "$MNT/$d"; MOUNTS+=("$MNT/$d"); done

if [ -d /sys/fs/cgroup/memory ]; then
  CG=/sys/fs/cgroup/memory/tracemark-native-$$
  mkdir "$CG"; echo "$MEM_LIMIT" > "$CG/memory.limit_in_bytes"
else
  CG=/sys/fs/cgroup/tracemark-native-$$
  mkdir "$CG"; echo "$MEM_LIMIT" > "$CG/memory.max"
fi
# cgroup v1 counts CPU time in its own hierarchy (v2 in $CG's cpu.stat).
if [ -d /sys/fs/cgroup/cpuacct ]; then
  CPU_CG=/sys/fs/cgroup/cpuacct/tracemark-native-$$
  mkdir "$CPU_CG"
fi
export CG CPU_CG LOOP MNT
# Checked before anything is saved: with byte thresholds set (another run
# of this script), the ratios read 0, and "restoring" them would leave the
# machine with no dirty limit at all.
[ "$(cat /proc/sys/vm/dirty_bytes)" = 0 ] && [ "$(cat /proc/sys/vm/dirty_background_bytes)" = 0 ] ||
  die "vm.dirty_bytes or vm.dirty_background_bytes is set; this script restores ratios only"
for kv in dirty_ratio=$(cat /proc/sys/vm/dirty_ratio) \
  dirty_background_ratio=$(cat /proc/sys/vm/dirty_background_ratio) \
  dirty_expire_centisecs=$(cat /proc/sys/vm/dirty_expire_centisecs) \
  dirty_writeback_centisecs=$(cat /proc/sys/vm/dirty_writeback_centisecs); do
  SAVED_VM+=("$kv")
done
echo $DIRTY_BACKGROUND_BYTES > /proc/sys/vm/dirty_background_bytes
echo $DIRTY_BYTES > /proc/sys/vm/dirty_bytes
echo 3000 > /proc/sys/vm/dirty_expire_centisecs
echo 500 > /proc/sys/vm/dirty_writeback_centisecs

# native_capture NAME CATEGORY DESCRIPTION CMD [no-settle|root]: CMD as bench
# (or root) in the cgroup, traced until writeback is done (unless no-settle).
native_capture() {
  local name=$1 category=$2 description=$3 cmd=$4 how=${5:-}
  if [ "${TM_MODE:-capture}" = time ]; then
    native_time "$@"
    return
  fi
  local untraced=() kv
  for kv in ${TM_UNTRACED_S:+${TM_UNTRACED_S//,/ }}; do
    [ "${kv%%=*}" = "$name" ] && untraced=(--untraced "${kv#*=}s")
  done
  mkdir -p "$OUT_DIR"
  local out=$OUT_DIR/$name.tmt
  rm -f "$out"
  [ "$how" = no-settle ] || settle 3 600
  echo "capture: $name"
  local load_before; load_before=$(uptime | sed 's/.*load average: //')
  if ! "$TRACEMARK" capture --device "$LOOP" -o "$out" --name "$name" --category "$category" \
    --description "$description" "${untraced[@]}" -- "$CAPTURE_DIR/native.sh" --traced "$cmd" ${how:+"$how"}; then
    rm -f "$out"
    die "$name: the capture or the workload failed; no trace kept"
  fi
  {
    echo "== $name captured $(date -u +%FT%TZ) by traces/capture/native.sh"
    echo "   host: $(uname -r), $(nproc) CPUs, load before: $load_before, after: $(uptime | sed 's/.*load average: //')"
    echo "   chroot on guest.img, memory cgroup $MEM_LIMIT, dirty background $DIRTY_BACKGROUND_BYTES / limit $DIRTY_BYTES bytes"
  } >> "$PROVENANCE"
  "$TRACEMARK" info "$out"
}

# native_time NAME CATEGORY DESCRIPTION CMD [HOW]: the same task untraced;
# appends "NAME SECONDS" (start mark to done mark) to $TM_TIMES.
native_time() {
  local name=$1 cmd=$4 how=${5:-} marks
  [ -n "${TM_TIMES:-}" ] || die "TM_MODE=time needs TM_TIMES (the file the times go to)"
  [ "$how" = no-settle ] || settle 3 600
  marks=$(mktemp)
  echo "time: $name"
  if ! TM_MARKS=$marks "$CAPTURE_DIR/native.sh" --traced "$cmd" ${how:+"$how"}; then
    rm -f "$marks"
    die "$name: the workload failed"
  fi
  awk -v name="$name" '$1 == "start" && !s { s = $2 } $1 == "done" && !d { d = $2 }
    END { if (s && d) printf "%s %.6f\n", name, d - s; else exit 1 }' "$marks" >> "$TM_TIMES" ||
    die "$name: no start and done marks"
  # "NAME TASK_CPU_S HOST_OTHER_CPU_S": the task's CPU time between its
  # marks, and what every other process on the host used meanwhile.
  if [ -n "${TM_CPU_TIMES:-}" ]; then
    awk -v name="$name" '$1 == "start" && !s { s = 1; h0 = $3; t0 = $4 }
      $1 == "done" && !d { d = 1; h1 = $3; t1 = $4 }
      END { if (s && d && h1 != "" && t1 != "") printf "%s %.6f %.6f\n", name, (t1 - t0) / 1e9, ((h1 - h0) - (t1 - t0)) / 1e9; else exit 1 }' \
      "$marks" >> "$TM_CPU_TIMES" || die "$name: no CPU times in the marks"
  fi
  # "NAME key=delta ...": the host's counters between the marks.
  if [ -n "${TM_HOST_STATS:-}" ]; then
    awk -v name="$name" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[$1, kv[1]] = kv[2]; if ($1 == "start") keys[++n] = kv[1] } }
      END { printf "%s", name; for (i = 1; i <= n; i++) printf " %s=%d", keys[i], v["done", keys[i]] - v["start", keys[i]]; print "" }' \
      "$marks.counters" >> "$TM_HOST_STATS" || die "$name: no host counters in the marks"
    rm -f "$marks.counters"
  fi
  rm -f "$marks"
  tail -n 1 "$TM_TIMES"
  [ "$how" = no-settle ] || settle 3 600
}

# The untraced preparation runs in the cgroup too.
prepared() { (echo $BASHPID > "$CG/cgroup.procs"; as_bench "$1"); }

# An X display for the chroot: the host's Xvfb :77, its socket bound in.
x_display() {
  command -v Xvfb >/dev/null || die "$job needs Xvfb on the host (apt-get install xvfb)"
  if [ -z "$XVFB_PID" ]; then
    Xvfb :77 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
    XVFB_PID=$!
    for _ in $(seq 50); do [ -S /tmp/.X11-unix/X77 ] && break; sleep 0.2; done
    [ -S /tmp/.X11-unix/X77 ] || die "Xvfb :77 did not start"
    mkdir -p "$MNT/tmp/.X11-unix"
    mount --bind /tmp/.X11-unix "$MNT/tmp/.X11-unix"; MOUNTS+=("$MNT/tmp/.X11-unix")
  fi
  export DISPLAY=:77
  wait_window_install
}

# wait_window (wait_window.c) built on the host and put in the chroot's
# /run (a tmpfs: nothing of it is read from the traced disk).
wait_window_install() {
  local bin=$WORK/wait_window
  if [ ! -x "$bin" ] || [ "$CAPTURE_DIR/wait_window.c" -nt "$bin" ]; then
    [ -f /usr/include/X11/Xlib.h ] || die "$job needs libX11's headers on the host (apt-get install libx11-dev)"
    gcc -O2 -Wall -o "$bin.tmp" "$CAPTURE_DIR/wait_window.c" -lX11 && mv "$bin.tmp" "$bin" ||
      die "building wait_window failed"
  fi
  run_tmpfs
  install -d -m 755 "$MNT/run/tracemark"
  install -m 755 "$bin" "$MNT/run/tracemark/wait_window"
}

# /run in the chroot a tmpfs, as on the guest.
run_tmpfs() {
  if ! mountpoint -q "$MNT/run"; then
    mount -t tmpfs -o mode=755 tmpfs "$MNT/run"; MOUNTS+=("$MNT/run")
  fi
  install -d -o 1000 -g 1000 -m 700 "$MNT/run/user/1000"
}

# The guest's Xfce session on the display, with its own session bus.
desktop_start() {
  x_display
  run_tmpfs
  prepared "dbus-daemon --session --address=unix:path=/run/user/1000/bus --fork --nopidfile"
  export SESSION_BUS=unix:path=/run/user/1000/bus
  prepared "setsid xfce4-session </dev/null >/dev/null 2>&1 &"
  for _ in $(seq 120); do cgroup_runs xfce4-panel && break; sleep 0.5; done
  cgroup_runs xfce4-panel || die "the Xfce session did not start (no xfce4-panel)"
  if [ "${TM_DESKTOP_GL:-1}" = 1 ]; then
    # A compositor's GL context (gl_hold.py): Xfce on Xvfb composites
    # without GL, where a desktop's compositor keeps the graphics stack
    # mapped; session_cold reads back what the session maps, so with it
    # the launches find Mesa and LLVM warm, as on such a desktop.
    install -m 755 "$CAPTURE_DIR/gl_hold.py" "$MNT/run/tracemark/gl_hold.py"
    prepared "setsid python3 /run/tracemark/gl_hold.py </dev/null >/run/user/1000/gl_hold.log 2>&1 &"
    for _ in $(seq 100); do grep -q '^gl_hold: ' "$MNT/run/user/1000/gl_hold.log" 2>/dev/null && break; sleep 0.2; done
    grep -q '^gl_hold: ' "$MNT/run/user/1000/gl_hold.log" ||
      die "the desktop's GL context did not start: $(cat "$MNT/run/user/1000/gl_hold.log" 2>/dev/null)"
  fi
  sleep 10
  echo "desktop: Xfce session up on $DISPLAY$([ "${TM_DESKTOP_GL:-1}" = 1 ] && echo ", $(cat "$MNT/run/user/1000/gl_hold.log")")"
}

desktop_stop() {
  cgroup_kill
  chroot_kill
  unset SESSION_BUS
}

# Cold, as after boot with the desktop running: the page cache dropped, then
# the files the session's processes have mapped, and the helpers the traced
# command runs, read back.
session_cold() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
  local pid f
  while read -r pid; do
    awk '$6 ~ /^\// { print $6 }' "/proc/$pid/maps" 2>/dev/null
  done < "$CG/cgroup.procs" | sort -u > "$WORK/native-mapped.txt"
  { cat "$WORK/native-mapped.txt"; echo "$LAUNCH_HELPERS" | tr ' ' '\n';
    chroot "$MNT" ldd /run/tracemark/wait_window 2>/dev/null | awk '/=>/ { print $3 }'; } |
  while read -r f; do
    f=${f#"$MNT"}   # /proc/PID/maps names files as the reader (the host) sees them
    [ -n "$f" ] && [ -f "$MNT$f" ] && cat "$MNT$f" > /dev/null 2>&1
  done
  echo "cold: page cache dropped, $(wc -l < "$WORK/native-mapped.txt") files mapped by the session read back"
}
LAUNCH_HELPERS="/bin/sh /bin/dash /usr/bin/env /usr/bin/setsid /usr/bin/sleep
  /usr/lib/x86_64-linux-gnu/libX11.so.6 /usr/lib/x86_64-linux-gnu/libxcb.so.1"

# A command for bench that starts CMD in the session and returns when a
# visible window whose name matches PATTERN is mapped (then sleeps TAIL s).
# The wait is wait_window's (events from the X server, done within a few
# ms), not `xdotool search --sync`, which looks only every 500 ms.
launch_cmd() {
  local pattern=$1 cmd=$2 tail=$3
  printf 'setsid sh -c %q </dev/null >/dev/null 2>&1 &
/run/tracemark/wait_window %q 600 || exit 1
sleep %s' "$cmd" "$pattern" "$tail"
}

# The guest's second disk at /mnt/data in the chroot (untraced).
data_disk() {
  [ -n "$DATA_LOOP" ] && return 0
  local data=${TM_DATA_IMG:-$WORK/data.img}
  [ -f "$data" ] || die "$data missing; build it with traces/capture/build-guest.sh"
  DATA_LOOP=$(losetup --find --show --direct-io=on "$data")
  mkdir -p "$MNT/mnt/data"
  mount "$DATA_LOOP" "$MNT/mnt/data"; MOUNTS+=("$MNT/mnt/data")
  mkdir -p "$MNT/mnt/data/out"; chown 1000:1000 "$MNT/mnt/data/out"
}

# A copy as copies.sh makes it, from a cold page cache.
copy_job() {
  local name=$1 what=$2 src=$3 dst=$4
  prepared "rm -rf $dst && mkdir -p ${dst%/*}"
  sync; echo 3 > /proc/sys/vm/drop_caches
  native_capture "$name" "file copy" \
    "cp at native speed on the guest's disk (chroot, 5 GiB memory cgroup): $what; page cache dropped before; writeback at its own pace" \
    "cp -r $src $dst"
}

# office_job KIND INPUT NAME CATEGORY WHAT: work.sh's office_job at native speed.
THINK_S=${TM_THINK_S:-5}
office_job() {
  local kind=$1 input=$2 name=$3 category=$4 what=$5
  local d=/home/bench/$name lo="python3 /run/tracemark/lo_office.py"
  run_tmpfs
  install -d -m 755 "$MNT/run/tracemark"
  install -m 644 "$CAPTURE_DIR/lo_office.py" "$MNT/run/tracemark/lo_office.py"
  prepared "[ -f $d/original/$input ] || $lo prepare-$kind $d/original"
  prepared "rm -rf $d/work && mkdir -p $d/work && cp $d/original/$input $d/work/"
  prepared "$lo serve $d"   # soffice started and left running (untraced)
  evict "$d"
  native_capture "$name" "$category" \
    "$what at native speed (chroot on the guest's disk, 5 GiB memory cgroup; running, headless, UNO); ${THINK_S} s pauses between actions" \
    "TM_LO_ATTACH=1 TM_THINK_S=$THINK_S $lo run-$kind $d/work"
  prepared "$lo quit $d" || true
  cgroup_kill
}

# trim DIR: the freed blocks of DIR's filesystem discarded. What a delete
# frees is free once the journal has committed it: synced first, or fstrim
# finds nothing to discard.
trim() {
  { sync -f "$1" && fstrim "$1"; } || true
}

# The freed blocks discarded after a job's run, unless TM_NO_TRIM=1.
trim_free() {
  [ "${TM_NO_TRIM:-0}" = 1 ] || trim "$MNT"
}

# copy_set SET WHAT OUTNAME SRC INTO WITHIN: copies.sh's three copies of a
# set (into the traced disk at INTO, within it to WITHIN, out of it to
# /mnt/data/out/OUTNAME), then the copies removed and the disks trimmed:
# the second disk whatever TM_NO_TRIM says (it is untraced, and its image,
# in memory for the validity study, would otherwise keep every copy out:
# copy-iso's second run filled the room left for it).
copy_set() {
  local set=$1 what=$2 out=/mnt/data/out/$3 src=$4 into=$5 within=$6 sz
  data_disk
  sz=$(du -sm "$MNT$src" | cut -f1)
  copy_job "copy-$set-into" "$what ($sz MB) from a second disk into the traced disk" "$src" "$into"
  copy_job "copy-$set-within" "$what ($sz MB) from one folder to another on the traced disk" "$into" "$within"
  copy_job "copy-$set-out" "$what ($sz MB) from the traced disk to a second disk" "$within" "$out"
  prepared "rm -rf $into $within $out"
  trim_free
  trim "$MNT/mnt/data"
}

# name | window-name pattern | command (as launch.sh's; LibreOffice with
# --norestore: the headless office work traces end by killing soffice when it
# does not quit, and the recovery dialog it would then open at the next start
# is no window of Writer's)
LAUNCHES=(
  "launch-gimp|GNU Image Manipulation Program|gimp|GIMP 2.10"
  "launch-inkscape| - Inkscape\$|inkscape|Inkscape 1.2"
  "launch-libreoffice|LibreOffice Writer|libreoffice --writer --norestore|LibreOffice 7.4 Writer (GTK3)"
  "launch-firefox|Mozilla Firefox|firefox-esr|Firefox ESR"
  "launch-darktable|darktable|darktable|darktable 4.2"
  "game-launch-0ad|^0 A.D.|/usr/games/pyrogenesis|0 A.D. 0.26"
  "game-launch-supertuxkart|SuperTuxKart|/usr/games/supertuxkart|SuperTuxKart 1.4"
)
LAUNCH_TAIL_S=${LAUNCH_TAIL_S:-10}
# Inkscape 1.2 opens a start screen instead of its document window until the
# user turns it off (preference /options/boot enabled=0); a returning user
# has. Inkscape merges the user's preferences.xml over its built-in defaults,
# so a file with that one setting is enough where none exists yet.
# shellcheck disable=SC2016 # expanded in the chroot
INKSCAPE_RETURNING_USER='p=$HOME/.config/inkscape/preferences.xml
if [ ! -f "$p" ]; then mkdir -p "${p%/*}" && printf "%s\n" "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>" "<inkscape version=\"1\">" "  <group id=\"options\">" "    <group id=\"boot\" enabled=\"0\" />" "  </group>" "</inkscape>" > "$p"
elif ! grep -q "id=\"boot\" enabled=\"0\"" "$p"; then sed -i "s/id=\"boot\"/id=\"boot\" enabled=\"0\"/" "$p"; fi'

launch_job() {
  local row name pattern cmd what prog
  for row in "${LAUNCHES[@]}"; do
    IFS='|' read -r name pattern cmd what <<< "$row"
    [ "$name" = "$job" ] && break
    name=
  done
  [ -n "$name" ] || die "unknown job $job"
  prog=$(basename "${cmd%% *}"); prog="[${prog:0:1}]${prog:1}"
  if [ "$REP" = 1 ]; then
    desktop_start
    [ "$name" = launch-inkscape ] && prepared "$INKSCAPE_RETURNING_USER"
    echo "== $name: warm-up launch (untraced)"
    prepared "$(launch_cmd "$pattern" "$cmd" 5)"
  fi
  prepared "pkill -TERM -u 1000 -f '$prog' || true"; sleep 5; prepared "pkill -KILL -u 1000 -f '$prog' || true"
  settle 3 300
  session_cold
  sleep 5
  local category="app launch"; [[ $name == game-* ]] && category="game launch"
  TM_TAIL_S=$LAUNCH_TAIL_S native_capture "$name" "$category" \
    "$what launch at native speed on the guest's disk (chroot, the guest's Xfce session on Xvfb, llvmpipe), application files cold, desktop warm: until $LAUNCH_TAIL_S s after its window is mapped" \
    "$(launch_cmd "$pattern" "$cmd" 0)" no-settle
  # what the screen showed at the trace's end (ImageMagick's import)
  if [ "${TM_MODE:-capture}" != time ]; then
    prepared "import -window root /tmp/$name.png" && mv "$MNT/tmp/$name.png" "$WORK/$name-native.png" || true
  fi
  [ "$REP" = "$REPS" ] && desktop_stop   # the application with the session
  return 0
}

for job in "${jobs[@]}"; do
 for ((REP = 1; REP <= REPS; REP++)); do
  [ "$REPS" = 1 ] || echo "== $job: run $REP of $REPS"
  case $job in
    video-render)
      prepared "$VIDEO_PREP"
      prepared "$VIDEO_RENDER"   # untraced: ffmpeg and its libraries cached
      prepared "$VIDEO_CLEAN"
      evict "$VIDEO_DIR"
      native_capture video-render "video render" \
        "ffmpeg at native speed (chroot on the guest's disk, 5 GiB memory cgroup): 40 s 1080p30 MJPEG intermediate and WAV graded, titled, faded, encoded to H.264/AAC MP4; program warm, inputs cold; writeback at its own pace" \
        "$VIDEO_RENDER"
      prepared "$VIDEO_CLEAN" ;;
    photo-light)
      prepared "$PHOTO_LIGHT_PREP"
      prepared "$IM_WARM"
      evict "$PHOTO_LIGHT_DIR"
      native_capture photo-light "photo edit light" \
        "ImageMagick at native speed (chroot on the guest's disk, 5 GiB memory cgroup): 12 photos (15-17 MP) opened, 7 edits each, saved as 16-bit TIFF and JPEG; program warm, photos cold; writeback at its own pace" \
        "$PHOTO_LIGHT_EDIT"
      prepared "$PHOTO_LIGHT_CLEAN" ;;
    photo-heavy)
      as_root "$PHOTO_HEAVY_POLICY_ROOT"
      prepared "$PHOTO_HEAVY_PREP"
      prepared "$PHOTO_HEAVY_RESET"
      prepared "$IM_WARM"
      evict "$PHOTO_HEAVY_DIR"
      native_capture photo-heavy "photo edit heavy" \
        "ImageMagick at native speed (chroot on the guest's disk, 5 GiB memory cgroup): a 7200x10800 poster of 7 layers (PSD) opened, layers split out, colour-graded and recomposed, PSD saved, exported as 16-bit TIFF and JPEG proof; program warm, project cold; writeback at its own pace" \
        "$PHOTO_HEAVY_EDIT"
      prepared "$PHOTO_HEAVY_CLEAN" ;;
    game-0ad)
      x_display
      # untraced: the game started to its main menu and quit (a returning
      # player: its start-up files are cached, as in work.sh)
      prepared "timeout -k 5 -s TERM 45 /usr/games/pyrogenesis -nosound >/dev/null 2>&1; true"
      native_capture game-0ad "game load" \
        "0 A.D. 0.26 at native speed (chroot on the guest's disk, 5 GiB memory cgroup, llvmpipe on Xvfb): Acropolis Bay with 2 Petra AIs loaded and played until $GAME_S s after the start; game start-up warm, match files cold" \
        "timeout -k 15 -s TERM $GAME_S $GAME_0AD_MATCH >/dev/null 2>&1; [ \$? -eq 124 ]"
      unset DISPLAY ;;
    launch-*|game-launch-*) launch_job ;;
    game-supertuxkart)
      [ "$REP" = 1 ] && prepared "$STK_RACE"   # untraced: program and data read once
      sync; echo 3 > /proc/sys/vm/drop_caches
      # The race takes seconds here; the few kB the game writes at exit stay
      # under the usual 1 MiB, so the trace waits until they are written.
      export SETTLE_DIRTY_MAX=1
      native_capture game-supertuxkart "game load" \
        "SuperTuxKart 1.4 at native speed (chroot on the guest's disk, 5 GiB memory cgroup; --no-graphics): start, load Lighthouse with 4 karts, race 1 lap in profile mode, quit; page cache dropped before" \
        "$STK_RACE"
      unset SETTLE_DIRTY_MAX ;;
    office-writer)
      office_job writer report.odt office-writer office \
        "LibreOffice Writer 7.4: long report opened cold, TOC added, replace-all, chapter appended, saved as .odt, exported to .docx and PDF" ;;
    office-calc)
      office_job calc ledger.ods office-calc office \
        "LibreOffice Calc 7.4: 120,000-row ledger opened cold, formulas filled down, a SUMIFS summary sheet, recalculated, saved as .ods, exported to .xlsx" ;;
    office-impress)
      office_job impress deck.odp office-impress office \
        "LibreOffice Impress 7.4: 40-slide photo deck opened cold, titles edited, saved, exported to PDF and .pptx" ;;
    publishing-draw)
      office_job draw brochure.odg publishing-draw publishing \
        "LibreOffice Draw 7.4: 16-page A4 brochure with 48 photographs opened cold and exported to print PDF at full resolution" ;;
    copy-iso)
      copy_set iso "4 ISO-sized files" isos /mnt/data/isos \
        /home/bench/Downloads/isos /home/bench/Backup/isos ;;
    copy-photos)
      copy_set photos "339 JPEG photos" photos /mnt/data/photoset \
        /home/bench/Pictures/import /home/bench/Backup/photos ;;
    install-krita)
      data_disk
      APT='apt-get -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=/etc/apt/sources.list.d'
      as_root "cd /etc/apt/sources.list.d && cp local-repo.list.disabled local-repo.list && $APT update >/dev/null"
      count=$(printf '%s\n' "$MNT"/mnt/data/repo/*.deb | wc -l); mb=$(du -cm "$MNT"/mnt/data/repo/*.deb | tail -1 | cut -f1)
      sync; echo 3 > /proc/sys/vm/drop_caches
      native_capture install-krita install \
        "apt-get install krita at native speed on the guest's disk (chroot, 5 GiB memory cgroup) from a local repository on a second disk: $count packages ($mb MB of .deb) unpacked and configured by dpkg; page cache dropped before" \
        "DEBIAN_FRONTEND=noninteractive $APT install -y --no-install-recommends krita >/tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }" root
      as_root "tail -3 /tmp/install.log; DEBIAN_FRONTEND=noninteractive apt-get purge -y --autoremove krita krita-data >/dev/null 2>&1; rm -f /etc/apt/sources.list.d/local-repo.list; apt-get clean" || true
      trim_free ;;
    unpack-sync)
      prepared "$UNPACK_PREP"
      prepared "$UNPACK_CLEAN"
      evict "$UNPACK_DIR"
      native_capture unpack-sync "archive" \
        "tar at native speed on the guest's disk (chroot, 5 GiB memory cgroup): a 10,000-file tarball of documentation, icons and a Python library (136 MB) unpacked, then syncfs; program warm, archive cold" \
        "$UNPACK_RUN"
      prepared "$UNPACK_CLEAN"
      trim_free ;;
    db-commit)
      run_tmpfs
      install -d -m 755 "$MNT/run/tracemark"
      install -m 644 "$CAPTURE_DIR/db_commit.py" "$MNT/run/tracemark/db_commit.py"
      prepared "$DB_CLEAN"
      prepared "python3 -c 'import sqlite3, random'"   # untraced: Python warm
      native_capture db-commit "database" \
        "SQLite 3.40 through Python 3.11 at native speed on the guest's disk (chroot, 5 GiB memory cgroup): 200,000 ledger rows inserted in 400 transactions (rollback journal, synchronous=FULL), then indexed; program warm" \
        "$DB_RUN"
      prepared "$DB_CLEAN"
      trim_free ;;
    file-search)
      sync; echo 3 > /proc/sys/vm/drop_caches
      native_capture file-search "search" \
        "grep -r at native speed on the guest's disk (chroot, 5 GiB memory cgroup): documentation, icons, translations, man pages and a Python library (about 400 MB in small files) searched for a string found nowhere; page cache dropped before" \
        "$SEARCH_RUN" ;;
    *) die "unknown job $job (the jobs are listed in the header of $0)" ;;
  esac
 done
done
