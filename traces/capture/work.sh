#!/bin/bash
# Work traces re-captured in the guest: the program's start-up is outside the
# trace where the program stays running, only the documents are cold (the
# guest's page cache keeps the program, as on a desktop where it was used
# before), and the trace ends when writeback is done at the kernel's own pace
# (no sync), the disk quiet 3 s.
#   video-render   ffmpeg renders a 40 s 1080p30 MJPEG intermediate + WAV
#                  into H.264/AAC MP4 (the command of the chroot-era
#                  video-render.sh); one untraced render first keeps ffmpeg
#                  and its libraries cached, then the inputs are evicted
#   photo-light    ImageMagick: the 12 largest photographs, 7 edits each,
#                  saved as 16-bit TIFF and JPEG (photo-light.sh's commands)
# Usage: traces/capture/work.sh [video-render|photo-light]...
source "$(dirname "$0")/guest-common.sh"
jobs=("$@"); [ ${#jobs[@]} -gt 0 ] || jobs=(video-render photo-light)
guest_attach
guest_boot
gbench 'mkdir -p ~/photos && [ -f ~/photos/.complete ] || { cp /mnt/data/photos-source/*.jpg ~/photos/ && touch ~/photos/.complete; }'

for job in "${jobs[@]}"; do
  case $job in
    video-render)
      D=/home/bench/video-render
      gbench "mkdir -p $D && cd $D && [ -f footage.mkv ] || {
        set -- \$(ls -S /home/bench/photos/*.jpg | head -n 3) &&
        ffmpeg -nostdin -v error -y \
          -loop 1 -framerate 30 -t 12 -i \$1 -loop 1 -framerate 30 -t 12 -i \$2 -loop 1 -framerate 30 -t 12 -i \$3 \
          -f lavfi -t 4 -i testsrc2=size=1920x1080:rate=30 \
          -filter_complex \"[0]scale=2400:-2,crop=1920:1080:x='(iw-ow)*t/12':y=0,setsar=1[a];[1]scale=2400:-2,crop=1920:1080:x=0:y='(ih-oh)*t/12',setsar=1[b];[2]scale=2400:-2,crop=1920:1080:x='(iw-ow)*(1-t/12)':y='(ih-oh)/2',setsar=1[c];[3]setsar=1[d];[a][b][c][d]concat=n=4:v=1:a=0,format=yuvj420p[v]\" \
          -map '[v]' -c:v mjpeg -q:v 2 footage.mkv &&
        ffmpeg -nostdin -v error -y -f lavfi -t 40 -i 'sine=frequency=220:sample_rate=48000' \
          -f lavfi -t 40 -i 'sine=frequency=331:sample_rate=48000' \
          -filter_complex '[0][1]amix=inputs=2,aformat=channel_layouts=stereo' soundtrack.wav; }"
      RENDER="cd $D && ffmpeg -nostdin -v error -y -i footage.mkv -i soundtrack.wav \
        -vf \"eq=contrast=1.08:saturation=1.15,drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf:text='tracemark render':fontsize=64:fontcolor=white:x=60:y=h-120,fade=t=in:d=1,fade=t=out:st=39:d=1,format=yuv420p\" \
        -c:v libx264 -preset fast -crf 20 -c:a aac -b:a 192k -movflags +faststart render.mp4"
      gbench "$RENDER"            # untraced: ffmpeg and its libraries cached, as after earlier use
      gbench "rm -f $D/render.mp4"
      guest_settle 3 600
      gx "sh /run/tracemark/tm-guest.sh evict $D"
      guest_capture video-render "video render" \
        "ffmpeg in the guest: 40 s 1080p30 MJPEG intermediate and WAV graded, titled, faded, encoded to H.264/AAC MP4; program warm, inputs cold" \
        bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; gbench $(printf '%q' "$RENDER") && guest_settle 3 900" ;;
    photo-light)
      D=/home/bench/photo-light
      EDIT="cd $D && export MAGICK_TEMPORARY_PATH=$D/scratch && for f in in/*.jpg; do b=\$(basename \$f .jpg);
        convert -limit memory 256MiB -limit map 512MiB \$f -depth 16 -auto-level -modulate 103,112,100 -unsharp 0x1.5+0.8+0.02
        -rotate 1.2 -shave 3%x3% +repage -contrast-stretch 0.3%x0.3% -sigmoidal-contrast 3x50%
        -write out/\$b.tif -depth 8 -quality 92 out/\$b.jpg || exit 1; done"
      gbench "rm -rf $D && mkdir -p $D/in $D/out $D/scratch && ls -S /home/bench/photos/*.jpg | head -n 12 | xargs -I{} cp {} $D/in/"
      gbench "convert -size 64x64 xc:gray -depth 16 -auto-level /tmp/warm.tif && rm /tmp/warm.tif"   # untraced: ImageMagick cached
      guest_settle 3 600
      gx "sh /run/tracemark/tm-guest.sh evict $D"
      guest_capture photo-light "photo edit light" \
        "ImageMagick in the guest: 12 photos (15-17 MP) opened, 7 edits each, saved as 16-bit TIFF and JPEG; program warm, photos cold" \
        bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; gbench $(printf '%q' "$EDIT") && guest_settle 3 900"
      gbench "rm -rf $D/out $D/scratch" ;;
    *) die "unknown work trace $job" ;;
  esac
done
