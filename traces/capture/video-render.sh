#!/bin/bash
# video-render: ffmpeg renders an edit (PCMark 8 "After Effects": render a
# video): reads a 40 s 1080p30 high-bitrate intermediate (MJPEG) and a WAV
# soundtrack, grades, titles and fades it, and encodes H.264/AAC to MP4.
# The intermediate is made untraced from photographs of the set (slow pans,
# as from a camera) and ffmpeg's testsrc2 and sine sources.
source "$(dirname "$0")/common.sh"
root_attach
install_helpers
prepare_photos

D=/home/bench/video-render
if [ ! -f "$MNT$D/footage.mkv" ]; then
  as_bench sh -c "mkdir -p $D && cd $D &&
    set -- \$(ls -S /home/bench/photos/*.jpg | head -n 3) &&
    ffmpeg -nostdin -v error -y \
      -loop 1 -framerate 30 -t 12 -i \$1 -loop 1 -framerate 30 -t 12 -i \$2 -loop 1 -framerate 30 -t 12 -i \$3 \
      -f lavfi -t 4 -i testsrc2=size=1920x1080:rate=30 \
      -filter_complex \"[0]scale=2400:-2,crop=1920:1080:x='(iw-ow)*t/12':y=0,setsar=1[a];[1]scale=2400:-2,crop=1920:1080:x=0:y='(ih-oh)*t/12',setsar=1[b];[2]scale=2400:-2,crop=1920:1080:x='(iw-ow)*(1-t/12)':y='(ih-oh)/2',setsar=1[c];[3]setsar=1[d];[a][b][c][d]concat=n=4:v=1:a=0,format=yuvj420p[v]\" \
      -map '[v]' -c:v mjpeg -q:v 2 footage.mkv &&
    ffmpeg -nostdin -v error -y -f lavfi -t 40 -i 'sine=frequency=220:sample_rate=48000' \
      -f lavfi -t 40 -i 'sine=frequency=331:sample_rate=48000' \
      -filter_complex '[0][1]amix=inputs=2,aformat=channel_layouts=stereo' soundtrack.wav"
fi
as_bench sh -c "rm -f $D/render.mp4"

capture_trace video-render "video render" \
  "ffmpeg: 40 s 1080p30 MJPEG intermediate and WAV soundtrack graded, titled, faded and encoded to H.264/AAC MP4" \
  sh -c "cd $D && ffmpeg -nostdin -v error -y -i footage.mkv -i soundtrack.wav \
    -vf \"eq=contrast=1.08:saturation=1.15,drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf:text='tracemark render':fontsize=64:fontcolor=white:x=60:y=h-120,fade=t=in:d=1,fade=t=out:st=39:d=1,format=yuv420p\" \
    -c:v libx264 -preset fast -crf 20 -c:a aac -b:a 192k -movflags +faststart render.mp4 && sync"
