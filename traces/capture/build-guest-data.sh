#!/bin/bash
# The second half of build-guest.sh (also run on its own to redo it): with
# the guest's root mounted at MNT and the data disk at DMNT, makes the photo
# set and the ISO-sized files on the data disk (with the guest's own tools,
# in a chroot), writes the guest's package list, and ages the guest's
# filesystem (age-fs.sh).
# Usage: build-guest-data.sh MNT DMNT WORK   (called by build-guest.sh)
#        build-guest-data.sh                 (attaches and mounts the images itself)
set -euo pipefail
CAPTURE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -eq 0 ]; then
  WORK=${TRACEMARK_GUEST_DIR:-/var/tmp/tracemark-guest}
  MNT=$WORK/build-mnt DMNT=$WORK/build-data
  LOOP=$(losetup --find --show "$WORK/guest.img")
  DLOOP=$(losetup --find --show "$WORK/data.img")
  [ -b "${LOOP}p1" ] || partx -a "$LOOP"
  mount "${LOOP}p1" "$MNT"; mount "$DLOOP" "$DMNT"
  trap 'umount "$MNT" "$DMNT"; losetup -d "$LOOP" "$DLOOP"' EXIT
  "$0" "$MNT" "$DMNT" "$WORK"
  exit
fi
MNT=$1 DMNT=$2 WORK=$3
in_root() { chroot "$MNT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
  PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin "$@"; }
BOUND=()
cleanup() { set +e; for ((i=${#BOUND[@]}-1; i>=0; i--)); do umount "${BOUND[i]}" 2>/dev/null || umount -l "${BOUND[i]}"; done; }
trap cleanup EXIT
for d in proc sys dev; do
  mountpoint -q "$MNT/$d" || { mount --bind "/$d" "$MNT/$d"; BOUND+=("$MNT/$d"); }
done
in_root sh -c 'command -v jpegtran >/dev/null || apt-get install -y --no-install-recommends libjpeg-turbo-progs >/dev/null'
mkdir -p "$MNT/srv/data"; mount --bind "$DMNT" "$MNT/srv/data"; BOUND+=("$MNT/srv/data")
cp "$CAPTURE_DIR/make-photos.sh" "$CAPTURE_DIR/make-photoset.sh" "$CAPTURE_DIR/make-isos.sh" "$MNT/tmp/"
in_root sh /tmp/make-photos.sh /srv/data/photos-source
in_root sh /tmp/make-photoset.sh /srv/data/photos-source /srv/data/photoset
# The same photos in the user's home on the traced disk, where the photo,
# office and publishing work (native.sh, lo_office.py) takes its pictures.
if [ ! -f "$MNT/home/bench/photos/.complete" ]; then
  mkdir -p "$MNT/home/bench/photos"
  cp -a "$DMNT/photos-source/." "$MNT/home/bench/photos/"
  in_root chown -R bench:bench /home/bench/photos
fi
in_root sh /tmp/make-isos.sh /srv/data/isos
in_root apt-get clean
# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
in_root dpkg-query -W -f '${Package}\t${Version}\n' > "$WORK/packages.txt"
cleanup; BOUND=()
# Age the filesystem: fill and churn, as years of updates and downloads leave it.
"$CAPTURE_DIR/age-fs.sh" "$MNT" | tee "$WORK/aging.txt"
df -h "$MNT" "$DMNT"
