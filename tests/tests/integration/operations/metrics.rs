//! `GET /metrics` of a real mcpgw (on its admin listener), read by Prometheus's own Python parsers (`prometheus_client`, from the
//! interop venv): the 0.0.4 text and the OpenMetrics text both parse, hold the families the issue names with
//! their types and labels, and count exactly the traffic the test sent. The shipped Grafana dashboard and
//! Prometheus scrape config are checked against the same scrape: every `mcpgw_*` name they use is exported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

/// The interop venv's Python, which has `prometheus_client` (tests/fixtures/interop/setup.sh).
fn python() -> Option<PathBuf> {
    if std::env::var("MCPGW_SKIP_INTEROP").is_ok_and(|v| v == "1") {
        println!("operations::metrics: skipped (MCPGW_SKIP_INTEROP=1)");
        return None;
    }
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/interop/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run tests/fixtures/interop/setup.sh (or set MCPGW_SKIP_INTEROP=1)",
        python.display()
    );
    Some(python)
}

/// Parses both scrapes with `prometheus_client`'s parsers: for each format, its families as
/// `{name: {"type": t, "samples": [[name, labels, value], …]}}`.
const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families as text
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
def families(parse, path):
    out = {}
    for f in parse(open(path, encoding="utf-8").read()):
        out[f.name] = {"type": f.type, "samples": [[s.name, s.labels, s.value] for s in f.samples]}
    return out
print(json.dumps({"text": families(text, sys.argv[1]), "openmetrics": families(openmetrics, sys.argv[2])}))
"#;

fn scrape(base: &str, accept: Option<&str>) -> (String, String) {
    let mut req = client().get(format!("{base}/metrics"));
    if let Some(accept) = accept {
        req = req.header("Accept", accept);
    }
    let resp = req.send().expect("GET /metrics");
    assert_eq!(resp.status(), 200);
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (content_type, resp.text().expect("a body"))
}

/// The value of the one sample named `name` whose labels include `labels` (panics when none or several).
fn value(families: &Value, family: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let samples = families[family]["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no family {family}"));
    let found: Vec<f64> = samples
        .iter()
        .filter(|s| s[0] == name && labels.iter().all(|(k, v)| s[1][*k] == *v))
        .map(|s| s[2].as_f64().unwrap_or(f64::NAN))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{name}{labels:?}: {found:?} in {}",
        families[family]
    );
    found[0]
}

fn family_type(families: &Value, family: &str) -> String {
    families[family]["type"]
        .as_str()
        .unwrap_or_else(|| panic!("no family {family}"))
        .to_owned()
}

fn sample_names(families: &Value) -> BTreeSet<String> {
    families
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .flat_map(|f| f["samples"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s[0].as_str().map(str::to_owned))
        .collect()
}

/// Every `mcpgw_…` name in a text.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("mcpgw_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        out.insert(name);
    }
    out
}

#[test]
fn metrics_parse_in_both_formats_and_count_the_traffic_sent() {
    let Some(python) = python() else {
        return;
    };
    let dir = TempDir::new("metrics");
    let gw = gateway(
        &format!("[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n{ADMIN}"),
        &dir,
    );
    wait_ready(gw.url.trim_end_matches("/mcp"));
    // The metrics are the admin listener's: scraped there.
    let base = admin_base(&gw);

    // The traffic: 3 results, 2 tool errors, 1 JSON-RPC error, 1 rejection (2026-07-28); a legacy session
    // with 1 call, then DELETEd.
    for i in 0..3 {
        let r = modern_request(
            &gw.url,
            "tools/call",
            json!({"name": "m__echo", "arguments": {"text": format!("hi {i}")}}),
            &[],
        );
        assert_eq!(r.json()["result"]["content"][0]["text"], format!("hi {i}"));
    }
    for _ in 0..2 {
        let r = modern_request(
            &gw.url,
            "tools/call",
            json!({"name": "m__fail", "arguments": {}}),
            &[],
        );
        assert_eq!(r.json()["result"]["isError"], true);
    }
    let r = modern_request(
        &gw.url,
        "tools/list",
        json!({"cursor": "not-one-of-ours"}),
        &[],
    );
    assert_eq!(r.json()["error"]["code"], -32602, "{r:?}");
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "m__none", "arguments": {}}),
        &[],
    );
    assert_eq!(r.json()["error"]["code"], -32601, "{r:?}");
    let mut legacy = LegacyClient::connect(&gw.url, "2025-06-18");
    let r = legacy.request(
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": "x"}}),
    );
    assert_eq!(r.json()["result"]["content"][0]["text"], "x");
    let deleted = client()
        .delete(&gw.url)
        .header("Mcp-Session-Id", &legacy.session)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .expect("DELETE");
    assert_eq!(deleted.status(), 204);

    let (text_type, text) = scrape(&base, None);
    assert_eq!(text_type, "text/plain; version=0.0.4; charset=utf-8");
    let (om_type, om) = scrape(
        &base,
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    );
    assert_eq!(
        om_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(!text.contains("# EOF"));
    let text_file = dir.file("scrape.txt", &text);
    let om_file = dir.file("scrape.om", &om);
    let out = Command::new(&python)
        .args(["-c", PARSE])
        .arg(&text_file)
        .arg(&om_file)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "prometheus_client could not parse a scrape: {}\n--- 0.0.4 ---\n{text}\n--- OpenMetrics ---\n{om}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Value = serde_json::from_slice(&out.stdout).expect("JSON from the parser");

    for format in ["text", "openmetrics"] {
        let f = &parsed[format];
        // The families the issue names, with their types.
        for (family, kind) in [
            ("mcpgw_requests", "counter"),
            ("mcpgw_request_duration_seconds", "histogram"),
            ("mcpgw_gateway_overhead_seconds", "histogram"),
            ("mcpgw_backend_requests", "counter"),
            ("mcpgw_backend_request_duration_seconds", "histogram"),
            ("mcpgw_sessions", "gauge"),
            ("mcpgw_sessions_created", "counter"),
            ("mcpgw_sessions_ended", "counter"),
            ("mcpgw_backend_up", "gauge"),
            ("mcpgw_backend_in_flight", "gauge"),
            ("mcpgw_backend_restarts", "counter"),
            ("mcpgw_backend_circuit_state", "gauge"),
            ("mcpgw_backend_catalog_items", "gauge"),
            ("mcpgw_streams_open", "gauge"),
            ("mcpgw_cache_hits", "counter"),
            ("mcpgw_cache_misses", "counter"),
            ("mcpgw_received_bytes", "counter"),
            ("mcpgw_sent_bytes", "counter"),
        ] {
            assert_eq!(family_type(f, family), kind, "{format}: {family}");
        }
        // Build info: an info metric in OpenMetrics, a gauge in 0.0.4 (named as the 0.0.4 parser reads it).
        let (build, build_type) = match format {
            "text" => ("mcpgw_build_info", "gauge"),
            _ => ("mcpgw_build", "info"),
        };
        assert_eq!(family_type(f, build), build_type, "{format}");
        let version = f[build]["samples"][0][1]["version"]
            .as_str()
            .unwrap_or_default();
        assert!(!version.is_empty(), "{format}: {}", f[build]);

        // Exactly the traffic sent.
        let call = |outcome: &str, extra: &[(&str, &str)]| {
            let mut labels = vec![
                ("method", "tools/call"),
                ("generation", "2026-07-28"),
                ("transport", "streamable_http"),
                ("outcome", outcome),
            ];
            labels.extend_from_slice(extra);
            value(f, "mcpgw_requests", "mcpgw_requests_total", &labels)
        };
        assert_eq!(call("ok", &[]), 3.0, "{format}");
        assert_eq!(call("tool_error", &[]), 2.0, "{format}");
        assert_eq!(call("rejection", &[("code", "-32601")]), 1.0, "{format}");
        let list_error = [
            ("method", "tools/list"),
            ("generation", "2026-07-28"),
            ("outcome", "jsonrpc_error"),
            ("code", "-32602"),
        ];
        assert_eq!(
            value(f, "mcpgw_requests", "mcpgw_requests_total", &list_error),
            1.0
        );
        let legacy_labels = [
            ("method", "tools/call"),
            ("generation", "2025-06-18"),
            ("outcome", "ok"),
        ];
        assert_eq!(
            value(f, "mcpgw_requests", "mcpgw_requests_total", &legacy_labels),
            1.0
        );
        let init = [
            ("method", "initialize"),
            ("generation", "2025-06-18"),
            ("outcome", "ok"),
        ];
        assert_eq!(
            value(f, "mcpgw_requests", "mcpgw_requests_total", &init),
            1.0
        );
        // No label names a session or a principal.
        for s in f["mcpgw_requests"]["samples"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let names: BTreeSet<&str> = s[1]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.as_str())
                .collect();
            let allowed: BTreeSet<&str> =
                ["method", "generation", "transport", "outcome", "code"].into();
            assert!(names.is_subset(&allowed), "{s}");
        }
        // 3 + 2 + the legacy call reached the backend; a rejection has no duration.
        let backend_ok = [("backend", "m"), ("outcome", "ok")];
        assert_eq!(
            value(
                f,
                "mcpgw_backend_requests",
                "mcpgw_backend_requests_total",
                &backend_ok
            ),
            4.0
        );
        let backend_err = [("backend", "m"), ("outcome", "tool_error")];
        assert_eq!(
            value(
                f,
                "mcpgw_backend_requests",
                "mcpgw_backend_requests_total",
                &backend_err
            ),
            2.0
        );
        let count = |family: &str, labels: &[(&str, &str)]| {
            value(f, family, &format!("{family}_count"), labels)
        };
        assert_eq!(
            count(
                "mcpgw_request_duration_seconds",
                &[("method", "tools/call")]
            ),
            6.0
        );
        assert_eq!(
            count(
                "mcpgw_gateway_overhead_seconds",
                &[("method", "tools/call")]
            ),
            6.0
        );
        assert_eq!(
            count(
                "mcpgw_backend_request_duration_seconds",
                &[("backend", "m")]
            ),
            6.0
        );
        let inf = [("method", "tools/call"), ("le", "+Inf")];
        assert_eq!(
            value(
                f,
                "mcpgw_request_duration_seconds",
                "mcpgw_request_duration_seconds_bucket",
                &inf
            ),
            6.0
        );
        // The session: created, deleted, no longer live.
        let g = [("generation", "2025-06-18")];
        assert_eq!(
            value(
                f,
                "mcpgw_sessions_created",
                "mcpgw_sessions_created_total",
                &g
            ),
            1.0
        );
        let deleted = [("generation", "2025-06-18"), ("reason", "deleted")];
        assert_eq!(
            value(
                f,
                "mcpgw_sessions_ended",
                "mcpgw_sessions_ended_total",
                &deleted
            ),
            1.0
        );
        assert_eq!(value(f, "mcpgw_sessions", "mcpgw_sessions", &g), 0.0);
        // The backend, read at scrape time.
        assert_eq!(
            value(
                f,
                "mcpgw_backend_up",
                "mcpgw_backend_up",
                &[("backend", "m")]
            ),
            1.0
        );
        let closed = [("backend", "m"), ("state", "closed")];
        assert_eq!(
            value(
                f,
                "mcpgw_backend_circuit_state",
                "mcpgw_backend_circuit_state",
                &closed
            ),
            1.0
        );
        let tools = [("backend", "m"), ("kind", "tools")];
        assert!(
            value(
                f,
                "mcpgw_backend_catalog_items",
                "mcpgw_backend_catalog_items",
                &tools
            ) >= 2.0
        );
        let http = [("transport", "streamable_http")];
        assert!(
            value(
                f,
                "mcpgw_received_bytes",
                "mcpgw_received_bytes_total",
                &http
            ) > 0.0
        );
        assert!(value(f, "mcpgw_sent_bytes", "mcpgw_sent_bytes_total", &http) > 0.0);
    }
    // Both formats hold the same families (the info metric named by each format's convention).
    let names = |format: &str| -> BTreeSet<String> {
        parsed[format]
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .map(|k| k.trim_end_matches("_info").to_owned())
            .collect()
    };
    assert_eq!(names("text"), names("openmetrics"));

    deploy_files_name_only_exported_metrics(&sample_names(&parsed["text"]));
}

/// The Grafana dashboard is a dashboard (Grafana's JSON model: panels with a type, a title, a grid position
/// and PromQL targets), and it and the Prometheus scrape config name only metrics the gateway exports.
fn deploy_files_name_only_exported_metrics(exported: &BTreeSet<String>) {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let text = std::fs::read_to_string(deploy.join("grafana/mcpgw-dashboard.json"))
        .expect("deploy/grafana/mcpgw-dashboard.json");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    for key in ["title", "uid"] {
        assert!(dashboard[key].is_string(), "dashboard {key}");
    }
    assert!(dashboard["schemaVersion"].is_u64());
    assert!(dashboard["time"]["from"].is_string());
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 8, "{} panels", panels.len());
    let mut ids = BTreeSet::new();
    let mut exprs = Vec::new();
    for p in panels {
        assert!(
            ids.insert(p["id"].as_u64().expect("a panel id")),
            "id twice: {p}"
        );
        assert!(p["type"].is_string() && p["title"].is_string(), "{p}");
        for k in ["h", "w", "x", "y"] {
            assert!(p["gridPos"][k].is_u64(), "gridPos.{k}: {p}");
        }
        if p["type"] == "row" {
            continue;
        }
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{p}");
        for t in targets {
            assert!(t["refId"].is_string(), "{t}");
            exprs.push(t["expr"].as_str().expect("a PromQL expr").to_owned());
        }
    }
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    for expr in &exprs {
        for name in metric_names(expr) {
            *used.entry(name).or_default() += 1;
        }
    }
    for required in [
        "mcpgw_requests_total",
        "mcpgw_request_duration_seconds_bucket",
        "mcpgw_backend_requests_total",
        "mcpgw_backend_request_duration_seconds_bucket",
        "mcpgw_backend_in_flight",
        "mcpgw_backend_up",
        "mcpgw_sessions",
        "mcpgw_streams_open",
    ] {
        assert!(
            used.contains_key(required),
            "the dashboard does not show {required}"
        );
    }
    let scrape_config = std::fs::read_to_string(deploy.join("prometheus/prometheus.yml"))
        .expect("deploy/prometheus/prometheus.yml");
    assert!(scrape_config.contains("metrics_path: /metrics"));
    // Every name anywhere in the dashboard (targets, variables) and in the scrape config.
    for name in metric_names(&text)
        .into_iter()
        .chain(metric_names(&scrape_config))
    {
        assert!(
            exported.contains(&name),
            "{name} is not exported by the gateway (exported: {exported:?})"
        );
    }
}
