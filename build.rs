//! Embeds the reference suite (every `traces/*.toml` profile and every
//! `traces/*.tmt` trace) in the binary, so an installed `tracemark suite`
//! runs with the checkout gone. Writes `$OUT_DIR/reference_traces.rs`: the
//! files as `include_bytes!` and a content hash naming their cache folder.

use std::fmt::Write as _;
use std::path::Path;

#[path = "trace-format/src/fnv.rs"]
mod fnv;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".toml") || n.ends_with(".tmt"))
        .collect();
    names.sort();
    // FNV-1a over names and contents: a name for the cache folder that
    // changes whenever any embedded byte does.
    let mut hash = fnv::Fnv1a::default();
    let mut code = String::from(
        "/// The embedded files of `traces/`: (file name, contents).\npub static FILES: &[(&str, &[u8])] = &[\n",
    );
    for n in &names {
        let path = dir.join(n);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        hash.write(n.as_bytes());
        hash.write(&(bytes.len() as u64).to_le_bytes());
        hash.write(&bytes);
        writeln!(
            code,
            "    ({n:?}, include_bytes!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    writeln!(
        code,
        "/// Hash of every embedded name and byte.\npub const CONTENT_HASH: &str = \"{:016x}\";",
        hash.finish()
    )
    .unwrap();
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("reference_traces.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
