#!/bin/bash
# Builds the Debian root the reference traces are captured on: a sparse ext4
# image, debootstrapped (bookworm, minbase), with the applications installed.
# The traced device is the loop device holding this image, so every file the
# applications touch (program, libraries, data) is on it.
#
# Usage: traces/capture/build-root.sh [WORKDIR]   (default /var/tmp/tracemark-root)
# Produces WORKDIR/root.img and WORKDIR/packages.txt (dpkg-query -W of the root).
# Runs as root; leaves no loop device or mount behind, also on failure.
set -euo pipefail
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../bench/lib.sh"

WORK=${1:-/var/tmp/tracemark-root}
IMG=$WORK/root.img
MNT=$WORK/mnt
SIZE=${TRACEMARK_ROOT_SIZE:-16G}
SUITE=bookworm
MIRROR=${TRACEMARK_MIRROR:-http://deb.debian.org/debian}

# The applications of the suite, plus what they need to run headless.
PACKAGES=(
  # photo edit
  imagemagick libvips-tools
  # video render
  ffmpeg
  # office and publishing (the -nogui flavours: no X toolkit, headless only)
  libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui
  libreoffice-draw-nogui python3-uno libreoffice-script-provider-python
  fonts-liberation2 fonts-dejavu-core
  # publishing, vector
  inkscape
  # games, with a virtual X server and software GL for whichever needs one
  0ad supertuxkart xvfb xauth libgl1-mesa-dri mesa-utils
  # input material: photographs and artwork that Debian packages carry
  desktop-base gnome-backgrounds plasma-workspace-wallpapers
  # small tools the capture scripts use inside the root
  python3 procps
)

need_root
need debootstrap

mkdir -p "$WORK" "$MNT"
[ ! -e "$IMG" ] || die "$IMG exists; remove it to rebuild"

LOOP=
MOUNTS=()
cleanup() {
  set +e
  for ((i=${#MOUNTS[@]}-1; i>=0; i--)); do umount -l "${MOUNTS[i]}"; done
  [ -n "$LOOP" ] && losetup -d "$LOOP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

truncate -s "$SIZE" "$IMG"
mkfs.ext4 -q -L tracemark-root "$IMG"
LOOP=$(losetup --find --show "$IMG")
mount "$LOOP" "$MNT"; MOUNTS+=("$MNT")

debootstrap --variant=minbase "$SUITE" "$MNT" "$MIRROR"

for d in proc sys dev dev/pts; do
  mount --bind "/$d" "$MNT/$d"; MOUNTS+=("$MNT/$d")
done
cp /etc/resolv.conf "$MNT/etc/resolv.conf"
# No daemons may start inside the chroot.
printf '#!/bin/sh\nexit 101\n' > "$MNT/usr/sbin/policy-rc.d"
chmod +x "$MNT/usr/sbin/policy-rc.d"
cat > "$MNT/etc/apt/sources.list" <<SRC
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
SRC

chroot "$MNT" env DEBIAN_FRONTEND=noninteractive apt-get update
chroot "$MNT" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}"
chroot "$MNT" apt-get clean
# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
chroot "$MNT" dpkg-query -W -f '${Package}\t${Version}\n' > "$WORK/packages.txt"
# An unprivileged user to run the applications as (LibreOffice and the games keep a profile in $HOME).
chroot "$MNT" useradd -m -s /bin/sh bench 2>/dev/null || true
echo "build-root.sh: done: $IMG ($(du -h "$IMG" | cut -f1) used), $(wc -l < "$WORK/packages.txt") packages"
