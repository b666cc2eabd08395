//! The target: a block device or a regular file (by default a scratch file in
//! the current directory), opened with O_DIRECT, and the safety rules that keep
//! the replay from writing where it must not.

use crate::buffer::AlignedBuf;
use crate::mapping::{AddressMap, TargetSpace, TraceScan};
use crate::options::{DeviceSelector, ReplayOptions};
use crate::source::TraceSource;
use crate::{ReplayError, TargetProblem};
pub use results::schema::TargetKind;
use results::schema::{IoPath, TargetInfo};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use trace_format::Op;

mod file;
use file::open_file;

/// The scratch file created in the current directory when no target is given.
pub const DEFAULT_SCRATCH_NAME: &str = "tracemark-scratch.bin";

const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;
/// `_IO(0x12, 94)`: the device's read-only flag (an int).
const BLKROGET: libc::c_ulong = 0x125e;

/// An opened target.
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    pub size: u64,
    pub logical_block_size: u64,
    pub model: Option<String>,
    /// False only when the user allowed buffered I/O and O_DIRECT was refused.
    pub direct: bool,
    pub writable: bool,
    /// Whether the kernel accepts non-blocking I/O on it (FMODE_NOWAIT, probed
    /// with one `RWF_NOWAIT` read). Without it (zram, brd, some stacked
    /// drivers), io_uring runs every request on its io-wq worker threads.
    pub nowait: bool,
    file: File,
    /// For tracemark's scratch file: keeps its mark true to it when the run
    /// ends (dropped after `file`, so after the run's last write).
    _scratch: Option<file::ScratchClaim>,
}

/// The targets of a replay, in order: the map's target *i* is the *i*-th
/// (`--target` given several times, then `--device-map`). Never empty: the
/// first is the primary, which names the run's target in the result.
pub struct Targets {
    list: Vec<Target>,
}

impl Targets {
    /// One target alone.
    pub fn one(target: Target) -> Targets {
        Targets { list: vec![target] }
    }

    /// `None` when `list` is empty.
    pub fn new(list: Vec<Target>) -> Option<Targets> {
        (!list.is_empty()).then_some(Targets { list })
    }

    /// The first target: the run's target in the result.
    pub fn primary(&self) -> &Target {
        &self.list[0]
    }

    /// Every target, the map's target *i* at index *i*.
    pub fn iter(&self) -> std::slice::Iter<'_, Target> {
        self.list.iter()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Never true; for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The result file's description: the primary, with the others.
    pub fn info(&self) -> TargetInfo {
        let mut info = self.primary().info();
        info.others = self.list[1..].iter().map(Target::info).collect();
        info
    }
}

/// What the replay needs from the target.
#[derive(Debug, Clone)]
pub struct TargetRequest {
    /// `None`: the scratch file in the current directory.
    pub path: Option<PathBuf>,
    /// Bytes the traces need (files are grown to this).
    pub required_size: u64,
    /// Whether anything will be written (writes, discards).
    pub needs_write: bool,
    pub allow_write: bool,
    pub allow_buffered: bool,
}

impl Target {
    /// The result file's description of this target.
    pub fn info(&self) -> TargetInfo {
        let mut info = TargetInfo {
            path: self.path.display().to_string(),
            kind: self.kind,
            size_bytes: self.size,
            model: self.model.clone(),
            logical_block_size: self.logical_block_size,
            direct_io: self.direct,
            io_path: Some(if self.nowait {
                IoPath::Inline
            } else {
                IoPath::IoWq
            }),
            others: Vec::new(),
            drive: None,
            filesystem: None,
        };
        crate::identity_probe::describe(&mut info);
        info
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// The open target, for the positioned reads, writes and syncs done
    /// outside the ring (preconditioning, probes) as safe calls.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Opens (and for files, creates, grows and fills) the target, applying
    /// the safety rules.
    pub fn open(req: &TargetRequest) -> Result<Target, ReplayError> {
        let path = req
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SCRATCH_NAME));
        match std::fs::metadata(&path) {
            Ok(meta) if meta.file_type().is_block_device() => {
                open_block_device(&path, meta.rdev(), req)
            }
            Ok(meta) if meta.is_file() => open_file(&path, req),
            Ok(_) => Err(ReplayError::TargetRefused {
                path,
                kind: TargetProblem::NotFileOrDevice,
                reason: "is neither a regular file nor a block device".into(),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !path.starts_with("/dev") => {
                open_file(&path, req)
            }
            Err(e) => Err(ReplayError::TargetIo {
                path,
                what: "cannot access".into(),
                source: e,
            }),
        }
    }
}

/// Opens every target the options name and builds each trace's address map:
/// `primary` (the scratch file when `None`), then `opts.extra_targets`, then
/// the `--device-map` targets not named before. Files are sized to what the
/// devices routed to them need, plus `opts.target_offset`.
///
/// Routing of a trace device: its `--device-map` entry (by index or MAJ:MIN);
/// else, with several `--target`, the target at its index; else the first.
pub fn open_targets(
    primary: Option<&Path>,
    traces: &[&dyn TraceSource],
    scans: &[TraceScan],
    opts: &ReplayOptions,
) -> Result<(Targets, Vec<AddressMap>), ReplayError> {
    let slots = TargetSlots::new(primary, opts);
    let routes_per_trace = route_devices(traces, scans, opts, &slots)?;
    let needs_write = needs_write(scans, opts);
    let mut targets = Vec::with_capacity(slots.unique.len());
    for (index, path) in slots.unique.iter().enumerate() {
        let need = scans
            .iter()
            .zip(&routes_per_trace)
            .map(|(s, routes)| {
                s.required_bytes_for(opts.mapping, |d| {
                    routes.iter().any(|&(rd, t)| rd == d && t as usize == index)
                })
            })
            .max()
            .unwrap_or(0)
            .max(1 << 20);
        targets.push(open_routed_target(path, need, needs_write, opts)?);
    }
    let spaces: Vec<TargetSpace> = targets
        .iter()
        .map(|t| TargetSpace {
            start: opts.target_offset,
            end: t.size,
            block: t.logical_block_size,
        })
        .collect();
    let mut maps = Vec::with_capacity(traces.len());
    for ((trace, scan), routes) in traces.iter().zip(scans).zip(&routes_per_trace) {
        maps.push(AddressMap::with_targets(
            trace.name(),
            scan,
            opts.mapping,
            &spaces,
            routes,
        )?);
    }
    let targets = Targets::new(targets).ok_or_else(|| ReplayError::Options("no target".into()))?;
    Ok((targets, maps))
}

/// The distinct targets (two names of one file are one target) and the
/// slot in them of each `--target` and each `--device-map` entry.
struct TargetSlots {
    unique: Vec<PathBuf>,
    /// Slot of each `--target`, in order (the primary first).
    named: Vec<u32>,
    /// Slot of each `--device-map` entry's target.
    routes: Vec<u32>,
}

impl TargetSlots {
    fn new(primary: Option<&Path>, opts: &ReplayOptions) -> TargetSlots {
        let first = primary
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SCRATCH_NAME));
        let named: Vec<PathBuf> = std::iter::once(first)
            .chain(opts.extra_targets.iter().cloned())
            .collect();
        let mut unique: Vec<PathBuf> = Vec::new();
        let mut slot = |p: &Path| -> u32 {
            let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            let found = unique
                .iter()
                .position(|u| std::fs::canonicalize(u).unwrap_or_else(|_| u.clone()) == key);
            let i = found.unwrap_or_else(|| {
                unique.push(p.to_path_buf());
                unique.len() - 1
            });
            i as u32
        };
        let named_slots: Vec<u32> = named.iter().map(|p| slot(p)).collect();
        let route_slots: Vec<u32> = opts.device_map.iter().map(|r| slot(&r.target)).collect();
        TargetSlots {
            unique,
            named: named_slots,
            routes: route_slots,
        }
    }
}

/// Per trace: (device, target slot) for every device it uses. A
/// `--device-map` entry no trace uses is an error.
fn route_devices(
    traces: &[&dyn TraceSource],
    scans: &[TraceScan],
    opts: &ReplayOptions,
    slots: &TargetSlots,
) -> Result<Vec<Vec<(u16, u32)>>, ReplayError> {
    let mut routes_per_trace = Vec::with_capacity(traces.len());
    let mut route_used = vec![false; opts.device_map.len()];
    for (trace, scan) in traces.iter().zip(scans) {
        let table = trace.devices();
        let mut routes = Vec::new();
        for &device in scan.device_max_end.keys() {
            let explicit = opts.device_map.iter().position(|r| match r.source {
                DeviceSelector::Index(i) => i == device,
                DeviceSelector::Id(id) => table.get(device as usize) == Some(&id),
            });
            let target = match explicit {
                Some(i) => {
                    if let Some(u) = route_used.get_mut(i) {
                        *u = true;
                    }
                    slots.routes.get(i).copied().unwrap_or(0)
                }
                None if slots.named.len() > 1 => {
                    slots.named.get(device as usize).copied().unwrap_or(0)
                }
                None => 0,
            };
            routes.push((device, target));
        }
        routes_per_trace.push(routes);
    }
    if let Some(i) = route_used.iter().position(|u| !u) {
        let r = &opts.device_map[i];
        return Err(ReplayError::Options(format!(
            "--device-map {}={}: no trace has device {} (`tracemark info` lists a trace's devices)",
            r.source,
            r.target.display(),
            r.source
        )));
    }
    Ok(routes_per_trace)
}

/// Whether the run writes: writes or discards it keeps, or preconditioning
/// where the user allows writing at all; never under `read_only`.
fn needs_write(scans: &[TraceScan], opts: &ReplayOptions) -> bool {
    let writes_kept = |s: &TraceScan| {
        (if opts.skips(Op::Write) {
            0
        } else {
            s.summary.writes
        }) + (if opts.skips(Op::Discard) {
            0
        } else {
            s.summary.discards
        })
    };
    let preconditions =
        opts.precondition != crate::options::PreconditionPolicy::Skip && opts.allow_write;
    !opts.read_only && (preconditions || scans.iter().any(|s| writes_kept(s) > 0))
}

/// Opens one target for `need` bytes past `--target-offset`, and checks the
/// offset against its block size and end.
fn open_routed_target(
    path: &Path,
    need: u64,
    needs_write: bool,
    opts: &ReplayOptions,
) -> Result<Target, ReplayError> {
    let target = Target::open(&TargetRequest {
        path: Some(path.to_path_buf()),
        required_size: need.saturating_add(opts.target_offset),
        needs_write,
        allow_write: opts.allow_write,
        allow_buffered: opts.allow_buffered,
    })?;
    if !opts.target_offset.is_multiple_of(target.logical_block_size) {
        return Err(ReplayError::Options(format!(
            "--target-offset {} is not a multiple of {}'s logical block size ({} bytes)",
            opts.target_offset,
            target.path.display(),
            target.logical_block_size
        )));
    }
    if opts.target_offset >= target.size {
        return Err(ReplayError::TargetRefused {
            path: target.path.clone(),
            kind: TargetProblem::TooSmall,
            reason: format!(
                "--target-offset {} is at or beyond its end ({} bytes)",
                opts.target_offset, target.size
            ),
        });
    }
    Ok(target)
}

fn io_err(path: &Path, what: &str) -> impl FnOnce(io::Error) -> ReplayError {
    let path = path.to_path_buf();
    let what = what.to_string();
    move |source| ReplayError::TargetIo { path, what, source }
}

/// Whether the file takes non-blocking I/O: the kernel refuses `RWF_NOWAIT`
/// with EOPNOTSUPP exactly where it lacks FMODE_NOWAIT, the flag io_uring
/// checks before issuing inline, and it checks that before the read starts.
/// The read is at `end`, the end of the file or device, so where the flag is
/// there it returns 0 without any I/O (a replay sends nothing that is not in
/// the trace). Any other outcome counts as support, which keeps the default
/// path.
fn probe_nowait(file: &File, end: u64) -> bool {
    let Ok(buf) = AlignedBuf::new(4096) else {
        return true;
    };
    let iov = buf.iovec();
    // SAFETY: one read into our own 4 KiB buffer.
    let rc = unsafe {
        libc::preadv2(
            file.as_raw_fd(),
            &iov,
            1,
            end as libc::off_t,
            libc::RWF_NOWAIT,
        )
    };
    !(rc < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EOPNOTSUPP))
}

fn dev_numbers(rdev: u64) -> (u32, u32) {
    (libc::major(rdev), libc::minor(rdev))
}

fn open_block_device(path: &Path, rdev: u64, req: &TargetRequest) -> Result<Target, ReplayError> {
    let refuse = |kind: TargetProblem, reason: String| ReplayError::TargetRefused {
        path: path.to_path_buf(),
        kind,
        reason,
    };
    let (major, minor) = dev_numbers(rdev);
    let writes = req.needs_write;
    if writes && !req.allow_write {
        return Err(refuse(
            TargetProblem::WriteNotAllowed,
            "is a block device and the traces write; pass --allow-write to let tracemark overwrite its contents, or --read-only to replay only the reads".into(),
        ));
    }
    if writes {
        if let Some(why) = crate::in_use::block_device_refusal(path, major, minor) {
            return Err(refuse(
                TargetProblem::InUse,
                format!("{why}; tracemark never writes to a device in use"),
            ));
        }
    }
    let mut o = OpenOptions::new();
    o.read(true).write(writes);
    // O_EXCL on a block device claims it: the kernel refuses if it is mounted.
    let flags = libc::O_DIRECT | if writes { libc::O_EXCL } else { 0 };
    o.custom_flags(flags);
    // A claim can outlive its holder's close by a moment: the kernel releases
    // a file the last reference of which an io_uring's asynchronous teardown
    // dropped (a replay just before, in this process or another) from a work
    // queue. Two copies of the system tests at once saw it. So EBUSY is
    // retried for up to a second; a device that stays claimed is refused.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let file = loop {
        match o.open(path) {
            Ok(file) => break file,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                if std::time::Instant::now() >= give_up {
                    return Err(refuse(
                        TargetProblem::Busy,
                        "is in use (the kernel refused exclusive access)".into(),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(io_err(path, "cannot open")(e)),
        }
    };
    let mut read_only: libc::c_int = 0;
    // SAFETY: BLKROGET writes an int.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BLKROGET as _, &mut read_only) };
    // The kernel opens a read-only device for writing and fails each write:
    // refused here, before a pass measures nothing but errors.
    if writes && rc == 0 && read_only != 0 {
        return Err(refuse(
            TargetProblem::ReadOnly,
            "is read-only (its kernel read-only flag is set) and the traces write; replay with --read-only, or make it writable first (blockdev --setrw)".into(),
        ));
    }
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes a u64.
    if unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64 as _, &mut size) } != 0 {
        return Err(io_err(path, "cannot read the device size")(
            io::Error::last_os_error(),
        ));
    }
    let mut lbs: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes an int.
    if unsafe { libc::ioctl(file.as_raw_fd(), BLKSSZGET as _, &mut lbs) } != 0 {
        return Err(io_err(path, "cannot read the logical block size")(
            io::Error::last_os_error(),
        ));
    }
    let block = (lbs as u64).max(512);
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::BlockDevice,
        size: size / block * block,
        logical_block_size: block,
        model: device_model(major, minor),
        direct: true,
        writable: writes,
        nowait: probe_nowait(&file, size),
        file,
        _scratch: None,
    })
}

fn sys_dir(major: u32, minor: u32) -> PathBuf {
    PathBuf::from(format!("/sys/dev/block/{major}:{minor}"))
}

/// The device's model from sysfs (its parent's for a partition), or the
/// backing file of a loop device.
fn device_model(major: u32, minor: u32) -> Option<String> {
    let dir = sys_dir(major, minor);
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    read(dir.join("device/model"))
        .or_else(|| read(dir.join("../device/model")))
        .or_else(|| read(dir.join("loop/backing_file")).map(|f| format!("loop device over {f}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_file_is_created_filled_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.bin");
        let req = TargetRequest {
            path: Some(path.clone()),
            required_size: 3 << 20,
            needs_write: true,
            allow_write: false,
            allow_buffered: false,
        };
        let t = match Target::open(&req) {
            Ok(t) => t,
            Err(ReplayError::NoDirectIo { .. }) => return, // tmpfs: nothing to test here
            Err(e) => panic!("{e}"),
        };
        assert_eq!(t.size, 3 << 20);
        assert_eq!(t.kind, TargetKind::File);
        let data = std::fs::read(&path).unwrap();
        // incompressible: no 4 KiB block of zeros, blocks differ
        assert!(data.chunks(4096).all(|c| c.iter().any(|b| *b != 0)));
        assert_ne!(data[..4096], data[4096..8192]);
        drop(t);
        // reused when large enough (contents kept), grown when too small
        let small = TargetRequest {
            required_size: 1 << 20,
            ..req.clone()
        };
        assert_eq!(Target::open(&small).unwrap().size, 3 << 20);
        assert_eq!(std::fs::read(&path).unwrap()[..4096], data[..4096]);
        let big = TargetRequest {
            required_size: 5 << 20,
            ..req
        };
        assert_eq!(Target::open(&big).unwrap().size, 5 << 20);
        let grown = std::fs::read(&path).unwrap();
        assert_eq!(grown[..4096], data[..4096]);
        assert!(grown[4 << 20..]
            .chunks(4096)
            .all(|c| c.iter().any(|b| *b != 0)));
    }
}
