//! Garbage in, one clear error out: every text parser, fed valid lines with
//! random bytes flipped, inserted or cut, returns an error naming the file and
//! line (or parses), and never panics.

use proptest::prelude::*;
use recorder::convert::{convert_records, ConvertOptions};
use recorder::detect::Format;
use std::path::PathBuf;
use trace_format::IoRecord;

/// A few valid lines per format: the seeds the mutations start from.
fn seeds(format: Format) -> &'static str {
    match format {
        Format::Blkparse => "  8,0    3        1     0.000000000   697  Q  WS 223490 + 8 [kjournald]\n  8,0    3        2     0.000001000   697  D  WS 223490 + 8 [kjournald]\n  8,0    3        3     0.000101000     0  C  WS 223490 + 8 [0]\n",
        Format::Tracefs => "              dd-1234    [001] .....   123.456789: block_rq_issue: 7,0 W 4096 () 0 + 8 be,0,4 [dd]\n          <idle>-0       [001] d.h1.   123.456999: block_rq_complete: 7,0 W () 0 + 8 be,0,4 [0]\n",
        Format::Msr => "128166372003061629,web,1,Read,3154152960,32768,18741\n128166372003061639,web,1,Write,3154185728,4096,1000\n",
        Format::Fio => "fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n10 /dev/sdb read 0 4096\n20 /dev/sdb write 8192 4096\n30 /dev/sdb close\n",
        Format::Spc => "0,20941264,8192,W,0.551706\n0,20939840,8192,r,0.554041\n",
        Format::Wpa => "IO Type;Init Time (s);Complete Time (s);IO Time (\u{b5}s);Size (B);Min Offset;Max Offset;Disk;Count\nRead;1,079943800;1,080031000;87,200;512;0x0000000000000000;0x00000000000001FF;1;1\nWrite;1,080034500;1,080111700;77,200;16.384;0x0000000000000400;0x00000000000043FF;1;1\n",
        Format::Xperf => "DiskRead, 1000, System (4), 8, 0x0, 0x100000, 0x1000, 120, 0, 0x0, 100, 0, Original, 0x0, \"C:\\file\"\nDiskWrite, 1500, System (4), 8, 0x0, 0x200000, 0x2000, 80, 0, 0x0, 60, 0, Original, 0x0, \"\"\n",
        Format::Blktrace => "",
    }
}

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

const TEXT_FORMATS: [Format; 7] = [
    Format::Blkparse,
    Format::Tracefs,
    Format::Msr,
    Format::Fio,
    Format::Spc,
    Format::Wpa,
    Format::Xperf,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn mutated_input_never_panics(
        which in 0usize..TEXT_FORMATS.len(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..6),
        skip_bad in any::<bool>(),
        detect in any::<bool>(),
    ) {
        let format = TEXT_FORMATS[which];
        let bytes = mutate(seeds(format).as_bytes(), &edits);
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
    for format in TEXT_FORMATS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.txt");
        std::fs::write(&path, seeds(format)).unwrap();
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
