#!/bin/sh
# make-photoset.sh SRC DIR: the photo set of the copy traces (after PCMark 10's
# 339 JPEGs, 2.4 GB): 339 JPEGs cut losslessly (jpegtran -crop: the source's
# own JPEG data, no re-encoding) from the photographs and artwork of SRC
# (make-photos.sh: Debian's wallpaper packages, quality 92), eight crops of
# about 90 % of each source's width and height at different positions, named
# like a camera's files. Made once, untraced, on the untraced data disk.
set -eu
SRC=$1 D=$2
mkdir -p "$D"
[ -f "$D/.complete" ] && exit 0
i=0
while [ $i -lt 339 ]; do
  for src in "$SRC"/*.jpg; do
    [ $i -lt 339 ] || break
    round=$((i / $(find "$SRC" -maxdepth 1 -name '*.jpg' | wc -l)))
    # shellcheck disable=SC2046 # width and height, two words
    set -- $(identify -format '%w %h' "$src")
    w=$(( $1 * 9 / 10 )) h=$(( $2 * 9 / 10 ))
    x=$(( ($1 - w) * (round % 4) / 3 )) y=$(( ($2 - h) * (round / 4 % 2) ))
    jpegtran -copy all -crop "${w}x${h}+${x}+${y}" -outfile "$D/$(printf 'IMG_%04d.JPG' $((1001 + i)))" "$src"
    i=$((i + 1))
  done
done
touch "$D/.complete"
echo "make-photoset: $(find "$D" -maxdepth 1 -type f ! -name '.*' | wc -l) photos, $(du -sm "$D" | cut -f1) MB in $D"
