#!/bin/bash
# Self-test of drives.sh on a small image made here (no guest.img needed):
# for every class, up; the queue limits and throttle rules as set; writes
# through the device (a mounted ext4's new, changed and deleted files, fstrim's
# discards, buffered and direct raw writes); restore by the tracked ranges
# (not a full copy); byte equality with pristine, of the working copy and read
# back through the device's page cache; down; nothing left behind (loop
# device, mount, tracing instance, throttle rule, FUSE process). Then: a
# second tmpfs class refused while one is up; V's working copy kept by its
# down and reused by the next up; a drive that is up not handed out again; a
# tracking buffer too small for the writes, and tracking switched off, each
# fall back to an exact full copy and track again afterwards; down-all after
# a "crash" that lost the state files.
# Usage: bench/validity/drives_selftest.sh   (as root; about two minutes)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DRIVES=$HERE/drives.sh
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$HERE/../lib.sh"
need_root

T=$(mktemp -d /var/tmp/tmvalidity-selftest.XXXXXX)
export TM_VALIDITY_DIR=$T/dir TM_GUEST_IMG=$T/guest.img TM_TMPFS_HEADROOM_MIB=256
MNT=$T/mnt
LOG=$T/log
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
cleanup() {
  set +e
  mountpoint -q "$MNT" && umount "$MNT"
  "$DRIVES" down-all >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT

# --- a small partitioned image: MBR, ext4 from 1 MiB, some files --------------
truncate -s 300M "$TM_GUEST_IMG"
python3 - "$TM_GUEST_IMG" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    mbr = bytearray(512)
    start, count = 2048, (300 << 20) // 512 - 2048
    mbr[446:462] = bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + start.to_bytes(4, "little") + count.to_bytes(4, "little")
    mbr[510:512] = b"\x55\xaa"
    f.write(mbr)
EOF
mkfs.ext4 -q -F -b 4096 -E offset=1048576 "$TM_GUEST_IMG" $(((300 - 1) * 256))
SETUP_LOOP=$(losetup --find --show --offset 1048576 "$TM_GUEST_IMG")
mkdir -p "$MNT"
mount "$SETUP_LOOP" "$MNT"
for i in $(seq 20); do head -c $((i * 200 * 1024)) /dev/urandom > "$MNT/file$i"; done
mkdir "$MNT/dir"; for i in $(seq 200); do echo "small $i" > "$MNT/dir/s$i"; done
rm "$MNT/file3" "$MNT/file7"   # freed blocks with old data: not in pristine
umount "$MNT"; losetup -d "$SETUP_LOOP"

"$DRIVES" prepare 2>"$LOG" || { cat "$LOG" >&2; fail "prepare"; exit 1; }
PRISTINE=$TM_VALIDITY_DIR/pristine.img
used_kib=$(du -k "$PRISTINE" | cut -f1)
[ "$used_kib" -lt $((200 * 1024)) ] && ok "prepare: pristine holds $used_kib KiB of a 299 MiB partition" ||
  fail "prepare: pristine holds $used_kib KiB: free blocks were copied"
"$DRIVES" prepare 2>"$LOG"; grep -q "up to date" "$LOG" && ok "prepare is idempotent" || fail "prepare again: $(cat "$LOG")"
fsck.ext4 -fn "$PRISTINE" >/dev/null 2>&1 && ok "pristine's ext4 checks clean" || fail "fsck of pristine"

PREFIX=tmvalidity-$(printf '%s' "$TM_VALIDITY_DIR" | cksum | cut -d' ' -f1)-
TFS=$T/tracefs
mkdir -p "$TFS"; mount -t tracefs nodev "$TFS"; trap 'umount "$TFS"; cleanup' EXIT

nothing_left() {
  local what=$1 dev=$2 f
  losetup --list --noheadings --output BACK-FILE | grep -q "$T" && fail "$what: a loop device over $T is left"
  # (the test's own tracefs mount, to look at the instances, aside)
  grep " $T" /proc/mounts | grep -vq " $TFS " && fail "$what: a mount under $T is left: $(grep " $T" /proc/mounts)"
  compgen -G "$TFS/instances/$PREFIX*" >/dev/null && fail "$what: a tracing instance is left"
  for f in read_bps_device write_bps_device read_iops_device write_iops_device; do
    grep -q "^$dev " /sys/fs/cgroup/blkio/blkio.throttle.$f && fail "$what: a throttle rule on $dev is left in $f"
  done
  pgrep -f "^$TM_VALIDITY_DIR/run/bin/latency_fuse" >/dev/null && fail "$what: latency_fuse still runs"
  return 0
}

# Writes through the drive: files in the mounted ext4, discards, raw writes.
exercise() {
  local dev=$1
  mount "$dev" "$MNT"
  head -c 3M /dev/urandom > "$MNT/new"
  echo changed >> "$MNT/file1"
  rm "$MNT/file5" "$MNT/dir/s17"
  fstrim "$MNT"
  umount "$MNT"
  # buffered raw writes sit in the device's page cache until restore flushes them
  dd if=/dev/urandom of="$dev" bs=4k seek=20000 count=16 conv=notrunc status=none
  dd if=/dev/urandom of="$dev" bs=64k seek=1000 count=4 oflag=direct conv=notrunc status=none
}

# Whether FILE has no hole (V's working copy is written whole).
whole() {
  python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
sys.exit(0 if os.lseek(fd, 0, os.SEEK_HOLE) == os.fstat(fd).st_size else 1)' "$1"
}

for class in F V S U H L; do
  fails_before=$FAILS
  dev_path=$("$DRIVES" up "$class" 2>"$LOG") || { cat "$LOG"; fail "$class: up"; continue; }
  [ -b "$dev_path" ] && [ "$(echo "$dev_path" | wc -l)" = 1 ] || fail "$class: up printed '$dev_path', not one device path"
  dev=$(cat "/sys/block/${dev_path#/dev/}/dev")
  q=/sys/block/${dev_path#/dev/}/queue
  [ "$(cat "$q/read_ahead_kb")/$(cat "$q/max_sectors_kb")" = 128/512 ] && grep -q '\[none\]' "$q/scheduler" ||
    fail "$class: queue limits $(cat "$q/scheduler") $(cat "$q/read_ahead_kb") $(cat "$q/max_sectors_kb")"
  rules_on() { cat /sys/fs/cgroup/blkio/blkio.throttle.*_device | awk -v d="$1" '$1 == d' | wc -l; }
  rules=$(rules_on "$dev")
  [ "$rules" = 0 ] || fail "$class: $rules throttle rules on the drive $dev, expected none (they belong on its medium)"
  # S, U, H: the rules on the medium under the drive (drive -> medium -> file),
  # which counts the drive's requests, not the bios submitted to it.
  medium=$(awk -F= '$1 == "MEDIUM" { v = $2 } END { print v }' "$TM_VALIDITY_DIR/run/$class.state")
  mdev=
  case $class in
    S|U|H)
      [ -b "$medium" ] || fail "$class: no medium recorded in its state"
      [ "$(cat "/sys/block/${dev_path#/dev/}/loop/backing_file")" = "$medium" ] || fail "$class: the drive is not over its medium $medium"
      mdev=$(cat "/sys/block/${medium#/dev/}/dev")
      [ "$(rules_on "$mdev")" = 4 ] || fail "$class: $(rules_on "$mdev") throttle rules on the medium $mdev, expected 4" ;;
    *) [ -z "$medium" ] || fail "$class: a medium ($medium) on an unthrottled class" ;;
  esac
  cmp -s "$dev_path" "$PRISTINE" || fail "$class: the fresh drive's bytes differ from pristine"
  [ "$class" != V ] || whole "$TM_VALIDITY_DIR/v-work.img" || fail "V: the working copy has holes after up"
  # The device held open throughout (as a replayer or prober might): the
  # kernel then keeps its page cache across closes, dirty and clean pages,
  # which restore must write out first and drop afterwards.
  exec 7<"$dev_path"
  exercise "$dev_path"
  cmp -s "$dev_path" "$PRISTINE" && fail "$class: the writes changed nothing"
  "$DRIVES" restore "$class" 2>"$LOG" || { cat "$LOG"; fail "$class: restore"; }
  grep -q "full copy" "$LOG" && fail "$class: restore fell back to a full copy: $(cat "$LOG")"
  grep -q "write/discard requests traced" "$LOG" || fail "$class: restore did not report tracked ranges: $(cat "$LOG")"
  tracked=$(grep -o '[0-9]* write/discard requests traced, [0-9]* ranges' "$LOG" || true)
  "$DRIVES" verify "$class" 2>"$LOG" || { cat "$LOG"; fail "$class: verify after restore"; }
  cmp -s "$dev_path" "$PRISTINE" || fail "$class: the device reads differently from pristine after restore (stale cache?)"
  [ "$class" != V ] || whole "$TM_VALIDITY_DIR/v-work.img" || fail "V: the working copy has holes after restore (the fstrim's among them)"
  exec 7<&-
  # a second round on the same drive: the ext4 mounts and changes again
  exercise "$dev_path"
  "$DRIVES" restore "$class" 2>"$LOG" && "$DRIVES" verify "$class" 2>>"$LOG" || { cat "$LOG"; fail "$class: second round"; }
  if [ "$class" = F ]; then
    "$DRIVES" up S >/dev/null 2>"$LOG" && fail "S came up while F holds the tmpfs"
    grep -q "class F is up" "$LOG" && ok "a second tmpfs class is refused: $(tail -1 "$LOG")" || fail "refusal message: $(cat "$LOG")"
    [ -f "$TM_VALIDITY_DIR/run/S.state" ] && fail "the refused up left S's state"
  fi
  "$DRIVES" down "$class" 2>"$LOG" || { cat "$LOG"; fail "$class: down"; }
  nothing_left "$class" "$dev"
  [ -z "$mdev" ] || nothing_left "$class's medium" "$mdev"
  [ "$FAILS" = "$fails_before" ] && ok "$class: up, writes, restore ($tracked), verify, down"
done

# V's working copy, restored by its down, is taken as it is by the next up.
[ -f "$TM_VALIDITY_DIR/v-work.img" ] && [ -f "$TM_VALIDITY_DIR/v-work.clean" ] || fail "down V did not keep its restored working copy"
dev_path=$("$DRIVES" up V 2>"$LOG")
grep -q "is pristine (restored by the last down)" "$LOG" || fail "up V copied again: $(cat "$LOG")"
"$DRIVES" verify V 2>/dev/null && cmp -s "$dev_path" "$PRISTINE" && ok "up V reuses the working copy its down restored" || fail "the kept V copy is not pristine"
"$DRIVES" up V >/dev/null 2>"$LOG" && fail "up V twice handed out the drive again"
grep -q "V is already up on $dev_path" "$LOG" && ok "a drive that is up is not handed out again: $(tail -1 "$LOG")" || fail "up V twice: $(cat "$LOG")"
exercise "$dev_path"
"$DRIVES" restore V 2>/dev/null
dd if=/dev/urandom of="$dev_path" bs=4k seek=50 count=1 oflag=direct conv=notrunc status=none
"$DRIVES" down V 2>/dev/null
dev_path=$("$DRIVES" up V 2>"$LOG")
"$DRIVES" verify V 2>/dev/null || fail "V kept by a down after writes is not pristine"
"$DRIVES" down V 2>/dev/null

# Lost events: a 1 MiB per-CPU buffer cannot hold these writes' events.
dev_path=$(TM_TRACK_BUFFER_KB=64 "$DRIVES" up F 2>/dev/null)
dev=$(cat "/sys/block/${dev_path#/dev/}/dev")
fio --name=lost --filename="$dev_path" --direct=1 --rw=randwrite --bs=4k --size=200M --number_ios=20000 \
  --ioengine=psync --output=/dev/null
"$DRIVES" restore F 2>"$LOG"
grep -q "tracking unsure (the instance lost" "$LOG" && ok "lost events: $(grep -o 'tracking unsure.*' "$LOG")" ||
  fail "lost events not detected: $(cat "$LOG")"
"$DRIVES" verify F 2>/dev/null && cmp -s "$dev_path" "$PRISTINE" && ok "full copy after lost events is exact" || fail "full copy after lost events"
# and the next period is tracked again
dd if=/dev/urandom of="$dev_path" bs=4k seek=100 count=1 oflag=direct conv=notrunc status=none
"$DRIVES" restore F 2>"$LOG"; grep -q "1 write/discard requests traced" "$LOG" || fail "after a lost period: $(cat "$LOG")"
# tracking switched off behind the script's back: a full copy, then tracked again
echo 0 > "$(ls -d "$TFS/instances/${PREFIX}F")/tracing_on"
dd if=/dev/urandom of="$dev_path" bs=4k seek=300 count=1 oflag=direct conv=notrunc status=none
"$DRIVES" restore F 2>"$LOG"
grep -q "tracking unsure (tracing was switched off" "$LOG" || fail "tracing off not detected: $(cat "$LOG")"
"$DRIVES" verify F 2>/dev/null || fail "full copy after tracing was off"
dd if=/dev/urandom of="$dev_path" bs=4k seek=400 count=1 oflag=direct conv=notrunc status=none
"$DRIVES" restore F 2>"$LOG"; grep -q "1 write/discard requests traced" "$LOG" &&
  ok "tracking switched off: a full copy, then tracked again" || fail "after tracing was off: $(cat "$LOG")"
"$DRIVES" down F 2>/dev/null

# A crash: L up, its state files lost; down-all finds the leftovers by name.
dev_path=$("$DRIVES" up L 2>/dev/null)
dev=$(cat "/sys/block/${dev_path#/dev/}/dev")
rm -f "$TM_VALIDITY_DIR"/run/*.state
"$DRIVES" down-all 2>"$LOG" || fail "down-all"
nothing_left "down-all after a crash" "$dev"
grep -q "leftover" "$LOG" && ok "down-all after a crash: $(grep -c leftover "$LOG") leftovers removed" || fail "down-all found no leftovers: $(cat "$LOG")"
[ -e "$TM_VALIDITY_DIR/v-work.img" ] && fail "down-all left V's working copy"

# The same for a throttled drive: its drive loop sits over its medium loop,
# so down-all must detach the drive before the medium it holds. (The
# throttle rules stay with a crash's lost state; the next `up` refuses a
# device with a rule on it, so they are cleared here by hand.)
dev_path=$("$DRIVES" up H 2>/dev/null)
dev=$(cat "/sys/block/${dev_path#/dev/}/dev")
medium=$(cat "/sys/block/${dev_path#/dev/}/loop/backing_file")
mdev=$(cat "/sys/block/${medium#/dev/}/dev")
rm -f "$TM_VALIDITY_DIR"/run/*.state
"$DRIVES" down-all 2>"$LOG" || fail "down-all (H)"
for f in read_bps_device write_bps_device read_iops_device write_iops_device; do
  echo "$mdev 0" > /sys/fs/cgroup/blkio/blkio.throttle.$f
done
[ -b "$dev_path" ] && [ -n "$(cat "/sys/block/${dev_path#/dev/}/loop/backing_file" 2>/dev/null)" ] && fail "down-all left the drive $dev_path over $medium"
nothing_left "down-all after a crash of H" "$mdev"
grep -q "leftover $dev_path over $medium" "$LOG" && ok "down-all after a crash of H: the drive, then its medium" || fail "down-all (H): $(cat "$LOG")"

if [ "$FAILS" = 0 ]; then echo "drives_selftest: all passed"; else echo "drives_selftest: $FAILS failure(s)"; exit 1; fi
