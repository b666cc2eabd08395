//! Garbage in, one clear error out: every text parser, fed valid lines with
//! random bytes flipped, inserted or cut, returns an error naming the file and
//! line (or parses), and never panics.

use proptest::prelude::*;
use recorder::convert::{convert_records, ConvertOptions};
use recorder::formats::Format;
use std::path::PathBuf;
use trace_format::IoRecord;

fn mutate(seed: &[u8], edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for &(pos, byte, kind) in edits {
        if v.is_empty() {
            v.push(byte);
            continue;
        }
        let at = pos % v.len();
        match kind % 4 {
            0 => v[at] = byte,
            1 => v.insert(at, byte),
            2 => {
                v.remove(at);
            }
            _ => v.truncate(at),
        }
    }
    v
}

/// Every text format: the recorder's table, each with its own example lines
/// as the seed the mutations start from.
fn text_formats() -> Vec<Format> {
    Format::text().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn mutated_input_never_panics(
        which in 0usize..text_formats().len(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..6),
        skip_bad in any::<bool>(),
        detect in any::<bool>(),
    ) {
        let format = text_formats()[which];
        let bytes = mutate(format.spec().example.as_bytes(), &edits);
        let dir = tempfile::tempdir().unwrap();
        let path: PathBuf = dir.path().join("input.txt");
        std::fs::write(&path, &bytes).unwrap();
        let opts = ConvertOptions {
            format: if detect { None } else { Some(format) },
            skip_bad,
            ..Default::default()
        };
        let mut out: Vec<IoRecord> = Vec::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            convert_records(std::slice::from_ref(&path), &opts, &mut out)
        }));
        let result = result.map_err(|_| format!("{} parser panicked on {:?}", format.name(), String::from_utf8_lossy(&bytes)));
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
        if let Ok(Err(e)) = result {
            let msg = e.to_string();
            prop_assert!(msg.contains("input.txt"), "error does not name the file: {}", msg);
            prop_assert_eq!(msg.lines().count(), 1, "error is not one line: {}", msg);
        }
        // Whatever was accepted is in time order (the writer would refuse otherwise).
        prop_assert!(out.windows(2).all(|w| w[0].time <= w[1].time));
    }
}

#[test]
fn the_seeds_themselves_parse() {
    for format in text_formats() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.txt");
        std::fs::write(&path, format.spec().example).unwrap();
        let opts = ConvertOptions {
            format: Some(format),
            ..Default::default()
        };
        let mut out: Vec<IoRecord> = Vec::new();
        convert_records(&[path], &opts, &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", format.name()));
        assert!(!out.is_empty(), "{}: no records", format.name());
    }
}
