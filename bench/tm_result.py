#!/usr/bin/env python3
"""Reads figures out of the JSON files the bench scripts produce: tracemark
result files (`replay --json`, `merge -o`), fio's `--output-format=json`,
`tracemark info --json`, bench/cpu_run.py's CPU files and bench/lateness.py's
lateness files. One place that knows their field names, so a renamed field
breaks one line here and the test that runs this on a real result
(tests/cli/bench_result.rs), not a heredoc in each script.

Usage:
  tm_result.py FILE FIELD...        one line: the fields, space-separated
  tm_result.py pairs DIR PAIRS A,B  the table of bench/ab_pairs.sh
  tm_result.py caps OUT CAP...      the table of bench/idle_policy.sh
  tm_result.py runs OUT RUNS        the tables of bench/repeatability.sh
  tm_result.py fresh_row FILE ROUND STATE BUILD LOAD REPORTED_MIB MM_STAT
                                    one row of bench/fresh_vs_filled.sh
  tm_result.py fresh_ratios ROWS    its fresh/filled ratios, per build

FILE is a path, or - for standard input. FIELD is a dot path into the
document (traces.0.score, jobs.0.read.iops, suite.score; a number indexes a
list), with a trailing ? when it may be missing or null (then `nan`), or one
of the derived figures:
  replay_iops a replay's first trace: ios / playback_s
  fio_iops    fio's first job: read + write IOPS
  fio_ios     fio's first job: read + write I/O count
  cpu_s       a cpu_run.py file: user_s + sys_s
  busy_threads  a cpu_run.py file: its threads with 10 ms or more, busiest
              first ("NAME 1.23s ...")
  burst_spread  a lateness.py file: the median lateness of a burst's last
              I/O less its first's, and the last position ("SPREAD LAST")
  wait_share  a replay's first trace: cpu_wait_s / playback_s (0 without it)
"""

import json
import math
import statistics
import sys

MISSING = object()


def load(path):
    """The JSON document at PATH (- for standard input)."""
    if path == "-":
        return json.load(sys.stdin)
    with open(path) as f:
        return json.load(f)


def get(doc, path, default=MISSING):
    """The value at the dot path PATH; DEFAULT when a step is missing or
    null (a KeyError naming the path without one)."""
    value = doc
    for step in path.split("."):
        if isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        elif isinstance(value, dict) and value.get(step) is not None:
            value = value[step]
        elif default is MISSING:
            raise KeyError(f"no {path} (stopped at {step!r})")
        else:
            return default
    return value


def burst_spread(by_position):
    """A lateness file's median lateness of a burst's last I/O less its
    first's, and the last position: "SPREAD LAST"."""
    last = max(by_position, key=int)
    return f"{by_position[last]['p50'] - by_position['0']['p50']:.1f} {last}"


def trace_score(result, name):
    """The score of the trace called NAME in a result."""
    return next(t["score"] for t in result["traces"] if t["name"] == name)


DERIVED = {
    "replay_iops": lambda d: get(d, "traces.0.ios") / get(d, "traces.0.playback_s"),
    "fio_iops": lambda d: get(d, "jobs.0.read.iops") + get(d, "jobs.0.write.iops"),
    "fio_ios": lambda d: get(d, "jobs.0.read.total_ios") + get(d, "jobs.0.write.total_ios"),
    "cpu_s": lambda d: get(d, "user_s") + get(d, "sys_s"),
    "busy_threads": lambda d: " ".join(
        f"{k} {v:.2f}s" for k, v in sorted(d["threads"].items(), key=lambda kv: -kv[1]) if v >= 0.01
    ),
    "burst_spread": lambda d: burst_spread(d["lateness_by_burst_position_us"]),
    "wait_share": lambda d: get(d, "traces.0.fidelity.cpu_wait_s", 0)
    / max(get(d, "traces.0.playback_s"), 1e-9),
}


def field(doc, name):
    """One FIELD of the command line (see the module's doc)."""
    if name in DERIVED:
        return DERIVED[name](doc)
    if name.endswith("?"):
        return get(doc, name[:-1], float("nan"))
    return get(doc, name)


def show(value):
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def pairs_table(work, pairs, names):
    """bench/ab_pairs.sh: scores of the A and B runs of each pair."""
    pairs = int(pairs)
    names = dict(zip("AB", names.split(",")))
    scores = {}
    print("| side | --cpu-idle in effect | scores, run by run | median | spread | mean access time, µs |")
    print("|---|---|---|---|---|---|")
    for side in ("A", "B"):
        runs = [load(f"{work}/{side}-{i}.json") for i in range(1, pairs + 1)]
        effect = sorted({r["options"].get("cpu_idle", "os") for r in runs})
        scores[side] = [r["traces"][0]["score"] for r in runs]
        access = [r["traces"][0]["access_time_us"] for r in runs]
        med = statistics.median(scores[side])
        print(f"| {names[side]} | {', '.join(effect)} | {', '.join(f'{s:.0f}' for s in scores[side])} | {med:.0f} "
              f"| {100 * (max(scores[side]) - min(scores[side])) / med:.1f} % | {', '.join(f'{a:.1f}' for a in access)} |")
    a, b = scores["A"], scores["B"]
    print(f"{names['B']} above {names['A']} in {sum(y > x for x, y in zip(a, b))} of {pairs} pairs; "
          f"median {names['B']} / {names['A']} per pair {statistics.median(y / x for x, y in zip(a, b)):.3f}")


def caps_table(out, *caps):
    """bench/idle_policy.sh: each trace's score on a file and on zram per idle cap."""
    res = {(t, c): load(f"{out}/{t}-{c}.json") for t in ("file", "zram") for c in caps}
    names = [x["name"] for x in res[("file", caps[0])]["traces"]]

    def playback(t, c):
        return sum(x["playback_s"] for x in res[(t, c)]["traces"])

    print("| trace | " + " | ".join(f"file {c} | zram {c} | zram/file" for c in caps) + " |")
    print("|---|" + "---:|" * (3 * len(caps)))
    for n in names:
        cells = []
        for c in caps:
            f, z = trace_score(res[("file", c)], n), trace_score(res[("zram", c)], n)
            cells += [f"{f:.0f}", f"{z:.0f}", f"{z / f:.2f}"]
        print(f"| {n} | " + " | ".join(cells) + " |")
    cells = []
    for c in caps:
        f, z = res[("file", c)]["suite"]["score"], res[("zram", c)]["suite"]["score"]
        cells += [f"{f:.0f}", f"{z:.0f}", f"{z / f:.2f}"]
    print("| suite (geometric mean) | " + " | ".join(cells) + " |")
    cells = []
    for c in caps:
        cells += [f"{playback('file', c):.0f} s", f"{playback('zram', c):.0f} s", ""]
    print("| playback, all traces | " + " | ".join(cells) + " |")


def spread_row(name, values, digits=0):
    med = statistics.median(values)
    spread = (max(values) - min(values)) / med * 100 if med else float("nan")
    cv = statistics.stdev(values) / statistics.mean(values) * 100 if len(values) > 1 else 0.0
    print(f"| {name} | {med:.{digits}f} | {min(values):.{digits}f} | {max(values):.{digits}f} | {spread:.1f} % | {cv:.1f} % |")


def runs_table(out, runs):
    """bench/repeatability.sh: the spread of each trace's score over the runs,
    and of fio's noise floor measured in the same minutes."""
    runs = int(runs)
    results = [load(f"{out}/run-{i}.json") for i in range(1, runs + 1)]
    print()
    print("| | median score | min | max | spread (max-min)/median | CV |")
    print("|---|---|---|---|---|---|")
    for n in [t["name"] for t in results[0]["traces"]]:
        spread_row(n, [trace_score(r, n) for r in results])
    spread_row("**suite**", [r["suite"]["score"] for r in results])
    try:
        floor = [get(load(f"{out}/fio-floor-{i}.json"), "jobs.0.read.lat_ns.mean") / 1e3
                 for i in range(1, runs + 1)]
    except FileNotFoundError:
        floor = []
    if floor:
        print()
        print("| noise floor (fio, same minutes) | median | min | max | spread (max-min)/median | CV |")
        print("|---|---|---|---|---|---|")
        spread_row("fio QD1 4 KiB reads at 2000 IOPS, mean total latency µs", floor, 1)
    p = results[0].get("precondition")
    if p:
        print(f"\nrun 1 preconditioning ({p['policy']}): {p['written_bytes'] / 2**20:.0f} MiB written in {p['seconds']:.1f} s")


def fresh_row(path, rnd, state, build, load_avg, reported_mib, mm_stat):
    """bench/fresh_vs_filled.sh: one replay's row (its scored pass, what
    preconditioning wrote and found, zram's mm_stat after it)."""
    r = load(path)
    p = get(r, "traces.0.passes")[-1]
    pre = r.get("precondition") or {}
    found = pre.get("found")

    def blocks(k):
        return f"{found[k]['with_data']}/{found[k]['blocks']}" if found else "-"

    def lat(op):
        o = p["ops"].get(op)
        return f"{o['latency_us']['p50']:.0f}/{o['latency_us']['p99']:.0f}" if o and o["count"] else "-"

    mm = mm_stat.split()
    wait = p["fidelity"].get("cpu_wait_s")
    print(f"| {rnd} | {state} | {build} | {load_avg} | {p['score']:.0f} | {lat('read')} | {lat('write')} | "
          f"{pre.get('written_bytes', 0) / 2**20:.0f} | {blocks('space_before')} / {blocks('read_regions_before')} / "
          f"{blocks('read_regions_at_start')} | {int(mm[0]) // 4096} / {mm[7]} / {mm[5]} | {reported_mib} | "
          f"{'-' if wait is None else f'{wait * 1e3:.0f}'} |")


def fresh_ratios(rows):
    """bench/fresh_vs_filled.sh: per build, each round's fresh/filled score
    ratio, their median and the worst (farthest from 1 in log terms)."""
    score = {}
    with open(rows) as f:
        for line in f:
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            score[(c[2], c[0], c[1])] = float(c[4])
    for build in sorted({k[0] for k in score}):
        rounds = sorted({int(k[1]) for k in score if k[0] == build})
        ratios = [score[(build, str(r), "fresh")] / score[(build, str(r), "filled")]
                  for r in rounds if (build, str(r), "fresh") in score and (build, str(r), "filled") in score]
        if not ratios:
            continue
        worst = max(ratios, key=lambda x: abs(math.log(x)))
        print(f"\n{build}: fresh/filled by round: {' '.join(f'{x:.2f}' for x in ratios)}; "
              f"median {statistics.median(ratios):.2f}, worst {worst:.2f}, "
              f"fresh above filled in {sum(x > 1 for x in ratios)} of {len(ratios)}")


TABLES = {
    "pairs": pairs_table,
    "caps": caps_table,
    "runs": runs_table,
    "fresh_row": fresh_row,
    "fresh_ratios": fresh_ratios,
}


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if argv[0] in TABLES:
        TABLES[argv[0]](*argv[1:])
        return 0
    try:
        doc = load(argv[0])
        print(" ".join(show(field(doc, f)) for f in argv[1:]))
    except (OSError, ValueError, KeyError, ZeroDivisionError) as e:
        print(f"tm_result.py: {argv[0]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
