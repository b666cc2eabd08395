#!/bin/bash
# photo-light: ImageMagick edits a dozen photographs, seven edits each, and saves
# every one as a 16-bit TIFF master and a JPEG (after PCMark 8 "Photoshop light":
# open 14 images, 7 edits each). The pixel cache may spill to a scratch directory
# on the same disk (MAGICK_TEMPORARY_PATH), as Photoshop uses its scratch disk.
source "$(dirname "$0")/common.sh"
root_attach
install_helpers
prepare_photos

D=/home/bench/photo-light
# Untraced: the 12 largest photographs of the set, and no output of an earlier run.
as_bench sh -c "rm -rf $D && mkdir -p $D/in $D/out $D/scratch &&
  ls -S /home/bench/photos/*.jpg | head -n 12 | xargs -I{} cp {} $D/in/"

capture_trace photo-light "photo edit light" \
  "ImageMagick: 12 photos (5120x2880 and 4096x4096, 15-17 MP) opened, 7 edits each (auto-level, colour, unsharp, straighten, crop, levels, contrast), saved as 16-bit TIFF and JPEG" \
  sh -c "cd $D && export MAGICK_TEMPORARY_PATH=$D/scratch &&
    for f in in/*.jpg; do
      b=\$(basename \$f .jpg)
      convert -limit memory 256MiB -limit map 512MiB \$f -depth 16 \
        -auto-level -modulate 103,112,100 -unsharp 0x1.5+0.8+0.02 \
        -rotate 1.2 -shave 3%x3% +repage -contrast-stretch 0.3%x0.3% \
        -sigmoidal-contrast 3x50% -write out/\$b.tif -depth 8 -quality 92 out/\$b.jpg || exit 1
    done && sync"
