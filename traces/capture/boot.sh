#!/bin/bash
# boot: the guest powered on with its disk traced, from the moment qemu
# starts (the kernel and initramfs are loaded by qemu, see guest-common.sh:
# so the trace starts with the kernel's first read of the root filesystem)
# until the autologin desktop session is up and idle: systemd, LightDM, Xorg
# and the Xfce session. The trace ends when the session's autostart marker
# exists (xfce4-panel mapped), the guest's writeback is done, its CPUs are
# idle and the disk has had no I/O for
# 5 s (the guest agent's waits read /proc and /run only: no disk I/O).
# (PCMark 10: Windows 10 boot.)
source "$(dirname "$0")/guest-common.sh"
guest_attach

# Not the first boot: the guest had booted before (at least once, untraced:
# launch.sh or a test boot), so boot-time caches and logs (fontconfig, the
# journal) exist as on a machine in use.
guest_capture boot boot \
  "Debian 12 Xfce desktop boot in a qemu guest (TCG, 2 vCPUs, 6 GiB): kernel start, systemd, LightDM autologin, Xfce session up and idle" \
  bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; guest_start && guest_wait_session && guest_settle 5"
