use super::*;

/// Every sentence a writer of any version produced, and some no writer did:
/// each reads back as a variant and writes back as the same string.
const TRACE_SENTENCES: &[&str] = &[
    "124928 I/Os failed on the device (write: 124928)",
    "3 I/Os failed on the device (read: 1, write: 2)",
    "7 I/Os failed on the device (all: 7)",
    "40 of 1000 I/Os per pass were left out without being asked for",
    "interrupted: a partial pass",
    "realtime issue lateness median 12345 µs (over 10000 µs): the trace's timing was not kept",
    "interrupted by SIGTERM after 1 of 3 scored passes",
    "124928 I/Os failed on the device (write: 124928); interrupted: a partial pass",
    "",
    "; ;",
    "1e3 I/Os failed on the device (read: 1000)",
    "realtime issue lateness median 1e5 µs (over 10000 µs): the trace's timing was not kept",
    "marked not valid",
];

const RUN_SENTENCES: &[&str] = &[
    "office-calc: 124928 I/Os failed on the device (write: 124928)",
    "t: 3 I/Os failed on the device (read: 3); interrupted: a partial pass",
    "copy: interrupted by SIGTERM in pass 2; a partial result (1 of 3 traces replayed)",
    "the run was interrupted: a partial result",
    "marked not valid",
    "interrupted by SIGTERM before the replay began; none of the 3 traces was replayed",
    "rank 1: ready to issue 0.250 s after --start-at; its schedule started late (choose a later --start-at)",
    "no colon here",
    "a: b: c",
    "t: x; a partial result (one of 3 traces replayed)",
    "",
];

#[test]
fn a_problem_round_trips_through_json_as_the_same_string() {
    for s in TRACE_SENTENCES {
        let json = serde_json::to_string(s).unwrap();
        let typed: Problems = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&typed).unwrap(), json, "{s:?}");
        assert_eq!(typed.to_string(), *s);
    }
    for s in RUN_SENTENCES {
        let json = serde_json::to_string(s).unwrap();
        let typed: RunProblem = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&typed).unwrap(), json, "{s:?}");
    }
}

#[test]
fn sentences_read_back_as_their_variants() {
    let p: Problems = TRACE_SENTENCES[1].parse().unwrap();
    assert_eq!(
        p.0,
        vec![Problem::DeviceErrors {
            total: 3,
            per_op: vec![("read".into(), 1), ("write".into(), 2)]
        }]
    );
    let p: Problems = TRACE_SENTENCES[7].parse().unwrap();
    assert!(matches!(
        p.0.as_slice(),
        [
            Problem::DeviceErrors { total: 124928, .. },
            Problem::Interrupted
        ]
    ));
    assert_eq!(
        Problem::parse(TRACE_SENTENCES[3]),
        Problem::Skipped {
            skipped: 40,
            of: 1000
        }
    );
    assert_eq!(
        Problem::parse(TRACE_SENTENCES[5]),
        Problem::LateIssue { p50_us: 12345.0 }
    );
    // A number written another way than the writer writes it stays text.
    assert!(matches!(
        Problem::parse(TRACE_SENTENCES[10]),
        Problem::Other(_)
    ));
    assert!(matches!(
        Problem::parse(TRACE_SENTENCES[11]),
        Problem::Other(_)
    ));

    let r = RunProblem::parse(RUN_SENTENCES[2]);
    assert_eq!(
        r,
        RunProblem::Stopped {
            trace: "copy".into(),
            why: Problems(vec![Problem::Other(
                "interrupted by SIGTERM in pass 2".into()
            )]),
            replayed: 1,
            traces: 3,
        }
    );
    assert_eq!(r.trace(), Some("copy"));
    assert_eq!(
        RunProblem::parse(RUN_SENTENCES[0]).trace(),
        Some("office-calc")
    );
    assert_eq!(RunProblem::parse(RUN_SENTENCES[3]), RunProblem::Interrupted);
    assert_eq!(
        RunProblem::parse(RUN_SENTENCES[4]),
        RunProblem::MarkedNotValid
    );
    assert!(matches!(
        RunProblem::parse(RUN_SENTENCES[5]),
        RunProblem::Other(_)
    ));
    assert!(matches!(
        RunProblem::parse(RUN_SENTENCES[7]),
        RunProblem::Other(_)
    ));
    assert_eq!(RunProblem::parse(RUN_SENTENCES[8]).trace(), Some("a"));
    assert_eq!(
        RunProblem::parse(RUN_SENTENCES[6]),
        RunProblem::LateStart {
            rank: 1,
            late_s: 0.25
        }
    );
}

#[test]
fn typed_problems_read_back_as_themselves() {
    let all = vec![
        RunProblem::Trace {
            trace: "t".into(),
            problems: Problems(vec![
                Problem::DeviceErrors {
                    total: 5,
                    per_op: vec![("flush".into(), 5)],
                },
                Problem::Skipped { skipped: 9, of: 90 },
                Problem::Interrupted,
                Problem::LateIssue { p50_us: 20000.0 },
            ]),
        },
        RunProblem::Stopped {
            trace: "u".into(),
            why: Problems(vec![Problem::Other("the device stopped answering".into())]),
            replayed: 2,
            traces: 5,
        },
        RunProblem::LateStart {
            rank: 3,
            late_s: 1.5,
        },
        RunProblem::Interrupted,
        RunProblem::MarkedNotValid,
        RunProblem::Other("rank 2 failed".into()),
    ];
    let json = serde_json::to_string(&all).unwrap();
    let back: Vec<RunProblem> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, all, "{json}");
}
