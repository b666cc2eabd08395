#!/bin/bash
# photo-heavy: ImageMagick works on one poster-sized, multi-layer image (PCMark 8
# "Photoshop heavy": a hi-res poster): a 7200x10800 (24x36 in at 300 dpi) PSD
# of seven layers is opened, its layers are split out, edited and recomposed,
# the PSD is saved, and the poster is exported as a 16-bit TIFF and a JPEG proof.
source "$(dirname "$0")/common.sh"
root_attach
install_helpers
prepare_photos

D=/home/bench/photo-heavy
# Debian's ImageMagick policy caps the pixel cache at 256 MiB of memory, 512 MiB
# mapped and 1 GiB on disk, too little for a 78-megapixel poster (624 MB per
# 16-bit RGBA frame). Raise the caps in the root's policy.xml, as one would for
# poster work; the commands below still set their own, lower, memory and map
# limits, so the larger frames go through the scratch directory on the disk.
# (photo-light passes limits equal to Debian's defaults, so it is unaffected.)
as_root sed -i -e 's|name="memory" value="256MiB"|name="memory" value="4GiB"|' \
  -e 's|name="map" value="512MiB"|name="map" value="8GiB"|' \
  -e 's|name="disk" value="1GiB"|name="disk" value="16GiB"|' /etc/ImageMagick-6/policy.xml
# Untraced: the project file. A plasma-fractal background (seeded), five
# photographs from the set with drop shadows, and a title layer.
if [ ! -f "$MNT$D/project-original.psd" ]; then
  as_bench sh -c "mkdir -p $D/src && cd $D/src &&
    convert -seed 8 -size 7200x10800 plasma:tan-steelblue -blur 0x2 bg.png &&
    i=0 && for f in \$(ls -S /home/bench/photos/*.jpg | head -n 5); do
      i=\$((i+1))
      convert \$f -resize 5600x3400 -bordercolor white -border 40 \
        \( +clone -background black -shadow 60x30+40+40 \) +swap -background none -layers merge +repage photo\$i.png
    done &&
    convert -size 6800x1000 xc:none -font /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf -pointsize 420 -fill white \
      -stroke black -strokewidth 8 -gravity center -annotate +0+0 'OPEN SOURCE' title.png &&
    convert bg.png -page +200+300 title.png -page +700+1500 photo1.png -page +400+4600 photo2.png \
      -page +1000+7400 photo3.png -page +300+9000 photo4.png -page +3600+8200 photo5.png \
      -background none -flatten composite.png &&
    convert composite.png bg.png -page +200+300 title.png -page +700+1500 photo1.png \
      -page +400+4600 photo2.png -page +1000+7400 photo3.png -page +300+9000 photo4.png \
      -page +3600+8200 photo5.png ../project-original.psd"
fi
as_bench sh -c "cd $D && rm -rf work scratch out && mkdir -p work scratch out && cp project-original.psd project.psd"

capture_trace photo-heavy "photo edit heavy" \
  "ImageMagick: a 7200x10800 poster of 7 layers (PSD) opened, layers split out, colour-graded and recomposed, PSD saved, poster exported as 16-bit TIFF and JPEG proof" \
  sh -c "cd $D && export MAGICK_TEMPORARY_PATH=$D/scratch &&
    L='-limit memory 1GiB -limit map 2GiB' &&
    convert \$L project.psd -delete 0 work/layer-%d.miff &&
    convert \$L work/layer-0.miff -modulate 100,125,96 -sigmoidal-contrast 2x40% work/layer-0.miff &&
    for i in 2 3 4 5 6; do convert \$L work/layer-\$i.miff -auto-level -modulate 102,110 -unsharp 0x2 work/layer-\$i.miff || exit 1; done &&
    convert \$L \( work/layer-*.miff -background none -flatten \) work/layer-*.miff project.psd &&
    convert \$L project.psd[0] -depth 16 -compress none out/poster.tif &&
    convert \$L out/poster.tif -resize 25% -quality 90 out/proof.jpg && sync"
