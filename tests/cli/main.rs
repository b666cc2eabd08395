//! End-to-end tests that need no privilege: conversion, info and export,
//! replay to scratch files, compare and reports, the reference traces.
//! (Tests that need root, devices or tracefs are in `tests/system/`.)

// `pub`: the support module is shared by both test binaries, and each uses a
// part of it.
#[path = "../support/mod.rs"]
pub mod support;

mod bench_result;
mod breakdown;
mod calibrate;
mod code_shape;
mod compare;
mod completions;
mod conformance_samples;
mod convert_blkparse;
mod convert_errors;
mod convert_etl;
mod convert_output;
mod convert_safety;
mod cpu_wait;
mod datasets;
mod doc_links;
mod drive_serial;
mod fleet;
mod html_report;
mod info_export;
mod installed_binary;
mod outputs;
mod parsers_never_panic;
mod reference_traces;
mod replay_mapping;
mod replay_metrics;
mod replay_timing;
mod results_db;
mod results_export;
mod results_judged;
mod results_leaderboard;
mod snapshots;
mod target_safety;
