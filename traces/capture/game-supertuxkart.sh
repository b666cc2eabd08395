#!/bin/bash
# game-supertuxkart: SuperTuxKart starts, loads the Lighthouse track with four
# karts and races one lap in its automatic profile mode, then quits (PCMark 8
# game traces: start, load a level, play).
#
# Runs with --no-graphics: on this machine only software GL (llvmpipe) exists,
# and under it SuperTuxKart's renderer spent over ten minutes compiling shaders
# without reaching the race; without graphics the game still starts, reads its
# configuration, karts, the track and its physics meshes, and simulates the
# race, but skips loading textures for rendering.
source "$(dirname "$0")/common.sh"
root_attach

STK="supertuxkart --no-graphics --profile-laps=1 --track=lighthouse --numkarts=4 --race-now"
# Untraced: one earlier run, so the profile exists as for a returning player.
as_bench sh -c "$STK > /dev/null 2>&1"

capture_trace game-supertuxkart "game load" \
  "SuperTuxKart 1.4 (--no-graphics): start, load Lighthouse with 4 karts, race 1 lap in profile mode, quit" \
  sh -c "$STK > /dev/null 2>&1 && sync"
