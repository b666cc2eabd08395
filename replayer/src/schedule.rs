//! When each I/O of a pass may be issued: the timing and dependency rules of
//! the replay modes, as pure state machines (no clock reads, no I/O), so the
//! engine only asks and the rules are unit-tested on their own.
//!
//! - [`VirtualClock`]: the original issue times with idle periods longer than
//!   `--idle-cap` shortened to the cap.
//! - [`IssueSchedule`]: the deadline of each I/O. Realtime: `start + shift +
//!   (virtual - first virtual) / scale`, where `shift` grows by the time an
//!   I/O was late after waiting on a slot or a dependency (closed loop);
//!   `--open-loop` never shifts. With think pacing (`--pacing think`), an
//!   I/O whose dependencies completed since the previous issue takes the
//!   largest of their completion shifts instead, earlier or later: its think
//!   time after them is kept, as the task model of `prediction` has it.
//!   Compressed: now.
//! - [`DependencyGate`]: with original completion times, an I/O waits until
//!   no I/O still in flight had an original completion at or before its
//!   original issue (records are issued in order, so that is exactly "every
//!   I/O that had completed before it was issued").

use crate::options::{Pacing, ReplayOptions, TimingMode};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The rules of one pass, from the options and what the trace holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduleRules {
    /// Realtime (a schedule) rather than compressed (as soon as possible).
    pub realtime: bool,
    /// Realtime only: never shift the schedule, no dependencies.
    pub open_loop: bool,
    /// Gate each I/O on the original completions before it.
    pub dependencies: bool,
    /// Realtime closed loop with completions: due times keep the think time
    /// after the dependencies' completions on the target ([`Pacing::Think`];
    /// not for a fleet rank, whose timeline is shared with other hosts).
    pub think: bool,
    /// Schedule speed: 2.0 plays twice as fast.
    pub time_scale: f64,
    /// Realtime only: original idle periods longer than this (ns) become this.
    pub idle_cap_ns: Option<u64>,
    /// Time 0 of the schedule (an original issue time, ns): a fleet rank's
    /// part of a trace keeps the whole trace's first record as its 0 (`None`:
    /// the first record it sees).
    pub origin_ns: Option<u64>,
}

impl ScheduleRules {
    /// `has_completions`: every record of the trace has an original latency.
    pub fn new(opts: &ReplayOptions, has_completions: bool) -> ScheduleRules {
        let realtime = opts.mode == TimingMode::Realtime;
        let open_loop = realtime && opts.open_loop;
        let dependencies = has_completions && !open_loop;
        ScheduleRules {
            realtime,
            open_loop,
            dependencies,
            think: realtime
                && dependencies
                && opts.pacing == Pacing::Think
                && opts.shard.is_none()
                && opts.start_at_unix_ns.is_none(),
            time_scale: opts.time_scale,
            idle_cap_ns: if realtime {
                opts.idle_cap.map(|c| c.0)
            } else {
                None
            },
            origin_ns: opts.shard.as_ref().map(|s| s.origin_ns),
        }
    }
}

/// Original issue times with over-long idle periods cut to the cap. An idle
/// period is a time with no original I/O outstanding: from the latest
/// original completion so far (the issue time where completions are
/// unknown) to the next issue.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    idle_cap_ns: Option<u64>,
    /// Idle time removed so far.
    removed_ns: u64,
    /// Latest original completion (or issue) so far.
    busy_until_ns: u64,
    /// The first record's virtual time.
    first_ns: Option<u64>,
}

impl VirtualClock {
    pub fn new(idle_cap_ns: Option<u64>) -> VirtualClock {
        VirtualClock {
            idle_cap_ns,
            ..VirtualClock::default()
        }
    }

    /// The same with time 0 at the original time `origin_ns` rather than at
    /// the first record taken (only without an idle cap: a cap needs every
    /// record of the timeline).
    pub fn with_origin(idle_cap_ns: Option<u64>, origin_ns: Option<u64>) -> VirtualClock {
        VirtualClock {
            idle_cap_ns,
            first_ns: origin_ns.filter(|_| idle_cap_ns.is_none()),
            ..VirtualClock::default()
        }
    }

    /// Takes the next record (every record, in trace order, skipped ones
    /// too) and returns its virtual time since the first record's.
    pub fn advance(&mut self, issue_ns: u64, completion_ns: Option<u64>) -> u64 {
        if let (Some(cap), Some(_)) = (self.idle_cap_ns, self.first_ns) {
            let idle = issue_ns.saturating_sub(self.busy_until_ns);
            if idle > cap {
                self.removed_ns += idle - cap;
            }
        }
        self.busy_until_ns = self.busy_until_ns.max(completion_ns.unwrap_or(issue_ns));
        let virtual_ns = issue_ns - self.removed_ns.min(issue_ns);
        let first = *self.first_ns.get_or_insert(virtual_ns);
        virtual_ns.saturating_sub(first)
    }
}

/// The deadline of each I/O of a pass.
#[derive(Debug, Clone)]
pub struct IssueSchedule {
    rules: ScheduleRules,
    clock: VirtualClock,
    /// When the first I/O was ready (ns, the caller's clock).
    start_ns: Option<u64>,
    /// Closed loop: how far the schedule moved from the trace's times: time
    /// lost to waits on slots and dependencies, and with think pacing the
    /// dependencies' completion shifts (negative on a faster drive).
    shift_ns: i64,
    /// Think pacing: completions on the target not yet behind the records
    /// admitted, as (original completion, its shift); bounded by the I/Os in
    /// flight together in the original.
    completed: BinaryHeap<Reverse<(u64, i64)>>,
}

impl IssueSchedule {
    pub fn new(rules: ScheduleRules) -> IssueSchedule {
        IssueSchedule {
            clock: VirtualClock::with_origin(rules.idle_cap_ns, rules.origin_ns),
            rules,
            start_ns: None,
            shift_ns: 0,
            completed: BinaryHeap::new(),
        }
    }

    /// The same, with the schedule starting at `start_ns` (several rings
    /// sharing one schedule) instead of at the first `deadline` call.
    pub fn starting_at(mut self, start_ns: u64) -> IssueSchedule {
        self.start_ns = Some(start_ns);
        self
    }

    pub fn rules(&self) -> &ScheduleRules {
        &self.rules
    }

    /// Takes the next record (every record, in order) and returns its
    /// virtual time (ns since the first record, idle capped, not scaled).
    pub fn admit(&mut self, issue_ns: u64, completion_ns: Option<u64>) -> u64 {
        self.clock.advance(issue_ns, completion_ns)
    }

    /// Whether an I/O issued originally at `issue_ns` must wait, given the
    /// earliest original completion among the I/Os in flight.
    pub fn waits_on_dependency(&self, issue_ns: u64, min_inflight_completion_ns: u64) -> bool {
        self.rules.dependencies && min_inflight_completion_ns <= issue_ns
    }

    /// Think pacing: an I/O of original completion `orig_completion_ns` and
    /// virtual completion `virtual_completion_ns` completed on the target at
    /// `now_ns`. Its shift waits for the first I/O issued after it in the
    /// original ([`IssueSchedule::follow_dependencies`]).
    pub fn completed(&mut self, orig_completion_ns: u64, virtual_completion_ns: u64, now_ns: u64) {
        if !self.rules.think || orig_completion_ns == u64::MAX {
            return;
        }
        let Some(start) = self.start_ns else {
            return;
        };
        let due = start + self.scaled(virtual_completion_ns);
        self.completed
            .push(Reverse((orig_completion_ns, now_ns as i64 - due as i64)));
    }

    /// Think pacing, for an I/O issued originally at `orig_issue_ns` whose
    /// dependencies have all completed on the target: when some completed
    /// (in the original) since the previous issue, the schedule takes the
    /// largest of their shifts, so the I/O comes its think time after them;
    /// otherwise it was issued together with the previous one and keeps its
    /// shift. Call before [`IssueSchedule::deadline`].
    pub fn follow_dependencies(&mut self, orig_issue_ns: u64) {
        let mut fresh: Option<i64> = None;
        while let Some(&Reverse((completion, shift))) = self.completed.peek() {
            if completion > orig_issue_ns {
                break;
            }
            self.completed.pop();
            fresh = Some(fresh.map_or(shift, |f| f.max(shift)));
        }
        if let Some(f) = fresh {
            self.shift_ns = f;
        }
    }

    fn scaled(&self, virtual_ns: u64) -> u64 {
        (virtual_ns as f64 / self.rules.time_scale) as u64
    }

    /// The deadline of an I/O of virtual time `virtual_ns` that is ready now
    /// (a slot is free and its dependencies are met). `waited`: it had to
    /// wait for a slot or a dependency first; in closed loop the time it is
    /// late then shifts the rest of the schedule. The first call starts the
    /// schedule at `now_ns`.
    pub fn deadline(&mut self, virtual_ns: u64, now_ns: u64, waited: bool) -> u64 {
        let start = *self.start_ns.get_or_insert(now_ns);
        if !self.rules.realtime {
            // As soon as ready, but not before a shared start: rings set up
            // sooner than others would otherwise run ahead of it.
            return now_ns.max(start);
        }
        let offset = self.scaled(virtual_ns);
        // Never before the start: a faster drive can bring an I/O forward
        // by at most the time the schedule has run.
        let due = (start as i64 + offset as i64 + self.shift_ns).max(start as i64) as u64;
        if waited && !self.rules.open_loop && now_ns > due {
            self.shift_ns = now_ns as i64 - start as i64 - offset as i64;
            return now_ns;
        }
        due
    }

    /// Realtime: where an I/O of virtual time `virtual_ns` lies on the
    /// trace's timeline (the start plus its scaled offset, without the
    /// closed loop's shift); `None` in compressed mode or before the start.
    pub fn timeline_ns(&self, virtual_ns: u64) -> Option<u64> {
        let start = self.start_ns.filter(|_| self.rules.realtime)?;
        Some(start + self.scaled(virtual_ns))
    }

    /// When the schedule started (the first `deadline` call).
    pub fn start_ns(&self) -> Option<u64> {
        self.start_ns
    }

    /// The closed-loop shift so far.
    pub fn shift_ns(&self) -> i64 {
        self.shift_ns
    }
}

/// The original completion times of the I/Os in flight, by slot, with their
/// minimum kept up to date lazily (recomputed only when its holder leaves).
#[derive(Debug, Clone)]
pub struct DependencyGate {
    /// Per slot; `u64::MAX` when free or unknown.
    completions: Vec<u64>,
    min_ns: u64,
    stale: bool,
}

impl DependencyGate {
    pub fn new(slots: usize) -> DependencyGate {
        DependencyGate {
            completions: vec![u64::MAX; slots],
            min_ns: u64::MAX,
            stale: false,
        }
    }

    /// An I/O with this original completion (`u64::MAX`: unknown) went in
    /// flight in `slot`.
    pub fn enter(&mut self, slot: usize, completion_ns: u64) {
        if let Some(c) = self.completions.get_mut(slot) {
            *c = completion_ns;
            if !self.stale {
                self.min_ns = self.min_ns.min(completion_ns);
            }
        }
    }

    /// The I/O in `slot` completed.
    pub fn leave(&mut self, slot: usize) {
        if let Some(c) = self.completions.get_mut(slot) {
            if *c == self.min_ns {
                self.stale = true;
            }
            *c = u64::MAX;
        }
    }

    /// The earliest original completion in flight (`u64::MAX`: none).
    pub fn min_inflight_completion(&mut self) -> u64 {
        if self.stale {
            self.min_ns = self.completions.iter().copied().min().unwrap_or(u64::MAX);
            self.stale = false;
        }
        self.min_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(realtime: bool) -> ScheduleRules {
        ScheduleRules {
            realtime,
            open_loop: false,
            dependencies: true,
            think: false,
            time_scale: 1.0,
            idle_cap_ns: None,
            origin_ns: None,
        }
    }

    fn think_rules() -> ScheduleRules {
        ScheduleRules {
            think: true,
            ..rules(true)
        }
    }

    fn options(mode: TimingMode) -> ReplayOptions {
        ReplayOptions {
            mode,
            ..ReplayOptions::default()
        }
    }

    #[test]
    fn rules_follow_the_mode() {
        let mut opts = options(TimingMode::Realtime);
        opts.idle_cap = Some(trace_format::Nanos(10));
        let r = ScheduleRules::new(&opts, true);
        assert!(r.realtime && r.dependencies && !r.open_loop);
        assert_eq!(r.idle_cap_ns, Some(10));
        assert!(!ScheduleRules::new(&opts, false).dependencies);
        opts.open_loop = true;
        let r = ScheduleRules::new(&opts, true);
        assert!(
            r.open_loop && !r.dependencies,
            "open loop has no dependencies"
        );
        let mut opts = options(TimingMode::Compressed);
        opts.open_loop = true;
        opts.idle_cap = Some(trace_format::Nanos(10));
        let r = ScheduleRules::new(&opts, true);
        assert!(!r.realtime && !r.open_loop && r.dependencies);
        assert_eq!(r.idle_cap_ns, None, "no idle cap without a schedule");
    }

    #[test]
    fn virtual_time_is_relative_to_the_first_record() {
        let mut c = VirtualClock::new(None);
        assert_eq!(c.advance(1_000, None), 0);
        assert_eq!(c.advance(1_500, Some(9_000)), 500);
        assert_eq!(c.advance(50_000, None), 49_000);
    }

    #[test]
    fn idle_cap_cuts_only_idle_time_longer_than_the_cap() {
        let mut c = VirtualClock::new(Some(100));
        assert_eq!(c.advance(0, Some(1_000)), 0);
        // Issued while the first is outstanding: no idle time.
        assert_eq!(c.advance(500, Some(600)), 500);
        // Idle from 1,000 (the latest completion) to 1,050: under the cap.
        assert_eq!(c.advance(1_050, Some(1_100)), 1_050);
        // Idle from 1,100 to 5,100: 4,000, cut to 100 (3,900 removed).
        assert_eq!(c.advance(5_100, Some(5_200)), 1_200);
        // Removed time stays removed.
        assert_eq!(c.advance(5_150, Some(5_200)), 1_250);
    }

    #[test]
    fn idle_cap_without_completions_uses_the_gaps_between_issues() {
        let mut c = VirtualClock::new(Some(10));
        assert_eq!(c.advance(100, None), 0);
        assert_eq!(c.advance(105, None), 5);
        assert_eq!(c.advance(1_105, None), 15);
    }

    #[test]
    fn a_fleet_rank_keeps_the_whole_traces_time_zero() {
        let mut s = IssueSchedule::new(ScheduleRules {
            origin_ns: Some(1_000),
            ..rules(true)
        })
        .starting_at(50_000);
        // This rank's first record is 4 µs into the trace: due 4 µs after
        // the shared start, not at it.
        let v0 = s.admit(5_000, None);
        assert_eq!(v0, 4_000);
        assert_eq!(s.deadline(v0, 10_000, false), 54_000);
        let v1 = s.admit(7_000, None);
        assert_eq!(s.deadline(v1, 10_000, false), 56_000);
    }

    #[test]
    fn idle_before_the_first_record_is_never_cut() {
        let mut c = VirtualClock::new(Some(10));
        assert_eq!(c.advance(1_000_000, None), 0);
        assert_eq!(c.advance(1_000_020, None), 10);
    }

    #[test]
    fn realtime_deadlines_follow_the_trace_from_the_start() {
        let mut s = IssueSchedule::new(rules(true));
        let v0 = s.admit(7_000, Some(8_000));
        assert_eq!(s.deadline(v0, 1_000_000, false), 1_000_000);
        assert_eq!(s.start_ns(), Some(1_000_000));
        let v1 = s.admit(9_000, Some(9_500));
        // Asked early: the deadline is in the future.
        assert_eq!(s.deadline(v1, 1_000_100, false), 1_002_000);
        // Asked late without having waited: late, but no shift.
        let v2 = s.admit(10_000, None);
        assert_eq!(s.deadline(v2, 1_010_000, false), 1_003_000);
        assert_eq!(s.shift_ns(), 0);
    }

    /// A chain: I/O 0 issued at 0 completes at 10 µs; I/O 1 issued at 12 µs
    /// (2 µs of think time after it); I/O 2 at 13 µs, together with 1.
    fn chain(s: &mut IssueSchedule, done0_ns: u64) -> (u64, u64) {
        let v0 = s.admit(0, Some(10_000));
        assert_eq!(s.deadline(v0, 1_000_000, false), 1_000_000);
        s.completed(10_000, v0 + 10_000, done0_ns);
        let v1 = s.admit(12_000, Some(20_000));
        s.follow_dependencies(12_000);
        let d1 = s.deadline(v1, done0_ns, true);
        let v2 = s.admit(13_000, Some(21_000));
        s.follow_dependencies(13_000);
        (d1, s.deadline(v2, d1, false))
    }

    #[test]
    fn think_pacing_keeps_the_think_time_after_a_dependency() {
        let think = think_rules();
        // Completed 7 µs after its issue instead of 10: the next I/O comes
        // 2 µs later, 3 µs before its time in the trace; the one issued
        // together with it keeps that shift.
        let mut s = IssueSchedule::new(think);
        assert_eq!(chain(&mut s, 1_007_000), (1_009_000, 1_010_000));
        assert_eq!(s.shift_ns(), -3_000);
        // Completed 5 µs late: 5 µs later than in the trace.
        let mut s = IssueSchedule::new(think);
        assert_eq!(chain(&mut s, 1_015_000), (1_017_000, 1_018_000));
        assert_eq!(s.shift_ns(), 5_000);
        // The trace's times: never sooner, later by what it waited for.
        let mut s = IssueSchedule::new(rules(true));
        assert_eq!(chain(&mut s, 1_007_000), (1_012_000, 1_013_000));
        let mut s = IssueSchedule::new(rules(true));
        assert_eq!(chain(&mut s, 1_015_000), (1_015_000, 1_016_000));
    }

    #[test]
    fn think_pacing_takes_the_latest_of_several_dependencies() {
        let mut s = IssueSchedule::new(think_rules());
        let v0 = s.admit(0, Some(10_000));
        s.deadline(v0, 0, false);
        let v1 = s.admit(1_000, Some(11_000));
        s.deadline(v1, 1_000, false);
        // 0 completes 4 µs early, 1 2 µs late: the I/O after both follows 1.
        s.completed(10_000, v0 + 10_000, 6_000);
        s.completed(11_000, v1 + 10_000, 13_000);
        let v2 = s.admit(15_000, None);
        s.follow_dependencies(15_000);
        assert_eq!(s.deadline(v2, 13_000, true), 17_000);
        // A completion the next I/O does not depend on in the trace waits.
        let v3 = s.admit(16_000, Some(30_000));
        s.deadline(v3, 17_000, false);
        s.completed(30_000, v3 + 14_000, 18_000);
        let v4 = s.admit(20_000, None);
        s.follow_dependencies(20_000);
        assert_eq!(s.deadline(v4, 18_000, false), 22_000);
        // However fast the drive, the think time after the completion stays.
        let mut s = IssueSchedule::new(think_rules());
        let v0 = s.admit(0, Some(1_000_000));
        s.deadline(v0, 500, false);
        s.completed(1_000_000, v0 + 1_000_000, 600);
        let v1 = s.admit(1_000_010, None);
        s.follow_dependencies(1_000_010);
        assert_eq!(s.deadline(v1, 600, false), 610);
    }

    #[test]
    fn compressed_mode_does_not_start_before_a_shared_start() {
        let mut s = IssueSchedule::new(rules(false)).starting_at(5_000);
        let v0 = s.admit(100, None);
        assert_eq!(s.deadline(v0, 1_000, false), 5_000);
        let v1 = s.admit(9_000_000, None);
        assert_eq!(s.deadline(v1, 6_000, false), 6_000);
    }

    #[test]
    fn a_shared_start_anchors_the_schedule() {
        let mut s = IssueSchedule::new(rules(true)).starting_at(5_000);
        let v0 = s.admit(100, None);
        assert_eq!(s.deadline(v0, 1_000, false), 5_000);
        let v1 = s.admit(300, None);
        assert_eq!(s.deadline(v1, 9_000, false), 5_200);
    }

    #[test]
    fn time_scale_divides_the_offsets() {
        let mut s = IssueSchedule::new(ScheduleRules {
            time_scale: 2.0,
            ..rules(true)
        });
        let v0 = s.admit(0, None);
        assert_eq!(s.deadline(v0, 100, false), 100);
        let v1 = s.admit(1_000, None);
        assert_eq!(s.deadline(v1, 100, false), 600);
        let mut s = IssueSchedule::new(ScheduleRules {
            time_scale: 0.5,
            ..rules(true)
        });
        let v0 = s.admit(0, None);
        s.deadline(v0, 0, false);
        let v1 = s.admit(1_000, None);
        assert_eq!(s.deadline(v1, 0, false), 2_000);
    }

    #[test]
    fn closed_loop_shifts_the_rest_of_the_schedule_after_a_wait() {
        let mut s = IssueSchedule::new(rules(true));
        let v0 = s.admit(0, Some(100));
        assert_eq!(s.deadline(v0, 0, false), 0);
        let v1 = s.admit(1_000, Some(1_100));
        // It waited on a slot and became ready at 1,500: 500 late.
        assert_eq!(s.deadline(v1, 1_500, true), 1_500);
        assert_eq!(s.shift_ns(), 500);
        let v2 = s.admit(2_000, None);
        assert_eq!(s.deadline(v2, 1_600, false), 2_500);
        // Waited but still early: no shift.
        let v3 = s.admit(3_000, None);
        assert_eq!(s.deadline(v3, 2_000, true), 3_500);
        assert_eq!(s.shift_ns(), 500);
    }

    #[test]
    fn open_loop_never_shifts() {
        let mut s = IssueSchedule::new(ScheduleRules {
            open_loop: true,
            dependencies: false,
            ..rules(true)
        });
        let v0 = s.admit(0, None);
        s.deadline(v0, 0, false);
        let v1 = s.admit(1_000, None);
        assert_eq!(s.deadline(v1, 1_500, true), 1_000);
        let v2 = s.admit(2_000, None);
        assert_eq!(s.deadline(v2, 1_600, false), 2_000);
        assert_eq!(s.shift_ns(), 0);
        assert!(!s.waits_on_dependency(5_000, 0));
    }

    #[test]
    fn compressed_issues_now_and_keeps_dependencies() {
        let mut s = IssueSchedule::new(rules(false));
        let v0 = s.admit(0, None);
        assert_eq!(s.deadline(v0, 40, false), 40);
        assert_eq!(s.start_ns(), Some(40));
        let v1 = s.admit(1_000_000, None);
        assert_eq!(s.deadline(v1, 50, true), 50);
        assert_eq!(s.shift_ns(), 0);
        assert!(s.waits_on_dependency(100, 100), "completed at its issue");
        assert!(!s.waits_on_dependency(100, 101));
    }

    #[test]
    fn dependency_gate_tracks_the_earliest_completion_in_flight() {
        let mut g = DependencyGate::new(4);
        assert_eq!(g.min_inflight_completion(), u64::MAX);
        g.enter(0, 500);
        g.enter(1, 300);
        g.enter(2, 900);
        assert_eq!(g.min_inflight_completion(), 300);
        g.leave(0);
        assert_eq!(g.min_inflight_completion(), 300);
        g.leave(1);
        assert_eq!(g.min_inflight_completion(), 900);
        g.enter(1, 100);
        g.enter(3, u64::MAX);
        assert_eq!(g.min_inflight_completion(), 100);
        g.leave(1);
        g.leave(2);
        assert_eq!(g.min_inflight_completion(), u64::MAX);
        // Entering while stale: the minimum is recomputed, not guessed.
        g.enter(0, 50);
        g.leave(0);
        g.enter(2, 70);
        assert_eq!(g.min_inflight_completion(), 70);
    }
}
