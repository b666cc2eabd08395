#!/usr/bin/env python3
"""Issue lateness of a replay, measured from outside by tracefs.

    lateness.py SCHEDULE.csv TRACEFS.txt MAJ:MIN

SCHEDULE.csv is `tracemark export --to csv` of the replayed trace (its
time_ns column is the schedule). TRACEFS.txt is the tracefs `trace` text of
the replay with block_bio_queue (or block_rq_issue) events of device MAJ:MIN.
The n-th I/O seen at the device is paired with the n-th I/O of the schedule
(both in time order). The schedule's origin is unknown to an outside
observer, so it is anchored where it makes the least-late I/O exactly on time:
lateness_i = (seen_i - sched_i) - min_j (seen_j - sched_j). Also reported:
the jitter (|lateness_i - median lateness|), the error of each inter-arrival
time against the trace's (|Δseen - Δsched|), and how many I/Os reached the
device out of trace order (the n-th arrival is not the n-th record's offset),
and the lateness by position in a burst (I/Os scheduled within 1 µs of each
other; position 7 stands for 7 and later).
Prints one JSON object; times in microseconds (tracefs prints µs).
"""
import json
import re
import sys

EVENT = re.compile(
    r"\s(\d+\.\d+):\s+block_(?:bio_queue|rq_issue):\s+(\d+),(\d+)\s+(\S+)\s+(?:\d+\s+)?(?:\(.*?\)\s+)?(\d+)\s+\+\s+(\d+)"
)


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = min(len(sorted_vals) - 1, max(0, int(round(p / 100 * (len(sorted_vals) - 1)))))
    return sorted_vals[k]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sched_csv, trace_txt, dev = sys.argv[1:]
    major, minor = dev.split(":")
    sched = []
    offsets = []
    with open(sched_csv) as f:
        next(f)
        for line in f:
            t, op, off, length = line.split(",")[:4]
            if op in ("read", "write"):
                sched.append(int(t) / 1000.0)
                offsets.append(int(off))
    seen = []
    sectors = []
    with open(trace_txt, errors="replace") as f:
        for line in f:
            m = EVENT.search(line)
            if m and m.group(2) == major and m.group(3) == minor:
                seen.append(float(m.group(1)) * 1e6)
                sectors.append(int(m.group(5)))
    order = sorted(range(len(seen)), key=lambda i: seen[i])
    seen = [seen[i] for i in order]
    sectors = [sectors[i] for i in order]
    n = min(len(seen), len(sched))
    out = {"scheduled": len(sched), "observed": len(seen)}
    if n < 2:
        out["error"] = "too few I/Os observed"
        print(json.dumps(out))
        return
    same_offset = sum(1 for i in range(n) if sectors[i] * 512 == offsets[i])
    diffs = [(seen[i] - seen[0]) - (sched[i] - sched[0]) for i in range(n)]
    base = min(diffs)
    late = sorted(d - base for d in diffs)
    # Jitter: each I/O's lateness around the median lateness (a constant
    # shift of the whole schedule is not jitter).
    mid = pct(late, 50)
    jitter = sorted(abs(v - mid) for v in late)
    gaps = sorted(
        abs((seen[i] - seen[i - 1]) - (sched[i] - sched[i - 1])) for i in range(1, n)
    )
    out.update(
        {
            "paired": n,
            "same_offset_share": same_offset / n,
            # I/Os whose position in arrival order holds another I/O than the
            # trace's (a swap of two counts 2).
            "out_of_order": n - same_offset,
            "jitter_us": {"p50": pct(jitter, 50), "p99": pct(jitter, 99), "max": jitter[-1]},
            "lateness_us": {"p50": pct(late, 50), "p99": pct(late, 99), "max": late[-1]},
            "interarrival_error_us": {"p50": pct(gaps, 50), "p99": pct(gaps, 99), "max": gaps[-1]},
            "original_s": (sched[n - 1] - sched[0]) / 1e6,
            "achieved_s": (seen[n - 1] - seen[0]) / 1e6,
        }
    )
    # Bursts: I/Os scheduled within 1 µs of the previous one. Lateness by
    # position in the burst (0 = first) shows what the later ones lose.
    unsorted_late = [d - base for d in diffs]
    by_pos = {}
    sizes = {}
    pos = 0
    for i in range(n):
        if i > 0 and sched[i] - sched[i - 1] <= 1.0:
            pos += 1
        else:
            if i > 0:
                sizes[pos + 1] = sizes.get(pos + 1, 0) + 1
            pos = 0
        by_pos.setdefault(min(pos, 7), []).append(unsorted_late[i])
    sizes[pos + 1] = sizes.get(pos + 1, 0) + 1
    out["burst_sizes"] = {str(k): v for k, v in sorted(sizes.items())}
    out["lateness_by_burst_position_us"] = {
        str(k): {"count": len(v), "p50": pct(sorted(v), 50), "p99": pct(sorted(v), 99)}
        for k, v in sorted(by_pos.items())
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
