#!/bin/bash
# boot: the guest powered on with its disk traced from the first sector GRUB
# reads (the MBR) until the autologin desktop session is up and idle: BIOS,
# GRUB (core image, modules, kernel and initramfs read from /boot on the traced
# disk), the kernel, systemd, LightDM, Xorg and the Xfce session. The trace
# ends when the session's autostart marker exists (xfce4-panel mapped), the
# guest's writeback is done, its CPUs are idle and the disk has had no I/O for
# 5 s (the guest agent's waits read /proc and /run only: no disk I/O).
# (PCMark 10: Windows 10 boot.)
source "$(dirname "$0")/guest-common.sh"
guest_attach

# Untraced: one boot first, so that boot-time caches and logs (ldconfig,
# fontconfig, the journal) are as on a machine that has booted before.
guest_boot
guest_cleanup
guest_attach

guest_capture boot boot \
  "Debian 12 desktop boot in a KVM guest: power-on, GRUB, kernel, systemd, LightDM autologin, Xfce session up and idle" \
  bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP; guest_start && guest_wait_session && guest_settle 5"
