# shellcheck shell=bash
# Shared by the capture scripts (source it; do not run it).
#
# root_attach       attaches WORKDIR/root.img (made by build-root.sh) to a loop
#                   device, mounts it and binds /proc /sys /dev into it
# as_bench CMD...   runs CMD in the chroot as the unprivileged user `bench`
# as_root CMD...    runs CMD in the chroot as root
# capture_trace NAME CATEGORY DESCRIPTION CMD...
#                   syncs, drops the page cache, then traces the loop device
#                   with `tracemark capture` for the life of CMD (run in the
#                   chroot as `bench`) into
#                   traces/NAME.tmt and prints `tracemark info` of the result
# Everything attached or mounted is undone on exit, also on failure or Ctrl-C.

set -euo pipefail

CAPTURE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$CAPTURE_DIR/../.." && pwd)
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
WORK=${TRACEMARK_ROOT_DIR:-/var/tmp/tracemark-root}
IMG=$WORK/root.img
MNT=$WORK/mnt
TRACEMARK=${TRACEMARK:-$REPO/target/release/tracemark}
OUT_DIR=${TRACEMARK_TRACE_DIR:-$REPO/traces}
CHROOT_PATH=/usr/local/bin:/usr/bin:/bin:/usr/games:/usr/sbin:/sbin

LOOP=
MOUNTS=()

root_cleanup() {
  set +e
  for ((i=${#MOUNTS[@]}-1; i>=0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}"
  done
  MOUNTS=()
  if [ -n "$LOOP" ]; then losetup -d "$LOOP"; LOOP=; fi
}
trap root_cleanup EXIT
trap 'exit 130' INT TERM

root_attach() {
  need_root "loop devices, chroot, drop_caches, tracing"
  [ -f "$IMG" ] || die "$IMG missing; build it with traces/capture/build-root.sh"
  mkdir -p "$MNT"
  mountpoint -q "$MNT" && die "$MNT is already mounted (another capture running?)"
  # Direct I/O to the backing file: the host's page cache does not hold a
  # second copy of the image, so a dropped cache really is cold.
  LOOP=$(losetup --find --show --direct-io=on "$IMG")
  mount "$LOOP" "$MNT"; MOUNTS+=("$MNT")
  local d
  for d in proc sys dev dev/pts; do
    mount --bind "/$d" "$MNT/$d"; MOUNTS+=("$MNT/$d")
  done
  echo "root: $IMG on $LOOP mounted at $MNT"
}

# The command prefix that runs a program in the chroot as `bench`.
bench_prefix() {
  BENCH=(chroot --userspec=bench:bench "$MNT" /usr/bin/env -i HOME=/home/bench USER=bench
    LANG=C.UTF-8 PATH="$CHROOT_PATH")
}

as_bench() {
  bench_prefix
  "${BENCH[@]}" "$@"
}

as_root() {
  chroot "$MNT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH="$CHROOT_PATH" "$@"
}

drop_caches() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
  sleep 1
}

capture_trace() {
  local name=$1 category=$2 description=$3
  shift 3
  [ -x "$TRACEMARK" ] || die "$TRACEMARK missing; build it with cargo build --release"
  mkdir -p "$OUT_DIR"
  local out=$OUT_DIR/$name.tmt
  rm -f "$out"
  drop_caches
  echo "capture: $name: $*"
  bench_prefix
  if ! "$TRACEMARK" capture --device "$LOOP" -o "$out" \
    --name "$name" --category "$category" --description "$description" -- "${BENCH[@]}" "$@"; then
    rm -f "$out"
    die "$name: the capture or the application failed; no trace kept"
  fi
  "$TRACEMARK" info "$out"
}

# Copies the helper programs (lo_office.py, ...) into the root at /home/bench/tm.
install_helpers() {
  mkdir -p "$MNT/home/bench/tm"
  cp "$CAPTURE_DIR/lo_office.py" "$MNT/home/bench/tm/"
  chroot "$MNT" chown -R bench:bench /home/bench/tm
}

# Fills /home/bench/photos with the photo set the photo, office and publishing
# traces use (made once, untraced): see make-photos.sh.
prepare_photos() {
  if [ ! -f "$MNT/home/bench/photos/.complete" ]; then
    cp "$CAPTURE_DIR/make-photos.sh" "$MNT/home/bench/tm/"
    as_bench sh /home/bench/tm/make-photos.sh /home/bench/photos
  fi
}
