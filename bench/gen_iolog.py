#!/usr/bin/env python3
"""Writes a synthetic fio version 3 iolog for the replay benchmarks.

    gen_iolog.py OUT IOS SPAN_MIB READ_PCT [IOPS] [--seed N] [--file NAME]

IOS random 4 KiB I/Os over the first SPAN_MIB MiB of the device, READ_PCT
percent reads (the rest writes). With IOPS, the I/Os are evenly spaced at that
rate (timestamps in microseconds, fio v3); without it they all carry time 0
(back-to-back). Deterministic for a given seed.
"""
import argparse
import random


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("ios", type=int)
    p.add_argument("span_mib", type=int)
    p.add_argument("read_pct", type=int)
    p.add_argument("iops", type=float, nargs="?")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--file", default="/dev/zram0")
    a = p.parse_args()
    rng = random.Random(a.seed)
    blocks = a.span_mib * 256
    name = a.file
    with open(a.out, "w") as f:
        f.write(f"fio version 3 iolog\n0 {name} add\n0 {name} open\n")
        lines = []
        t = 0
        for i in range(a.ios):
            if a.iops:
                t = int(i * 1_000_000 / a.iops)
            op = "read" if rng.randrange(100) < a.read_pct else "write"
            lines.append(f"{t} {name} {op} {rng.randrange(blocks) * 4096} 4096\n")
            if len(lines) >= 65536:
                f.writelines(lines)
                lines.clear()
        f.writelines(lines)
        f.write(f"{t} {name} close\n")


if __name__ == "__main__":
    main()
