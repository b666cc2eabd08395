#!/bin/sh
# age-fs.sh ROOT: ages the guest's filesystem (mounted at ROOT) before any
# capture, so files written by the traces land in free space fragmented as on a
# used desktop, not in a fresh filesystem's one free extent. Real files of the
# installed system are copied (as downloads, caches and updates accumulate)
# and deleted in an interleaved pattern over three rounds:
#   round 1: four copies of /usr/lib/x86_64-linux-gnu and /usr/share/{icons,locale,doc}
#   round 2: every second file of copies 1 and 3 deleted, copy 2 deleted whole
#   round 3: a fifth copy written into the holes, then every third file of it deleted
# What stays (about the residue of copies 1, 3, 4 and 5) is kept as the user's
# old files under /home/bench/.old. Prints df and e2freefrag before and after.
set -eu
R=$1
A=$R/home/bench/.old
dev=$(findmnt -n -o SOURCE "$R")
echo "aging $R ($dev), $(date -u +%FT%TZ)"
df -h "$R" | tail -1
e2freefrag "$dev" | sed -n '1,12p'
mkdir -p "$A"
for k in 1 2 3 4; do
  mkdir -p "$A/c$k"
  cp -a "$R/usr/lib/x86_64-linux-gnu" "$R/usr/share/icons" "$R/usr/share/locale" "$R/usr/share/doc" "$A/c$k/"
done
sync
find "$A/c1" "$A/c3" -type f | awk 'NR % 2 == 0' | xargs -d '\n' rm -f
rm -rf "$A/c2"
sync
mkdir -p "$A/c5"
cp -a "$R/usr/lib/x86_64-linux-gnu" "$R/usr/share/locale" "$A/c5/"
sync
find "$A/c5" -type f | awk 'NR % 3 == 0' | xargs -d '\n' rm -f
sync
chroot "$R" chown -R bench:bench /home/bench/.old
echo "after aging:"
df -h "$R" | tail -1
du -sh "$A"
e2freefrag "$dev" | sed -n '1,40p'
