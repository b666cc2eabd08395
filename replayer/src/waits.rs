//! The path of waits behind a prediction: for the primary dependency model,
//! each I/O carries the classes and target latencies of the I/Os whose
//! completions set its shift, one after the other, and its own. The task's
//! end takes the path of what set its shift; [`results::breakdown`] turns it
//! into think time and waits per class.
//!
//! A path is a short list per class (classes are few: operation, size,
//! queue depth and pattern buckets), shared between the I/Os that hold it;
//! memory is bounded by the I/Os in flight, not the trace's length.

use results::breakdown::{ClassWaits, WaitClass, WaitOp};
use std::collections::HashMap;
use std::sync::Arc;
use trace_format::{Flags, IoRecord, Op};

/// Per class on a path: the I/Os and their summed latency on the target, ns.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PathWaits(Vec<(WaitClass, u64, u64)>);

/// A path, shared; `None` is the empty path.
pub type Path = Option<Arc<PathWaits>>;

/// `parent` followed by one I/O of `class` that took `target_ns`.
pub fn extend(parent: &Path, class: WaitClass, target_ns: u64) -> Path {
    let mut v = parent.as_ref().map_or_else(Vec::new, |p| p.0.clone());
    match v.binary_search_by(|e| e.0.cmp(&class)) {
        Ok(i) => {
            v[i].1 += 1;
            v[i].2 += target_ns;
        }
        Err(i) => v.insert(i, (class, 1, target_ns)),
    }
    Some(Arc::new(PathWaits(v)))
}

/// The path's waits per class, for a result.
pub fn class_waits(path: &Path) -> Vec<ClassWaits> {
    path.as_ref().map_or_else(Vec::new, |p| {
        p.0.iter()
            .map(|&(class, ios, ns)| ClassWaits {
                class,
                ios: ios as f64,
                wait_s: ns as f64 / 1e9,
            })
            .collect()
    })
}

/// The operation class of a record.
pub fn wait_op(rec: &IoRecord) -> WaitOp {
    let write = matches!(rec.op, Op::Write | Op::WriteZeroes);
    let sync = rec.flags.contains(Flags::SYNC) || rec.flags.contains(Flags::FUA);
    match rec.op {
        Op::Flush => WaitOp::Flush,
        _ if write && rec.flags.contains(Flags::PREFLUSH) => WaitOp::Flush,
        _ if write && sync => WaitOp::SyncWrite,
        Op::Read => WaitOp::Read,
        Op::Write => WaitOp::Write,
        Op::WriteZeroes => WaitOp::WriteZeroes,
        Op::Discard => WaitOp::Discard,
    }
}

/// Tells sequential requests from random ones: a request is sequential when
/// it starts where the previous one on its device ended.
#[derive(Debug, Clone, Default)]
pub struct Sequence {
    last_end: HashMap<u16, u64>,
}

impl Sequence {
    pub fn sequential(&mut self, rec: &IoRecord) -> bool {
        if rec.len.0 == 0 {
            return false;
        }
        let end = rec.offset.0.saturating_add(rec.len.0);
        self.last_end.insert(rec.device, end) == Some(rec.offset.0)
    }
}
