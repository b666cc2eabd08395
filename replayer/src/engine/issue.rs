//! One request into the ring: whether a record is sent at all, and the
//! submission entry for it.

use super::pass::{Pass, Pending, Slot};
use super::{concurrent_work, Engine, BLOCK_URING_CMD_DISCARD};
use crate::options::ReplayOptions;
use crate::ReplayError;
use io_uring::{opcode, squeue, types};
use results::schema::Skipped;
use trace_format::{Flags, Op};

/// `user_data` of the flush linked before a preflush write: the write's slot
/// with this bit set, so its completion is told from the write's.
pub(super) const PREFLUSH_TAG: u64 = 1 << 32;

/// The operation a record is replayed as: a write of no data that asks for
/// a cache flush is a flush (converters that see the whole request already
/// make it one; a record from elsewhere may not).
pub(super) fn replayed_op(rec: &trace_format::IoRecord) -> Op {
    if rec.op == Op::Write && rec.len.0 == 0 && rec.flags.contains(Flags::PREFLUSH) {
        Op::Flush
    } else {
        rec.op
    }
}

impl Engine<'_> {
    /// Why a record is not sent to the target, as a counter to bump.
    /// `op` is the record's [`replayed_op`].
    pub(super) fn skip_reason(
        &self,
        rec: &trace_format::IoRecord,
        op: Op,
        target: u32,
        opts: &ReplayOptions,
    ) -> Option<fn(&mut Skipped)> {
        let writes = !matches!(op, Op::Read);
        if opts.read_only && writes {
            return Some(|s| s.read_only += 1);
        }
        if opts.skips(op) {
            return Some(|s| s.by_option += 1);
        }
        let discards = self.discard_supported.get(target as usize) == Some(&true);
        match op {
            Op::Read | Op::Write if rec.len.0 == 0 => Some(|s| s.empty += 1),
            Op::Discard if !discards || rec.len.0 == 0 => Some(|s| s.discards += 1),
            Op::WriteZeroes => Some(|s| s.write_zeroes += 1),
            _ => None,
        }
    }

    pub(super) fn issue(
        &mut self,
        pass: &mut Pass,
        p: &Pending,
        sched: u64,
    ) -> Result<(), ReplayError> {
        let Some(slot) = pass.free.pop() else {
            return Ok(()); // unreachable: checked by the caller
        };
        let Some(entry) = self.entry(p, slot) else {
            pass.free.push(slot); // unreachable: such records are skipped
            return Ok(());
        };
        let concurrent = self.punted.get(p.target as usize) == Some(&true)
            && concurrent_work(
                self.cooperative,
                pass.inflight,
                self.polls_for_completions(pass) && self.completion_waits.paying(),
            );
        let entry = if concurrent {
            entry.flags(squeue::Flags::ASYNC)
        } else {
            entry
        };
        if p.cache.preflush {
            self.push_preflush(pass, slot, p.target, concurrent)?;
        }
        // SAFETY: the buffers referenced stay valid until the completion.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            self.submit(pass)?;
        }
        if let Some(s) = pass.slots.get_mut(slot as usize) {
            *s = Slot {
                index: p.index,
                op: p.op,
                target: p.target,
                offset: p.offset,
                len: p.len,
                device: p.device,
                sched_ns: sched,
                submit_ns: 0,
                in_flight: true,
                orig_completion: p.orig_completion,
                virtual_completion: p.virtual_completion(),
                preflush_result: 0,
            };
        }
        pass.inflight += 1;
        pass.last_timeline_ns = pass.schedule.timeline_ns(p.virtual_ns);
        pass.gate.enter(slot as usize, p.orig_completion);
        pass.queued.push(slot);
        // Compressed mode submits each request on its own, as fio does by
        // default, rather than the refill after a wake-up in one batch. On a
        // loop device at QD32-64, where the issuer otherwise sleeps after
        // every batch, that took compressed replay from 0.86x to 0.99x and
        // from 0.96x to 1.04x fio's replay (medians of 4 paired runs): the
        // submissions' `io_uring_enter`s also run the completions that came
        // in meanwhile (GETEVENTS while the ring flags task work), so the
        // thread sleeps, and is woken by the device, about half as often.
        // Realtime mode keeps batches: requests due together go together.
        if self.cooperative {
            self.submit(pass)?;
        }
        Ok(())
    }

    /// The submission entry for `p` in `slot` (none for an operation that
    /// has no asynchronous form).
    fn entry(&mut self, p: &Pending, slot: u32) -> Option<squeue::Entry> {
        let fd = types::Fixed(p.target);
        let len32 = p.len.min(u32::MAX as u64) as u32;
        let entry = match p.op {
            Op::Read => {
                // SAFETY: slot < queue_depth, so the slot lies inside read_bufs.
                let buf = unsafe {
                    self.read_bufs
                        .as_mut_ptr()
                        .add(slot as usize * self.slot_len as usize)
                };
                if self.fixed_buffers {
                    opcode::ReadFixed::new(fd, buf, len32, slot as u16)
                        .offset(p.offset)
                        .build()
                } else {
                    opcode::Read::new(fd, buf, len32).offset(p.offset).build()
                }
            }
            Op::Write => {
                // The slot is free, so nothing in flight uses its buffer;
                // p.len <= slot_len. Its stamps were renewed when the slot's
                // last write completed (`Engine::reap`).
                let buf = self.write_data.buffer(slot as usize);
                // RWF_DSYNC: the block layer sends the write with FUA.
                let rw_flags = if p.cache.fua { libc::RWF_DSYNC } else { 0 };
                if self.fixed_buffers {
                    opcode::WriteFixed::new(fd, buf, len32, self.queue_depth as u16)
                        .offset(p.offset)
                        .rw_flags(rw_flags)
                        .build()
                } else {
                    opcode::Write::new(fd, buf, len32)
                        .offset(p.offset)
                        .rw_flags(rw_flags)
                        .build()
                }
            }
            Op::Flush => opcode::Fsync::new(fd).build(),
            Op::Discard => {
                let mut cmd = [0u8; 16];
                cmd[..8].copy_from_slice(&p.len.to_le_bytes());
                opcode::UringCmd16::new(fd, BLOCK_URING_CMD_DISCARD)
                    .addr(Some(p.offset))
                    .cmd(cmd)
                    .build()
            }
            Op::WriteZeroes => return None,
        }
        .user_data(slot as u64);
        Some(entry)
    }

    /// The flush linked before a write with a preflush, in `slot`: it goes
    /// first and the write only once it completed (IO_LINK); both must
    /// enter the same submission, or the link would end with it. On success
    /// the flush posts no completion where the kernel can skip it; `reap`
    /// ignores it where it cannot.
    fn push_preflush(
        &mut self,
        pass: &mut Pass,
        slot: u32,
        target: u32,
        concurrent: bool,
    ) -> Result<(), ReplayError> {
        while {
            let sq = self.ring.submission();
            sq.capacity() - sq.len() < 2
        } {
            self.submit(pass)?;
        }
        let mut flags = squeue::Flags::IO_LINK;
        if self.ring.params().is_feature_skip_cqe_on_success() {
            flags |= squeue::Flags::SKIP_SUCCESS;
        }
        if concurrent {
            flags |= squeue::Flags::ASYNC;
        }
        let flush = opcode::Fsync::new(types::Fixed(target))
            .build()
            .flags(flags)
            .user_data(slot as u64 | PREFLUSH_TAG);
        // SAFETY: a flush references no memory.
        while unsafe { self.ring.submission().push(&flush) }.is_err() {
            self.submit(pass)?;
        }
        Ok(())
    }
}
