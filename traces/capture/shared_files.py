#!/usr/bin/env python3
"""Which files two traces both read: the read extents they share, mapped to
the files of the filesystem image they were captured on (debugfs).

Usage: shared_files.py A.tmt B.tmt|- PARTITION_IMAGE [--top N]
  B `-`: the files of every read of A.
  PARTITION_IMAGE: the traced ext4 (the partition alone, as the traces'
  offsets are within it; e.g. bench/validity's pristine.img), read only.
Prints the bytes of A's reads that B also read, and the files (and their
top-level directories) that hold them, largest first; blocks of no file
(metadata, free space) are counted apart.
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

BLOCK = 4096


def read_blocks(trace, tracemark):
    out = subprocess.run([tracemark, "export", trace, "--to", "csv"], check=True,
                         capture_output=True, text=True).stdout
    blocks = collections.Counter()
    for n, line in enumerate(out.splitlines()):
        if n == 0:
            continue
        f = line.split(",")
        if f[1] != "read":
            continue
        off, length = int(f[2]), int(f[3])
        for b in range(off // BLOCK, (off + length + BLOCK - 1) // BLOCK):
            blocks[b] += 1
    return blocks


def debugfs(image, commands):
    with tempfile.NamedTemporaryFile("w", suffix=".cmd", delete=False) as f:
        f.write("\n".join(commands) + "\n")
        name = f.name
    try:
        run = subprocess.run(["debugfs", "-f", name, image], capture_output=True, text=True)
        if run.returncode != 0 and not run.stdout:
            sys.exit(f"debugfs {image}: {run.stderr.strip()}")
        return run.stdout
    finally:
        os.unlink(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("image")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--tracemark", default=os.environ.get("TRACEMARK", "target/release/tracemark"))
    args = ap.parse_args()
    a = read_blocks(args.a, args.tracemark)
    if args.b == "-":
        shared = sorted(a)
        print(f"{os.path.basename(args.a)}: {len(a) * BLOCK / 1e6:.1f} MB read")
    else:
        b = read_blocks(args.b, args.tracemark)
        shared = sorted(set(a) & set(b))
        print(f"{os.path.basename(args.a)}: {len(a) * BLOCK / 1e6:.1f} MB read; "
              f"{len(shared) * BLOCK / 1e6:.1f} MB ({len(shared) / max(len(a), 1) * 100:.0f} %) "
              f"also read by {os.path.basename(args.b)}")
    if not shared:
        return
    inode_of = {}
    # debugfs reads command lines of limited length: 200 blocks a line.
    lines = ["icheck " + " ".join(map(str, shared[i:i + 200])) for i in range(0, len(shared), 200)]
    for i in range(0, len(lines), 50):
        out = debugfs(args.image, lines[i:i + 50])
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                inode_of[int(parts[0])] = int(parts[1])
    by_inode = collections.Counter(inode_of.values())
    unowned = len(shared) - sum(by_inode.values())
    inodes = list(by_inode)
    path_of = {}
    for i in range(0, len(inodes), 200):
        out = debugfs(args.image, ["ncheck " + " ".join(map(str, inodes[i:i + 200]))])
        for line in out.splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[0].isdigit():
                path_of.setdefault(int(parts[0]), parts[1].strip())
    files = collections.Counter()
    dirs = collections.Counter()
    for ino, n in by_inode.items():
        path = path_of.get(ino, f"<inode {ino}>")
        files[path] += n
        top = "/".join(path.split("/")[:4]) if path.startswith("/") else path
        dirs[top] += n
    print(f"  in no file (metadata, directories, journal): {unowned * BLOCK / 1e6:.1f} MB")
    print("  by directory:")
    for d, n in dirs.most_common(args.top):
        print(f"    {n * BLOCK / 1e6:8.1f} MB  {d}")
    print("  by file:")
    for f, n in files.most_common(args.top):
        print(f"    {n * BLOCK / 1e6:8.1f} MB  {f}")


if __name__ == "__main__":
    sys.exit(main())
