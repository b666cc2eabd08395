#!/bin/bash
# Builds the KVM guest the reference traces are captured in: a Debian 12
# desktop on a partitioned raw disk image (MBR, one ext4 partition, GRUB in the
# MBR gap, kernel and initramfs in /boot), so that boot reads the bootloader,
# kernel and every program from the traced disk. The desktop is LightDM with
# autologin of user `bench` into Xfce; the host drives the guest through
# qemu-guest-agent. A second, untraced disk image (data.img) holds what comes
# from elsewhere: the photo set and ISO-sized files of the copy traces, and the
# local package repository of the install trace.
#
# Usage: traces/capture/build-guest.sh   (work dir: $TRACEMARK_GUEST_DIR, default /var/tmp/tracemark-guest)
# Produces guest.img (traced), data.img (untraced), packages.txt (dpkg-query -W
# of the guest) and aging.txt (how the filesystem was aged). Runs as root;
# leaves no loop device or mount behind, also on failure.
set -euo pipefail

CAPTURE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$CAPTURE_DIR/../../bench/lib.sh"
WORK=${TRACEMARK_GUEST_DIR:-/var/tmp/tracemark-guest}
IMG=$WORK/guest.img
DATA=$WORK/data.img
MNT=$WORK/build-mnt
DMNT=$WORK/build-data
SIZE=${TRACEMARK_GUEST_SIZE:-40G}
DATA_SIZE=${TRACEMARK_DATA_SIZE:-24G}
SUITE=bookworm
MIRROR=${TRACEMARK_MIRROR:-http://deb.debian.org/debian}

# The desktop: kernel, bootloader, X with the modesetting driver (qemu's VGA
# is bochs-drm), LightDM autologin into Xfce, the guest agent.
DESKTOP=(
  linux-image-amd64 grub-pc systemd-sysv udev dbus dbus-user-session libpam-systemd
  qemu-guest-agent initramfs-tools kmod procps sudo less
  xserver-xorg-core xserver-xorg-input-libinput x11-xserver-utils xauth
  lightdm lightdm-gtk-greeter xfce4-session xfwm4 xfce4-panel xfdesktop4
  xfce4-settings xfconf thunar xfce4-terminal xfce4-notifyd
  adwaita-icon-theme fonts-dejavu-core fonts-liberation2
  libgl1-mesa-dri mesa-utils
)
# The applications of the suite.
APPS=(
  gimp inkscape darktable firefox-esr
  libreoffice-writer libreoffice-calc libreoffice-impress libreoffice-draw
  libreoffice-gtk3 python3-uno libreoffice-script-provider-python
  0ad supertuxkart
  imagemagick ffmpeg xdotool wmctrl python3
  # input material: photographs and artwork that Debian packages carry
  desktop-base gnome-backgrounds plasma-workspace-wallpapers
)
# Installed by the install trace from the local repository on data.img (downloaded here, not installed).
INSTALL_TRACE_PACKAGES=(krita)

need_root
need debootstrap
need parted
need mkfs.ext4 e2fsprogs
mkdir -p "$WORK" "$MNT" "$DMNT"
[ -e "$IMG" ] && die "$IMG exists; remove it to rebuild"

LOOP='' DLOOP=''
MOUNTS=()
cleanup() {
  set +e
  for ((i=${#MOUNTS[@]}-1; i>=0; i--)); do umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}"; done
  [ -n "$LOOP" ] && losetup -d "$LOOP"
  [ -n "$DLOOP" ] && losetup -d "$DLOOP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
in_root() { chroot "$MNT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
  PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin "$@"; }

# --- the traced disk: MBR, one ext4 partition from 1 MiB (GRUB's core image sits in the gap)
truncate -s "$SIZE" "$IMG"
parted -s "$IMG" mklabel msdos mkpart primary ext4 1MiB 100% set 1 boot on
LOOP=$(losetup --find --show --partscan "$IMG")
# Some host kernels parse no partition tables (CONFIG_MSDOS_PARTITION unset):
# add the partition explicitly (BLKPG); the guest's Debian kernel reads the MBR itself.
[ -b "${LOOP}p1" ] || partx -a "$LOOP"
for _ in $(seq 50); do [ -b "${LOOP}p1" ] && break; sleep 0.1; done
mkfs.ext4 -q -L tm-root "${LOOP}p1"
mount "${LOOP}p1" "$MNT"; MOUNTS+=("$MNT")
# --- the untraced data disk: no partition table, one ext4
truncate -s "$DATA_SIZE" "$DATA"
mkfs.ext4 -q -L tm-data "$DATA"
DLOOP=$(losetup --find --show "$DATA")
mount "$DLOOP" "$DMNT"; MOUNTS+=("$DMNT")

debootstrap --variant=minbase "$SUITE" "$MNT" "$MIRROR"
for d in proc sys dev dev/pts; do mount --bind "/$d" "$MNT/$d"; MOUNTS+=("$MNT/$d"); done
cp /etc/resolv.conf "$MNT/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' > "$MNT/usr/sbin/policy-rc.d"; chmod +x "$MNT/usr/sbin/policy-rc.d"
cat > "$MNT/etc/apt/sources.list" <<SRC
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
SRC
echo tracemark-guest > "$MNT/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 tracemark-guest\n' > "$MNT/etc/hosts"
ROOT_UUID=$(blkid -s UUID -o value "${LOOP}p1")
cat > "$MNT/etc/fstab" <<FSTAB
UUID=$ROOT_UUID / ext4 defaults,relatime,errors=remount-ro 0 1
LABEL=tm-data /mnt/data ext4 defaults,relatime,nofail,x-systemd.device-timeout=10s 0 2
FSTAB
mkdir -p "$MNT/mnt/data"

# Queue limits of a common consumer NVMe drive, set on the guest's traced
# disk by udev from the first moment (also in the initramfs): no I/O
# scheduler (the NVMe default), read-ahead 128 KiB (the kernel default for
# NVMe), largest request 512 KiB (Samsung 970 EVO Plus / 980 PRO: MDTS 512 KiB).
mkdir -p "$MNT/etc/udev/rules.d" "$MNT/etc/initramfs-tools/hooks"
cat > "$MNT/etc/udev/rules.d/60-tracemark-nvme-limits.rules" <<'RULE'
ACTION=="add|change", KERNEL=="vda", ATTR{queue/scheduler}="none", ATTR{queue/read_ahead_kb}="128", ATTR{queue/max_sectors_kb}="512"
RULE
cat > "$MNT/etc/initramfs-tools/hooks/tracemark-limits" <<'HOOK'
#!/bin/sh
[ "$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
mkdir -p "$DESTDIR/usr/lib/udev/rules.d"
cp /etc/udev/rules.d/60-tracemark-nvme-limits.rules "$DESTDIR/usr/lib/udev/rules.d/"
HOOK
chmod +x "$MNT/etc/initramfs-tools/hooks/tracemark-limits"
# GRUB: no menu delay (as a single-OS desktop), console on tty and serial.
mkdir -p "$MNT/etc/default"
cat > "$MNT/etc/default/grub" <<'GRUB'
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0,115200"
GRUB

in_root apt-get update
in_root apt-get install -y --no-install-recommends "${DESKTOP[@]}"
in_root apt-get install -y --no-install-recommends "${APPS[@]}"

# The install trace's packages: downloaded (with every dependency the guest
# lacks) into a local repository on the data disk, not installed.
mkdir -p "$DMNT/repo"
in_root apt-get clean
in_root apt-get install -y --no-install-recommends --download-only "${INSTALL_TRACE_PACKAGES[@]}"
cp "$MNT"/var/cache/apt/archives/*.deb "$DMNT/repo/"
in_root apt-get clean
in_root apt-get install -y --no-install-recommends apt-utils
mkdir -p "$MNT/srv/repo"; mount --bind "$DMNT/repo" "$MNT/srv/repo"; MOUNTS+=("$MNT/srv/repo")
in_root sh -c 'cd /srv/repo && apt-ftparchive packages . > Packages'
umount "$MNT/srv/repo"; unset 'MOUNTS[${#MOUNTS[@]}-1]'
echo "deb [trusted=yes] file:/mnt/data/repo ./" > "$MNT/etc/apt/sources.list.d/local-repo.list.disabled"

# User, autologin, guest agent.
in_root useradd -m -s /bin/bash -G audio,video,sudo bench 2>/dev/null || true
echo 'bench:bench' | in_root chpasswd
mkdir -p "$MNT/etc/lightdm/lightdm.conf.d"
cat > "$MNT/etc/lightdm/lightdm.conf.d/50-autologin.conf" <<'CONF'
[Seat:*]
autologin-user=bench
autologin-user-timeout=0
autologin-session=xfce
user-session=xfce
CONF
in_root groupadd -f autologin
in_root gpasswd -a bench autologin
rm -f "$MNT/usr/sbin/policy-rc.d"
in_root systemctl enable lightdm qemu-guest-agent
# qemu-ga logs every command it serves to the journal, which the journal then
# writes to the traced disk: the host's polling would add writes to a trace.
mkdir -p "$MNT/etc/systemd/system/qemu-guest-agent.service.d"
printf '[Service]\nStandardOutput=null\nStandardError=null\nLogLevelMax=notice\n' > "$MNT/etc/systemd/system/qemu-guest-agent.service.d/quiet.conf"
in_root systemctl set-default graphical.target
# The session tells the host when it is up: an autostart entry waits for the
# desktop window to be mapped, then leaves a marker in /run (tmpfs, no disk I/O).
mkdir -p "$MNT/etc/xdg/autostart"
cat > "$MNT/etc/xdg/autostart/tracemark-session-ready.desktop" <<'DESK'
[Desktop Entry]
Type=Application
Name=tracemark session ready
Exec=sh -c 'xdotool search --sync --onlyvisible --class xfce4-panel >/dev/null && touch /run/user/1000/tracemark-session-ready'
NoDisplay=true
DESK
# No weekly fstrim inside a capture; discards happen only when a script asks.
in_root systemctl disable fstrim.timer 2>/dev/null || true

# Bootloader and initramfs on the traced disk.
in_root update-initramfs -u -k all
in_root grub-install --target=i386-pc "$LOOP"
in_root update-grub
sed -i "s#root=/dev/loop[0-9]*p1#root=UUID=$ROOT_UUID#g" "$MNT/boot/grub/grub.cfg"
grep -q "root=UUID=$ROOT_UUID" "$MNT/boot/grub/grub.cfg" || die "grub.cfg has no root=UUID"

# The photo set, the ISO-sized files, the package list, and aging.
"$CAPTURE_DIR/build-guest-data.sh" "$MNT" "$DMNT" "$WORK"
echo "build-guest.sh: done: $IMG, $DATA, $(wc -l < "$WORK/packages.txt") packages"
