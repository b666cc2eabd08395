#!/usr/bin/env python3
"""The validity study's report: measured task times on each drive against the
replay's predicted task times and scores (bench/validity.sh writes the inputs).

Reads from DIR:
  times-<drive>.txt           "task seconds" per real run (untraced, start to done)
  replay-<drive>-<task>.json  tracemark's result of the task's trace on the drive
  drives.json (optional)      the drive classes' fio figures (drives.sh characterise)
  cpu-<drive>.txt (optional)  "task task_cpu_s other_cpu_s" per real run: the
                              task's CPU time and the rest of the host's meanwhile
  cpurep-<drive>-<task>.txt (optional)  "replay_cpu_s other_cpu_s wall_s" of the replay
  host-<drive>.txt (optional) "task key=count ..." per real run: the host's
                              counters between the marks (stolen CPU, faults)
Writes DIR/validity.txt (also printed) and DIR/validity.html (a scatter plot).

Per task and drive pair (A, B): the measured time ratio T(B)/T(A) (medians of
the runs), the predicted ratio P(B)/P(A) (predicted task times), the score
ratio S(A)/S(B) (a score is a speed: its inverse ratio is comparable to a time
ratio), the prediction's error |predicted / measured - 1|; over all of them
the median, p90 and largest error (and per dependency model, calibrated on the
capture drive and not: `tracemark calibrate`); the score's
dilution: median of ln(score ratio) / ln(measured ratio) over the pairs whose
tasks differ by more than their spread; the rank agreement (Spearman) of the
suite score (geometric mean over the tasks) with the tasks' geometric-mean
speed across drives; every pair the score orders differently from the
measured times where those differ by more than max(3 %, 2 sigma). The
measured ratio's own uncertainty: a 90 % bootstrap interval of the ratio of
medians (the runs of each drive resampled, a fixed seed), and how many
predictions fall inside it: an error smaller than that interval's half-width
cannot be told from the real runs' noise.

Usage: report.py DIR [--capture-drive V]
"""
import argparse
import html
import json
import math
import os
import random
import statistics
import sys
from collections import defaultdict

ORDER = ["F", "V", "S", "L", "U", "H"]


def percentile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r

    if len(xs) < 2:
        return float("nan")
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else float("nan")


def ratio_interval(runs_a, runs_b, rng, rounds=2000, level=0.90):
    """A bootstrap interval of median(runs_b) / median(runs_a)."""
    ratios = []
    for _ in range(rounds):
        a = statistics.median(rng.choices(runs_a, k=len(runs_a)))
        b = statistics.median(rng.choices(runs_b, k=len(runs_b)))
        if a > 0:
            ratios.append(b / a)
    tail = (1 - level) / 2
    return percentile(ratios, tail), percentile(ratios, 1 - tail)


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(statistics.mean(math.log(v) for v in values)) if values else float("nan")


def load_cpu(out):
    """The real runs' and the replays' CPU times: task -> drive -> figures."""
    real = defaultdict(lambda: defaultdict(list))  # task -> drive -> [(task s, other s)]
    replay = defaultdict(dict)  # task -> drive -> (replay s, other s, wall s)
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if name.startswith("cpu-") and name.endswith(".txt"):
            drive = name[len("cpu-"):-len(".txt")]
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    parts = line.split()
                    if len(parts) != 3:
                        sys.exit(f"{path}:{n}: expected 'task task_cpu_s other_cpu_s', got {line.strip()!r}")
                    real[parts[0]][drive].append((float(parts[1]), float(parts[2])))
        elif name.startswith("cpurep-") and name.endswith(".txt"):
            drive, task = name[len("cpurep-"):-len(".txt")].split("-", 1)
            with open(path) as f:
                parts = f.read().split()
            if len(parts) != 3:
                sys.exit(f"{path}: expected 'replay_cpu_s other_cpu_s wall_s'")
            replay[task][drive] = tuple(float(x) for x in parts)
    return real, replay


def load_host(out):
    """The host's counters per real run: task -> drive -> [{key: delta}]."""
    host = defaultdict(lambda: defaultdict(list))
    for name in sorted(os.listdir(out)):
        if not (name.startswith("host-") and name.endswith(".txt")):
            continue
        drive = name[len("host-"):-len(".txt")]
        path = os.path.join(out, name)
        with open(path) as f:
            for n, line in enumerate(f, 1):
                parts = line.split()
                try:
                    fields = {k: int(v) for k, v in (x.split("=", 1) for x in parts[1:])}
                except ValueError:
                    sys.exit(f"{path}:{n}: expected 'task key=count ...', got {line.strip()!r}")
                if not parts or "steal" not in fields:
                    sys.exit(f"{path}:{n}: no steal count in {line.strip()!r}")
                host[parts[0]][drive].append(fields)
    return host


def host_section(p, tasks, drives, times, host):
    """Whether a run's time went to something other than its drive: per
    task and drive, each run's wall time beside the CPU time the hypervisor
    stole from the machine meanwhile (both CPUs, s), the time the host's
    CPUs were busy (user + system + interrupts, s) and its major faults."""
    if not host:
        return
    hz = os.sysconf("SC_CLK_TCK")
    p("")
    p("each real run: wall s / stolen CPU s / busy CPU s / major faults / MiB handed back to the")
    p("hypervisor (free page reporting) (host counters between the marks):")
    for task in tasks:
        for d in drives:
            runs = host.get(task, {}).get(d)
            walls = times.get(task, {}).get(d, [])
            if not runs or len(runs) != len(walls):
                continue
            cells = []
            for wall, c in zip(walls, runs):
                busy = sum(c.get(k, 0) for k in ("user", "nice", "system", "irq", "softirq")) / hz
                reported = f"{c['reported_kib'] / 1024:.0f}" if "reported_kib" in c else "-"
                cells.append(f"{wall:.2f}/{c['steal'] / hz:.2f}/{busy:.2f}/{c.get('pgmajfault', 0)}/{reported}")
            p(f"  {task:24} {d:>5} " + "  ".join(cells))


def load_pace(out):
    """The host's pace before each job's real runs (bench/cpu_pace.py lines
    in pace.txt, labelled TIME/DRIVE/JOB): drive -> [median unit ms]."""
    pace = defaultdict(list)
    path = os.path.join(out, "pace.txt")
    if not os.path.exists(path):
        return pace
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            label = parts[0].split("/") if parts else []
            ms = dict(x.split("=", 1) for x in parts[1:] if "=" in x).get("all.ms")
            if len(label) != 3 or ms is None or ms.count("/") != 4:
                sys.exit(f"{path}:{n}: expected 'TIME/DRIVE/JOB all.n=N all.ms=MIN/P10/P50/P90/MAX ...', got {line.strip()!r}")
            pace[label[1]].append(float(ms.split("/")[2]))
    return pace


def load_run_pace(out):
    """Each real run's task CPU time beside the pace probed just before its
    job's runs (pace-DRIVE.txt, "task p50_ms", in the order of
    cpu-DRIVE.txt's lines): [(task, cpu s, pace ms)], and the drives whose
    runs it does not cover (a study begun before it was kept)."""
    pairs, uncovered = [], []
    for name in sorted(os.listdir(out)):
        if not (name.startswith("pace-") and name.endswith(".txt")):
            continue
        drive = name[len("pace-"):-len(".txt")]
        cpu_path = os.path.join(out, f"cpu-{drive}.txt")
        if not os.path.exists(cpu_path):
            continue
        with open(os.path.join(out, name)) as f:
            paces = [line.split() for line in f]
        with open(cpu_path) as f:
            cpus = [line.split() for line in f]
        if len(paces) != len(cpus) or any(len(a) != 2 or a[0] != b[0] for a, b in zip(paces, cpus)):
            uncovered.append(drive)
            continue
        pairs += [(c[0], float(c[1]), float(pc[1])) for pc, c in zip(paces, cpus)]
    return pairs, uncovered


def pace_section(p, drives, pace, run_pace_uncovered):
    """The host's pace at each drive's real runs: the median unit time of
    fixed work just before each job's runs (lower is faster); and whether
    that probe tells how much CPU time the runs after it took."""
    if not pace:
        return
    cells = []
    for d in drives:
        if pace.get(d):
            v = pace[d]
            cells.append(f"{d} {statistics.median(v):.2f} ms ({min(v):.2f}-{max(v):.2f}, {len(v)})")
    p("the host's pace before the real runs (bench/cpu_pace.py's unit, median (range, count)): " + ", ".join(cells))
    run_pace, uncovered = run_pace_uncovered
    if uncovered:
        p(f"  runs without their probe beside them (pace-DRIVE.txt short of cpu-DRIVE.txt), left out: {', '.join(uncovered)}")
    if len(run_pace) < 3:
        return
    # Each run's task CPU time as a share of its task's median, against the
    # probe as a share of all probes' median.
    by_task = defaultdict(list)
    for task, cpu, _ in run_pace:
        by_task[task].append(cpu)
    med = {t: statistics.median(v) for t, v in by_task.items()}
    mid = statistics.median(pc for _, _, pc in run_pace)
    xs = [pc / mid for _, _, pc in run_pace]
    ys = [cpu / med[t] for t, cpu, _ in run_pace if med[t] > 0]
    if len(ys) != len(xs) or len(set(xs)) < 2 or len(set(ys)) < 2:
        return
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    cov = sum((a - mx) * (b - my) for a, b in zip(xs, ys))
    vx = sum((a - mx) ** 2 for a in xs)
    vy = sum((b - my) ** 2 for b in ys)
    p(f"the probe against the task CPU time of the runs after it (each as a share of its median), "
      f"{len(xs)} runs: Pearson r {cov / (vx * vy) ** 0.5:.2f}, slope {cov / vx:.2f}")


def cpu_section(p, tasks, drives, capture, times, predicted, cpu_real, cpu_replay):
    """Whether the time a drive adds beyond its prediction is host CPU the
    drive's own stack took (loop workers, a FUSE server) from the task: per
    task and drive, the real runs' median CPU time of the task and of the
    rest of the host, the replay's, and beside them the measured extra time
    over the capture drive that the prediction did not account for."""
    if not cpu_real:
        return
    p("")
    p("host CPU during the real runs (median per run, s): the task's, the rest of the host's;")
    p(f"the rest during the replay (s per s of replay); and the measured extra time over {capture}")
    p("that the prediction missed, beside the rest of the host's extra CPU time over the same drive:")
    p(f"  {'task':24} {'drive':>5} {'task cpu':>9} {'other cpu':>10} {'replay other/s':>15} {'missed s':>9} {'extra other':>12}")
    for task in tasks:
        for d in drives:
            runs = cpu_real.get(task, {}).get(d)
            if not runs:
                continue
            task_cpu = statistics.median(r[0] for r in runs)
            other = statistics.median(r[1] for r in runs)
            rep = cpu_replay.get(task, {}).get(d)
            rep_rate = f"{rep[1] / rep[2]:15.3f}" if rep and rep[2] > 0 else f"{'-':>15}"
            missed = extra = f"{'-':>9}"
            base_runs = cpu_real.get(task, {}).get(capture)
            if d != capture and base_runs and times[task].get(d) and times[task].get(capture) \
                    and predicted.get(task, {}).get(d) is not None and predicted.get(task, {}).get(capture) is not None:
                measured_extra = statistics.median(times[task][d]) - statistics.median(times[task][capture])
                predicted_extra = predicted[task][d] - predicted[task][capture]
                missed = f"{measured_extra - predicted_extra:9.3f}"
                extra = f"{other - statistics.median(r[1] for r in base_runs):12.3f}"
            p(f"  {task:24} {d:>5} {task_cpu:9.3f} {other:10.3f} {rep_rate} {missed} {extra}")
    # The same work's CPU time on each drive against the capture drive's: far
    # from 1 where a drive's real runs met a host of another speed (the
    # guest's load and steal can both be low while it is), or where the
    # drive's I/O path costs the task CPU (FUSE, a throttle's waits).
    def task_cpu(t, d):
        runs = cpu_real.get(t, {}).get(d)
        return statistics.median(r[0] for r in runs) if runs else None

    base = {t: task_cpu(t, capture) for t in tasks}
    speed = []
    for d in drives:
        if d == capture:
            continue
        ratios = [task_cpu(t, d) / base[t] for t in tasks
                  if base[t] and task_cpu(t, d) is not None]
        if ratios:
            speed.append(f"{d} {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
    if speed:
        p(f"the task's CPU time against {capture}'s, median (range) over the tasks: " + ", ".join(speed))


def load(out):
    times = defaultdict(lambda: defaultdict(list))  # task -> drive -> [s]
    replays = defaultdict(dict)  # task -> drive -> trace result
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if name.startswith("times-") and name.endswith(".txt"):
            drive = name[len("times-"):-len(".txt")]
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    parts = line.split()
                    if len(parts) != 2:
                        sys.exit(f"{path}:{n}: expected 'task seconds', got {line.strip()!r}")
                    times[parts[0]][drive].append(float(parts[1]))
        elif name.startswith("replay-") and name.endswith(".json"):
            drive, task = name[len("replay-"):-len(".json")].split("-", 1)
            try:
                with open(path) as f:
                    result = json.load(f)
            except (OSError, ValueError) as e:
                sys.exit(f"{path}: {e}")
            traces = result.get("traces") or []
            if traces:
                replays[task][drive] = traces[0]
    return times, replays


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--capture-drive", default="V")
    args = ap.parse_args()
    times, replays = load(args.dir)
    drives_info = {}
    dj = os.path.join(args.dir, "drives.json")
    if os.path.exists(dj):
        with open(dj) as f:
            drives_info = json.load(f)

    drives = sorted({d for t in times.values() for d in t} | {d for r in replays.values() for d in r},
                    key=lambda d: (ORDER.index(d) if d in ORDER else 99, d))
    tasks = sorted(set(times) & set(replays))
    lines = []
    p = lines.append
    p(f"validity study: {len(tasks)} tasks on drives {' '.join(drives)} (capture drive {args.capture_drive})")
    settings_path = os.path.join(args.dir, "replay-settings.txt")
    if os.path.exists(settings_path):
        with open(settings_path) as f:
            p(f"replays: {f.read().strip()}")
    if drives_info:
        p("")
        p("drive classes (fio):")
        for d in drives:
            info = drives_info.get(d) if isinstance(drives_info, dict) else None
            if info:
                p(f"  {d}: {json.dumps(info, sort_keys=True)}")

    # Per task and drive: measured median and spread, predicted, score.
    p("")
    p(f"{'task':<26} {'drive':>5} {'runs':>4} {'measured s':>11} {'spread %':>9} {'predicted s':>12} {'score':>8} {'cpu wait %':>11}")
    med = {}
    starved = []
    for task in tasks:
        for d in drives:
            runs = times[task].get(d, [])
            r = replays[task].get(d)
            pred = (r or {}).get("task", {}) or {}
            score = (r or {}).get("score")
            if runs:
                m = statistics.median(runs)
                spread = (max(runs) - min(runs)) / 2 / m * 100 if m > 0 else float("nan")
                sd = statistics.stdev(runs) if len(runs) > 1 else 0.0
            else:
                m = spread = sd = float("nan")
            models = dict(pred.get("models", {}))
            # A calibrated trace's replays also carry the figures before
            # calibration (the untraced time plus the shift from the
            # capture's own latencies).
            for k, v in (pred.get("uncalibrated") or {}).items():
                models[f"uncalibrated {k}"] = v
            # Before the floor of the busiest thread's CPU time, where the
            # trace has one (the replay keeps what the floor held up).
            if pred.get("cpu_floor_s") is not None:
                for k, v in (pred.get("unfloored") or pred.get("models") or {}).items():
                    models[f"before the CPU floor {k}"] = v
            # The same shifts from the capture's own span instead of the
            # untraced time: the drive's added time relative to the capture's
            # latencies, over the capture's think time.
            c, u, ps = pred.get("captured_s"), pred.get("untraced_s"), pred.get("predicted_s")
            if c and u and ps:
                models["capture-span base"] = c + (ps - u)
            med[(task, d)] = (m, sd, ps, models, score)
            # The share of the replay its threads waited for a CPU: above 5 %
            # the machine's other load is in its latencies (and prediction).
            fid = (r or {}).get("fidelity") or {}
            playback = (r or {}).get("playback_s") or 0
            wait = fid.get("cpu_wait_s")
            wait_pct = wait / playback * 100 if (wait is not None and playback > 0) else float("nan")
            if wait_pct > 5:
                starved.append((task, d, wait_pct))
            p(f"{task:<26} {d:>5} {len(runs):>4} {m:>11.3f} {spread:>9.1f} "
              f"{(pred.get('predicted_s') or float('nan')):>12.3f} {(score or float('nan')):>8.0f} {wait_pct:>11.1f}")

    # Against the capture drive, in seconds: how much the drive added to or
    # took from the task, measured and predicted (the ratios below divide
    # these by the task's time), and the capture's own span (tracing
    # overhead: captured against untraced on the capture drive).
    cap = args.capture_drive
    p("")
    p(f"{'task':<26} {'drive':>5} {'measured - ' + cap + ' s':>14} {'predicted - ' + cap + ' s':>15}")
    for task in tasks:
        mc, _, pc, _, _ = med.get((task, cap), (float("nan"), 0, None, {}, None))
        for d in drives:
            if d == cap:
                continue
            m, _, pd, _, _ = med[(task, d)]
            dm = m - mc
            dp = (pd - pc) if (pd and pc) else float("nan")
            p(f"{task:<26} {d:>5} {dm:>14.3f} {dp:>15.3f}")
    cpu_real, cpu_replay = load_cpu(args.dir)
    predicted = {t: {d: med[(t, d)][2] for d in drives if (t, d) in med} for t in tasks}
    cpu_section(p, tasks, drives, cap, times, predicted, cpu_real, cpu_replay)
    pace_section(p, drives, load_pace(args.dir), load_run_pace(args.dir))
    host_section(p, tasks, drives, times, load_host(args.dir))
    p("")
    p(f"{'task':<26} {'captured s':>11} {'untraced s':>11} {'captured / untraced':>20} {'busiest thread CPU s':>21}")
    for task in tasks:
        r = replays[task].get(cap) or next(iter(replays[task].values()), None)
        pred = (r or {}).get("task", {}) or {}
        c, u = pred.get("captured_s"), pred.get("untraced_s")
        floor = pred.get("cpu_floor_s")
        floor = f"{floor:.3f}" if floor is not None else "-"
        if c and u:
            p(f"{task:<26} {c:>11.3f} {u:>11.3f} {c / u:>20.3f} {floor:>21}")

    # Pairs.
    p("")
    p(f"{'task':<26} {'pair':>5} {'measured':>9} {'90 % interval':>15} {'predicted':>10} {'score':>8} {'error %':>8}")
    errors, model_errors, points, inversions, dilution = [], defaultdict(list), [], [], []
    rng = random.Random(0)
    inside, half_widths = 0, []
    for task in tasks:
        for i, a in enumerate(drives):
            for b in drives[i + 1:]:
                ma, sda, pa, mods_a, sa = med[(task, a)]
                mb, sdb, pb, mods_b, sb = med[(task, b)]
                if not all(isinstance(x, float) and x > 0 for x in (ma, mb)) or not (pa and pb and sa and sb):
                    continue
                measured = mb / ma
                predicted = pb / pa
                score_ratio = sa / sb
                err = abs(predicted / measured - 1)
                errors.append(err)
                for m in mods_a:
                    if m in mods_b and mods_a[m] > 0:
                        model_errors[m].append(abs((mods_b[m] / mods_a[m]) / measured - 1))
                points.append((task, a, b, measured, predicted, score_ratio))
                lo, hi = ratio_interval(times[task][a], times[task][b], rng)
                half_widths.append((hi - lo) / 2 / measured)
                inside += lo <= predicted <= hi
                p(f"{task:<26} {a + '/' + b:>5} {measured:>9.3f} {f'{lo:.3f}-{hi:.3f}':>15} {predicted:>10.3f} "
                  f"{score_ratio:>8.2f} {err * 100:>8.1f}")
                # Do the tasks differ by more than their own spread?
                noise = max(0.03 * max(ma, mb), 2 * math.hypot(sda, sdb))
                if abs(mb - ma) > noise:
                    if (mb > ma) != (sa > sb):
                        inversions.append((task, a, b, ma, mb, sa, sb))
                    if abs(math.log(measured)) > 0:
                        dilution.append(math.log(score_ratio) / math.log(measured))

    p("")
    if errors:
        p(f"prediction error over {len(errors)} task x pair points: median {percentile(errors, .5) * 100:.1f} %, "
          f"p90 {percentile(errors, .9) * 100:.1f} %, largest {max(errors) * 100:.1f} %")
        p(f"  the measured ratios' own uncertainty: 90 % interval half-width median "
          f"{percentile(half_widths, .5) * 100:.1f} %, p90 {percentile(half_widths, .9) * 100:.1f} %; "
          f"predictions inside the interval: {inside} of {len(errors)}")
        for m, e in sorted(model_errors.items()):
            p(f"  dependency model {m:<22} median {percentile(e, .5) * 100:.1f} %, p90 {percentile(e, .9) * 100:.1f} %, "
              f"largest {max(e) * 100:.1f} %")
        per_task = defaultdict(list)
        for (task, a, b, measured, predicted, _), e in zip(points, errors):
            per_task[task].append(e)
        for task, e in sorted(per_task.items()):
            p(f"  {task:<24} median {percentile(e, .5) * 100:5.1f} %, largest {max(e) * 100:5.1f} %")
    if dilution:
        p(f"score dilution: median ln(score ratio) / ln(measured ratio) = {statistics.median(dilution):.2f} "
          f"over {len(dilution)} pairs (1: the score moves as the task time does)")

    # Rank agreement across drives.
    suite_scores, speeds = [], []
    for d in drives:
        s = [med[(t, d)][4] for t in tasks if med[(t, d)][4]]
        m = [med[(t, d)][0] for t in tasks if med[(t, d)][0] == med[(t, d)][0]]
        if len(s) == len(tasks) and len(m) == len(tasks):
            suite_scores.append(geomean(s))
            speeds.append(1 / geomean(m))
    if len(suite_scores) >= 2:
        p(f"Spearman of the suite score vs the tasks' geometric-mean speed over {len(speeds)} drives: "
          f"{spearman(suite_scores, speeds):.3f}")
    p(f"replays that waited over 5 % of their playback for a CPU (their drive's latencies include the machine's load): {len(starved)}")
    for task, d, w in starved:
        p(f"  {task} on {d}: {w:.1f} %")
    p(f"pairs the score orders differently from the tasks (where they differ beyond their spread): {len(inversions)}")
    for task, a, b, ma, mb, sa, sb in inversions:
        p(f"  {task} {a}/{b}: measured {ma:.3f} s vs {mb:.3f} s, score {sa:.0f} vs {sb:.0f}")

    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(args.dir, "validity.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(args.dir, "validity.html"), "w") as f:
        f.write(page(points, text))


def page(points, text):
    """A self-contained page: log-log scatter of predicted and score ratios
    against measured ratios, the y = x line, and the text report."""
    w, h, m = 640, 520, 60
    vals = [v for pt in points for v in pt[3:6] if v > 0] or [1.0]
    lo, hi = min(vals + [1.0]) / 1.2, max(vals + [1.0]) * 1.2
    span = math.log(hi) - math.log(lo)

    def x(v):
        return m + (math.log(v) - math.log(lo)) / span * (w - 2 * m)

    def y(v):
        return h - m - (math.log(v) - math.log(lo)) / span * (h - 2 * m)

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img">',
           f'<rect x="{m}" y="{m}" width="{w - 2 * m}" height="{h - 2 * m}" fill="none" stroke="#999"/>',
           f'<line x1="{x(lo)}" y1="{y(lo)}" x2="{x(hi)}" y2="{y(hi)}" stroke="#bbb" stroke-dasharray="4 3"/>']
    tick = 10 ** math.floor(math.log10(lo))
    while tick <= hi:
        for k in (1, 2, 5):
            t = tick * k
            if lo <= t <= hi:
                svg.append(f'<text x="{x(t)}" y="{h - m + 16}" font-size="11" text-anchor="middle">{t:g}</text>')
                svg.append(f'<text x="{m - 6}" y="{y(t) + 4}" font-size="11" text-anchor="end">{t:g}</text>')
        tick *= 10
    svg.append(f'<text x="{w / 2}" y="{h - 12}" font-size="13" text-anchor="middle">measured task-time ratio (drive B / drive A)</text>')
    svg.append(f'<text x="16" y="{h / 2}" font-size="13" text-anchor="middle" transform="rotate(-90 16 {h / 2})">predicted ratio / score ratio</text>')
    for task, a, b, measured, predicted, score in points:
        label = html.escape(f"{task} {a}/{b}: measured {measured:.3f}, predicted {predicted:.3f}, score {score:.2f}")
        svg.append(f'<circle cx="{x(measured):.1f}" cy="{y(predicted):.1f}" r="4" fill="#1f77b4"><title>{label}</title></circle>')
        svg.append(f'<rect x="{x(measured) - 3.5:.1f}" y="{y(score) - 3.5:.1f}" width="7" height="7" fill="#d62728"><title>{label}</title></rect>')
    svg.append(f'<circle cx="{m + 14}" cy="{m + 14}" r="4" fill="#1f77b4"/><text x="{m + 24}" y="{m + 18}" font-size="12">predicted task-time ratio</text>')
    svg.append(f'<rect x="{m + 10.5}" y="{m + 26.5}" width="7" height="7" fill="#d62728"/><text x="{m + 24}" y="{m + 34}" font-size="12">score ratio (A / B)</text>')
    svg.append("</svg>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>tracemark validity study</title></head>"
            "<body style='font-family:sans-serif'><h1>Does the score predict what a user feels?</h1>"
            "<p>One point per task and drive pair: the real task's time ratio between two drives against "
            "the ratio tracemark predicts (circles) and the ratio of its scores (squares). "
            "On the dashed line a prediction is exact.</p>"
            + "\n".join(svg) + "<pre>" + html.escape(text) + "</pre></body></html>\n")


if __name__ == "__main__":
    main()
