#!/bin/sh
# make-photos.sh DIR: the photo set the photo, office and publishing traces use,
# made once inside the capture root (untraced). Every image comes from a Debian
# package: the largest image of each KDE Plasma wallpaper
# (plasma-workspace-wallpapers: photographs and artwork, 2560x1600 to 5120x2880)
# and the GNOME backgrounds (gnome-backgrounds), re-encoded as JPEG quality 92
# at native size, as a camera or scanner would deliver them.
set -eu
D=$1
mkdir -p "$D"
n=0
for images in /usr/share/wallpapers/*/contents/images; do
  theme=$(basename "$(dirname "$(dirname "$images")")")
  # shellcheck disable=SC2012 # ls -S: the largest first
  largest=$(ls -S "$images"/*.jpg "$images"/*.png 2>/dev/null | head -n 1 || true)
  [ -n "$largest" ] || continue
  n=$((n + 1))
  convert "$largest" -quality 92 "$D/$(printf %02d $n)-$theme.jpg"
done
for f in /usr/share/backgrounds/gnome/*.webp /usr/share/backgrounds/gnome/*.jpg; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  convert "$f" -quality 92 "$D/$(printf %02d $n)-$(basename "${f%.*}").jpg"
done
# Drop icons and placeholders (the GNOME "vnc" backgrounds are a few pixels).
find "$D" -name '*.jpg' -size -100k -delete
n=$(find "$D" -maxdepth 1 -name '*.jpg' | wc -l)
touch "$D/.complete"
echo "make-photos: $n photos in $D"
