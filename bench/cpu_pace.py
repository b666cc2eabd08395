#!/usr/bin/env python3
"""How fast the host runs fixed CPU work now: one worker per CPU, each held
on its CPU, times a fixed unit of interpreted work (about 3 ms on an idle
host here) again and again for SECONDS, in its own CPU time.

A task's time on a drive is its I/O waits and its CPU work; when the host
runs the same work slower (a shared core's other thread busy, a lower
clock), the task's CPU time grows and nothing in the guest says why: no
steal, no load. This puts a figure on it, so runs can be set beside the
host's pace at their hour.

Usage: bench/cpu_pace.py [SECONDS] [--label TEXT]
Prints one line: the label, then over all CPUs ("all.") and per CPU
("cpu0." ...) the units done (n=), the unit's CPU time in ms (ms=min/p10/
p50/p90/max) and the share of units within 1.35 times the fastest (fast=).
"""
import multiprocessing
import os
import sys
import time


def unit():
    s = 0
    for i in range(30_000):
        s += (i * 2654435761) % 4093
    return s


def worker(cpu, seconds, queue):
    os.sched_setaffinity(0, {cpu})
    end = time.perf_counter() + seconds
    times = []
    while time.perf_counter() < end:
        t = time.process_time_ns()
        unit()
        times.append((time.process_time_ns() - t) / 1e6)
    queue.put((cpu, times))


def summary(name, times):
    t = sorted(times)
    n = len(t)
    fast = sum(1 for x in t if x < t[0] * 1.35) / n
    q = lambda p: t[min(n - 1, int(p * n))]
    return (f"{name}.n={n} {name}.ms={t[0]:.2f}/{q(0.1):.2f}/{q(0.5):.2f}/{q(0.9):.2f}/{t[-1]:.2f}"
            f" {name}.fast={fast:.2f}")


def main(argv):
    seconds, label = 5.0, "-"
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--label" and args:
            label = args.pop(0).replace(" ", "_")
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            try:
                seconds = float(a)
            except ValueError:
                sys.exit(f"cpu_pace.py: SECONDS must be a number, not {a!r}")
            if not 0 < seconds <= 3600:
                sys.exit(f"cpu_pace.py: SECONDS must be above 0 and at most 3600, not {a}")
    cpus = sorted(os.sched_getaffinity(0))
    queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(c, seconds, queue)) for c in cpus]
    for p in procs:
        p.start()
    results = dict(queue.get() for _ in procs)
    for p in procs:
        p.join()
    every = [x for c in cpus for x in results[c]]
    parts = [label, summary("all", every)] + [summary(f"cpu{c}", results[c]) for c in cpus]
    print(" ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
