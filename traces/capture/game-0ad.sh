#!/bin/bash
# game-0ad: 0 A.D. (pyrogenesis) starts on a virtual X display with software
# GL, loads the Acropolis Bay skirmish map with two Petra AI players, and lets
# them play until 90 s after the start, when it is asked to quit (SIGTERM, which
# 0 A.D. handles as a normal quit). PCMark 8 game traces: start, load a level, play.
# The game data is the 3.2 GB public.zip of 0ad-data on the traced disk.
source "$(dirname "$0")/common.sh"
root_attach

GAME="xvfb-run -a -s '-screen 0 1280x720x24' timeout -k 15 -s TERM 90 /usr/games/pyrogenesis \
  -autostart=skirmishes/acropolis_bay_2p -autostart-ai=1:petra -autostart-ai=2:petra \
  -nosound -xres=1280 -yres=720"
# Untraced: one earlier session, so the profile and the GL shader cache exist as
# for a returning player.
as_bench sh -c "$GAME > /dev/null 2>&1; [ \$? -eq 124 ]"

capture_trace game-0ad "game load" \
  "0 A.D. 0.26 (Xvfb, llvmpipe): start, load Acropolis Bay with 2 Petra AIs, play until 90 s, quit" \
  sh -c "$GAME > /dev/null 2>&1; [ \$? -eq 124 ] && sync"
