//! A run's plan: the settings a replay runs with, resolved in one step from
//! what the command line asked, the suite file and what this system allows,
//! with the reason for every setting that differs from the request. The
//! combinations that make no sense are refused here, and only here.

pub use crate::error::InvalidOptions;
use crate::options::{
    CpuIdle, IdleCap, Priority, ReplayOptions, Setting, SettingChange, TimingMode,
};
use trace_format::Nanos;

/// The idle cap of a suite file that sets none: the built-in profiles' cap,
/// so a suite file and a profile of the same traces score alike.
pub const SUITE_DEFAULT_IDLE_CAP: IdleCap = IdleCap::Cap(Nanos(1_000_000_000));

/// What the user asked: every option as given, and the idle cap apart, since
/// a cap not given is the suite file's to choose.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The options as asked (their `idle_cap` is ignored: see below).
    pub options: ReplayOptions,
    /// `--idle-cap` (`--keep-idle` is `none`); None when not given.
    pub idle_cap: Option<IdleCap>,
}

/// What a suite file says about how to replay it.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteSettings {
    /// Where the settings come from, for a reader: `profile quick`,
    /// `suite file my.toml`.
    pub source: String,
    /// The suite file's `idle_cap` (None: [`SUITE_DEFAULT_IDLE_CAP`]).
    pub idle_cap: Option<IdleCap>,
}

/// What this system allows that a request may ask for; an `Err` carries why
/// not.
pub trait System {
    /// `--priority high`: SCHED_FIFO for the issuing thread.
    fn realtime_priority(&self) -> Result<(), String>;
    /// `--cpu-idle poll`: a CPU latency request of 0 µs.
    fn cpu_idle_poll(&self) -> Result<(), String>;
}

/// The machine this process runs on.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThisSystem;

impl System for ThisSystem {
    fn realtime_priority(&self) -> Result<(), String> {
        crate::engine::realtime_priority_available()
            .map_err(|e| format!("SCHED_FIFO refused ({e})"))
    }

    fn cpu_idle_poll(&self) -> Result<(), String> {
        crate::cpu_idle::available()
            .map_err(|e| format!("{} refused ({e})", crate::cpu_idle::CPU_LATENCY_FILE))
    }
}

/// The effective settings of a run and why each that differs from the
/// request does.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The options the run uses, as the result file records them.
    pub options: ReplayOptions,
    /// Each setting whose effective value is not what was asked, with why.
    pub changes: Vec<SettingChange>,
}

impl Plan {
    /// Resolves `request` against the suite file (`suite`, for `tracemark
    /// suite`) and `system`. A combination that makes no sense is an error
    /// naming the option; one the system refuses is turned down and recorded.
    pub fn resolve(
        request: Request,
        suite: Option<&SuiteSettings>,
        system: &dyn System,
    ) -> Result<Plan, InvalidOptions> {
        let mut options = request.options;
        options.idle_cap = request.idle_cap.and_then(IdleCap::as_option);
        options.idle_policy = None;
        validate(&options)?;
        let mut changes = Vec::new();
        if let Some(change) = suite_idle_cap(&mut options, request.idle_cap, suite) {
            changes.push(change);
        }
        if options.priority == Priority::High {
            if let Err(why) = system.realtime_priority() {
                options.priority = Priority::Normal;
                changes.push(change(Setting::Priority, "high", "normal", why));
            }
        }
        if options.cpu_idle == CpuIdle::Poll {
            if let Err(why) = system.cpu_idle_poll() {
                options.cpu_idle = CpuIdle::Os;
                changes.push(change(Setting::CpuIdle, "poll", "os", why));
            }
        }
        Ok(Plan { options, changes })
    }
}

/// A suite replayed in realtime with no cap asked and closed loop: the
/// suite file's cap, else the default one.
fn suite_idle_cap(
    options: &mut ReplayOptions,
    asked: Option<IdleCap>,
    suite: Option<&SuiteSettings>,
) -> Option<SettingChange> {
    let suite = suite?;
    if asked.is_some() || options.mode != TimingMode::Realtime || options.open_loop {
        return None;
    }
    let (cap, why) = match suite.idle_cap {
        Some(cap) => (cap, format!("{}: idle_cap", suite.source)),
        None => (
            SUITE_DEFAULT_IDLE_CAP,
            format!("{} sets no idle_cap: the default", suite.source),
        ),
    };
    options.idle_cap = cap.as_option();
    let mut change = change(Setting::IdleCap, "", &cap.to_string(), why);
    change.requested = None;
    Some(change)
}

fn change(setting: Setting, requested: &str, effective: &str, why: String) -> SettingChange {
    SettingChange {
        setting,
        requested: Some(requested.to_string()),
        effective: effective.to_string(),
        why,
    }
}

/// Refuses the combinations of options that make no sense, naming the
/// command-line option. [`Plan::resolve`] calls it; so does
/// [`crate::run_suite`] for options that did not come through a plan.
pub fn validate(o: &ReplayOptions) -> Result<(), InvalidOptions> {
    let bad = |s: &str| Err(InvalidOptions(s.to_string()));
    if !(o.time_scale.is_finite() && o.time_scale > 0.0) {
        return bad("--time-scale must be a positive number");
    }
    if o.queue_depth == 0 || o.queue_depth > 4096 {
        return bad("--queue-depth must be between 1 and 4096");
    }
    if o.passes == 0 {
        return bad("--passes must be at least 1");
    }
    if o.mode == TimingMode::Compressed && o.idle_cap.is_some() {
        return bad("--idle-cap applies to realtime mode; compressed mode removes all idle time");
    }
    if o.mode == TimingMode::Compressed && o.open_loop {
        return bad("--open-loop applies to realtime mode");
    }
    if o.shard.is_some() && o.idle_cap.is_some() {
        return bad(
            "--idle-cap with --shard: each rank sees only its own volumes' idle periods, so ranks would cut different ones and leave the shared timeline; replay a fleet without --idle-cap",
        );
    }
    if o.start_at_unix_ns.is_some() && (o.passes != 1 || o.warmup) {
        return bad(
            "--start-at schedules one pass: add --passes 1 --no-warmup (each pass of a fleet needs its own agreed start)",
        );
    }
    for (i, a) in o.device_map.iter().enumerate() {
        if o.device_map[..i].iter().any(|b| b.source == a.source) {
            return Err(InvalidOptions(format!(
                "--device-map names device {} twice",
                a.source
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A system that allows everything, or nothing.
    struct Fake(bool);

    impl System for Fake {
        fn realtime_priority(&self) -> Result<(), String> {
            if self.0 {
                Ok(())
            } else {
                Err("no CAP_SYS_NICE".into())
            }
        }
        fn cpu_idle_poll(&self) -> Result<(), String> {
            if self.0 {
                Ok(())
            } else {
                Err("no root".into())
            }
        }
    }

    fn request(idle_cap: Option<&str>) -> Request {
        Request {
            options: ReplayOptions::default(),
            idle_cap: idle_cap.map(|s| s.parse().unwrap()),
        }
    }

    fn suite(idle_cap: Option<&str>) -> SuiteSettings {
        SuiteSettings {
            source: "suite file s.toml".into(),
            idle_cap: idle_cap.map(|s| s.parse().unwrap()),
        }
    }

    #[test]
    fn the_command_line_cap_wins_over_the_suite_file_and_needs_no_reason() {
        let plan = Plan::resolve(
            request(Some("20ms")),
            Some(&suite(Some("50ms"))),
            &Fake(true),
        );
        let plan = plan.unwrap();
        assert_eq!(plan.options.idle_cap, Some(Nanos(20_000_000)));
        assert!(plan.changes.is_empty(), "{:?}", plan.changes);
    }

    #[test]
    fn the_suite_file_cap_applies_when_none_is_asked_and_says_so() {
        let plan = Plan::resolve(request(None), Some(&suite(Some("50ms"))), &Fake(true)).unwrap();
        assert_eq!(plan.options.idle_cap, Some(Nanos(50_000_000)));
        assert_eq!(
            plan.changes,
            [SettingChange {
                setting: Setting::IdleCap,
                requested: None,
                effective: "50ms".into(),
                why: "suite file s.toml: idle_cap".into(),
            }]
        );
        let plan = Plan::resolve(request(None), Some(&suite(None)), &Fake(true)).unwrap();
        assert_eq!(plan.options.idle_cap, Some(Nanos(1_000_000_000)));
        assert!(plan.changes[0].why.contains("sets no idle_cap"));
        // `replay` has no suite file: no cap unless asked.
        let plan = Plan::resolve(request(None), None, &Fake(true)).unwrap();
        assert_eq!(plan.options.idle_cap, None);
        assert!(plan.changes.is_empty());
    }

    #[test]
    fn a_cap_spelled_either_way_resolves_alike() {
        let cli = Plan::resolve(request(Some("1.5")), None, &Fake(true)).unwrap();
        let file = Plan::resolve(request(None), Some(&suite(Some("1500ms"))), &Fake(true));
        assert_eq!(cli.options.idle_cap, file.unwrap().options.idle_cap);
        assert_eq!(cli.options.idle_cap, Some(Nanos(1_500_000_000)));
    }

    #[test]
    fn what_the_system_refuses_is_turned_down_with_the_reason() {
        let mut req = request(None);
        req.options.priority = Priority::High;
        let plan = Plan::resolve(req.clone(), None, &Fake(false)).unwrap();
        assert_eq!(plan.options.priority, Priority::Normal);
        assert_eq!(plan.options.cpu_idle, CpuIdle::Os);
        let settings: Vec<_> = plan.changes.iter().map(|c| c.setting).collect();
        assert_eq!(settings, [Setting::Priority, Setting::CpuIdle]);
        assert_eq!(plan.changes[1].requested.as_deref(), Some("poll"));
        assert_eq!(plan.changes[1].why, "no root");
        let plan = Plan::resolve(req, None, &Fake(true)).unwrap();
        assert_eq!(plan.options.priority, Priority::High);
        assert!(plan.changes.is_empty());
    }

    #[test]
    fn nonsense_is_refused_naming_the_option() {
        let mut req = request(Some("10ms"));
        req.options.mode = TimingMode::Compressed;
        let e = Plan::resolve(req, None, &Fake(true)).unwrap_err();
        assert!(e.0.starts_with("--idle-cap applies to realtime"), "{e}");
        // `none` in compressed mode asks for nothing compressed mode lacks.
        let mut req = request(Some("none"));
        req.options.mode = TimingMode::Compressed;
        assert!(Plan::resolve(req, None, &Fake(true)).is_ok());
        let mut req = request(None);
        req.options.passes = 0;
        assert!(Plan::resolve(req, None, &Fake(true)).is_err());
    }
}
