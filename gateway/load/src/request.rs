//! The requests a session sends, built once per run: each a [`Template`] holding the JSON body up to its
//! id and the constant headers, so that sending one costs an id and a copy.
//!
//! Modern (2026-07-28) requests carry `_meta` (protocolVersion, clientCapabilities, clientInfo) and the
//! mirrored headers: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (tool name or resource URI) and one
//! `Mcp-Param-{Name}` per `x-mcp-header` annotation of the tool's `inputSchema` whose argument is given.
//! Legacy requests get `Mcp-Session-Id` and `MCP-Protocol-Version` per session, when sent.

use bytes::Bytes;
use protocol::Generation;
use protocol::headers::{ParamHeader, argument_at, encode_value, names, value_for};
use protocol::meta;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::target::header_value;

/// What `Accept` says on every POST: both answers a Streamable HTTP server may give.
pub(crate) const ACCEPT: &str = "application/json, text/event-stream";

/// `clientInfo` of every session.
pub(crate) fn client_info() -> Value {
    json!({"name": "mcpgw-load", "version": env!("CARGO_PKG_VERSION")})
}

/// One request, ready to send with any id.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// The body up to the id: `{"jsonrpc":"2.0","method":…,"params":…,"id":`.
    prefix: String,
    headers: HeaderMap,
}

impl Template {
    /// A modern request: `_meta` added to `params`, mirrored headers set. `name` is what `Mcp-Name`
    /// mirrors; `params_headers` are the tool's `x-mcp-header` annotations.
    pub(crate) fn modern(
        method: &'static str,
        params: Map<String, Value>,
        name: Option<&str>,
        param_headers: &[ParamHeader],
    ) -> Template {
        Template::modern_with(method, params, name, param_headers, json!({}))
    }

    /// [`Template::modern`] declaring the client `capabilities`.
    pub(crate) fn modern_with(
        method: &'static str,
        mut params: Map<String, Value>,
        name: Option<&str>,
        param_headers: &[ParamHeader],
        capabilities: Value,
    ) -> Template {
        let mut headers = base_headers();
        headers.insert(
            HeaderName::from_static(names::PROTOCOL_VERSION),
            HeaderValue::from_static(Generation::V2026_07_28.as_str()),
        );
        headers.insert(HeaderName::from_static(names::METHOD), header_value(method));
        if let Some(n) = name {
            headers.insert(
                HeaderName::from_static(names::NAME),
                header_value(&encode_value(n)),
            );
        }
        let arguments = params.get("arguments").and_then(Value::as_object);
        for p in param_headers {
            let value = argument_at(arguments, &p.path).and_then(|v| value_for(p.kind, v));
            let header = format!("{}{}", names::PARAM_PREFIX, p.header.to_ascii_lowercase());
            if let (Some(v), Ok(h)) = (value, HeaderName::from_bytes(header.as_bytes())) {
                headers.insert(h, header_value(&v));
            }
        }
        params.insert("_meta".into(), modern_meta(capabilities));
        Template::with(method, Value::Object(params), headers)
    }

    /// A legacy request (session headers are added when it is sent).
    pub(crate) fn legacy(method: &'static str, params: Map<String, Value>) -> Template {
        Template::with(method, Value::Object(params), base_headers())
    }

    fn with(method: &'static str, params: Value, headers: HeaderMap) -> Template {
        let prefix = format!(
            r#"{{"jsonrpc":"2.0","method":{},"params":{params},"id":"#,
            Value::from(method)
        );
        Template { prefix, headers }
    }

    /// The body with request id `id`.
    pub(crate) fn body(&self, id: u64) -> Bytes {
        let mut s = String::with_capacity(self.prefix.len() + 21);
        s.push_str(&self.prefix);
        s.push_str(&id.to_string());
        s.push('}');
        Bytes::from(s)
    }

    /// The headers; for a legacy session with its id and negotiated version.
    pub(crate) fn headers(&self, session: Option<&LegacyHeaders>) -> HeaderMap {
        let mut h = self.headers.clone();
        if let Some(s) = session {
            s.apply(&mut h);
        }
        h
    }
}

/// What a legacy session adds to every request.
#[derive(Debug, Clone)]
pub(crate) struct LegacyHeaders {
    session_id: Option<HeaderValue>,
    version: Generation,
}

impl LegacyHeaders {
    pub(crate) fn new(session_id: Option<&str>, version: Generation) -> LegacyHeaders {
        LegacyHeaders {
            session_id: session_id.and_then(|s| HeaderValue::from_str(s).ok()),
            version,
        }
    }

    /// Whether the server gave the session an id (a server without sessions has nothing to delete).
    pub(crate) fn has_session(&self) -> bool {
        self.session_id.is_some()
    }

    /// Adds `Mcp-Session-Id` (when the server gave one) and `MCP-Protocol-Version` (from 2025-06-18).
    pub(crate) fn apply(&self, h: &mut HeaderMap) {
        if let Some(sid) = &self.session_id {
            h.insert(HeaderName::from_static(names::SESSION_ID), sid.clone());
        }
        if self.version.has_protocol_version_header() {
            h.insert(
                HeaderName::from_static(names::PROTOCOL_VERSION),
                HeaderValue::from_static(self.version.as_str()),
            );
        }
    }
}

fn base_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        HeaderName::from_static(names::CONTENT_TYPE),
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        HeaderName::from_static(names::ACCEPT),
        HeaderValue::from_static(ACCEPT),
    );
    h
}

/// The `_meta` of a modern request declaring the client `capabilities`.
pub(crate) fn modern_meta(capabilities: Value) -> Value {
    json!({
        meta::PROTOCOL_VERSION: Generation::V2026_07_28.as_str(),
        meta::CLIENT_CAPABILITIES: capabilities,
        meta::CLIENT_INFO: client_info(),
    })
}

/// The capabilities of a client that answers a server's questions (`--mix` with `ask`): `{}` for each of
/// elicitation (form mode), sampling and roots.
pub(crate) fn answering_capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

/// The headers of a legacy session's POST of an answer (a JSON-RPC response): its session's too.
pub(crate) fn answer_headers(session: &LegacyHeaders) -> HeaderMap {
    let mut h = base_headers();
    session.apply(&mut h);
    h
}

/// `params` of a legacy `initialize` for `version`, declaring the client `capabilities`.
pub(crate) fn initialize_params(version: Generation, capabilities: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("protocolVersion".into(), Value::from(version.as_str()));
    m.insert("capabilities".into(), capabilities);
    m.insert("clientInfo".into(), client_info());
    m
}

/// The body of `notifications/initialized`.
pub(crate) const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// `{"name": tool, "arguments": args}`.
pub(crate) fn call_params(tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), Value::from(tool));
    m.insert("arguments".into(), Value::Object(args.clone()));
    m
}

/// `{"uri": uri}`.
pub(crate) fn read_params(uri: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("uri".into(), Value::from(uri));
    m
}

/// `{"cursor": c}` or `{}`.
pub(crate) fn page_params(cursor: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(c) = cursor {
        m.insert("cursor".into(), Value::from(c));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::headers::param_headers;

    fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
        h.get(name).and_then(|v| v.to_str().ok())
    }

    #[test]
    fn modern_tool_call_mirrors_name_and_params() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "absent": {"type": "boolean", "x-mcp-header": "Absent"},
            "text": {"type": "string"}}});
        let annotations = param_headers(&schema).unwrap();
        let args = json!({"region": "eu-wést", "count": 3, "text": "hi"});
        let params = call_params("m__regional", args.as_object().unwrap());
        let t = Template::modern("tools/call", params, Some("m__regional"), &annotations);
        let h = t.headers(None);
        assert_eq!(header(&h, "mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(header(&h, "mcp-method"), Some("tools/call"));
        assert_eq!(header(&h, "mcp-name"), Some("m__regional"));
        assert_eq!(
            header(&h, "mcp-param-region").map(str::to_owned),
            Some(encode_value("eu-wést").into_owned())
        );
        assert_eq!(header(&h, "mcp-param-count"), Some("3"));
        assert!(h.get("mcp-param-absent").is_none());
        assert!(h.get("mcp-session-id").is_none());
        let body: Value = serde_json::from_slice(&t.body(42)).unwrap();
        assert_eq!(body["id"], 42);
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["method"], "tools/call");
        assert_eq!(body["params"]["name"], "m__regional");
        assert_eq!(body["params"]["arguments"], args);
        let m = &body["params"]["_meta"];
        assert_eq!(m[meta::PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(m[meta::CLIENT_CAPABILITIES], json!({}));
        assert_eq!(m[meta::CLIENT_INFO]["name"], "mcpgw-load");
    }

    #[test]
    fn legacy_request_carries_session_headers() {
        let t = Template::legacy("tools/list", page_params(None));
        let s = LegacyHeaders::new(Some("abc"), Generation::V2025_11_25);
        let h = t.headers(Some(&s));
        assert_eq!(header(&h, "mcp-session-id"), Some("abc"));
        assert_eq!(header(&h, "mcp-protocol-version"), Some("2025-11-25"));
        assert_eq!(header(&h, "accept"), Some(ACCEPT));
        assert!(h.get("mcp-method").is_none());
        // 2025-03-26 has no MCP-Protocol-Version header.
        let old = LegacyHeaders::new(Some("abc"), Generation::V2025_03_26);
        assert!(t.headers(Some(&old)).get("mcp-protocol-version").is_none());
        let body: Value = serde_json::from_slice(&t.body(7)).unwrap();
        assert_eq!(
            body,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}})
        );
        let init: Value = serde_json::from_slice(
            &Template::legacy(
                "initialize",
                initialize_params(Generation::V2025_06_18, answering_capabilities()),
            )
            .body(0),
        )
        .unwrap();
        assert_eq!(init["params"]["protocolVersion"], "2025-06-18");
        assert_eq!(
            init["params"]["capabilities"],
            json!({"elicitation": {}, "sampling": {}, "roots": {}})
        );
        let answer = answer_headers(&s);
        assert_eq!(header(&answer, "mcp-session-id"), Some("abc"));
        assert_eq!(header(&answer, "mcp-protocol-version"), Some("2025-11-25"));
        assert_eq!(header(&answer, "content-type"), Some("application/json"));
        let note: Value = serde_json::from_slice(INITIALIZED).unwrap();
        assert!(note.get("id").is_none());
    }

    #[test]
    fn resource_names_are_encoded_when_needed() {
        let t = Template::modern(
            "resources/read",
            read_params("mock://m/ä"),
            Some("mock://m/ä"),
            &[],
        );
        let h = t.headers(None);
        assert!(header(&h, "mcp-name").unwrap().starts_with("=?base64?"));
    }
}
