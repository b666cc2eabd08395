"""Prints the Markdown tables of traces/README.md from `tracemark info --json`
documents given on stdin, separated by lines of `%%` (see table.sh)."""
import json
import sys
import time


def num(x, digits=1):
    """A figure rounded to `digits` places, without a trailing .0."""
    r = round(x, digits)
    return str(int(r)) if r == int(r) else f"{r:.{digits}f}"


def mb(b):
    return num(b / 1e6)


def share(part, whole):
    return num(100 * part / whole) + " %" if whole > 0 else "-"


def main():
    docs = [json.loads(d) for d in sys.stdin.read().split("\n%%\n") if d.strip()]
    print("| trace | category | I/Os | read MB | write MB | duration s | idle share | file KB | captured (UTC) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for d in docs:
        start = d.get("capture_start_unix_ns")
        captured = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start // 10**9)) if start else "-"
        cells = [
            d["name"], d["category"], str(d["ios"]), mb(d["read_bytes"]), mb(d["write_bytes"]),
            num(d["duration_ns"] / 1e9), share(d["idle_ns"], d["duration_ns"]),
            str(round(d["file_bytes"] / 1024)), captured,
        ]
        print("| " + " | ".join(cells) + " |")
    print()
    print("| trace | reads seq / random | writes seq / random | mean read KB | mean write KB"
          " | at QD1 | QD median | QD p90 | footprint MB | read after write MB"
          " | idle periods > 1 s | idle kept at 10 ms / 100 ms / 1 s, s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in docs:
        qd = d.get("queue_depth_at_issue") or {}
        idle = d["idle_periods"]
        bounds = idle["bounds_ns"] + [None]
        long_idle = sum(c for b, c in zip(bounds, idle["counts"]) if b is None or b > 10**9)
        kept = idle["kept_ns_at_cap"]
        mean_read = d["read_bytes"] / d["reads"] / 1024 if d["reads"] else 0
        mean_write = d["write_bytes"] / d["writes"] / 1024 if d["writes"] else 0
        qd1 = share(qd["qd1_share"], 1) if qd.get("qd1_share") is not None else "-"
        cells = [
            d["name"],
            f"{d['sequential_reads']} / {d['random_reads']}",
            f"{d['sequential_writes']} / {d['random_writes']}",
            num(mean_read), num(mean_write), qd1,
            str(qd.get("median", "-")), str(qd.get("p90", "-")),
            mb(d["footprint_bytes"]), mb(d["read_after_write_bytes"]), str(long_idle),
            " / ".join(num(kept[k] / 1e9) for k in ("10ms", "100ms", "1s")),
        ]
        print("| " + " | ".join(cells) + " |")


main()
