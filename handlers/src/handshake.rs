//! The era rules of the backend side (MCP 2026-07-28 `basic/versioning`, stdio and Streamable HTTP
//! backward compatibility): the `server/discover` probe and how its answer is judged, and the legacy
//! `initialize` handshake. Pure: the transports send and receive, this decides.

use protocol::payload::{DiscoverResult, InitializeResult};
use protocol::{ErrorCode, Generation};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::pending::Reply;

/// The modern generation mcpgw speaks to backends.
pub(crate) const MODERN: Generation = Generation::V2026_07_28;
/// The legacy generation mcpgw offers in `initialize`.
pub(crate) const LEGACY_OFFER: Generation = Generation::LATEST_LEGACY;

/// What a probe says about the backend's era.
#[derive(Debug)]
pub(crate) enum Probe {
    /// It serves 2026-07-28: here is how it describes itself.
    Modern(DiscoverResult),
    /// It is modern but refused the probe (a recognised modern error): no fallback to `initialize`.
    ModernRefused(String),
    /// Anything else: legacy, fall back to `initialize`.
    Legacy(String),
}

/// Judges the answer to `server/discover`.
pub(crate) fn judge_discover(reply: Reply) -> Probe {
    match reply {
        Ok(result) => match serde_json::from_str::<DiscoverResult>(result.get()) {
            Ok(d) if d.supported_versions.iter().any(|v| v == MODERN.as_str()) => Probe::Modern(d),
            Ok(d) => Probe::Legacy(format!(
                "server/discover lists {:?}, not {MODERN}",
                d.supported_versions
            )),
            Err(e) => Probe::Legacy(unrecognised("server/discover result", &e)),
        },
        Err(error) => match modern_refusal(&error) {
            Some(why) => Probe::ModernRefused(why),
            None => Probe::Legacy(format!("server/discover failed: {error}")),
        },
    }
}

/// A recognised modern error (-32022 with `data.supported`, -32021, -32020), described; `None` for any
/// other error, which is legacy evidence.
pub(crate) fn modern_refusal(error: &protocol::Error) -> Option<String> {
    match error.code() {
        ErrorCode::UnsupportedProtocolVersion => {
            let supported = error
                .data()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)?;
            let names: Vec<&str> = supported.iter().filter_map(Value::as_str).collect();
            Some(if names.contains(&MODERN.as_str()) {
                format!("the backend supports {MODERN} but refused the probe: {error}")
            } else {
                format!("the backend is modern but supports only {names:?}, not {MODERN}")
            })
        }
        ErrorCode::MissingRequiredClientCapability | ErrorCode::HeaderMismatch => Some(format!(
            "the backend is modern but refused the probe: {error}"
        )),
        _ => None,
    }
}

/// The recognised modern error in an HTTP error body, if any (whatever the id, which may be absent).
pub(crate) fn modern_refusal_in_body(body: &[u8]) -> Option<String> {
    modern_refusal(&error_in_body(body)?)
}

/// The JSON-RPC error carried by an HTTP error body, if it is one (its id may be absent: an HTTP error
/// body "MAY" be a JSON-RPC error without one).
pub(crate) fn error_in_body(body: &[u8]) -> Option<protocol::Error> {
    #[derive(Deserialize)]
    struct Body {
        error: WireError,
    }
    #[derive(Deserialize)]
    struct WireError {
        code: i64,
        message: String,
        #[serde(default)]
        data: Option<Value>,
    }
    let body: Body = serde_json::from_slice(body).ok()?;
    let error = protocol::Error::new(ErrorCode::from_code(body.error.code), body.error.message);
    Some(match body.error.data {
        Some(data) => error.with_data(data),
        None => error,
    })
}

/// The client capabilities declared to legacy backends: what the gateway can serve for clients that declared
/// them in turn (it asks the client, and answers -32601 for a client that did not). Elicitation in both
/// modes: a URL-mode one is relayed where the gateway's rule on whose consent it is allows it.
pub(crate) const LEGACY_CAPABILITIES: &str =
    r#"{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{}}"#;

/// `initialize` params: the newest legacy version, [`LEGACY_CAPABILITIES`], the gateway's client info.
pub(crate) fn initialize_params(client_info: &RawValue) -> Box<RawValue> {
    let text = format!(
        r#"{{"protocolVersion":"{}","capabilities":{LEGACY_CAPABILITIES},"clientInfo":{}}}"#,
        LEGACY_OFFER.as_str(),
        client_info.get()
    );
    RawValue::from_string(text).unwrap_or_else(|_| unreachable!("client info is valid JSON"))
}

/// Why a result did not deserialize, without serde's message, which quotes the backend's values (they
/// would reach `/readyz`): where it failed, and the message at debug.
fn unrecognised(what: &str, e: &serde_json::Error) -> String {
    tracing::debug!(error = %e, "{what} is unrecognised");
    let kind = match e.classify() {
        serde_json::error::Category::Data => "not the shape expected",
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "not JSON",
        serde_json::error::Category::Io => "unreadable",
    };
    format!(
        "{what} is unrecognised: {kind} at line {} column {}",
        e.line(),
        e.column()
    )
}

/// Judges the answer to `initialize`: the negotiated legacy generation and the result, or why not.
pub(crate) fn judge_initialize(reply: Reply) -> Result<(Generation, InitializeResult), String> {
    let result = reply.map_err(|e| format!("initialize failed: {e}"))?;
    let init: InitializeResult =
        serde_json::from_str(result.get()).map_err(|e| unrecognised("initialize result", &e))?;
    match Generation::parse(&init.protocol_version) {
        Ok(g) if !g.is_modern() => Ok((g, init)),
        _ => Err(format!(
            "the backend answered initialize with protocol version {:?}, which mcpgw cannot speak",
            init.protocol_version
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::Error;
    use serde_json::json;

    fn ok(v: Value) -> Reply {
        Ok(serde_json::value::to_raw_value(&v).unwrap())
    }

    #[test]
    fn discover_results() {
        let modern = ok(json!({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}));
        assert!(matches!(judge_discover(modern), Probe::Modern(_)));
        let other = ok(json!({"supportedVersions":["2027-01-01"],"capabilities":{}}));
        assert!(matches!(judge_discover(other), Probe::Legacy(_)));
        assert!(matches!(
            judge_discover(ok(json!({"x":1}))),
            Probe::Legacy(_)
        ));
    }

    #[test]
    fn discover_errors() {
        let e = |code, data: Option<Value>| {
            let err = Error::new(ErrorCode::from_code(code), "no");
            Err(match data {
                Some(d) => err.with_data(d),
                None => err,
            })
        };
        let table = [
            (e(-32601, None), "legacy"),
            (
                e(-32602, Some(json!({"supported":["2024-11-05"]}))),
                "legacy",
            ),
            (e(-32000, None), "legacy"),
            (e(-32022, None), "legacy"),
            (
                e(-32022, Some(json!({"supported":["2026-07-28"]}))),
                "modern",
            ),
            (
                e(-32022, Some(json!({"supported":["2027-01-01"]}))),
                "modern",
            ),
            (e(-32021, None), "modern"),
            (e(-32020, None), "modern"),
        ];
        for (reply, want) in table {
            let got = match judge_discover(reply) {
                Probe::Legacy(_) => "legacy",
                _ => "modern",
            };
            assert_eq!(got, want);
        }
    }

    #[test]
    fn initialize_results() {
        let r = ok(
            json!({"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}),
        );
        assert_eq!(judge_initialize(r).unwrap().0, Generation::V2025_06_18);
        let r = ok(
            json!({"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}}),
        );
        assert!(judge_initialize(r).is_err());
        assert!(judge_initialize(Err(Error::new(ErrorCode::InvalidParams, "x"))).is_err());
        let info = RawValue::from_string(r#"{"name":"mcpgw","version":"0"}"#.into()).unwrap();
        let p: Value = serde_json::from_str(initialize_params(&info).get()).unwrap();
        assert_eq!(p["protocolVersion"], "2025-11-25");
        assert_eq!(p["clientInfo"]["name"], "mcpgw");
        assert_eq!(
            p["capabilities"],
            json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}})
        );
    }

    #[test]
    fn an_unrecognised_result_never_quotes_the_backends_values() {
        // serde names the value it refused ("invalid type: string ..."): the reason (`/readyz`) must not.
        let r = ok(
            json!({"protocolVersion": 7, "capabilities": "INTERNAL-VALUE",
            "serverInfo": {"name": "INTERNAL-NAME", "version": 1}}),
        );
        let why = judge_initialize(r).unwrap_err();
        assert!(
            why.starts_with("initialize result is unrecognised: not the shape expected at line 1"),
            "{why}"
        );
        assert!(!why.contains("INTERNAL"), "{why}");
        let probe = judge_discover(ok(json!({"supportedVersions": "INTERNAL-VALUE"})));
        match probe {
            Probe::Legacy(why) => {
                assert!(
                    why.contains("unrecognised") && !why.contains("INTERNAL"),
                    "{why}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_bodies() {
        let body = br#"{"jsonrpc":"2.0","error":{"code":-32022,"message":"v","data":{"supported":["2026-07-28"],"requested":"x"}}}"#;
        assert!(modern_refusal_in_body(body).is_some());
        assert!(modern_refusal_in_body(b"Bad Request").is_none());
        assert!(
            modern_refusal_in_body(
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}"#
            )
            .is_none()
        );
    }
}
