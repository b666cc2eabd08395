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
#   photo-heavy    ImageMagick: the 7-layer 7200x10800 poster PSD of the
#                  chroot-era photo-heavy.sh, the same commands; program
#                  warm, the project files cold
#   game-0ad       0 A.D. started with -autostart (Acropolis Bay, two Petra
#                  AIs), rendered with llvmpipe in the desktop session, played
#                  until $TM_GAME_S s (default 90) after the start; the game's start-up files are
#                  warm (it was started to its main menu and quit before,
#                  untraced), so the trace is the match loading and playing,
#                  not game-launch-0ad again
#   game-supertuxkart
#                  SuperTuxKart --no-graphics race of one lap on Lighthouse
#                  with 4 karts, after an untraced start of the same race (its
#                  program warm; the track and karts read again cold)
# Usage: traces/capture/work.sh [JOB]...   (default: all of the above)
source "$(dirname "$0")/guest-common.sh"
source "$(dirname "$0")/work-jobs.sh"
jobs=("$@"); [ ${#jobs[@]} -gt 0 ] || jobs=(office-writer office-calc office-impress publishing-draw video-render photo-light photo-heavy game-0ad game-supertuxkart)
THINK_S=${TM_THINK_S:-5}
# How long the 0 A.D. match runs from the game's start (under TCG the match
# takes minutes to load).
GAME_S=${TM_GAME_S:-90}
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
  # untraced: the office suite started and left running (TM_OFFICE_WARM=1
  # also warms it with one pass of the same work on a scratch copy, so its
  # filters and export code are in memory as after earlier use; under TCG
  # that pass takes about as long as the traced one)
  gbench "$lo serve $d"
  if [ -n "${TM_OFFICE_WARM:-}" ]; then
    gbench "rm -rf $d/warm && mkdir -p $d/warm && cp $d/original/$input $d/warm/ &&
      TM_LO_ATTACH=1 $lo run-$kind $d/warm && rm -rf $d/warm"
  fi
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
      gbench "$VIDEO_PREP"
      gbench "$VIDEO_RENDER"      # untraced: ffmpeg and its libraries cached, as after earlier use
      gbench "$VIDEO_CLEAN"
      guest_settle 3 600
      gx "sh /run/tracemark/tm-guest.sh evict $VIDEO_DIR"
      guest_capture video-render "video render" \
        "ffmpeg in the guest: 40 s 1080p30 MJPEG intermediate and WAV graded, titled, faded, encoded to H.264/AAC MP4; program warm, inputs cold" \
        bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; gbench $(printf '%q' "$VIDEO_RENDER") && guest_settle 3 900" ;;
    photo-light)
      gbench "$PHOTO_LIGHT_PREP"
      gbench "$IM_WARM"   # untraced: ImageMagick cached
      guest_settle 3 600
      gx "sh /run/tracemark/tm-guest.sh evict $PHOTO_LIGHT_DIR"
      guest_capture photo-light "photo edit light" \
        "ImageMagick in the guest: 12 photos (15-17 MP) opened, 7 edits each, saved as 16-bit TIFF and JPEG; program warm, photos cold" \
        bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; gbench $(printf '%q' "$PHOTO_LIGHT_EDIT") && guest_settle 3 900"
      gbench "$PHOTO_LIGHT_CLEAN" ;;
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
    photo-heavy)
      gx "$PHOTO_HEAVY_POLICY_ROOT"
      gbench "$PHOTO_HEAVY_PREP"
      gbench "$PHOTO_HEAVY_RESET"
      gbench "$IM_WARM"   # untraced: ImageMagick cached
      guest_settle 3 600
      gx "sh /run/tracemark/tm-guest.sh evict $PHOTO_HEAVY_DIR"
      guest_capture photo-heavy "photo edit heavy" \
        "ImageMagick in the guest: a 7200x10800 poster of 7 layers (PSD) opened, layers split out, colour-graded and recomposed, PSD saved, exported as 16-bit TIFF and JPEG proof; program warm, project cold" \
        bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; gbench $(printf '%q' "$PHOTO_HEAVY_EDIT") && guest_settle 3 900"
      gbench "$PHOTO_HEAVY_CLEAN" ;;
    game-0ad)
      GAME="timeout -k 15 -s TERM $GAME_S $GAME_0AD_MATCH >/dev/null 2>&1; [ \$? -eq 124 ]"
      gx "sh /run/tracemark/tm-guest.sh launch '^0 A.D.' /usr/games/pyrogenesis"   # untraced: start-up warm
      sleep 45   # game-launch-0ad read its last start-up file 29 s after the start
      gbench "pkill -TERM -f '[p]yrogenesis' || true"; sleep 5; gbench "pkill -KILL -f '[p]yrogenesis' || true"
      guest_settle 3 600 1
      guest_capture game-0ad "game load" \
        "0 A.D. 0.26 in the guest (llvmpipe, desktop session): Acropolis Bay with 2 Petra AIs loaded and played until $GAME_S s after the start; game start-up warm, match files cold" \
        bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; gbench $(printf '%q' "$GAME") && guest_settle 3 900 1" ;;
    game-supertuxkart)
      STK=$STK_RACE
      gbench "$STK"   # untraced: program and data read once
      guest_cold
      guest_settle 3 600 1
      guest_capture game-supertuxkart "game load" \
        "SuperTuxKart 1.4 in the guest (--no-graphics): start, load Lighthouse with 4 karts, race 1 lap in profile mode, quit; page cache dropped before" \
        bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; gbench $(printf '%q' "$STK") && guest_settle 3 900 1" ;;
    *) die "unknown work trace $job" ;;
  esac
done
