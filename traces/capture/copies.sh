#!/bin/bash
# copy-*: file copies into, within and out of the traced disk (PCMark 10's
# copy traces: 4 ISO files, 20 GB, and 339 JPEGs, 2.4 GB). The other end is the
# guest's second, untraced virtio disk (/mnt/data). The copying program is
# coreutils `cp` run by `bench` in the desktop session, as a file manager or a
# terminal would. Before each copy the guest's page cache is dropped (the
# source is cold); the trace ends when the copy has finished and the kernel
# has written it back at its own pace (no sync), the disk quiet 3 s.
#   copy-iso-into      /mnt/data/isos/disc{1..4}.iso  -> ~/Downloads/isos/
#   copy-iso-within    ~/Downloads/isos/              -> ~/Backup/isos/
#   copy-iso-out       ~/Backup/isos/                 -> /mnt/data/out/isos/
#   copy-photos-into   /mnt/data/photoset/ (339 JPEGs) -> ~/Pictures/import/
#   copy-photos-within ~/Pictures/import/             -> ~/Backup/photos/
#   copy-photos-out    ~/Backup/photos/               -> /mnt/data/out/photos/
# The ISO-sized files and the photo set are made by build-guest.sh
# (make-isos.sh, make-photoset.sh). Afterwards the copies are deleted and the
# freed blocks discarded (fstrim, untraced) so the image does not keep them.
# Usage: traces/capture/copies.sh [iso|photos]...   (default: both)
source "$(dirname "$0")/guest-common.sh"
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=(iso photos)
guest_attach
guest_boot
gx 'mountpoint -q /mnt/data && mkdir -p /mnt/data/out && chown bench:bench /mnt/data/out' >/dev/null

copy_trace() {
  local name=$1 description=$2 src=$3 dst=$4
  gbench "rm -rf $dst && mkdir -p $(dirname "$dst")"
  guest_cold
  guest_settle 3 300
  guest_capture "$name" "file copy" "$description" \
    bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP
      gbench 'cp -r $src $dst' && guest_settle 3 900"
}

for set in "${sets[@]}"; do
  case $set in
    iso)
      sz=$(gx 'du -sm /mnt/data/isos | cut -f1')
      copy_trace copy-iso-into "cp: 4 ISO-sized files (${sz} MB) from a second disk into the traced disk" \
        /mnt/data/isos /home/bench/Downloads/isos
      copy_trace copy-iso-within "cp: 4 ISO-sized files (${sz} MB) from one folder to another on the traced disk" \
        /home/bench/Downloads/isos /home/bench/Backup/isos
      copy_trace copy-iso-out "cp: 4 ISO-sized files (${sz} MB) from the traced disk to a second disk" \
        /home/bench/Backup/isos /mnt/data/out/isos
      gbench 'rm -rf /home/bench/Downloads/isos /home/bench/Backup/isos /mnt/data/out/isos' ;;
    photos)
      sz=$(gx 'du -sm /mnt/data/photoset | cut -f1')
      copy_trace copy-photos-into "cp: 339 JPEG photos (${sz} MB) from a second disk into the traced disk" \
        /mnt/data/photoset /home/bench/Pictures/import
      copy_trace copy-photos-within "cp: 339 JPEG photos (${sz} MB) from one folder to another on the traced disk" \
        /home/bench/Pictures/import /home/bench/Backup/photos
      copy_trace copy-photos-out "cp: 339 JPEG photos (${sz} MB) from the traced disk to a second disk" \
        /home/bench/Backup/photos /mnt/data/out/photos
      gbench 'rm -rf /home/bench/Pictures/import /home/bench/Backup/photos /mnt/data/out/photos' ;;
    *) die "unknown copy set $set (iso or photos)" ;;
  esac
done
gx 'sync; fstrim -v /' || true
