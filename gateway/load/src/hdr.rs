//! A latency histogram as text and back: HDR's own V2 serialization (the format of HdrHistogram's Java, C
//! and Go libraries), in standard base64, so that a JSON report carries it (`--hdr`) and `merge` adds
//! histograms exactly. It must not change what is recorded: the histograms are the ones of `stats`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};

use super::stats::new_histogram;

/// `h` in HDR's V2 serialization, base64.
pub(crate) fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail for want of space; V2 fails only on counts beyond i64, which a run
    // cannot reach. An empty string then decodes as an error, never as a wrong histogram.
    if V2Serializer::new().serialize(h, &mut bytes).is_err() {
        return String::new();
    }
    STANDARD.encode(bytes)
}

/// The histogram `text` holds, with the bounds of the generator's own (so that adding cannot fail).
pub(crate) fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    let read: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an hdr histogram: {e:?}"))?;
    let mut h = new_histogram();
    h.add(&read)
        .map_err(|e| format!("a histogram beyond the generator's bounds: {e:?}"))?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_comes_back_with_every_count() {
        let mut h = new_histogram();
        for v in [1u64, 17, 250, 250, 9_999, 1_000_000] {
            h.record(v).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.len(), 6);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn text_that_is_not_a_histogram_is_refused_with_the_reason() {
        for (text, why) in [
            ("***", "not base64"),
            ("aGVsbG8=", "not an hdr histogram"),
            ("", "not an hdr histogram"),
        ] {
            let err = decode(text).unwrap_err();
            assert!(err.starts_with(why), "{text:?}: {err}");
        }
    }
}
