//! `tracemark info`: what a trace holds.

use crate::output;
use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use trace_format::stats::{Histogram, StatsBuilder, TraceStats};
use trace_format::TraceFile;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tracemark info traces/office-writer.tmt\n  tracemark info game.tmt --json | jq .read_bytes"
)]
pub struct InfoArgs {
    /// The trace.
    pub trace: PathBuf,
    /// Print JSON (keys: ios, reads, writes, flushes, discards, read_bytes,
    /// write_bytes, duration_ns, skipped, and the rest of what the table shows).
    #[arg(long)]
    pub json: bool,
    /// Only the footer's summary: no pass over the records (instant on any size).
    #[arg(long)]
    pub summary_only: bool,
}

pub fn run(args: InfoArgs) -> Result<i32> {
    let path = &args.trace;
    let file = TraceFile::open(path).with_context(|| format!("{}", path.display()))?;
    let stats = if args.summary_only {
        None
    } else {
        let mut b = StatsBuilder::new();
        for r in file.records() {
            b.add(&r.with_context(|| format!("{}", path.display()))?);
        }
        Some(b.finish(file.summary().ios))
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&file, stats.as_ref(), path))?
        );
    } else {
        print_human(&file, stats.as_ref(), path);
    }
    Ok(0)
}

fn histogram_json(h: &Histogram) -> serde_json::Value {
    json!({ "bounds": h.bounds, "counts": h.counts })
}

fn to_json(
    file: &TraceFile,
    stats: Option<&TraceStats>,
    path: &std::path::Path,
) -> serde_json::Value {
    let h = file.header();
    let s = file.summary();
    let tail = &file.footer().tail;
    let mut v = json!({
        "file": path.display().to_string(),
        "file_bytes": file.file_len(),
        "name": h.name,
        "description": h.description,
        "category": h.category,
        "source_format": h.source_format,
        "source_files": h.source_files,
        "capture_host": h.capture_host,
        "capture_kernel": h.capture_kernel,
        "issue_event": h.issue_event.name(),
        "capture_start_unix_ns": h.capture_start_unix_ns.or(tail.capture_start_unix_ns),
        "original_device": h.original_device.as_ref().map(|d| json!({
            "name": d.name, "dev": d.id.to_string(), "size_bytes": d.size.map(|b| b.0),
            "logical_block_size": d.logical_block_size, "model": d.model,
        })),
        "devices": tail.devices.iter().map(|d| json!({"dev": d.id.to_string(), "name": d.name})).collect::<Vec<_>>(),
        "ios": s.ios,
        "reads": s.reads,
        "writes": s.writes,
        "flushes": s.flushes,
        "discards": s.discards,
        "write_zeroes": s.write_zeroes,
        "read_bytes": s.read_bytes,
        "write_bytes": s.write_bytes,
        "discard_bytes": s.discard_bytes,
        "write_zeroes_bytes": s.write_zeroes_bytes,
        "with_latency": s.with_latency,
        "duration_ns": s.duration.0,
        "address_span": {
            "min_offset": s.min_offset.map(|b| b.0),
            "max_end": s.max_end.map(|b| b.0),
        },
        "chunks": file.footer().chunks.len(),
        "skipped": tail.skipped.count,
        "skipped_examples": tail.skipped.examples.iter().map(|e| json!({
            "location": e.location, "content": e.content, "reason": e.reason,
        })).collect::<Vec<_>>(),
        "notes": tail.notes.iter().map(|(k, n)| json!({"what": k, "count": n})).collect::<Vec<_>>(),
        "bytes_per_io": if s.ios > 0 { file.file_len() as f64 / s.ios as f64 } else { 0.0 },
    });
    if let (Some(st), Some(obj)) = (stats, v.as_object_mut()) {
        obj.insert("read_sizes".into(), histogram_json(&st.read_sizes));
        obj.insert("write_sizes".into(), histogram_json(&st.write_sizes));
        obj.insert("sequential_share".into(), json!(st.sequential_share()));
        obj.insert(
            "queue_depth".into(),
            st.queue_depth.as_ref().map_or(json!(null), histogram_json),
        );
        obj.insert("busy_ns".into(), json!(st.busy.map(|b| b.0)));
        obj.insert(
            "busy_share".into(),
            json!(st
                .busy
                .filter(|_| s.duration.0 > 0)
                .map(|b| b.0 as f64 / s.duration.0 as f64)),
        );
        obj.insert("idle_ns".into(), json!(st.idle.0));
        obj.insert("time_step_ns".into(), json!(st.time_step.map(|t| t.0)));
        obj.insert("issue_gaps_ns".into(), histogram_json(&st.issue_gaps));
        for (key, value) in characterisation_json(st) {
            obj.insert(key.into(), value);
        }
    }
    v
}

/// `10ms`, `1s`: a cap as a JSON key.
fn cap_key(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else {
        format!("{}ms", ns / 1_000_000)
    }
}

/// The figures that compare a trace with a desktop workload: queue depth at
/// issue, random and sequential counts, idle periods, footprint, read-after-write.
fn characterisation_json(st: &TraceStats) -> Vec<(&'static str, serde_json::Value)> {
    let p = &st.idle_periods;
    let kept: serde_json::Map<String, serde_json::Value> = TraceStats::IDLE_CAPS
        .iter()
        .zip(&p.kept_ns_at_cap)
        .map(|(cap, kept)| (cap_key(*cap), json!(kept)))
        .collect();
    vec![
        ("sequential_reads", json!(st.sequential_reads)),
        ("random_reads", json!(st.random_reads)),
        ("sequential_writes", json!(st.sequential_writes)),
        ("random_writes", json!(st.random_writes)),
        (
            "queue_depth_at_issue",
            match &st.queue_depth_counts {
                Some(c) => json!({
                    "qd1_share": st.qd1_share(),
                    "median": st.queue_depth_percentile(0.5),
                    "p90": st.queue_depth_percentile(0.9),
                    "max": c.len().saturating_sub(1),
                }),
                None => json!(null),
            },
        ),
        (
            "idle_periods",
            json!({
                "bounds_ns": p.bounds, "counts": p.counts, "ns": p.ns,
                "kept_ns_at_cap": kept,
            }),
        ),
        ("footprint_bytes", json!(st.footprint.0)),
        ("written_footprint_bytes", json!(st.written_footprint.0)),
        ("read_after_write_bytes", json!(st.read_after_write.0)),
        ("footprint_extents", json!(st.footprint_extents)),
    ]
}

fn print_histogram(title: &str, h: &Histogram, label: impl Fn(u64) -> String) {
    let total = h.total();
    if total == 0 {
        return;
    }
    println!("{title}");
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
        println!(
            "  {name:>12} {c:>10} {:>7}  {bar}",
            output::percent(c as f64, total as f64)
        );
    }
}

fn print_idle_periods(p: &trace_format::stats::IdlePeriods) {
    let total = p.total();
    if total == 0 {
        return;
    }
    let idle: u64 = p.ns.iter().sum();
    println!("Idle periods (nothing in flight)       count   share of idle time");
    for (i, (&c, &ns)) in p.counts.iter().zip(&p.ns).enumerate() {
        if c == 0 {
            continue;
        }
        let name = match p.bounds.get(i) {
            Some(&b) => format!("<= {}", output::duration_ns(b)),
            None => format!(
                " > {}",
                output::duration_ns(p.bounds.last().copied().unwrap_or(0))
            ),
        };
        println!(
            "  {name:>12} {c:>23} {:>10}  ({})",
            output::percent(ns as f64, idle as f64),
            output::duration_ns(ns)
        );
    }
}

/// Text from the trace file, with control characters escaped.
fn esc(s: &str) -> String {
    output::escape_control(s)
}

fn print_human(file: &TraceFile, stats: Option<&TraceStats>, path: &std::path::Path) {
    let h = file.header();
    let s = file.summary();
    let tail = &file.footer().tail;
    println!("{}  ({})", esc(&h.name), path.display());
    if !h.description.is_empty() {
        println!("  {}", esc(&h.description));
    }
    if !h.category.is_empty() {
        println!("  category: {}", esc(&h.category));
    }
    println!(
        "  source: {} {}  (issue time: {} event)",
        esc(&h.source_format),
        esc(&h.source_files.join(" ")),
        h.issue_event.name()
    );
    if let Some(host) = &h.capture_host {
        println!(
            "  captured on {} {}",
            esc(host),
            esc(h.capture_kernel.as_deref().unwrap_or(""))
        );
    }
    if let Some(d) = &h.original_device {
        println!(
            "  device: {} ({}){}",
            esc(&d.name),
            d.id,
            d.size
                .map_or(String::new(), |b| format!(", {}", output::bytes(b.0)))
        );
    }
    if tail.devices.len() > 1 {
        let names: Vec<String> = tail
            .devices
            .iter()
            .map(|d| format!("{} {}", d.id, d.name))
            .collect();
        println!("  devices: {}", names.join(", "));
    }
    println!();
    println!("  I/Os        {:>12}", s.ios);
    println!(
        "  reads       {:>12}  {:>10}",
        s.reads,
        output::bytes(s.read_bytes)
    );
    println!(
        "  writes      {:>12}  {:>10}",
        s.writes,
        output::bytes(s.write_bytes)
    );
    println!("  flushes     {:>12}", s.flushes);
    println!(
        "  discards    {:>12}  {:>10}",
        s.discards,
        output::bytes(s.discard_bytes)
    );
    if s.write_zeroes > 0 {
        println!(
            "  write-zeroes{:>12}  {:>10}",
            s.write_zeroes,
            output::bytes(s.write_zeroes_bytes)
        );
    }
    println!("  duration    {:>12}", output::duration_ns(s.duration.0));
    if let (Some(lo), Some(hi)) = (s.min_offset, s.max_end) {
        println!(
            "  address span {} .. {}  ({})",
            lo.0,
            hi.0,
            output::bytes(hi.0 - lo.0)
        );
    }
    println!(
        "  latencies   {:>12}",
        if s.ios > 0 && s.with_latency == s.ios {
            "all known".to_string()
        } else {
            format!("{} of {} known", s.with_latency, s.ios)
        }
    );
    println!(
        "  file size   {:>12}  ({:.2} bytes per I/O)",
        output::bytes(file.file_len()),
        if s.ios > 0 {
            file.file_len() as f64 / s.ios as f64
        } else {
            0.0
        }
    );
    if let Some(st) = stats {
        match st.busy {
            Some(b) => println!(
                "  busy        {:>12}  ({} of the duration)",
                output::duration_ns(b.0),
                output::percent(b.0 as f64, s.duration.0 as f64)
            ),
            None => println!("  busy                   -  (needs completion times)"),
        }
        println!(
            "  idle        {:>12}  ({} of the duration)",
            output::duration_ns(st.idle.0),
            output::percent(st.idle.0 as f64, s.duration.0 as f64)
        );
        if let Some(step) = st.time_step {
            println!(
                "  time step   {:>12}  (every time and latency is a multiple of it)",
                output::duration_ns(step.0)
            );
        }
        println!(
            "  sequential  {:>12}  of reads and writes (each op after the previous one of its kind)",
            output::percent(st.sequential as f64, st.data_requests as f64)
        );
        println!(
            "  reads       {:>12} sequential  {:>10} random",
            st.sequential_reads, st.random_reads
        );
        println!(
            "  writes      {:>12} sequential  {:>10} random",
            st.sequential_writes, st.random_writes
        );
        if let (Some(qd1), Some(median), Some(p90)) = (
            st.qd1_share(),
            st.queue_depth_percentile(0.5),
            st.queue_depth_percentile(0.9),
        ) {
            println!(
                "  queue depth {:>12}  at QD1; median {median}, p90 {p90} (in flight at issue)",
                output::percent(qd1, 1.0)
            );
        }
        println!(
            "  footprint   {:>12}  distinct bytes read or written ({} written)",
            output::bytes(st.footprint.0),
            output::bytes(st.written_footprint.0)
        );
        println!(
            "  read after write {:>7}  read back after the trace wrote it",
            output::bytes(st.read_after_write.0)
        );
        let p = &st.idle_periods;
        let kept: Vec<String> = TraceStats::IDLE_CAPS
            .iter()
            .zip(&p.kept_ns_at_cap)
            .map(|(cap, kept)| {
                format!(
                    "{} at cap {}",
                    output::duration_ns(*kept),
                    output::duration_ns(*cap)
                )
            })
            .collect();
        println!("  idle kept   {}", kept.join(", "));
        println!();
        print_histogram("Read sizes", &st.read_sizes, output::size_bound);
        print_histogram("Write sizes", &st.write_sizes, output::size_bound);
        if let Some(qd) = &st.queue_depth {
            print_histogram("Queue depth at issue (original)", qd, |b| b.to_string());
        }
        print_histogram("Gaps between issues", &st.issue_gaps, output::duration_ns);
        print_idle_periods(&st.idle_periods);
    }
    if !tail.notes.is_empty() {
        println!("Not I/O (understood and counted)");
        let width = tail.notes.iter().map(|(k, _)| k.chars().count()).max();
        let width = width.unwrap_or(0).max(30);
        for (k, n) in &tail.notes {
            println!("  {k:<width$} {n:>10}");
        }
    }
    if tail.skipped.count > 0 {
        println!("Skipped input: {} (--skip-bad)", tail.skipped.count);
        for e in &tail.skipped.examples {
            println!(
                "  {}: {}: `{}`",
                esc(&e.location),
                esc(&e.reason),
                esc(&e.content)
            );
        }
    } else {
        println!("Skipped input: none");
    }
}
