#!/usr/bin/env python3
"""Block-level work on the validity drives' image files (drives.sh's helper).

    drive_image.py partition IMG
        START and SIZE (bytes) of the MBR's first partition of IMG.
    drive_image.py pristine IMG START SIZE OUT
        OUT: the partition [START, START+SIZE) of IMG as a sparse file that
        holds only the ext4's used blocks: free blocks (by the block bitmaps,
        as dumpe2fs reads them; the ext4 must be clean), holes and all-zero
        blocks are left as holes. IMG is only read.
    drive_image.py clone SRC DST
        DST a new copy of SRC: sparse (SRC's data regions only) in a tmpfs,
        written whole on a disk (SRC's holes as zeros; see fill_holes).
    drive_image.py restore PRISTINE WORK [--trace INSTANCE --dev MAJ:MIN --filter F [--tracked-only]]
        Puts WORK back to PRISTINE's bytes (PRISTINE's holes punched in a
        tmpfs, written as zeros on a disk). With --trace: only the ranges
        the tracing instance saw written or discarded on device MAJ:MIN
        (block_rq_issue events, consumed from its trace_pipe); a full copy
        when the instance lost events or is not as set up (says why), or
        with --tracked-only, nothing and exit status 3.
    drive_image.py verify PRISTINE WORK
        Exit 0 when WORK's bytes equal PRISTINE's, else 1 and the first
        differing offset.

Progress and summaries go to stderr.
"""
import ctypes
import errno
import os
import re
import subprocess
import sys

CHUNK = 1 << 20
BLOCK = 4096
ZERO_BLOCK = bytes(BLOCK)
ZERO_CHUNK = bytes(CHUNK)
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
# Flushes and drops cached pages of a file on a disk every this many bytes
# copied, so a 10 GB copy does not leave 10 GB in the host's page cache.
DROP_EVERY = 256 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]


class Failure(Exception):
    pass


def say(msg):
    print(f"drive_image: {msg}", file=sys.stderr, flush=True)


def punch(fd, off, length):
    if length <= 0:
        return
    if _libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, length) != 0:
        e = ctypes.get_errno()
        raise Failure(f"punching a hole at {off} (+{length}) failed: {os.strerror(e)}")


def write_zeros(fd, off, length, dropper):
    """Writes zeros over [off, off+length): the blocks are allocated."""
    end = off + length
    while off < end:
        n = min(CHUNK, end - off)
        os.pwrite(fd, ZERO_CHUNK[:n], off)
        off += n
        dropper.advance(off, n)


def fill_holes(fd):
    """Whether a working copy's holes are written as zeros: on a disk, yes.
    A hole of a file on a disk costs the first write into it a block
    allocation in the disk's filesystem (and the flush after it a journal
    commit), which no drive has: a task that writes new files on such a copy
    pays it on every run after a restore, and a replay only in its first
    pass. In a tmpfs a hole is only memory not yet used."""
    return not on_tmpfs(fd)


def data_regions(fd, start, end):
    """(offset, end) of the data regions of fd within [start, end)."""
    off = start
    while off < end:
        try:
            data = os.lseek(fd, off, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return
            raise
        if data >= end:
            return
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
        yield data, hole
        off = hole


def pread_full(fd, length, off):
    buf = os.pread(fd, length, off)
    if len(buf) < length:
        buf += bytes(length - len(buf))  # past EOF reads as zeros
    return buf


def write_nonzero(dst, buf, off):
    """Writes buf at off, skipping all-zero 4 KiB blocks (left as they are)."""
    n = len(buf)
    i = 0
    while i < n:
        while i < n and buf[i : i + BLOCK] == ZERO_BLOCK[: min(BLOCK, n - i)]:
            i += BLOCK
        j = i
        while j < n and buf[j : j + BLOCK] != ZERO_BLOCK[: min(BLOCK, n - j)]:
            j += BLOCK
        if j > i:
            os.pwrite(dst, buf[i:j], off + i)
        i = j


class CacheDropper:
    """Flushes and drops the page cache of files on disks behind a copy."""

    def __init__(self, *fds):
        self.fds = fds
        self.since = 0
        self.mark = 0

    def advance(self, off, nbytes):
        self.since += nbytes
        if self.since >= DROP_EVERY:
            self.flush()

    def flush(self):
        for fd in self.fds:
            try:
                os.fdatasync(fd)
            except OSError:
                pass
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        self.since = 0


def copy_range(src, dst, src_off, dst_off, length, skip_zero, dropper):
    """Copies [src_off, src_off+length) of src to dst_off (data regions only)."""
    copied = 0
    for a, b in data_regions(src, src_off, src_off + length):
        pos = a
        while pos < b:
            n = min(CHUNK, b - pos)
            buf = pread_full(src, n, pos)
            if skip_zero:
                write_nonzero(dst, buf, dst_off + pos - src_off)
            else:
                os.pwrite(dst, buf, dst_off + pos - src_off)
            pos += n
            copied += n
            dropper.advance(pos, n)
    return copied


# --- partition ----------------------------------------------------------------


def cmd_partition(img):
    with open(img, "rb") as f:
        mbr = f.read(512)
    if len(mbr) < 512 or mbr[510:512] != b"\x55\xaa":
        raise Failure(f"{img}: no MBR (no 55AA signature at byte 510)")
    for i in range(4):
        e = mbr[446 + 16 * i : 446 + 16 * (i + 1)]
        ptype = e[4]
        lba = int.from_bytes(e[8:12], "little")
        sectors = int.from_bytes(e[12:16], "little")
        if ptype == 0:
            continue
        if ptype == 0xEE:
            raise Failure(f"{img}: a GPT disk (protective MBR); expected an MBR partition")
        if ptype in (0x05, 0x0F, 0x85):
            raise Failure(f"{img}: partition {i + 1} is an extended partition")
        print(lba * 512, sectors * 512)
        return
    raise Failure(f"{img}: the MBR has no partition")


# --- pristine -----------------------------------------------------------------


def free_ranges(img, start):
    """Block size and the ext4's free block ranges (by its bitmaps)."""
    spec = f"{img}?offset={start}"
    out = subprocess.run(
        ["dumpe2fs", spec], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise Failure(f"dumpe2fs {spec} failed: {out.stderr.strip()}")
    head = {}
    ranges = []
    in_groups = False
    for line in out.stdout.splitlines():
        if line.startswith("Group "):
            in_groups = True
            continue
        if not in_groups:
            k, _, v = line.partition(":")
            head[k.strip()] = v.strip()
            continue
        s = line.strip()
        if s.startswith("Free blocks:"):
            for part in s[len("Free blocks:") :].split(","):
                part = part.strip()
                if not part:
                    continue
                a, _, b = part.partition("-")
                ranges.append((int(a), int(b or a) + 1))
    if head.get("Filesystem state") != "clean":
        raise Failure(f"{img}: the ext4 is not clean (state {head.get('Filesystem state')!r}); run e2fsck on a copy")
    if "needs_recovery" in head.get("Filesystem features", ""):
        raise Failure(f"{img}: the ext4's journal needs recovery (it was not unmounted cleanly)")
    bs = int(head["Block size"])
    count = int(head["Block count"])
    free_total = sum(b - a for a, b in ranges)
    if free_total != int(head["Free blocks"]):
        raise Failure(
            f"{img}: the group descriptors' free block ranges add up to {free_total}, the superblock says {head['Free blocks']}"
        )
    return bs, count, ranges


def cmd_pristine(img, start, size, out):
    start, size = int(start), int(size)
    bs, count, free = free_ranges(img, start)
    if bs * count > size:
        raise Failure(f"{img}: the ext4 ({bs * count} bytes) is larger than its partition ({size} bytes)")
    free.sort()
    used = []
    pos = 0
    for a, b in free:
        if a > pos:
            used.append((pos, a))
        pos = max(pos, b)
    if pos < count:
        used.append((pos, count))
    src = os.open(img, os.O_RDONLY)
    tmp = out + ".part"
    dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(dst, size)
        dropper = CacheDropper(src, dst)
        copied = 0
        for i, (a, b) in enumerate(used):
            copied += copy_range(src, dst, start + a * bs, a * bs, (b - a) * bs, True, dropper)
            if i % 4096 == 0:
                say(f"pristine: {copied >> 20} MiB of used blocks read")
        dropper.flush()
        os.fsync(dst)
    finally:
        os.close(src)
        os.close(dst)
    os.rename(tmp, out)
    used_blocks = sum(b - a for a, b in used)
    say(
        f"pristine: {out}: {size} bytes, ext4 of {count} blocks of {bs} B, "
        f"{used_blocks} used ({used_blocks * bs >> 20} MiB), {copied >> 20} MiB of them held data"
    )


def cmd_clone(src_path, dst_path):
    src = os.open(src_path, os.O_RDONLY)
    dst = os.open(dst_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        size = os.fstat(src).st_size
        os.ftruncate(dst, size)
        fill = fill_holes(dst)
        dropper = CacheDropper(src, dst)
        copied = restore_range(src, dst, 0, size, dropper, fill)
        dropper.flush()
    finally:
        os.close(src)
        os.close(dst)
    holes = "the holes written as zeros" if fill else "sparse"
    say(f"clone: {dst_path}: {copied >> 20} MiB of data copied, {holes}")


# --- restore ------------------------------------------------------------------

EVENT = re.compile(r"block_rq_issue: (\d+),(\d+) (\S+) \d+ \(.*?\) (\d+) \+ (\d+)")


def read_stats(instance):
    lost = 0
    percpu = os.path.join(instance, "per_cpu")
    for cpu in sorted(os.listdir(percpu)):
        with open(os.path.join(percpu, cpu, "stats")) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k.strip() in ("overrun", "commit overrun", "dropped events"):
                    lost += int(v.strip().split()[0])
    return lost


def tracked_extents(instance, dev, expected_filter):
    """The 4 KiB-aligned byte ranges written or discarded, or (None, why)."""
    ev = os.path.join(instance, "events/block/block_rq_issue")
    if not os.path.isdir(ev):
        return None, f"tracing instance {instance} is gone"
    why = None
    with open(os.path.join(instance, "tracing_on")) as f:
        if f.read().strip() != "1":
            why = "tracing was switched off in the instance"
    with open(os.path.join(ev, "enable")) as f:
        if f.read().strip() != "1":
            why = why or "block_rq_issue was disabled in the instance"
    with open(os.path.join(ev, "filter")) as f:
        if f.read().strip() != expected_filter:
            why = why or "the instance's event filter was changed"
    major, minor = (int(x) for x in dev.split(":"))
    ranges = []
    events = 0
    # Consume everything recorded so far (non-blocking: EAGAIN when empty).
    fd = os.open(os.path.join(instance, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    pending = b""
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for raw in lines:
                m = EVENT.search(raw.decode("utf-8", "replace"))
                if not m:
                    continue
                if (int(m.group(1)), int(m.group(2))) != (major, minor) or "R" in m.group(3):
                    why = why or f"an event of another device or a read passed the filter: {raw[:120]!r}"
                    continue
                events += 1
                sector, n = int(m.group(4)), int(m.group(5))
                if n:
                    a = sector * 512 // BLOCK * BLOCK
                    b = -(-(sector + n) * 512 // BLOCK) * BLOCK
                    ranges.append((a, b))
    finally:
        os.close(fd)
    if pending.strip():
        why = why or "a partial event line at the end of trace_pipe"
    lost = read_stats(instance)
    if lost:
        why = why or f"the instance lost {lost} events (ring buffer full)"
        # Start the next period clean: clearing the buffer resets the counters.
        with open(os.path.join(instance, "trace"), "w") as f:
            f.write("")
    if why:
        return None, why
    ranges.sort()
    merged = []
    for a, b in ranges:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return (merged, events), None


def restore_range(pristine, work, a, b, dropper, fill):
    """Makes [a, b) of work equal to pristine: its data copied, its holes
    punched (or, with fill, written as zeros)."""

    def hole(off, length):
        if fill:
            write_zeros(work, off, length, dropper)
        else:
            punch(work, off, length)

    copied = 0
    pos = a
    for da, db in data_regions(pristine, a, b):
        hole(pos, da - pos)
        copied += copy_range(pristine, work, da, da, db - da, False, dropper)
        pos = db
    hole(pos, b - pos)
    return copied


class Unsure(Exception):
    """Tracking cannot say what changed, and no full copy was wanted."""


def cmd_restore(pristine_path, work_path, trace=None, dev=None, filt=None, tracked_only=False):
    p = os.open(pristine_path, os.O_RDONLY)
    w = os.open(work_path, os.O_RDWR)
    try:
        size = os.fstat(p).st_size
        if os.fstat(w).st_size != size:
            raise Failure(f"{work_path} is {os.fstat(w).st_size} bytes, {pristine_path} {size}")
        extents = None
        if trace:
            found, why = tracked_extents(trace, dev, filt)
            if found is None and tracked_only:
                raise Unsure(f"restore: tracking unsure ({why}); nothing copied")
            if found is None:
                say(f"restore: tracking unsure ({why}): full copy")
            else:
                extents, events = found
        dropper = CacheDropper(w) if not on_tmpfs(w) else CacheDropper()
        fill = fill_holes(w)
        if extents is None:
            copied = restore_range(p, w, 0, size, dropper, fill)
            say(f"restore: full: {copied >> 20} MiB copied from {pristine_path}")
        else:
            copied = 0
            span = 0
            for a, b in extents:
                b = min(b, size)
                if a < b:
                    copied += restore_range(p, w, a, b, dropper, fill)
                    span += b - a
            say(
                f"restore: {events} write/discard requests traced, {len(extents)} ranges "
                f"({span >> 10} KiB), {copied >> 10} KiB of pristine data copied back"
            )
        dropper.flush()
    finally:
        os.close(p)
        os.close(w)


def on_tmpfs(fd):
    TMPFS_MAGIC = 0x01021994
    buf = ctypes.create_string_buffer(128)
    _libc.fstatfs.argtypes = [ctypes.c_int, ctypes.c_void_p]
    if _libc.fstatfs(fd, buf) != 0:
        return False
    return int.from_bytes(buf.raw[:8], sys.byteorder) == TMPFS_MAGIC


def cmd_verify(pristine_path, work_path):
    p = os.open(pristine_path, os.O_RDONLY)
    w = os.open(work_path, os.O_RDONLY)
    try:
        size = os.fstat(p).st_size
        if os.fstat(w).st_size != size:
            print(f"size differs: {os.fstat(w).st_size} != {size}")
            return 1
        # Only where either file holds data can they differ.
        regions = sorted(list(data_regions(p, 0, size)) + list(data_regions(w, 0, size)))
        compared = 0
        end = 0
        for a, b in regions:
            a = max(a, end)
            while a < b:
                n = min(CHUNK, b - a)
                x, y = pread_full(p, n, a), pread_full(w, n, a)
                if x != y:
                    i = next(k for k in range(n) if x[k] != y[k])
                    print(f"differs at byte {a + i}")
                    return 1
                a += n
                compared += n
            end = max(end, b)
        say(f"verify: equal ({compared >> 20} MiB of data regions compared)")
        return 0
    finally:
        os.close(p)
        os.close(w)


def main(argv):
    if len(argv) < 2:
        raise Failure(__doc__.strip())
    cmd, args = argv[1], argv[2:]
    if cmd == "partition" and len(args) == 1:
        cmd_partition(*args)
    elif cmd == "pristine" and len(args) == 4:
        cmd_pristine(*args)
    elif cmd == "clone" and len(args) == 2:
        cmd_clone(*args)
    elif cmd == "restore" and len(args) in (2, 8, 9):
        tracked_only = args[-1] == "--tracked-only"
        if tracked_only:
            args = args[:-1]
        if len(args) == 8:
            opts = dict(zip(args[2::2], args[3::2]))
            if set(opts) != {"--trace", "--dev", "--filter"}:
                raise Failure("restore: expected --trace INSTANCE --dev MAJ:MIN --filter FILTER")
            cmd_restore(args[0], args[1], opts["--trace"], opts["--dev"], opts["--filter"], tracked_only)
        elif tracked_only:
            raise Failure("restore: --tracked-only needs --trace")
        else:
            cmd_restore(args[0], args[1])
    elif cmd == "verify" and len(args) == 2:
        return cmd_verify(*args)
    else:
        raise Failure(f"bad arguments: {' '.join(argv[1:])}\n{__doc__.strip()}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Unsure as e:
        print(f"drive_image: {e}", file=sys.stderr)
        sys.exit(3)
    except (Failure, OSError) as e:
        print(f"drive_image: {e}", file=sys.stderr)
        sys.exit(2)
