#!/bin/sh
# make-photoset.sh SRC DIR: the photo set of the copy traces (after PCMark 10's
# 339 JPEGs, 2.4 GB): 339 camera-sized JPEGs (4000x3000 and 3000x4000, 12 MP,
# quality 92) cut from the photographs and artwork of SRC (make-photos.sh:
# Debian's wallpaper packages) at different positions and scales, named like a
# camera's files. Made once, untraced, on the untraced data disk.
set -eu
SRC=$1 D=$2
mkdir -p "$D"
[ -f "$D/.complete" ] && exit 0
ls "$SRC"/*.jpg > /tmp/photoset-src.txt
nsrc=$(wc -l < /tmp/photoset-src.txt)
i=0
: > /tmp/photoset-jobs.txt
while [ $i -lt 339 ]; do
  src=$(sed -n "$((i % nsrc + 1))p" /tmp/photoset-src.txt)
  round=$((i / nsrc))
  # each round takes a different crop (gravity) and scale of every source
  case $((round % 5)) in 0) g=Center;; 1) g=NorthWest;; 2) g=SouthEast;; 3) g=NorthEast;; *) g=SouthWest;; esac
  scale=$((100 + round * 9))
  if [ $((round % 2)) -eq 0 ]; then geo=4000x3000; else geo=3000x4000; fi
  echo "$src $g $scale $geo $(printf 'IMG_%04d.JPG' $((1001 + i)))" >> /tmp/photoset-jobs.txt
  i=$((i + 1))
done
xargs -P 2 -L 1 sh -c 'convert "$0" -resize "$2%" -resize "$3^" -gravity "$1" -extent "$3" -quality 92 "'"$D"'/$4"' < /tmp/photoset-jobs.txt
touch "$D/.complete"
echo "make-photoset: $(ls "$D" | wc -l) photos, $(du -sm "$D" | cut -f1) MB in $D"
