#!/bin/bash
# launch-*: cold application and game launches "until usable" (PCMark 10's
# application launches; its game launches run to the main menu).
# Usage: traces/capture/launch.sh [APP...]   (default: all; APP as in the table)
# For each application, in one guest session after boot:
#   1. untraced: a first launch and quit, so the profile exists (a returning
#      user); skipped with TRACEMARK_NO_WARMUP=1 (then the trace is the
#      user's first start of the application: profile creation included);
#   2. untraced: the guest's page cache is dropped and the files the running
#      desktop has mapped are read back (tm-guest.sh cold): the application's
#      own files and the libraries only it uses are cold, the desktop is not;
#   3. traced: the application is started in the Xfce session; the trace ends
#      $LAUNCH_TAIL_S (default 10) seconds after its main window is mapped and
#      visible (xdotool search --sync --onlyvisible), which takes in what it
#      reads right after showing the window. (A settle on CPU idle and a quiet
#      disk, as the other traces end, did not come under TCG: see README.)
#   4. untraced: the application is asked to quit (SIGTERM).
source "$(dirname "$0")/guest-common.sh"

# name | window-name pattern | command | settle CPU max | description
APPS=(
  "launch-gimp|GNU Image Manipulation Program|gimp|$SETTLE_CPU|GIMP 2.10 launch in the qemu desktop guest (TCG), application files cold, desktop warm: until 10 s after its main window is mapped"
  "launch-inkscape| - Inkscape\$|inkscape|$SETTLE_CPU|Inkscape 1.2 launch in the qemu desktop guest (TCG), application files cold, desktop warm: until 10 s after its document window is mapped"
  "launch-libreoffice|LibreOffice Writer|libreoffice --writer|$SETTLE_CPU|LibreOffice 7.4 Writer (GTK3) launch in the qemu desktop guest (TCG), application files cold, desktop warm: until 10 s after its document window is mapped"
  "launch-firefox|Mozilla Firefox|firefox-esr|$SETTLE_CPU|Firefox ESR launch in the qemu desktop guest (TCG), application files cold, desktop warm: until 10 s after its browser window is mapped"
  "launch-darktable|darktable|darktable|$SETTLE_CPU|darktable 4.2 launch in the qemu desktop guest (TCG), application files cold, desktop warm: until 10 s after its window is mapped"
  "game-launch-0ad|^0 A.D.|/usr/games/pyrogenesis|1|0 A.D. 0.26 (llvmpipe) launch in the qemu desktop guest (TCG), game files cold, desktop warm: until 10 s after its window is mapped"
  "game-launch-supertuxkart|SuperTuxKart|/usr/games/supertuxkart|1|SuperTuxKart 1.4 (llvmpipe) launch in the qemu desktop guest (TCG), game files cold, desktop warm: until 10 s after its window is mapped"
)
want=("$@")
export LAUNCH_TAIL_S=${LAUNCH_TAIL_S:-10}
guest_attach
guest_boot
# Inkscape 1.2 opens a start screen ("Welcome!") instead of its document
# window until the user turns it off; a returning user has (preference
# /options/boot/enabled=0, set once in the user's preferences).
# shellcheck disable=SC2016 # expanded in the guest
gbench 'p=$HOME/.config/inkscape/preferences.xml; [ ! -f $p ] || grep -q "id=\"boot\" enabled=\"0\"" $p ||
  sed -i "s/id=\"boot\"/id=\"boot\" enabled=\"0\"/" $p'

for row in "${APPS[@]}"; do
  IFS='|' read -r name pattern cmd cpu_max description <<< "$row"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  prog=$(basename "${cmd%% *}")
  prog="[${prog:0:1}]${prog:1}"   # a pattern that does not match the shell running pkill
  if [ -z "${TRACEMARK_NO_WARMUP:-}" ]; then
    echo "== $name: warm-up launch (untraced)"
    gx "sh /run/tracemark/tm-guest.sh launch '$pattern' $cmd"
    guest_settle 3 900 "$cpu_max"
    gbench "pkill -TERM -f '$prog' || true"
    sleep 5
    gbench "pkill -KILL -f '$prog' || true"
  fi
  guest_cold
  sleep 5
  category="app launch"; [[ $name == game-* ]] && category="game launch"
  guest_capture "$name" "$category" "$description" \
    bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP
      gx \"sh /run/tracemark/tm-guest.sh launch '$pattern' $cmd\" && sleep \$LAUNCH_TAIL_S"
  guest_screendump "$WORK/$name.png" || true
  gbench "pkill -TERM -f '$prog' || true"
  sleep 5
  gbench "pkill -KILL -f '$prog' || true"
  sleep 3
done
