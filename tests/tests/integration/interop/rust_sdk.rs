//! The Rust SDK (`rmcp`) as the client, in its three lifecycle modes (`ClientLifecycleMode`).

use std::future::Future;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::Value;

use super::peers::{self, CallOutcome, Stack};

/// Every step of a client is bounded by this.
const STEP: Duration = Duration::from_secs(30);

/// The modes and the version each must end up with against the dual-era gateway. `Initialize` uses rmcp's
/// default client config, whose `initialize` offers 2026-07-28 (its `ProtocolVersion::LATEST`): a server must
/// answer the handshake with a legacy version, 2025-11-25. `Discover` probes `server/discover` with no
/// fallback; `Auto` probes and would fall back to `initialize` (offering 2025-11-25) on a legacy server.
fn modes() -> Vec<(&'static str, ClientLifecycleMode, &'static str)> {
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

/// Connects in `mode`, lists the tools, makes `peers::calls()`; returns what is wrong.
async fn run_mode(
    url: &str,
    mode: ClientLifecycleMode,
    expected_version: &str,
) -> Result<Vec<String>, String> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let client = bounded("connect", ().serve_with_lifecycle(transport, mode)).await?;
    let mut problems = Vec::new();
    let version = client
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    if version != expected_version {
        problems.push(format!(
            "negotiated {version:?} (expected {expected_version})"
        ));
    }
    let tools = bounded("tools/list", client.list_all_tools()).await?;
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    problems.extend(peers::check_tools(&names));
    let mut outcomes = Vec::new();
    for (name, args) in peers::calls() {
        let Value::Object(args) = args else {
            unreachable!("arguments are objects")
        };
        let params = CallToolRequestParams::new(name).with_arguments(args);
        let outcome = bounded(name, client.call_tool(params))
            .await
            .and_then(|result| {
                let wire = serde_json::to_value(&result).map_err(|e| e.to_string())?;
                Ok(CallOutcome::from_wire(name, &wire))
            });
        outcomes.push(outcome);
    }
    problems.extend(peers::check_calls(&outcomes));
    let _ = tokio::time::timeout(STEP, client.cancel()).await;
    Ok(problems)
}

#[test]
fn rust_sdk_client_in_every_mode() {
    let Some(deps) = peers::deps("rust_sdk_client_in_every_mode") else {
        return;
    };
    let stack = Stack::start(&deps, "rmcp-client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut failures = Vec::new();
    for (label, mode, version) in modes() {
        let started = Instant::now();
        match rt.block_on(run_mode(stack.url(), mode, version)) {
            Ok(problems) => {
                eprintln!(
                    "rmcp mode={label}: {} problem(s) in {:?}",
                    problems.len(),
                    started.elapsed()
                );
                failures.extend(problems.into_iter().map(|p| format!("mode={label}: {p}")));
            }
            Err(e) => failures.push(format!("mode={label}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "rmcp client through mcpgw:\n  {}\n{}",
        failures.join("\n  "),
        stack.logs()
    );
}

/// Without the gateway: connects in `mode` straight to the Python backend and calls `py_add`; returns the
/// negotiated version. Tells a broken peer or fixture apart from a gateway bug.
async fn direct_py_add(url: &str, mode: ClientLifecycleMode) -> Result<String, String> {
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
    let args = serde_json::json!({"a": 2, "b": 40})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let result = bounded(
        "py_add",
        client.call_tool(CallToolRequestParams::new("py_add").with_arguments(args)),
    )
    .await?;
    let wire = serde_json::to_value(&result).map_err(|e| e.to_string())?;
    let _ = tokio::time::timeout(STEP, client.cancel()).await;
    let outcome = CallOutcome::from_wire("py_add", &wire);
    if outcome.is_error || outcome.text.trim() != "42" {
        return Err(format!("py_add answered {wire}"));
    }
    Ok(version)
}

#[test]
fn rust_sdk_client_reaches_the_python_backend_directly() {
    let Some(deps) = peers::deps("rust_sdk_client_reaches_the_python_backend_directly") else {
        return;
    };
    let py = peers::py_server(&deps);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut failures = Vec::new();
    for (label, mode, version) in modes() {
        match rt.block_on(direct_py_add(&py.url, mode)) {
            Ok(v) if v == version => {}
            Ok(v) => failures.push(format!(
                "mode={label}: negotiated {v:?} (expected {version})"
            )),
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
