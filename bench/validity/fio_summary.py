#!/usr/bin/env python3
"""The drive classes' fio figures: a markdown table on stdout, JSON merged into
drives.json (drives.sh characterise's helper).

    fio_summary.py FIO_DIR DRIVES_JSON SECONDS CLASS=DESCRIPTION...

FIO_DIR holds CLASS-{qd1-read,qd1-write,qd32-read,seq-read,seq-write}.json
(fio --output-format=json). Classes measured earlier stay in DRIVES_JSON.
"""
import datetime
import json
import os
import platform
import subprocess
import sys


def job(path, direction):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"fio_summary: {path}: {e}")
    jobs = data.get("jobs") or []
    if len(jobs) != 1 or jobs[0].get("error"):
        sys.exit(f"fio_summary: {path}: expected one job without error")
    side = jobs[0][direction]
    if not side.get("io_bytes"):
        sys.exit(f"fio_summary: {path}: the job moved no {direction} bytes")
    return side


def latency(path, direction):
    side = job(path, direction)
    clat = side["clat_ns"]
    pct = clat.get("percentile") or {}
    try:
        p50, p99 = pct["50.000000"], pct["99.000000"]
    except KeyError:
        sys.exit(f"fio_summary: {path}: no 50th/99th percentile in clat_ns")
    return {
        "mean_us": round(clat["mean"] / 1000, 1),
        "p50_us": round(p50 / 1000, 1),
        "p99_us": round(p99 / 1000, 1),
        "iops": round(side["iops"]),
    }


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__.strip())
    fio_dir, out_path, seconds = argv[1], argv[2], int(argv[3])
    classes = [a.split("=", 1) for a in argv[4:]]
    try:
        with open(out_path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        doc = {}
    except ValueError as e:
        sys.exit(f"fio_summary: {out_path}: not JSON ({e}); move it away")
    drives = doc.get("drives", {})
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for name, description in classes:
        p = lambda kind: os.path.join(fio_dir, f"{name}-{kind}.json")
        drives[name] = {
            "description": description,
            "qd1_4k_randread": latency(p("qd1-read"), "read"),
            "qd1_4k_randwrite": latency(p("qd1-write"), "write"),
            "qd32_4k_randread_iops": round(job(p("qd32-read"), "read")["iops"]),
            "seq_1m_q8_read_mbps": round(job(p("seq-read"), "read")["bw_bytes"] / 1e6, 1),
            "seq_1m_q8_write_mbps": round(job(p("seq-write"), "write")["bw_bytes"] / 1e6, 1),
            "measured": now,
            "load_average_1min": float(load),
        }
    doc = {
        "method": (
            f"fio on the drive's loop device (O_DIRECT, 1 GiB region at 1 GiB, written first), "
            f"{seconds} s per job after 1 s ramp; QD1 jobs psync, others libaio; MB = 10^6 bytes"
        ),
        "fio": fio_version,
        "kernel": platform.release(),
        "drives": drives,
    }
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, out_path)

    print("| class | drive | QD1 4K read µs mean / p50 / p99 | QD1 4K write µs mean / p50 / p99 "
          "| QD32 4K read IOPS | 1M Q8 read MB/s | 1M Q8 write MB/s |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in classes:
        d = drives[name]
        r, w = d["qd1_4k_randread"], d["qd1_4k_randwrite"]
        print(
            f"| {name} | {d['description']} | {r['mean_us']:g} / {r['p50_us']:g} / {r['p99_us']:g} "
            f"| {w['mean_us']:g} / {w['p50_us']:g} / {w['p99_us']:g} | {d['qd32_4k_randread_iops']:,} "
            f"| {d['seq_1m_q8_read_mbps']:g} | {d['seq_1m_q8_write_mbps']:g} |"
        )
    print(f"\n(fio {fio_version}, kernel {platform.release()}, {seconds} s per job; "
          f"1-minute load average at the end {load}; JSON: {out_path})")


if __name__ == "__main__":
    main(sys.argv)
