//! Argument parsers and defaults shared by the subcommands.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use recorder::formats::{format_names, Format};
use trace_format::WriterOptions;

/// What a written trace says about itself, and how it is compressed: the
/// options `convert` and `capture` share.
#[derive(Args, Debug, Clone)]
pub struct TraceMetaArgs {
    /// Trace name (default: the first input's file name; for a capture, the
    /// device's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Trace description.
    #[arg(long)]
    pub description: Option<String>,
    /// Application or category (`game load`, `office`).
    #[arg(long)]
    pub category: Option<String>,
    /// zstd level of the trace's chunks (1-22; higher is smaller and slower).
    #[arg(long, default_value_t = WriterOptions::default().zstd_level)]
    pub level: i32,
}

impl TraceMetaArgs {
    /// The writer options `--level` asks for.
    pub fn writer_options(&self) -> Result<WriterOptions, String> {
        if !(1..=22).contains(&self.level) {
            return Err(format!("--level {} is outside zstd's 1..=22", self.level));
        }
        Ok(WriterOptions {
            zstd_level: self.level,
            ..WriterOptions::default()
        })
    }
}

/// A choice whose default, `auto`, leaves it to the input or the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoOr<T> {
    Auto,
    Chosen(T),
}

impl<T> AutoOr<T> {
    /// `None` for `auto`.
    pub fn chosen(self) -> Option<T> {
        match self {
            AutoOr::Auto => None,
            AutoOr::Chosen(t) => Some(t),
        }
    }
}

/// Parses `auto` (its help: `auto_help`) or one of `T`'s values, so that
/// `--help` and completions list them all.
pub fn auto_or<T: ValueEnum + Send + Sync + 'static>(
    auto_help: &'static str,
) -> impl TypedValueParser<Value = AutoOr<T>> {
    let auto = PossibleValue::new("auto").help(auto_help);
    let values = T::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value);
    PossibleValuesParser::new(std::iter::once(auto).chain(values)).try_map(|name: String| {
        if name == "auto" {
            return Ok(AutoOr::Auto);
        }
        T::from_str(&name, false).map(AutoOr::Chosen)
    })
}

/// Parses `convert --format`: `auto` or a format of the recorder's table,
/// by name or alias, in any case; `--help` and completions list the names.
pub fn input_format() -> impl TypedValueParser<Value = AutoOr<Format>> {
    let formats = Format::all().map(|f| PossibleValue::new(f.name()).aliases(f.spec().aliases));
    PossibleValuesParser::new(std::iter::once(PossibleValue::new("auto")).chain(formats)).try_map(
        |name: String| {
            if name.eq_ignore_ascii_case("auto") {
                return Ok(AutoOr::Auto);
            }
            Format::from_name(&name)
                .map(AutoOr::Chosen)
                .ok_or_else(|| format!("unknown --format '{name}' (auto, {})", format_names()))
        },
    )
}

/// The one duration grammar (`100ms`, `1.5s`, a bare number of seconds),
/// shared with suite files.
pub use replayer::options::parse_duration;

/// `4096`, `512K`, `1MiB`, `2G`: a byte count, binary units (K = KiB).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a byte count (try 4096, 64K, 1MiB, 2G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        other => {
            return Err(format!(
                "'{s}': unknown unit '{other}' (use K, M, G, T, binary)"
            ))
        }
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse_with_binary_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("2g"), Ok(2 << 30));
        assert!(parse_bytes("1.5M").is_err());
        assert!(parse_bytes("-4").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }
}
