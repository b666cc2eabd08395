//! Latency histograms in the result file: HdrHistogram's V2 compressed
//! encoding in base64 (the `HISTF...` strings HdrHistogram's own tools
//! read), so histograms of several hosts add up exactly.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Why a stored histogram cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum HdrError {
    #[error("the latency histogram is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("the latency histogram does not decode: {0:?}")]
    Decode(hdrhistogram::serialization::DeserializeError),
}

/// The histogram as a base64 string (`None`: it could not be encoded, which
/// the V2 encoder only does for counts past `i64::MAX`).
pub fn encode(h: &Histogram<u64>) -> Option<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A histogram from [`encode`]'s string.
pub fn decode(text: &str) -> Result<Histogram<u64>, HdrError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(HdrError::Decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_survives_the_round_trip_exactly() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in [1u64, 900, 12_345, 12_346, 7_000_000, 3_000_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let text = encode(&h).unwrap();
        assert!(text.starts_with("HISTF"), "{text}");
        let back = decode(&text).unwrap();
        assert_eq!(back, h);
        assert!(decode("not base64!").is_err());
        assert!(decode("SElTVA==").is_err());
    }
}
