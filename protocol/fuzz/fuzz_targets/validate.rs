//! Fuzz target: arbitrary bytes as a request body (and, split off the front, as header values) through the
//! parser, the validator and the shaper. Nothing may panic; every rejection and every shaped result must be
//! JSON (checked syntactically: numbers such as 1e999 are valid JSON that `Value` cannot hold).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::headers::{ParamHeader, ParamKind};
use protocol::payload::Implementation;
use protocol::shape::{CachePolicy, Stamp, shape};
use protocol::validate::{Catalog, Config, HttpMethod, HttpRequest, Session, RouteKey, ToolRoute, validate};
use protocol::{Generation, Method, RequestId};

struct Fixed(Vec<ParamHeader>);

impl Catalog for Fixed {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        (name.len() % 3 != 0).then_some(ToolRoute {
            key: RouteKey(0),
            header_params: &self.0,
            required_capabilities: None,
        })
    }
    fn resource(&self, uri: &str) -> Option<RouteKey> {
        (uri.len() % 2 == 0).then_some(RouteKey(0))
    }
    fn prompt(&self, name: &str) -> Option<RouteKey> {
        (!name.is_empty()).then_some(RouteKey(0))
    }
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks how many bytes become the Mcp-Name header; the rest is the body.
    let (name, body) = match data.split_first() {
        Some((n, rest)) => rest.split_at((*n as usize).min(rest.len()) / 4),
        None => (&[][..], data),
    };
    let catalog = Fixed(vec![ParamHeader {
        header: "Region".into(),
        path: vec!["location".into()],
        kind: ParamKind::String,
    }]);
    let caps = serde_json::json!({});
    let headers: Vec<(&str, &[u8])> = vec![
        ("Content-Type", b"application/json"),
        ("MCP-Protocol-Version", b"2026-07-28"),
        ("Mcp-Method", b"tools/call"),
        ("Mcp-Name", name),
        ("Mcp-Param-Region", name),
    ];
    for session in [
        None,
        Some(Session {
            generation: Generation::V2025_03_26,
            client_capabilities: &caps,
        }),
    ] {
        let mut h = headers.clone();
        if session.is_some() {
            h.push(("Mcp-Session-Id", b"s"));
        }
        let req = HttpRequest {
            method: HttpMethod::Post,
            headers: &h,
            body,
        };
        if let Err(r) = validate(&req, &Config::default(), &catalog, session.as_ref()) {
            serde_json::from_slice::<Box<serde_json::value::RawValue>>(&r.body()).expect("rejection body is JSON");
        }
    }
    if let Ok(raw) = serde_json::from_slice::<Box<serde_json::value::RawValue>>(body) {
        let info = Implementation {
            name: "mcpgw".into(),
            version: "0".into(),
            ..Implementation::default()
        };
        let stamp = Stamp::new(&info, CachePolicy::NONE);
        for g in Generation::ALL {
            let out = shape(
                &RequestId::number(1),
                Method::ToolsCall,
                g,
                Ok(&raw),
                &stamp,
            );
            serde_json::from_slice::<Box<serde_json::value::RawValue>>(&out.body).expect("shaped body is JSON");
        }
    }
});
