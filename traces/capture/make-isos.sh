#!/bin/sh
# make-isos.sh DIR: the "ISO-sized" files of the copy traces (after PCMark 10's
# four ISOs, 20 GB): four disc-image-sized archives (uncompressed tar, as a
# disc image holds files uncompressed) of installed software trees of the
# guest, each cut at 1.5 GiB. Made once, untraced, on the untraced data disk.
set -eu
D=$1
mkdir -p "$D"
[ -f "$D/.complete" ] && exit 0
n=0
for tree in /usr/share/games/0ad /usr/lib/x86_64-linux-gnu /usr/share/games/supertuxkart /usr/lib/libreoffice:/usr/share/gimp:/usr/share/inkscape:/usr/share/icons; do
  n=$((n + 1))
  # shellcheck disable=SC2046
  tar -cf - $(echo "$tree" | tr ':' ' ') 2>/dev/null | head -c 1610612736 > "$D/disc$n.iso"
done
touch "$D/.complete"
ls -l "$D"
