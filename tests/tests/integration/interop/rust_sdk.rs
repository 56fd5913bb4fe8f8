//! The Rust SDK (`rmcp`) as the client, in its three lifecycle modes (`ClientLifecycleMode`): the matrix's
//! driver, and the check without the gateway.

use std::future::Future;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, GetPromptRequestParams, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

use super::peers;
use super::stack::Plan;

/// Every step of a client is bounded by this.
const STEP: Duration = Duration::from_secs(30);

/// The modes and the version each must end up with against the dual-era gateway. `Initialize` uses rmcp's
/// default client config, whose `initialize` offers 2026-07-28 (its `ProtocolVersion::LATEST`): a server must
/// answer the handshake with a legacy version, 2025-11-25. `Discover` probes `server/discover` with no
/// fallback; `Auto` probes and would fall back to `initialize` (offering 2025-11-25) on a legacy server.
pub(super) fn modes() -> Vec<(&'static str, ClientLifecycleMode, &'static str)> {
    vec![
        ("Initialize", ClientLifecycleMode::Initialize, "2025-11-25"),
        (
            "Discover",
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            "2026-07-28",
        ),
        (
            "Auto",
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            "2026-07-28",
        ),
    ]
}

async fn bounded<T, E: std::fmt::Display>(
    what: &str,
    f: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(STEP, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {STEP:?}")),
    }
}

/// Connects in `mode`, then follows `plan`; the report in the shape of the script clients' (`py_client.py`),
/// so that one check judges every client.
pub(super) async fn report(
    url: &str,
    mode: ClientLifecycleMode,
    plan: &Plan,
) -> Result<Value, String> {
    crate::support::tls_provider();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let client = bounded("connect", ().serve_with_lifecycle(transport, mode)).await?;
    let version = client
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    let tools = bounded("tools/list", client.list_all_tools()).await?;
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    let mut calls = Vec::new();
    for (name, args) in &plan.calls {
        let params = CallToolRequestParams::new(name.clone()).with_arguments(object(args));
        calls.push(
            match bounded(name, client.call_tool(params)).await.and_then(wire) {
                Ok(r) => json!({
                    "name": name, "ok": true, "isError": r["isError"] == true,
                    "text": texts(&r["content"]), "structuredContent": r["structuredContent"],
                }),
                Err(e) => json!({"name": name, "ok": false, "error": e}),
            },
        );
    }
    let mut reads = Vec::new();
    for uri in &plan.reads {
        let params = ReadResourceRequestParams::new(uri.clone());
        reads.push(
            match bounded(uri, client.read_resource(params))
                .await
                .and_then(wire)
            {
                Ok(r) => json!({"uri": uri, "ok": true, "contents": r["contents"]}),
                Err(e) => json!({"uri": uri, "ok": false, "error": e}),
            },
        );
    }
    let mut prompts = Vec::new();
    for (name, args) in &plan.prompts {
        let params = GetPromptRequestParams::new(name.clone()).with_arguments(object(args));
        prompts.push(
            match bounded(name, client.get_prompt(params))
                .await
                .and_then(wire)
            {
                Ok(r) => {
                    let messages: Vec<Value> = r["messages"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|m| json!({"role": m["role"], "text": m["content"]["text"]}))
                        .collect();
                    json!({"name": name, "ok": true, "messages": messages})
                }
                Err(e) => json!({"name": name, "ok": false, "error": e}),
            },
        );
    }
    let _ = tokio::time::timeout(STEP, client.cancel()).await;
    Ok(json!({
        "client": "rmcp", "protocolVersion": version, "tools": names,
        "calls": calls, "reads": reads, "prompts": prompts,
    }))
}

fn object(v: &Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn wire<T: serde::Serialize>(result: T) -> Result<Value, String> {
    serde_json::to_value(&result).map_err(|e| e.to_string())
}

/// The text blocks of a content array, joined by newlines.
fn texts(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A runtime for one test's client.
pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Without the gateway: rmcp in every mode straight to the Python backend, calling `py_add`. Tells a broken
/// peer or fixture apart from a gateway bug when the matrix fails.
#[test]
fn rust_sdk_client_reaches_the_python_backend_directly() {
    let Some(deps) = peers::deps("rust_sdk_client_reaches_the_python_backend_directly") else {
        return;
    };
    let py = peers::py_server(&deps, &[]);
    let plan = Plan::calls_only(vec![("py_add".into(), json!({"a": 2, "b": 40}))]);
    let rt = runtime();
    let mut failures = Vec::new();
    for (label, mode, version) in modes() {
        match rt.block_on(report(&py.url, mode, &plan)) {
            Ok(r) if r["protocolVersion"] == version && r["calls"][0]["text"] == "42" => {}
            Ok(r) => failures.push(format!("mode={label} (expected {version}): {r}")),
            Err(e) => failures.push(format!("mode={label}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "rmcp client, no gateway:\n  {}\n{:?}",
        failures.join("\n  "),
        py.drain_log()
    );
}
