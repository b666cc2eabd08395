# shellcheck shell=bash
# Shared by the guest capture scripts (source it; do not run it).
#
# The capture machine is a KVM guest (built by build-guest.sh): 2 vCPUs,
# 6 GiB of memory, its disk the host loop device that `tracemark capture`
# traces (qemu cache=none, aio=native: every guest I/O reaches the loop device
# as the guest issued it, the host's page cache is bypassed), a second,
# untraced virtio disk (data.img) for inputs from elsewhere.
#
# (-cpu host without arch-capabilities: the nested KVM of the capture host
# refuses that MSR.)
# guest_attach          attaches guest.img to a loop device (direct I/O)
# guest_start           powers the guest on (returns at once)
# guest_wait_session    waits until the autologin session is up (marker in /run)
# guest_boot            guest_start + guest_wait_session + settle (untraced)
# gx CMD                runs `sh -c CMD` as root in the guest (prints output)
# gbench CMD            runs CMD as `bench` in the desktop session's environment
# guest_settle [Q [TIMEOUT [CPU_MAX]]]
#                       waits for the guest's writeback to finish at its own
#                       pace, its CPUs idle and the disk quiet for Q seconds
# guest_cold            drops the guest's page cache, then reads back what
#                       the running desktop has mapped (see tm-guest.sh)
# guest_capture NAME CATEGORY DESCRIPTION HOSTCMD...
#                       traces the loop device into traces/NAME.tmt for the
#                       life of HOSTCMD (run on the host; it drives the guest)
# Everything started or attached is stopped or detached on exit, also on failure.

set -euo pipefail

CAPTURE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$CAPTURE_DIR/../.." && pwd)
TM_LIB_ONLY=1
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
WORK=${TRACEMARK_GUEST_DIR:-/var/tmp/tracemark-guest}
IMG=$WORK/guest.img
DATA=$WORK/data.img
TRACEMARK=${TRACEMARK:-$REPO/target/release/tracemark}
OUT_DIR=${TRACEMARK_TRACE_DIR:-$REPO/traces}
QGA_SOCK=$WORK/qga.sock
QMP_SOCK=$WORK/qmp.sock
QEMU_PID=$WORK/qemu.pid
GUEST_MEM=${TRACEMARK_GUEST_MEM:-6G}
GUEST_CPUS=2
# This host's /dev/kvm is kvm-pvm (nested, no hardware virtualisation): it
# runs real-mode code at about one instruction batch per second and did not
# get a kernel to print anything in 90 s, while TCG boots it in seconds; so
# TCG (multi-threaded, 2 vCPUs) is the default here. Elsewhere set
# TRACEMARK_GUEST_ACCEL="-accel kvm -cpu host".
GUEST_ACCEL=${TRACEMARK_GUEST_ACCEL:--accel tcg,thread=multi -cpu max}
SESSION_READY=/run/user/1000/tracemark-session-ready
QGA=(python3 "$CAPTURE_DIR/qga.py" "$QGA_SOCK")
PROVENANCE=$WORK/provenance.txt
# "CPUs idle" when settling: at most this busy share over a second. Under TCG
# an idle guest still shows 20-60 % busy at times (rcu_preempt spinning), so
# the default is 0.5; with KVM 0.15 is the natural choice.
SETTLE_CPU=${TRACEMARK_SETTLE_CPU:-0.5}

LOOP=

qemu_alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:.*Z' "/proc/$1/status"; }

guest_cleanup() {
  set +e
  if [ -n "${REUSED:-}" ]; then return; fi
  if [ -n "${TRACEMARK_KEEP_GUEST:-}" ] && [ -n "$LOOP" ]; then
    echo "guest: left running on $LOOP (TRACEMARK_KEEP_GUEST); the next script reuses it"
    echo "$LOOP" > "$WORK/loop"
    return
  fi
  if [ -f "$QEMU_PID" ] && qemu_alive "$(cat "$QEMU_PID")"; then
    local pid; pid=$(cat "$QEMU_PID")
    echo "guest: powering off"
    timeout 30 "${QGA[@]}" exec 'systemctl poweroff' >/dev/null 2>&1
    for _ in $(seq 90); do qemu_alive "$pid" || break; sleep 1; done
    qemu_alive "$pid" && { echo "guest: did not power off; killing qemu $pid"; kill "$pid"; sleep 2; }
    rm -f "$QEMU_PID"
  fi
  if [ -n "$LOOP" ]; then losetup -d "$LOOP"; LOOP=; fi
  rm -f "$WORK/loop"
}
trap guest_cleanup EXIT
trap 'exit 130' INT TERM

guest_attach() {
  need_root "loop devices, KVM, tracing"
  [ -f "$IMG" ] || die "$IMG missing; build it with traces/capture/build-guest.sh"
  # A guest left running by an earlier script (TRACEMARK_KEEP_GUEST=1) is reused.
  if [ -f "$QEMU_PID" ] && qemu_alive "$(cat "$QEMU_PID")" && [ -f "$WORK/loop" ]; then
    LOOP=$(cat "$WORK/loop"); REUSED=1
    echo "guest: reusing the running guest on $LOOP"
    return
  fi
  [ -f "$QEMU_PID" ] && qemu_alive "$(cat "$QEMU_PID")" && die "a capture guest is already running (pid $(cat "$QEMU_PID"))"
  # Direct I/O to the backing file: the host keeps no copy, so what the guest
  # reads comes from the disk image every time.
  LOOP=$(losetup --find --show --direct-io=on "$IMG")
  echo none > "/sys/block/${LOOP#/dev/}/queue/scheduler" 2>/dev/null || true
  echo "guest: $IMG on $LOOP"
}

# The kernel and initramfs are loaded by qemu (-kernel/-initrd, copies taken
# from the guest's /boot), not by a bootloader on the traced disk: the image
# has GRUB in its MBR and works, but under the capture host's nested KVM
# GRUB's real-mode BIOS disk reads run at about one per second (minutes
# before the kernel starts), and UEFI (OVMF) stopped with a KVM internal
# error. So a boot trace starts when the kernel starts; the guest kernel then
# reads everything else (root filesystem, systemd, the desktop) from the traced disk.
make_boot_files() {
  local ro kernel
  ro=$(losetup --find --show --read-only --offset 1048576 "$IMG")
  kernel=$(debugfs -R 'ls /boot' "$ro" 2>/dev/null | tr -s ' ' '\n' | grep '^vmlinuz-' | sort -V | tail -1)
  debugfs -R "dump /boot/$kernel $WORK/vmlinuz" "$ro" 2>/dev/null
  debugfs -R "dump /boot/initrd.img-${kernel#vmlinuz-} $WORK/initrd.img" "$ro" 2>/dev/null
  losetup -d "$ro"
  [ -s "$WORK/vmlinuz" ] && [ -s "$WORK/initrd.img" ] || die "could not copy the kernel and initramfs out of $IMG"
  [ -s "$WORK/root-uuid" ] || blkid -p -o value -s UUID -O 1048576 "$IMG" > "$WORK/root-uuid"
}

guest_start() {
  rm -f "$QGA_SOCK" "$QMP_SOCK"
  [ -s "$WORK/vmlinuz" ] || make_boot_files
  # shellcheck disable=SC2086 # GUEST_ACCEL is a list of qemu options
  qemu-system-x86_64 -name tracemark-guest $GUEST_ACCEL -smp "$GUEST_CPUS" -m "$GUEST_MEM" \
    -kernel "$WORK/vmlinuz" -initrd "$WORK/initrd.img" \
    -append "root=UUID=$(cat "$WORK/root-uuid") ro quiet console=tty0 console=ttyS0,115200" \
    -drive "file=$LOOP,format=raw,if=virtio,cache=none,aio=native,discard=unmap" \
    -drive "file=$DATA,format=raw,if=virtio,cache=none,aio=native" \
    -vga std -display none -nic none -rtc base=utc \
    -chardev "socket,id=qga0,path=$QGA_SOCK,server=on,wait=off" \
    -device virtio-serial-pci -device virtserialport,chardev=qga0,name=org.qemu.guest_agent.0 \
    -qmp "unix:$QMP_SOCK,server=on,wait=off" \
    -serial "file:$WORK/serial.log" -daemonize -pidfile "$QEMU_PID"
}

guest_wait_session() {
  "${QGA[@]}" ping 600
  "${QGA[@]}" wait-file "$SESSION_READY" 900
}

guest_settle() {
  "${QGA[@]}" settle "$LOOP" "${1:-3}" "${2:-900}" "${3:-$SETTLE_CPU}"
}

guest_put_helpers() {
  gx 'mkdir -p /run/tracemark' >/dev/null
  for f in "$CAPTURE_DIR"/guest/*; do
    "${QGA[@]}" put "$f" "/run/tracemark/$(basename "$f")"
  done
  gx 'chmod 755 /run/tracemark/*' >/dev/null
}

guest_boot() {
  [ -n "${REUSED:-}" ] || { guest_start; guest_wait_session; }
  guest_put_helpers
  gx 'mountpoint -q /mnt/data || mount /mnt/data' >/dev/null
  # No screen blanking: the screenshots taken after each launch show the window.
  gbench 'xset s off -dpms' || true
  [ -n "${REUSED:-}" ] || guest_settle 5
}

gx() { "${QGA[@]}" exec "$1"; }
gbench() { "${QGA[@]}" exec "sh /run/tracemark/tm-guest.sh as-bench $(printf %s "$1" | base64 -w0)"; }
guest_cold() { gx 'sh /run/tracemark/tm-guest.sh cold'; }

# Screenshot of the guest's display (for checking that a window really showed).
guest_screendump() {
  python3 - "$QMP_SOCK" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rw")
f.readline()
for cmd in ({"execute": "qmp_capabilities"}, {"execute": "screendump", "arguments": {"filename": sys.argv[2], "format": "png"}}):
    f.write(json.dumps(cmd) + "\n"); f.flush(); print(f.readline().strip(), file=sys.stderr)
PY
}

guest_capture() {
  local name=$1 category=$2 description=$3
  shift 3
  [ -x "$TRACEMARK" ] || die "$TRACEMARK missing; build it with cargo build --release"
  mkdir -p "$OUT_DIR"
  local out=$OUT_DIR/$name.tmt
  rm -f "$out"
  echo "capture: $name: $*"
  local load_before; load_before=$(uptime | sed 's/.*load average: //')
  if ! "$TRACEMARK" capture --device "$LOOP" -o "$out" \
    --name "$name" --category "$category" --description "$description" -- "$@"; then
    rm -f "$out"
    die "$name: the capture or the workload failed; no trace kept"
  fi
  {
    echo "== $name captured $(date -u +%FT%TZ) by traces/capture/$(basename "$0")"
    echo "   host: $(uname -r), $(nproc) CPUs, load before: $load_before, after: $(uptime | sed 's/.*load average: //')"
    echo "   guest: $GUEST_CPUS vCPUs, $GUEST_MEM memory"
  } >> "$PROVENANCE"
  "$TRACEMARK" info "$out"
}
