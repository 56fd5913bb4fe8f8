//! The mock's lifecycle answers: its capabilities per generation, `initialize` version negotiation (echo
//! a served legacy version, else counter-offer the newest served one; a modern-only mock names its
//! versions in the legacy lifecycle's error shape), the `initialize` result and the `server/discover`
//! result.

use protocol::payload::{DiscoverResult, Implementation, InitializeResult, ServerCapabilities};
use protocol::{Era, Error, ErrorCode, Generation, GenerationSet};
use serde_json::{Map, Value, json};

const INSTRUCTIONS: &str = "A synthetic MCP server for tests: echo, add, sleep, fail, jsonrpc_error, \
big, regional and tool_N tools; mock:// resources; the greet prompt.";

fn object(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// What the mock declares on generation `g`: tools, resources (no subscribe), prompts, logging, and
/// completions where the generation has that capability (2025-03-26 and later).
pub(crate) fn capabilities(g: Generation) -> ServerCapabilities {
    ServerCapabilities {
        tools: object(json!({ "listChanged": false })),
        resources: object(json!({ "subscribe": false, "listChanged": false })),
        prompts: object(json!({ "listChanged": false })),
        logging: Some(Map::new()),
        completions: (g >= Generation::V2025_03_26).then(Map::new),
        ..ServerCapabilities::default()
    }
}

/// The generation an `initialize` asking for `requested` gets: the same when it is a served legacy
/// version, else the newest served legacy version. A mock that serves no legacy version refuses with
/// -32602 and `data{supported, requested}` (the legacy lifecycle's version-mismatch shape).
pub(crate) fn negotiate(served: GenerationSet, requested: &str) -> Result<Generation, Error> {
    match Generation::parse(requested) {
        Ok(g) if !g.is_modern() && served.contains(g) => Ok(g),
        _ => served.latest_of(Era::Legacy).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidParams,
                "unsupported protocol version: this server does not use initialize; send requests with _meta io.modelcontextprotocol/protocolVersion",
            )
            .with_data(json!({ "supported": served.version_strings(), "requested": requested }))
        }),
    }
}

/// The `initialize` result for negotiated generation `g` (`instructions` exist since 2025-03-26).
pub(crate) fn initialize_result(g: Generation, server_info: &Implementation) -> InitializeResult {
    InitializeResult {
        protocol_version: g.as_str().to_owned(),
        capabilities: capabilities(g),
        server_info: server_info.clone(),
        instructions: (g >= Generation::V2025_03_26).then(|| INSTRUCTIONS.to_owned()),
        meta: None,
        extra: Map::new(),
    }
}

/// The `server/discover` result (the shaper adds `resultType`, serverInfo, `ttlMs` and `cacheScope`).
pub(crate) fn discover_result(served: GenerationSet) -> DiscoverResult {
    DiscoverResult {
        supported_versions: served
            .version_strings()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        capabilities: capabilities(Generation::V2026_07_28),
        instructions: Some(INSTRUCTIONS.to_owned()),
        meta: None,
        extra: Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Generation::*;

    #[test]
    fn negotiation_table() {
        let legacy = GenerationSet::of(&[V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25]);
        let modern = GenerationSet::of(&[V2026_07_28]);
        // (served, requested, negotiated; None = refused)
        let table = [
            (GenerationSet::ALL, "2025-06-18", Some(V2025_06_18)),
            (GenerationSet::ALL, "2024-11-05", Some(V2024_11_05)),
            (GenerationSet::ALL, "2026-07-28", Some(V2025_11_25)),
            (GenerationSet::ALL, "2099-01-01", Some(V2025_11_25)),
            (GenerationSet::ALL, "1.0.0", Some(V2025_11_25)),
            (legacy, "2025-03-26", Some(V2025_03_26)),
            (legacy, "2026-07-28", Some(V2025_11_25)),
            (modern, "2025-06-18", None),
            (modern, "2026-07-28", None),
        ];
        for (served, requested, want) in table {
            match (negotiate(served, requested), want) {
                (Ok(g), Some(w)) => assert_eq!(g, w, "{requested}"),
                (Err(e), None) => {
                    assert_eq!(e.code(), ErrorCode::InvalidParams);
                    let data = e.data().unwrap();
                    assert_eq!(data["supported"], json!(["2026-07-28"]));
                    assert_eq!(data["requested"], requested);
                }
                (got, want) => panic!("{requested}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn capabilities_and_results_per_generation() {
        assert!(capabilities(V2024_11_05).completions.is_none());
        assert!(capabilities(V2025_03_26).completions.is_some());
        let info = Implementation {
            name: "m".into(),
            version: "1".into(),
            ..Implementation::default()
        };
        let old = serde_json::to_value(initialize_result(V2024_11_05, &info)).unwrap();
        assert_eq!(old["protocolVersion"], "2024-11-05");
        assert!(old.get("instructions").is_none());
        assert_eq!(
            old["capabilities"]["resources"],
            json!({"subscribe": false, "listChanged": false})
        );
        let d = discover_result(GenerationSet::ALL);
        assert_eq!(d.supported_versions[0], "2026-07-28");
        assert_eq!(d.supported_versions.len(), 5);
    }
}
