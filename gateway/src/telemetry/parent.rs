//! The trace a request joins: a W3C `traceparent` (and its `tracestate`) from the client's HTTP headers or
//! from the request's `params._meta` (SEP-414's keys, which win: they belong to the one message, a header
//! to the whole HTTP request). A value that is not a valid W3C trace context is ignored, never an error to
//! the client: the request then starts a trace of its own.
//!
//! It must not keep the client's values for anything but the parent of the gateway's span: backends get the
//! gateway's own context (`spans`), never these strings.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use protocol::raw::RawObject;
use serde_json::value::RawValue;

/// A `traceparent` and its `tracestate`, as a client sent them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Carrier<'a> {
    /// The `traceparent` value.
    pub traceparent: Option<&'a str>,
    /// The `tracestate` value.
    pub tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            handlers::TRACEPARENT => self.traceparent,
            handlers::TRACESTATE => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec![handlers::TRACEPARENT, handlers::TRACESTATE]
    }
}

/// Whether `value` has the W3C `traceparent` form: `version-traceid-parentid-flags` in lower-case hex
/// (2, 32, 16, 2 digits), the version not `ff`, the ids not all zeros; version `00` exactly that, a later
/// version that and possibly more fields after a `-`. (The propagator alone accepts short ids.)
fn well_formed(value: &str) -> bool {
    let bytes = value.as_bytes();
    let hex = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .is_some_and(|b| b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
    };
    let dash = |at: usize| bytes.get(at) == Some(&b'-');
    let nonzero = |range: std::ops::Range<usize>| bytes[range].iter().any(|c| *c != b'0');
    let shape =
        hex(0..2) && dash(2) && hex(3..35) && dash(35) && hex(36..52) && dash(52) && hex(53..55);
    if !shape || &value[..2] == "ff" || !nonzero(3..35) || !nonzero(36..52) {
        return false;
    }
    match &value[..2] {
        "00" => bytes.len() == 55,
        _ => bytes.len() == 55 || dash(55),
    }
}

/// The remote parent a carrier names, or `None` when it names none or an invalid one.
pub fn remote(carrier: Carrier<'_>) -> Option<Context> {
    if !well_formed(carrier.traceparent?) {
        return None;
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// The trace context in a request's `params._meta`, if it has a valid one.
pub fn from_meta(params: Option<&RawValue>) -> Option<Context> {
    let params = RawObject::parse(params?)?;
    let meta = RawObject::parse(params.get("_meta")?)?;
    let text = |key: &str| -> Option<String> { serde_json::from_str(meta.get(key)?.get()).ok() };
    let (traceparent, tracestate) = (text(handlers::TRACEPARENT), text(handlers::TRACESTATE));
    remote(Carrier {
        traceparent: traceparent.as_deref(),
        tracestate: tracestate.as_deref(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn only_a_valid_w3c_traceparent_names_a_parent() {
        // (traceparent, tracestate, a parent?, sampled?)
        let cases: [(Option<&str>, Option<&str>, bool, bool); 13] = [
            (Some(VALID), None, true, true),
            (Some(VALID), Some("vendor=1,other=2"), true, true),
            (
                Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"),
                None,
                true,
                false,
            ),
            // a future version with more fields is read as far as this version knows
            (
                Some("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"),
                None,
                true,
                true,
            ),
            (None, Some("vendor=1"), false, false),
            (Some(""), None, false, false),
            (Some("garbage"), None, false, false),
            // version ff is invalid
            (
                Some("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
                None,
                false,
                false,
            ),
            // all-zero trace id, all-zero span id
            (
                Some("00-00000000000000000000000000000000-b7ad6b7169203331-01"),
                None,
                false,
                false,
            ),
            (
                Some("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"),
                None,
                false,
                false,
            ),
            // upper-case hex, short ids, extra fields in version 00
            (
                Some("00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"),
                None,
                false,
                false,
            ),
            (
                Some("00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01"),
                None,
                false,
                false,
            ),
            (Some(&*format!("{VALID}-extra")), None, false, false),
        ];
        for (traceparent, tracestate, parent, sampled) in cases {
            let found = remote(Carrier {
                traceparent,
                tracestate,
            });
            assert_eq!(found.is_some(), parent, "{traceparent:?}");
            if let Some(cx) = found {
                let span = cx.span();
                let sc = span.span_context();
                assert!(sc.is_remote());
                assert_eq!(sc.is_sampled(), sampled, "{traceparent:?}");
                assert_eq!(
                    sc.trace_id().to_string(),
                    "0af7651916cd43dd8448eb211c80319c"
                );
                assert_eq!(sc.span_id().to_string(), "b7ad6b7169203331");
            }
        }
    }

    #[test]
    fn the_tracestate_comes_with_its_parent() {
        let cx = remote(Carrier {
            traceparent: Some(VALID),
            tracestate: Some("vendor=1"),
        })
        .unwrap();
        assert_eq!(cx.span().span_context().trace_state().header(), "vendor=1");
    }

    #[test]
    fn meta_keys_are_read_and_anything_else_is_no_parent() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let with = |meta: &str| from_meta(Some(&raw(&format!(r#"{{"name":"t","_meta":{meta}}}"#))));
        assert!(
            with(&format!(
                r#"{{"traceparent":"{VALID}","tracestate":"a=1"}}"#
            ))
            .is_some()
        );
        assert!(with(&format!(r#"{{"traceparent":"{VALID}"}}"#)).is_some());
        assert!(with(r#"{"traceparent":"nope"}"#).is_none());
        assert!(with(r#"{"traceparent":42}"#).is_none());
        assert!(with(r#"{"progressToken":1}"#).is_none());
        assert!(with(r#""not an object""#).is_none());
        assert!(from_meta(Some(&raw("[1]"))).is_none());
        assert!(from_meta(None).is_none());
    }
}
