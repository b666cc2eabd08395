#!/bin/sh
# Runs inside the capture guest (copied to /run/tracemark, a tmpfs, at each
# session so that it adds no I/O to the traced disk).
#   tm-guest.sh as-bench B64CMD   runs CMD (base64) as `bench` in the desktop session's
#                                 environment (DISPLAY, D-Bus, XDG_RUNTIME_DIR)
#   tm-guest.sh cold              drops the page cache (after writing dirty
#                                 data), then reads back every file the running
#                                 processes have mapped (the desktop's programs
#                                 and libraries, as a desktop that has been up
#                                 holds them) and the helpers the host runs here
#   tm-guest.sh evict PATH...     writes, then drops from the page cache only
#                                 the files under PATH (the documents of a work
#                                 trace; the program stays cached)
#   tm-guest.sh launch PATTERN CMD...
#                                 starts CMD as `bench` in the session and
#                                 returns when a visible window whose name
#                                 matches PATTERN is mapped
set -eu
# As `bench` without PAM (runuser's PAM session writes two journal lines per
# command: I/O on the traced disk that no desktop makes).
AS_BENCH="setpriv --reuid=bench --regid=bench --init-groups"
SESSION_ENV="DISPLAY=:0 XAUTHORITY=/home/bench/.Xauthority HOME=/home/bench USER=bench LOGNAME=bench
  XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus LANG=C.UTF-8
  PATH=/usr/local/bin:/usr/bin:/bin:/usr/games"
# The programs the host's commands run in the guest; kept cached so that a
# trace holds the workload's reads, not the helpers'.
HELPERS="/bin/sh /bin/bash /usr/bin/setpriv /usr/bin/env /usr/bin/setsid /usr/bin/xdotool /usr/bin/sleep
  /usr/bin/cat /usr/bin/pkill /usr/bin/pgrep /usr/bin/timeout /usr/bin/date /usr/bin/base64 /usr/bin/rm /usr/bin/cp /usr/bin/sync
  /usr/lib/x86_64-linux-gnu/libxdo.so.3"
case $1 in
  as-bench)
    # the command comes base64-encoded (any quoting survives the agent)
    cmd=$(printf %s "$2" | base64 -d)
    # shellcheck disable=SC2086
    exec $AS_BENCH env -i $SESSION_ENV sh -c "$cmd" ;;
  cold)
    sync
    echo 3 > /proc/sys/vm/drop_caches
    for f in $(cat /proc/[0-9]*/maps 2>/dev/null | awk '$6 ~ /^\// {print $6}' | sort -u) $HELPERS; do
      [ -f "$f" ] && cat "$f" > /dev/null 2>&1 || true
    done
    # ldd's view of the helpers' own libraries
    for f in $(ldd /usr/bin/xdotool /usr/bin/setpriv 2>/dev/null | awk '/=>/ {print $3}'); do cat "$f" > /dev/null; done
    echo "cold: page cache dropped; $(grep -E '^(Cached|Dirty)' /proc/meminfo | tr -s ' ' | tr '\n' ' ')" ;;
  evict)
    shift
    sync
    find "$@" -type f -print0 | xargs -0 -r python3 -c '
import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
'
    echo "evict: $(find "$@" -type f | wc -l) files dropped from the page cache" ;;
  launch)
    pattern=$2
    shift 2
    # shellcheck disable=SC2086
    $AS_BENCH env -i $SESSION_ENV setsid sh -c "$*" </dev/null >/dev/null 2>&1 &
    # shellcheck disable=SC2086
    # xdotool fails (BadWindow) when a window it is looking at goes away
    # while it looks (a splash screen closing): look again until the deadline.
    deadline=$(( $(date +%s) + ${LAUNCH_TIMEOUT_S:-900} ))
    while :; do
      left=$(( deadline - $(date +%s) ))
      [ "$left" -gt 0 ] ||
        { echo "tm-guest.sh: no visible window named '$pattern' within ${LAUNCH_TIMEOUT_S:-900} s" >&2; exit 1; }
      # shellcheck disable=SC2086
      if $AS_BENCH env -i $SESSION_ENV timeout "$left" \
          xdotool search --sync --onlyvisible --name "$pattern" 2>/dev/null | head -n 1 | grep .; then
        break
      fi
      sleep 0.2
    done ;;
  *)
    echo "tm-guest.sh: unknown step $1" >&2; exit 2 ;;
esac
