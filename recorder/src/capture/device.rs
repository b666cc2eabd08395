//! The traced device, resolved through sysfs (disk or partition, request- or
//! bio-based), and the block events and kernel-side filter that capture it.

use super::CaptureError;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use trace_format::{Bytes, DeviceId, DeviceInfo};

/// Which block events a capture traces (`--events`, with the `clap` feature).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EventSet {
    /// `block_rq_issue`, `block_rq_complete`, `block_rq_requeue`: requests as
    /// the driver got them (request-based disks only).
    Request,
    /// `block_bio_queue`, `block_bio_complete` (and `block_rq_complete` on a
    /// request-based disk): bios as they were submitted, before merging; all a
    /// bio-based device reports.
    Bio,
}

impl EventSet {
    /// `request` or `bio` (the `--events` values).
    pub fn name(self) -> &'static str {
        match self {
            EventSet::Request => "request",
            EventSet::Bio => "bio",
        }
    }

    /// `request events` or `bio events`, for the summary line.
    pub fn describe(self) -> &'static str {
        match self {
            EventSet::Request => "request events",
            EventSet::Bio => "bio events",
        }
    }

    /// The event whose time is a record's issue time.
    pub(super) fn start_event(self) -> &'static str {
        match self {
            EventSet::Request => "block_rq_issue",
            EventSet::Bio => "block_bio_queue",
        }
    }
}

/// One event a capture enables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TracedEvent {
    pub(super) name: &'static str,
    /// Without it the capture cannot be made; without the others it is
    /// made and says what is missing.
    pub(super) required: bool,
}

/// The events that make up a capture of `set` on a device that is (or is
/// not) bio-based.
pub(super) fn traced_events(set: EventSet, bio_based: bool) -> Vec<TracedEvent> {
    let event = |name, required| TracedEvent { name, required };
    match set {
        EventSet::Request => vec![
            event("block_rq_issue", true),
            event("block_rq_complete", true),
            event("block_rq_requeue", false),
        ],
        EventSet::Bio => {
            let mut events = vec![
                event("block_bio_queue", true),
                // Bios of a request-based disk complete as requests; this one
                // still reports the bios that end before they become one.
                event("block_bio_complete", false),
            ];
            if !bio_based {
                events.push(event("block_rq_complete", false));
            }
            events
        }
    }
}

/// The traced device, as resolved from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedDevice {
    /// The device asked for (a disk or a partition).
    pub info: DeviceInfo,
    /// The disk whose request events are traced (the device itself, or the
    /// disk holding the partition).
    pub disk: DeviceId,
    /// For a partition: its first sector and length on the disk, in bytes.
    pub partition: Option<(Bytes, Bytes)>,
    /// The disk has no request queue (zram, device-mapper, md, brd): it
    /// reports bio events only.
    pub bio_based: bool,
}

fn sysfs_string(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

pub(super) fn sysfs_u64(path: &Path) -> Option<u64> {
    sysfs_string(path).and_then(|s| s.parse().ok())
}

fn parse_dev(s: &str) -> Option<DeviceId> {
    let (major, minor) = s.trim().split_once(':')?;
    Some(DeviceId {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
    })
}

/// Resolves a block device path into what the capture needs from sysfs.
pub fn resolve_device(path: &Path) -> Result<TracedDevice, CaptureError> {
    let bad = |reason: String| CaptureError::Device {
        path: path.to_path_buf(),
        reason,
    };
    let meta = fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.file_type().is_block_device() {
        return Err(bad("not a block device".into()));
    }
    let rdev = meta.rdev();
    let id = DeviceId {
        major: libc::major(rdev),
        minor: libc::minor(rdev),
    };
    let sys = fs::canonicalize(format!("/sys/dev/block/{id}"))
        .map_err(|e| bad(format!("no sysfs entry /sys/dev/block/{id} ({e})")))?;
    let name = sys
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let sectors = sysfs_u64(&sys.join("size"));
    let size = sectors.and_then(|s| s.checked_mul(512)).map(Bytes);
    let is_partition = sys.join("partition").exists();
    let (disk_dir, disk, partition) = if is_partition {
        let disk_dir = sys
            .parent()
            .ok_or_else(|| bad("partition without a parent disk in sysfs".into()))?
            .to_path_buf();
        let disk = sysfs_string(&disk_dir.join("dev"))
            .and_then(|d| parse_dev(&d))
            .ok_or_else(|| bad(format!("cannot read {}/dev", disk_dir.display())))?;
        let start = sysfs_u64(&sys.join("start"))
            .and_then(|s| s.checked_mul(512))
            .ok_or_else(|| bad(format!("cannot read {}/start", sys.display())))?;
        let len = size.ok_or_else(|| bad(format!("cannot read {}/size", sys.display())))?;
        (disk_dir, disk, Some((Bytes(start), len)))
    } else {
        (sys.clone(), id, None)
    };
    // blk-mq disks have `mq/` (their hardware queues); bio-based ones
    // (zram, dm-*, md*, brd) have a `queue/` directory but no `mq/`.
    let bio_based = !disk_dir.join("mq").exists();
    let logical_block_size =
        sysfs_u64(&disk_dir.join("queue/logical_block_size")).and_then(|n| u32::try_from(n).ok());
    let model = sysfs_string(&disk_dir.join("device/model")).filter(|m| !m.is_empty());
    Ok(TracedDevice {
        info: DeviceInfo {
            id,
            name,
            size,
            logical_block_size,
            model,
        },
        disk,
        partition,
        bio_based,
    })
}

/// The name of the disk that holds the traced device (for messages).
pub(super) fn disk_name(device: &TracedDevice) -> String {
    match device.partition {
        None => device.info.name.clone(),
        Some(_) => format!("the disk of {} ({})", device.info.name, device.disk),
    }
}

/// Which events to trace: the ones asked for, or by the device. `Err` when
/// request events are asked for on a bio-based device; the message (for
/// the user) says what bio events mean when they are used.
pub fn choose_events(
    device: &TracedDevice,
    asked: Option<EventSet>,
    path: &Path,
) -> Result<(EventSet, Option<String>), CaptureError> {
    let name = disk_name(device);
    match (asked, device.bio_based) {
        (Some(EventSet::Request), true) => Err(CaptureError::Device {
            path: path.to_path_buf(),
            reason: format!(
                "{name} is a bio-based device (no request queue, like zram, device-mapper or \
                 md): the kernel reports no request events for it; capture its bio events \
                 with --events bio (or auto)"
            ),
        }),
        (None, true) | (Some(EventSet::Bio), true) => Ok((
            EventSet::Bio,
            Some(format!(
                "{name} is a bio-based device (no request queue): capturing its bio events \
                 (block_bio_queue to block_bio_complete); issue times are when each bio was \
                 submitted"
            )),
        )),
        (Some(EventSet::Bio), false) => Ok((
            EventSet::Bio,
            Some(format!(
                "capturing the bio events of {name} (asked for): issue times are when each bio \
                 was submitted, before merging; latencies run to the completion of the request \
                 that carried it"
            )),
        )),
        (None, false) | (Some(EventSet::Request), false) => Ok((EventSet::Request, None)),
    }
}

/// What to tell the user when a bio capture saw `starts` bios and no
/// completion at all (`missing`: the optional events this kernel lacks);
/// `None` when completions came, or nothing was traced.
pub(super) fn no_completions(
    events: EventSet,
    device: &TracedDevice,
    starts: u64,
    completions: u64,
    missing: &[&str],
) -> Option<String> {
    if events != EventSet::Bio || starts == 0 || completions > 0 {
        return None;
    }
    let lacks = |name: &str| missing.contains(&name);
    let why = if lacks("block_bio_complete") && (device.bio_based || lacks("block_rq_complete")) {
        "this kernel has no block_bio_complete event".to_string()
    } else if device.bio_based {
        "block_bio_complete did not fire: the kernel traces a bio's completion only for bios \
         it flagged BIO_TRACE_COMPLETION"
            .to_string()
    } else if lacks("block_rq_complete") {
        "this kernel has no block_rq_complete event, and its bios complete as requests".to_string()
    } else {
        "neither block_bio_complete nor block_rq_complete fired".to_string()
    };
    Some(format!(
        "the kernel reported no completion for the {starts} bio(s) traced on {} ({why}): the \
         trace has no latencies",
        disk_name(device)
    ))
}

/// The kernel's `dev_t` encoding used in block event fields (`MAJOR << 20 | MINOR`).
pub fn kernel_dev_t(id: DeviceId) -> u64 {
    (u64::from(id.major) << 20) | u64::from(id.minor & 0xf_ffff)
}

/// The event filter that keeps the traced device's requests.
pub fn event_filter(device: &TracedDevice) -> String {
    let dev = kernel_dev_t(device.disk);
    match device.partition {
        None => format!("dev == {dev}"),
        Some((start, len)) => {
            let first = start.0 / 512;
            let end = (start.0 + len.0) / 512;
            // Flushes have no sector (nr_sector 0): keep them all.
            format!("dev == {dev} && ((sector >= {first} && sector < {end}) || nr_sector == 0)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_t_encoding_matches_the_kernel() {
        assert_eq!(kernel_dev_t(DeviceId { major: 7, minor: 0 }), 7 << 20);
        assert_eq!(
            kernel_dev_t(DeviceId {
                major: 259,
                minor: 3
            }),
            (259 << 20) | 3
        );
    }

    fn device(partition: Option<(Bytes, Bytes)>) -> TracedDevice {
        TracedDevice {
            info: DeviceInfo {
                id: DeviceId { major: 8, minor: 1 },
                ..DeviceInfo::default()
            },
            disk: DeviceId { major: 8, minor: 0 },
            partition,
            bio_based: false,
        }
    }

    #[test]
    fn events_follow_the_device_unless_asked() {
        let path = Path::new("/dev/x");
        let disk = device(None);
        let zram = TracedDevice {
            info: DeviceInfo {
                id: DeviceId {
                    major: 253,
                    minor: 0,
                },
                name: "zram0".into(),
                ..DeviceInfo::default()
            },
            disk: DeviceId {
                major: 253,
                minor: 0,
            },
            partition: None,
            bio_based: true,
        };
        assert_eq!(
            choose_events(&disk, None, path).unwrap(),
            (EventSet::Request, None)
        );
        assert_eq!(
            choose_events(&disk, Some(EventSet::Request), path).unwrap(),
            (EventSet::Request, None)
        );
        let (set, why) = choose_events(&disk, Some(EventSet::Bio), path).unwrap();
        assert_eq!(set, EventSet::Bio);
        assert!(why.unwrap().contains("(asked for)"));
        for asked in [None, Some(EventSet::Bio)] {
            let (set, why) = choose_events(&zram, asked, path).unwrap();
            assert_eq!(set, EventSet::Bio);
            assert!(
                why.unwrap()
                    .starts_with("zram0 is a bio-based device (no request queue): capturing"),
                "{asked:?}"
            );
        }
        let e = choose_events(&zram, Some(EventSet::Request), path)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/dev/x: zram0 is a bio-based device")
                && e.ends_with("with --events bio (or auto)"),
            "{e}"
        );
        // A partition names its disk.
        let part = TracedDevice {
            partition: Some((Bytes(512), Bytes(512))),
            ..zram.clone()
        };
        let (_, why) = choose_events(&part, None, path).unwrap();
        assert!(why.unwrap().starts_with("the disk of zram0 (253:0) is"));

        let names = |set, bio| -> Vec<(&str, bool)> {
            traced_events(set, bio)
                .iter()
                .map(|e| (e.name, e.required))
                .collect()
        };
        assert_eq!(
            names(EventSet::Request, false),
            [
                ("block_rq_issue", true),
                ("block_rq_complete", true),
                ("block_rq_requeue", false)
            ]
        );
        assert_eq!(
            names(EventSet::Bio, true),
            [("block_bio_queue", true), ("block_bio_complete", false)]
        );
        assert_eq!(
            names(EventSet::Bio, false),
            [
                ("block_bio_queue", true),
                ("block_bio_complete", false),
                ("block_rq_complete", false)
            ]
        );
        for set in [EventSet::Request, EventSet::Bio] {
            assert_eq!(traced_events(set, true)[0].name, set.start_event());
        }
    }

    #[cfg(feature = "clap")]
    #[test]
    fn the_command_line_names_the_event_sets_as_name_does() {
        use clap::ValueEnum;
        for set in [EventSet::Request, EventSet::Bio] {
            let value = set.to_possible_value().unwrap();
            assert_eq!(value.get_name(), set.name());
            assert_eq!(EventSet::from_str(set.name(), false), Ok(set));
        }
        assert!(EventSet::from_str("auto", false).is_err());
    }

    #[test]
    fn filters() {
        assert_eq!(event_filter(&device(None)), "dev == 8388608");
        assert_eq!(
            event_filter(&device(Some((Bytes(2048 * 512), Bytes(1000 * 512))))),
            "dev == 8388608 && ((sector >= 2048 && sector < 3048) || nr_sector == 0)"
        );
    }

    #[test]
    fn a_bio_capture_without_completions_says_why() {
        let disk = device(None);
        let zram = TracedDevice {
            bio_based: true,
            ..device(None)
        };
        let name = &disk.info.name;
        // Completions came, nothing was traced, or request events: silence.
        assert_eq!(no_completions(EventSet::Bio, &zram, 5, 1, &[]), None);
        assert_eq!(no_completions(EventSet::Bio, &zram, 0, 0, &[]), None);
        assert_eq!(no_completions(EventSet::Request, &zram, 5, 0, &[]), None);
        let m = no_completions(EventSet::Bio, &zram, 5, 0, &[]).unwrap();
        assert_eq!(
            m,
            format!(
                "the kernel reported no completion for the 5 bio(s) traced on {name} \
                 (block_bio_complete did not fire: the kernel traces a bio's completion only \
                 for bios it flagged BIO_TRACE_COMPLETION): the trace has no latencies"
            )
        );
        let m = no_completions(EventSet::Bio, &zram, 2, 0, &["block_bio_complete"]).unwrap();
        assert!(
            m.contains("(this kernel has no block_bio_complete event)"),
            "{m}"
        );
        // A request-based disk's bios complete as requests.
        let m = no_completions(EventSet::Bio, &disk, 2, 0, &["block_bio_complete"]).unwrap();
        assert!(
            m.contains("(neither block_bio_complete nor block_rq_complete fired)"),
            "{m}"
        );
        let m = no_completions(EventSet::Bio, &disk, 2, 0, &["block_rq_complete"]).unwrap();
        assert!(m.contains("no block_rq_complete event"), "{m}");
    }
}
