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
#   office-writer, office-calc, office-impress, publishing-draw
#                  LibreOffice 7.4 (headless, driven over UNO by lo_office.py:
#                  the edits of the chroot-era office-*.sh and
#                  publishing-draw.sh). soffice is started before the trace
#                  and stays running (the user has the office suite open), so
#                  its start-up is not in the trace; the document is cold; a
#                  person's pause of $THINK_S s (TM_THINK_S) separates the
#                  actions: after opening, between edits, before each save
# Usage: traces/capture/work.sh [JOB]...   (default: all of the above)
source "$(dirname "$0")/guest-common.sh"
jobs=("$@"); [ ${#jobs[@]} -gt 0 ] || jobs=(video-render photo-light office-writer office-calc office-impress publishing-draw)
THINK_S=${TM_THINK_S:-5}
guest_attach
guest_boot
gbench 'mkdir -p ~/photos && [ -f ~/photos/.complete ] || { cp /mnt/data/photos-source/*.jpg ~/photos/ && touch ~/photos/.complete; }'
"${QGA[@]}" put "$CAPTURE_DIR/lo_office.py" /run/tracemark/lo_office.py

# office_job KIND INPUT NAME CATEGORY DESCRIPTION
office_job() {
  local kind=$1 input=$2 name=$3 category=$4 description=$5
  local d=/home/bench/$name lo="python3 /run/tracemark/lo_office.py"
  gbench "[ -f $d/original/$input ] || $lo prepare-$kind $d/original"
  gbench "rm -rf $d/work && mkdir -p $d/work && cp $d/original/$input $d/work/"
  # untraced: the running office suite, warmed by one pass of the same work
  # on a scratch copy (its filters and export code are in memory, as after
  # earlier use), then the scratch copy removed
  gbench "$lo serve $d && rm -rf $d/warm && mkdir -p $d/warm && cp $d/original/$input $d/warm/ &&
    TM_LO_ATTACH=1 $lo run-$kind $d/warm && rm -rf $d/warm"
  guest_settle 3 600
  gx "sh /run/tracemark/tm-guest.sh evict $d"
  guest_capture "$name" "$category" "$description" \
    bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP
      gbench 'TM_LO_ATTACH=1 TM_THINK_S=$THINK_S $lo run-$kind $d/work' && guest_settle 3 900"
  gbench "$lo quit $d" || gbench "pkill -KILL -f '[s]office' || true"
  sleep 3
}

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
    office-writer)
      office_job writer report.odt office-writer office \
        "LibreOffice Writer 7.4 in the guest (running, headless, UNO): long report opened cold, TOC added, replace-all, chapter appended, saved as .odt, exported to .docx and PDF; ${THINK_S} s pauses between actions" ;;
    office-calc)
      office_job calc ledger.ods office-calc office \
        "LibreOffice Calc 7.4 in the guest (running, headless, UNO): 120,000-row ledger opened cold, formulas filled down, a SUMIFS summary sheet, recalculated, saved as .ods, exported to .xlsx; ${THINK_S} s pauses between actions" ;;
    office-impress)
      office_job impress deck.odp office-impress office \
        "LibreOffice Impress 7.4 in the guest (running, headless, UNO): 40-slide photo deck opened cold, titles edited, saved, exported to PDF and .pptx; ${THINK_S} s pauses between actions" ;;
    publishing-draw)
      office_job draw brochure.odg publishing-draw publishing \
        "LibreOffice Draw 7.4 in the guest (running, headless, UNO): 16-page A4 brochure with 48 photographs opened cold and exported to print PDF at full resolution; ${THINK_S} s pause after opening" ;;
    *) die "unknown work trace $job" ;;
  esac
done
