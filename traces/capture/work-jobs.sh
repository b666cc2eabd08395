# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# The commands of the CPU-bound work traces, shared by work.sh (run in the
# desktop guest) and native.sh (run at native speed in a chroot on the same
# guest disk), so both capture exactly the same work. Source it; each
# variable is one `sh -c` command line for the user `bench` (one line: the
# guest runs it through its own `sh`), except *_ROOT, which run as root.

# video-render: a 40 s 1080p30 MJPEG intermediate of slow pans over three
# photographs plus testsrc2, and a two-tone WAV; made once (the .complete
# marker: an interrupted preparation is redone).
VIDEO_DIR=/home/bench/video-render
VIDEO_PREP="mkdir -p $VIDEO_DIR && cd $VIDEO_DIR && [ -f .complete ] || {
  set -- \$(ls -S /home/bench/photos/*.jpg | head -n 3) &&
  ffmpeg -nostdin -v error -y
    -loop 1 -framerate 30 -t 12 -i \$1 -loop 1 -framerate 30 -t 12 -i \$2 -loop 1 -framerate 30 -t 12 -i \$3
    -f lavfi -t 4 -i testsrc2=size=1920x1080:rate=30
    -filter_complex \"[0]scale=2400:-2,crop=1920:1080:x='(iw-ow)*t/12':y=0,setsar=1[a];[1]scale=2400:-2,crop=1920:1080:x=0:y='(ih-oh)*t/12',setsar=1[b];[2]scale=2400:-2,crop=1920:1080:x='(iw-ow)*(1-t/12)':y='(ih-oh)/2',setsar=1[c];[3]setsar=1[d];[a][b][c][d]concat=n=4:v=1:a=0,format=yuvj420p[v]\"
    -map '[v]' -c:v mjpeg -q:v 2 footage.mkv &&
  ffmpeg -nostdin -v error -y -f lavfi -t 40 -i 'sine=frequency=220:sample_rate=48000'
    -f lavfi -t 40 -i 'sine=frequency=331:sample_rate=48000'
    -filter_complex '[0][1]amix=inputs=2,aformat=channel_layouts=stereo' soundtrack.wav && touch .complete; }"
VIDEO_RENDER="cd $VIDEO_DIR && ffmpeg -nostdin -v error -y -i footage.mkv -i soundtrack.wav
  -vf \"eq=contrast=1.08:saturation=1.15,drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf:text='tracemark render':fontsize=64:fontcolor=white:x=60:y=h-120,fade=t=in:d=1,fade=t=out:st=39:d=1,format=yuv420p\"
  -c:v libx264 -preset fast -crf 20 -c:a aac -b:a 192k -movflags +faststart render.mp4"
VIDEO_CLEAN="rm -f $VIDEO_DIR/render.mp4"

# ImageMagick started once on a tiny image, untraced: the program and its
# libraries are in the page cache, as after earlier use.
IM_WARM="convert -size 64x64 xc:gray -depth 16 -auto-level /tmp/warm.miff && rm /tmp/warm.miff"

# photo-light: the 12 largest photographs, 7 edits each, saved as 16-bit
# TIFF and JPEG; the pixel cache limited to Debian's default policy.
PHOTO_LIGHT_DIR=/home/bench/photo-light
PHOTO_LIGHT_PREP="rm -rf $PHOTO_LIGHT_DIR && mkdir -p $PHOTO_LIGHT_DIR/in $PHOTO_LIGHT_DIR/out $PHOTO_LIGHT_DIR/scratch && ls -S /home/bench/photos/*.jpg | head -n 12 | xargs -I{} cp {} $PHOTO_LIGHT_DIR/in/"
PHOTO_LIGHT_EDIT="cd $PHOTO_LIGHT_DIR && export MAGICK_TEMPORARY_PATH=$PHOTO_LIGHT_DIR/scratch && for f in in/*.jpg; do b=\$(basename \$f .jpg);
  convert -limit memory 256MiB -limit map 512MiB \$f -depth 16 -auto-level -modulate 103,112,100 -unsharp 0x1.5+0.8+0.02
  -rotate 1.2 -shave 3%x3% +repage -contrast-stretch 0.3%x0.3% -sigmoidal-contrast 3x50%
  -write out/\$b.tif -depth 8 -quality 92 out/\$b.jpg || exit 1; done"
PHOTO_LIGHT_CLEAN="rm -rf $PHOTO_LIGHT_DIR/out $PHOTO_LIGHT_DIR/scratch"

# photo-heavy: a 7200x10800 (24x36 in at 300 dpi) poster PSD of seven layers.
# Debian's ImageMagick policy caps the pixel cache at 256 MiB of memory,
# 512 MiB mapped and 1 GiB on disk, too little for a 78-megapixel poster;
# the caps are raised as one would for poster work, and the commands set
# their own lower memory and map limits, so the large frames go through the
# scratch directory on the disk.
PHOTO_HEAVY_DIR=/home/bench/photo-heavy
PHOTO_HEAVY_POLICY_ROOT="sed -i -e 's|name=\"memory\" value=\"256MiB\"|name=\"memory\" value=\"4GiB\"|'
  -e 's|name=\"map\" value=\"512MiB\"|name=\"map\" value=\"8GiB\"|'
  -e 's|name=\"disk\" value=\"1GiB\"|name=\"disk\" value=\"16GiB\"|' /etc/ImageMagick-6/policy.xml"
PHOTO_HEAVY_PREP="[ -f $PHOTO_HEAVY_DIR/project-original.psd ] || { mkdir -p $PHOTO_HEAVY_DIR/src && cd $PHOTO_HEAVY_DIR/src &&
  convert -seed 8 -size 7200x10800 plasma:tan-steelblue -blur 0x2 bg.png &&
  i=0 && for f in \$(ls -S /home/bench/photos/*.jpg | head -n 5); do
    i=\$((i+1));
    convert \$f -resize 5600x3400 -bordercolor white -border 40 \\( +clone -background black -shadow 60x30+40+40 \\) +swap -background none -layers merge +repage photo\$i.png;
  done &&
  convert -size 6800x1000 xc:none -font /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf -pointsize 420 -fill white -stroke black -strokewidth 8 -gravity center -annotate +0+0 'OPEN SOURCE' title.png &&
  convert bg.png -page +200+300 title.png -page +700+1500 photo1.png -page +400+4600 photo2.png -page +1000+7400 photo3.png -page +300+9000 photo4.png -page +3600+8200 photo5.png -background none -flatten composite.png &&
  convert composite.png bg.png -page +200+300 title.png -page +700+1500 photo1.png -page +400+4600 photo2.png -page +1000+7400 photo3.png -page +300+9000 photo4.png -page +3600+8200 photo5.png ../project-original.psd && rm -rf $PHOTO_HEAVY_DIR/src; }"
PHOTO_HEAVY_RESET="cd $PHOTO_HEAVY_DIR && rm -rf work scratch out && mkdir -p work scratch out && cp project-original.psd project.psd"
PHOTO_HEAVY_EDIT="cd $PHOTO_HEAVY_DIR && export MAGICK_TEMPORARY_PATH=$PHOTO_HEAVY_DIR/scratch && L='-limit memory 1GiB -limit map 2GiB' &&
  convert \$L project.psd -delete 0 work/layer-%d.miff &&
  convert \$L work/layer-0.miff -modulate 100,125,96 -sigmoidal-contrast 2x40% work/layer-0.miff &&
  for i in 2 3 4 5 6; do convert \$L work/layer-\$i.miff -auto-level -modulate 102,110 -unsharp 0x2 work/layer-\$i.miff || exit 1; done &&
  convert \$L \\( work/layer-*.miff -background none -flatten \\) work/layer-*.miff project.psd &&
  convert \$L project.psd[0] -depth 16 -compress none out/poster.tif &&
  convert \$L out/poster.tif -resize 25% -quality 90 out/proof.jpg"
PHOTO_HEAVY_CLEAN="rm -rf $PHOTO_HEAVY_DIR/work $PHOTO_HEAVY_DIR/scratch $PHOTO_HEAVY_DIR/out $PHOTO_HEAVY_DIR/project.psd"

# game-0ad: the Acropolis Bay skirmish with two Petra AIs, started at once
# (each script wraps it in `timeout` for the length of the match it traces).
GAME_0AD_MATCH="/usr/games/pyrogenesis -autostart=skirmishes/acropolis_bay_2p -autostart-ai=1:petra -autostart-ai=2:petra -nosound -xres=1280 -yres=720"

# game-supertuxkart: one lap of Lighthouse with 4 karts, without graphics.
STK_RACE="/usr/games/supertuxkart --no-graphics --profile-laps=1 --track=lighthouse --numkarts=4 --race-now >/dev/null 2>&1"

# Tasks of kinds the reference suite does not hold, for the validity study
# (native.sh only). Each ends by waiting for what it wrote, or reads only.
# unpack-sync: the guest's documentation, icons and Python library (about
# 10,000 files, 136 MB) unpacked from a gzip tarball made once, then
# `sync -f` (syncfs of the guest's filesystem, not the host's others).
UNPACK_DIR=/home/bench/unpack
UNPACK_PREP="mkdir -p $UNPACK_DIR && cd $UNPACK_DIR && { [ -f .complete ] ||
  { tar -czf tree.tar.gz -C /usr share/doc share/icons lib/python3.11 && touch .complete; }; }"
UNPACK_RUN="cd $UNPACK_DIR && rm -rf out && mkdir out && tar -xzf tree.tar.gz -C out && sync -f out"
UNPACK_CLEAN="rm -rf $UNPACK_DIR/out"

# db-commit: a ledger of 200,000 rows inserted into a new SQLite database in
# 400 transactions (the default rollback journal and synchronous=FULL: each
# commit fsyncs the journal and the database), then indexed (db_commit.py).
DB_DIR=/home/bench/db
DB_RUN="python3 /run/tracemark/db_commit.py $DB_DIR/ledger.db"
DB_CLEAN="rm -rf $DB_DIR && mkdir -p $DB_DIR"

# file-search: grep through the documentation, icons, translations, man
# pages and Python library (about 400 MB in small files) for a string that
# is nowhere, from a dropped page cache (grep exits 1: nothing found).
SEARCH_RUN="grep -rIl -e tracemark-needle-0451 /usr/share/doc /usr/share/icons /usr/share/locale /usr/share/man /usr/lib/python3.11; [ \$? -eq 1 ]"

# Every command on one line (the guest's sh and `sh -c` alike).
for v in VIDEO_PREP VIDEO_RENDER PHOTO_LIGHT_EDIT PHOTO_HEAVY_POLICY_ROOT PHOTO_HEAVY_PREP PHOTO_HEAVY_EDIT UNPACK_PREP; do
  printf -v "$v" '%s' "${!v//$'\n'/ }"
done
unset v
