//! Which devices the input has, and about how many I/Os each: what a
//! `--device` that matches none of them is answered with.

use super::hasher::FastMap;
use super::interface::DeviceSeen;
use crate::event::{Action, BlockEvent, SourceIo};
use trace_format::DeviceId;

#[derive(Default, Clone, Copy)]
struct Counts {
    queued: u64,
    issued: u64,
    requests: u64,
}

/// Counts per device, over every device of the input (kept or not).
#[derive(Default)]
pub(super) struct DeviceCensus {
    counts: FastMap<DeviceId, Counts>,
}

impl DeviceCensus {
    pub fn event(&mut self, e: &BlockEvent) {
        let c = self.counts.entry(e.device).or_default();
        match e.action {
            Action::Queue => c.queued += 1,
            Action::Issue => c.issued += 1,
            _ => {}
        }
    }

    pub fn io(&mut self, io: &SourceIo) {
        self.counts.entry(io.device).or_default().requests += 1;
    }

    /// The devices by number, each with its I/O count (its issue or its queue
    /// events, whichever are more, and its whole requests).
    pub fn into_list(self) -> Vec<DeviceSeen> {
        let mut list: Vec<DeviceSeen> = self
            .counts
            .into_iter()
            .map(|(device, c)| DeviceSeen {
                device,
                ios: c.queued.max(c.issued) + c.requests,
            })
            .collect();
        list.sort_unstable_by_key(|d| (d.device.major, d.device.minor));
        list
    }
}
