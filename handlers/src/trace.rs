//! [`TraceContext`]: the W3C trace context the gateway gives a backend for one request — the gateway's own
//! span (its backend-call span), never the client's — and how it travels: `traceparent` and `tracestate`
//! in `params._meta` (SEP-414's keys, every transport) and as HTTP headers (Streamable HTTP backends).
//!
//! Plain strings: this crate knows no OpenTelemetry. It must not parse, invent or check the values (the
//! gateway made them from its own span), and must not let a client's values through where it sets its own.

use protocol::raw::RawObject;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::value::RawValue;

/// The `_meta` key and HTTP header of the W3C `traceparent` (SEP-414).
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key and HTTP header of the W3C `tracestate` (SEP-414).
pub const TRACESTATE: &str = "tracestate";

/// The trace context a backend request carries: the gateway's backend-call span.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    /// `00-<trace id>-<span id>-<flags>`.
    pub traceparent: String,
    /// The vendor entries of the trace (empty: none, and the key is left out).
    pub tracestate: String,
}

impl TraceContext {
    /// Adds `traceparent` (and `tracestate` when there is one) to `headers`, replacing any there; values a
    /// header cannot carry are left out.
    pub(crate) fn apply(&self, headers: &mut HeaderMap) {
        let pairs = [
            (TRACEPARENT, &self.traceparent),
            (TRACESTATE, &self.tracestate),
        ];
        for (name, value) in pairs {
            headers.remove(name);
            if value.is_empty() {
                continue;
            }
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
    }

    /// `params` with `_meta.traceparent` set to this context's (and `_meta.tracestate` set, or removed when
    /// this context has none): whatever the client had put there is replaced. Params that are not an object
    /// are returned as they are (they carry no `_meta`).
    pub(crate) fn stamp(&self, params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
        let edited = {
            let mut object = match params.as_deref() {
                None => RawObject::default(),
                Some(p) => match RawObject::parse(p) {
                    Some(o) => o,
                    None => return params,
                },
            };
            let mut meta = object
                .get("_meta")
                .and_then(RawObject::parse)
                .unwrap_or_default();
            meta.remove(TRACEPARENT);
            meta.remove(TRACESTATE);
            meta.set_value(TRACEPARENT, &self.traceparent);
            if !self.tracestate.is_empty() {
                meta.set_value(TRACESTATE, &self.tracestate);
            }
            let meta = meta.to_raw();
            object.remove("_meta");
            object.set("_meta", meta);
            object.to_raw()
        };
        Some(edited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const OURS: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn ours(state: &str) -> TraceContext {
        TraceContext {
            traceparent: OURS.into(),
            tracestate: state.into(),
        }
    }

    fn stamped(context: &TraceContext, params: Option<&str>) -> Option<Value> {
        let params = params.map(|p| RawValue::from_string(p.to_owned()).unwrap());
        context
            .stamp(params)
            .map(|p| serde_json::from_str(p.get()).unwrap())
    }

    #[test]
    fn the_gateways_context_replaces_the_clients_in_meta_and_nothing_else_changes() {
        let client = r#"{"name":"echo","arguments":{"n":10000000000000000000001},"_meta":{"traceparent":"00-11111111111111111111111111111111-2222222222222222-01","tracestate":"client=1","progressToken":7}}"#;
        let out = stamped(&ours("gw=1"), Some(client)).unwrap();
        assert_eq!(out["_meta"]["traceparent"], OURS);
        assert_eq!(out["_meta"]["tracestate"], "gw=1");
        assert_eq!(out["_meta"]["progressToken"], 7);
        assert_eq!(out["name"], "echo");
        // without a tracestate of its own the client's is removed, not kept
        let out = stamped(&ours(""), Some(client)).unwrap();
        assert_eq!(out["_meta"].get("tracestate"), None);
        // absent params and params without _meta get one
        assert_eq!(
            stamped(&ours(""), None).unwrap(),
            json!({"_meta": {"traceparent": OURS}})
        );
        assert_eq!(
            stamped(&ours(""), Some(r#"{"uri":"x"}"#)).unwrap(),
            json!({"uri": "x", "_meta": {"traceparent": OURS}})
        );
        // array params are left alone
        assert_eq!(stamped(&ours(""), Some("[1]")).unwrap(), json!([1]));
    }

    #[test]
    fn headers_are_replaced_and_an_empty_tracestate_removed() {
        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static("client"));
        headers.insert(TRACESTATE, HeaderValue::from_static("client=1"));
        ours("").apply(&mut headers);
        assert_eq!(headers.get(TRACEPARENT).unwrap(), OURS);
        assert_eq!(headers.get(TRACESTATE), None);
        ours("gw=1").apply(&mut headers);
        assert_eq!(headers.get(TRACESTATE).unwrap(), "gw=1");
    }
}
