//! `tracemark info`: what a trace holds, as the text people read. Every text
//! from the trace file (names, descriptions, skipped input) is escaped.

use super::escape::escape_control;
use super::units::{bytes, duration_ns, percent, size_bound};
use std::fmt::Write;
use std::path::Path;
use trace_format::stats::{Histogram, IdlePeriods, TraceStats};
use trace_format::{CalibrationReplays, DependencyModel, Nanos, Summary, TaskMarks, TraceFile};

/// The report: header, summary, the characterisation when `stats` is given
/// (not under `--summary-only`), the captured task, the source's notes and
/// the skipped input.
pub fn format_trace_info(file: &TraceFile, stats: Option<&TraceStats>, path: &Path) -> String {
    let mut out = String::new();
    header(&mut out, file, path);
    summary(&mut out, file);
    if let Some(st) = stats {
        characterisation(&mut out, file.summary(), st);
        histograms(&mut out, st);
    }
    notes_and_skipped(&mut out, file);
    out
}

/// Text from the trace file, with control characters escaped.
fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    escape_control(s)
}

/// Name, description, source, capture host and devices.
fn header(out: &mut String, file: &TraceFile, path: &Path) {
    let h = file.header();
    let tail = &file.footer().tail;
    let _ = writeln!(out, "{}  ({})", esc(&h.name), path.display());
    if !h.description.is_empty() {
        let _ = writeln!(out, "  {}", esc(&h.description));
    }
    if !h.category.is_empty() {
        let _ = writeln!(out, "  category: {}", esc(&h.category));
    }
    let _ = writeln!(
        out,
        "  source: {} {}  (issue time: {} event)",
        esc(&h.source_format),
        esc(&h.source_files.join(" ")),
        h.issue_event.name()
    );
    if let Some(host) = &h.capture_host {
        let _ = writeln!(
            out,
            "  captured on {} {}",
            esc(host),
            esc(h.capture_kernel.as_deref().unwrap_or(""))
        );
    }
    if let Some(d) = &h.original_device {
        let _ = writeln!(
            out,
            "  device: {} ({}){}",
            esc(&d.name),
            d.id,
            d.size
                .map_or(String::new(), |b| format!(", {}", bytes(b.0)))
        );
    }
    if tail.devices.len() > 1 {
        let names: Vec<String> = tail
            .devices
            .iter()
            .map(|d| format!("{} {}", d.id, d.name))
            .collect();
        let _ = writeln!(out, "  devices: {}", names.join(", "));
    }
    let _ = writeln!(out);
}

/// The footer's summary: counts, bytes, duration, span, file size.
fn summary(out: &mut String, file: &TraceFile) {
    let s = file.summary();
    let _ = writeln!(out, "  I/Os        {:>12}", s.ios);
    let _ = writeln!(
        out,
        "  reads       {:>12}  {:>10}",
        s.reads,
        bytes(s.read_bytes)
    );
    let _ = writeln!(
        out,
        "  writes      {:>12}  {:>10}",
        s.writes,
        bytes(s.write_bytes)
    );
    let _ = writeln!(out, "  flushes     {:>12}", s.flushes);
    let _ = writeln!(
        out,
        "  discards    {:>12}  {:>10}",
        s.discards,
        bytes(s.discard_bytes)
    );
    if s.write_zeroes > 0 {
        let _ = writeln!(
            out,
            "  write-zeroes{:>12}  {:>10}",
            s.write_zeroes,
            bytes(s.write_zeroes_bytes)
        );
    }
    let _ = writeln!(out, "  duration    {:>12}", duration_ns(s.duration.0));
    if let (Some(lo), Some(hi)) = (s.min_offset, s.max_end) {
        let _ = writeln!(
            out,
            "  address span {} .. {}  ({})",
            lo.0,
            hi.0,
            bytes(hi.0 - lo.0)
        );
    }
    let _ = writeln!(
        out,
        "  latencies   {:>12}",
        if s.ios > 0 && s.with_latency == s.ios {
            "all known".to_string()
        } else {
            format!("{} of {} known", s.with_latency, s.ios)
        }
    );
    let _ = writeln!(
        out,
        "  file size   {:>12}  ({:.2} bytes per I/O)",
        bytes(file.file_len()),
        if s.ios > 0 {
            file.file_len() as f64 / s.ios as f64
        } else {
            0.0
        }
    );
}

/// Busy and idle time, time step, sequential share, queue depth, footprint
/// and the idle kept at each cap.
fn characterisation(out: &mut String, s: &Summary, st: &TraceStats) {
    match st.busy {
        Some(b) => {
            let _ = writeln!(
                out,
                "  busy        {:>12}  ({} of the duration)",
                duration_ns(b.0),
                percent(b.0 as f64, s.duration.0 as f64)
            );
        }
        None => {
            let _ = writeln!(out, "  busy                   -  (needs completion times)");
        }
    }
    let _ = writeln!(
        out,
        "  idle        {:>12}  ({} of the duration)",
        duration_ns(st.idle.0),
        percent(st.idle.0 as f64, s.duration.0 as f64)
    );
    if let Some(step) = st.time_step {
        let _ = writeln!(
            out,
            "  time step   {:>12}  (every time and latency is a multiple of it)",
            duration_ns(step.0)
        );
    }
    access_pattern(out, st);
    let p = &st.idle_periods;
    let kept: Vec<String> = TraceStats::IDLE_CAPS
        .iter()
        .zip(&p.kept_ns_at_cap)
        .map(|(cap, kept)| format!("{} at cap {}", duration_ns(*kept), duration_ns(*cap)))
        .collect();
    let _ = writeln!(out, "  idle kept   {}", kept.join(", "));
    let _ = writeln!(out);
}

/// Sequential and random counts, queue depth at issue, footprint.
fn access_pattern(out: &mut String, st: &TraceStats) {
    let _ = writeln!(
        out,
        "  sequential  {:>12}  of reads and writes (each op after the previous one of its kind)",
        percent(st.sequential as f64, st.data_requests as f64)
    );
    let _ = writeln!(
        out,
        "  reads       {:>12} sequential  {:>10} random",
        st.sequential_reads, st.random_reads
    );
    let _ = writeln!(
        out,
        "  writes      {:>12} sequential  {:>10} random",
        st.sequential_writes, st.random_writes
    );
    if let (Some(qd1), Some(median), Some(p90)) = (
        st.qd1_share(),
        st.queue_depth_percentile(0.5),
        st.queue_depth_percentile(0.9),
    ) {
        let _ = writeln!(
            out,
            "  queue depth {:>12}  at QD1; median {median}, p90 {p90} (in flight at issue)",
            percent(qd1, 1.0)
        );
    }
    let _ = writeln!(
        out,
        "  footprint   {:>12}  distinct bytes read or written ({} written)",
        bytes(st.footprint.0),
        bytes(st.written_footprint.0)
    );
    let _ = writeln!(
        out,
        "  read after write {:>7}  read back after the trace wrote it",
        bytes(st.read_after_write.0)
    );
}

/// Request sizes, queue depth, gaps and idle periods as bar charts.
fn histograms(out: &mut String, st: &TraceStats) {
    histogram(out, "Read sizes", &st.read_sizes, size_bound);
    histogram(out, "Write sizes", &st.write_sizes, size_bound);
    if let Some(qd) = &st.queue_depth {
        histogram(out, "Queue depth at issue (original)", qd, |b| {
            b.to_string()
        });
    }
    histogram(out, "Gaps between issues", &st.issue_gaps, duration_ns);
    idle_periods(out, &st.idle_periods);
}

fn histogram(out: &mut String, title: &str, h: &Histogram, label: impl Fn(u64) -> String) {
    let total = h.total();
    if total == 0 {
        return;
    }
    let _ = writeln!(out, "{title}");
    let max = h.counts.iter().copied().max().unwrap_or(1).max(1);
    for (i, &c) in h.counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let name = match h.bounds.get(i) {
            Some(&b) => format!("<= {}", label(b)),
            None => format!(" > {}", label(h.bounds.last().copied().unwrap_or(0))),
        };
        let bar = "#".repeat(((c * 30).div_ceil(max)) as usize);
        let _ = writeln!(
            out,
            "  {name:>12} {c:>10} {:>7}  {bar}",
            percent(c as f64, total as f64)
        );
    }
}

fn idle_periods(out: &mut String, p: &IdlePeriods) {
    let total = p.total();
    if total == 0 {
        return;
    }
    let idle: u64 = p.ns.iter().sum();
    let _ = writeln!(
        out,
        "Idle periods (nothing in flight)       count   share of idle time"
    );
    for (i, (&c, &ns)) in p.counts.iter().zip(&p.ns).enumerate() {
        if c == 0 {
            continue;
        }
        let name = match p.bounds.get(i) {
            Some(&b) => format!("<= {}", duration_ns(b)),
            None => format!(" > {}", duration_ns(p.bounds.last().copied().unwrap_or(0))),
        };
        let _ = writeln!(
            out,
            "  {name:>12} {c:>23} {:>10}  ({})",
            percent(ns as f64, idle as f64),
            duration_ns(ns)
        );
    }
}

/// The captured task: its marks on the trace's clock, its untraced time and
/// the capture drive's prediction (a calibrated trace).
fn task(out: &mut String, t: &TaskMarks, c: Option<&CalibrationReplays>) {
    if t.is_empty() {
        return;
    }
    let _ = writeln!(out, "Task (capture marks)");
    let d = |n: Nanos| duration_ns(n.0);
    if let Some(b) = t.start_before {
        let _ = writeln!(out, "  start          {} before time 0", d(b));
    }
    if let Some(a) = t.start_after {
        let _ = writeln!(out, "  start          {} after time 0", d(a));
    }
    if let Some(e) = t.end {
        let _ = writeln!(out, "  done           {} after time 0", d(e));
    }
    if let Some(c) = t.captured() {
        let _ = writeln!(out, "  captured       {}  (start to done)", d(c));
    }
    match t.untraced {
        Some(u) => {
            let _ = writeln!(out, "  untraced       {}", d(u));
        }
        None => {
            let _ = writeln!(out, "  untraced       not measured (capture --untraced)");
        }
    }
    if let Some(cpu) = t.cpu {
        let _ = writeln!(
            out,
            "  task CPU       {} in its busiest thread, {} in {} threads (no prediction below the first)",
            d(cpu.busiest_thread),
            d(cpu.total),
            cpu.threads
        );
    }
    if t.capture_drive.is_set() {
        let models: Vec<String> = t
            .capture_drive
            .iter()
            .map(|(m, n)| format!("{} {}", m.name(), d(n)))
            .collect();
        let _ = writeln!(
            out,
            "  calibrated     on the capture drive: {}",
            models.join(", ")
        );
        if let Some(c) = c {
            let primary = DependencyModel::PRIMARY;
            let replays: Vec<String> = c
                .predictions
                .iter()
                .map(|p| p.get(primary).map_or("-".to_string(), d))
                .collect();
            let _ = writeln!(
                out,
                "  from replays   {} ({}, the median of {})",
                replays.join(" / "),
                primary.name(),
                c.predictions.len()
            );
            let settings: Vec<String> = c
                .settings
                .iter()
                .map(|(what, value)| format!("{} {}", escape_control(what), escape_control(value)))
                .collect();
            let _ = writeln!(out, "  replayed at    {}", settings.join(", "));
        }
    } else {
        let _ = writeln!(out, "  calibrated     no (tracemark calibrate)");
    }
}

/// The source's notes (what it understood that is no I/O) and the skipped input.
fn notes_and_skipped(out: &mut String, file: &TraceFile) {
    let tail = &file.footer().tail;
    task(out, &tail.task, tail.calibration.as_ref());
    if !tail.notes.is_empty() {
        let _ = writeln!(out, "Not I/O (understood and counted)");
        let width = tail.notes.iter().map(|(k, _)| k.chars().count()).max();
        let width = width.unwrap_or(0).max(30);
        for (k, n) in &tail.notes {
            let _ = writeln!(out, "  {k:<width$} {n:>10}");
        }
    }
    if tail.skipped.count > 0 {
        let _ = writeln!(out, "Skipped input: {} (--skip-bad)", tail.skipped.count);
        for e in &tail.skipped.examples {
            let _ = writeln!(
                out,
                "  {}: {}: `{}`",
                esc(&e.location),
                esc(&e.reason),
                esc(&e.content)
            );
        }
    } else {
        let _ = writeln!(out, "Skipped input: none");
    }
}
