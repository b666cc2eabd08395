#!/usr/bin/env python3
"""Runs a command and reports the CPU time of the whole process.

    cpu_run.py OUT.json -- CMD ARGS...

User and system CPU seconds come from wait4's rusage of the command: every
thread of the process, io_uring's io-wq workers (`iou-wrk-*`, threads of the
process) included. The split per thread kind is sampled from
/proc/PID/task/*/stat every 20 ms (clock ticks, so ±10 ms per thread; a
thread's last tick before it exits may be missed): thread names with a
trailing -NUMBER are grouped (`iou-wrk-*`). The command's stdout and stderr
pass through; the exit status is the command's.
"""
import json
import os
import re
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def sample(pid, seen):
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1 : s.rindex(")")]
        fields = s[s.rindex(")") + 2 :].split()
        # fields[11], [12]: utime, stime (stat fields 14, 15)
        seen[tid] = (comm, (int(fields[11]) + int(fields[12])) / TICK)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    out = sys.argv[1]
    proc = subprocess.Popen(sys.argv[3:])
    seen = {}
    start = time.monotonic()
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        sample(proc.pid, seen)
        time.sleep(0.02)
    wall = time.monotonic() - start
    threads = {}
    for comm, cpu in seen.values():
        key = re.sub(r"-\d+$", "-*", comm)
        threads[key] = round(threads.get(key, 0.0) + cpu, 3)
    with open(out, "w") as f:
        json.dump(
            {
                "user_s": ru.ru_utime,
                "sys_s": ru.ru_stime,
                "wall_s": wall,
                "threads": threads,
                "status": os.waitstatus_to_exitcode(status),
            },
            f,
        )
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
