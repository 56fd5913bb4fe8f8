//! The tool search of issue 19 §3 (`catalog::search`) over a catalog of 50 backends × 40 tools = 2,000
//! tools built by `CatalogBuilder` from `BackendListing`s whose tools look like real ones (verbs and nouns of
//! each backend's domain, names in snake_case, camelCase or kebab-case, descriptions of 10–30 words,
//! `inputSchema`s of 2–5 properties): `ToolIndex::build` and `find` for a few representative queries (one
//! word, three words, a sentence, two words with a backend filter). Then, once: `find`'s p50 / p99 / max
//! over 10,000 queries timed one by one (criterion reports means; the goal is p99 < 2 ms), and the
//! bytes of the whole `tools` list (what `tools/list` carries across all its pages) against the two
//! gateway tools listed instead. Run: `cargo bench -p gateway --bench search`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use mcpgw::auth::Principal;
use mcpgw::catalog::search::{ToolIndex, found, gateway_tools};
use mcpgw::catalog::{BackendListing, CatalogBuilder, CatalogSnapshot};
use mcpgw::config::Config;
use mcpgw::serve::in_process::{InProcessGateway, header_map};
use serde_json::{Map, Value, json};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BACKENDS: [&str; 50] = [
    "github",
    "gitlab",
    "jira",
    "confluence",
    "slack",
    "discord",
    "notion",
    "linear",
    "asana",
    "trello",
    "kubernetes",
    "docker",
    "aws_s3",
    "aws_ec2",
    "aws_lambda",
    "gcs",
    "azure_blob",
    "postgres",
    "mysql",
    "redis",
    "mongodb",
    "elasticsearch",
    "stripe",
    "shopify",
    "salesforce",
    "hubspot",
    "zendesk",
    "intercom",
    "twilio",
    "sendgrid",
    "gmail",
    "calendar",
    "drive",
    "dropbox",
    "figma",
    "sentry",
    "datadog",
    "pagerduty",
    "grafana",
    "prometheus",
    "terraform",
    "vault",
    "okta",
    "cloudflare",
    "vercel",
    "netlify",
    "snowflake",
    "bigquery",
    "airtable",
    "zoom",
];

const NOUNS: [&str; 64] = [
    "issue",
    "pull_request",
    "branch",
    "commit",
    "repository",
    "release",
    "ticket",
    "page",
    "channel",
    "message",
    "thread",
    "user",
    "team",
    "project",
    "task",
    "board",
    "card",
    "comment",
    "pod",
    "deployment",
    "service",
    "container",
    "image",
    "volume",
    "bucket",
    "object",
    "instance",
    "function",
    "table",
    "row",
    "index",
    "query",
    "key",
    "document",
    "collection",
    "invoice",
    "customer",
    "payment",
    "subscription",
    "order",
    "product",
    "contact",
    "lead",
    "deal",
    "conversation",
    "call",
    "email",
    "event",
    "file",
    "folder",
    "frame",
    "alert",
    "incident",
    "dashboard",
    "metric",
    "monitor",
    "workspace",
    "secret",
    "policy",
    "domain",
    "record",
    "site",
    "dataset",
    "meeting",
];

/// (verb as named, what its description says first).
const VERBS: [(&str, &str); 16] = [
    ("create", "Creates a new {n}"),
    ("list", "Lists the {ns} visible to the caller"),
    ("get", "Returns one {n} by its id, with all its fields"),
    ("update", "Updates the given fields of an existing {n}"),
    ("delete", "Deletes a {n} permanently; this cannot be undone"),
    (
        "search",
        "Searches {ns} by a full-text query over their titles and bodies",
    ),
    (
        "archive",
        "Archives a {n} so that it no longer shows in lists",
    ),
    ("restore", "Restores an archived or deleted {n}"),
    ("export", "Exports {ns} as CSV or JSON"),
    ("import", "Imports {ns} from a CSV file"),
    ("assign", "Assigns a {n} to a user or a team"),
    ("comment_on", "Adds a comment to a {n}"),
    ("watch", "Subscribes the caller to changes of a {n}"),
    ("move", "Moves a {n} to another folder or project"),
    ("copy", "Copies a {n}, with its settings"),
    ("sync", "Synchronizes {ns} with the remote source"),
];

const EXTRAS: [&str; 10] = [
    "Results are paginated: pass the cursor of the previous page.",
    "Requires write access to the workspace.",
    "Returns the {n} as JSON with its metadata and timestamps.",
    "Fails when the {n} does not exist or is not visible.",
    "Use limit to bound the answer.",
    "Times are in UTC, ISO 8601.",
    "Only {ns} the caller owns or was shared are included.",
    "Safe to retry with the same idempotency key.",
    "Rate limited to 100 requests per minute per token.",
    "Labels and custom fields are kept.",
];

const PROPERTIES: [&str; 16] = [
    "workspace",
    "owner",
    "project",
    "fields",
    "dry_run",
    "tags",
    "limit",
    "cursor",
    "query",
    "sort",
    "since",
    "until",
    "assignee",
    "visibility",
    "format",
    "reason",
];

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn plural(n: &str) -> String {
    match n.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'o']) => format!("{stem}ies"),
        _ if n.ends_with('s') || n.ends_with('x') || n.ends_with("ch") => format!("{n}es"),
        _ => format!("{n}s"),
    }
}

fn styled(style: usize, words: &str) -> String {
    match style {
        0 => words.to_owned(),
        1 => words.replace('_', "-"),
        _ => {
            let mut out = String::new();
            for (i, w) in words.split('_').enumerate() {
                let mut c = w.chars();
                match (i, c.next()) {
                    (0, _) => out.push_str(w),
                    (_, Some(f)) => {
                        out.extend(f.to_uppercase());
                        out.push_str(c.as_str());
                    }
                    _ => {}
                }
            }
            out
        }
    }
}

fn tool(rng: &mut Rng, backend: &str, style: usize, verb: usize, noun: &str) -> Value {
    let (v, said) = VERBS[verb];
    let ns = plural(&noun.replace('_', " "));
    let n = noun.replace('_', " ");
    let fill = |s: &str| s.replace("{ns}", &ns).replace("{n}", &n);
    let mut description = format!("{} in {}.", fill(said), backend.replace('_', " "));
    for _ in 0..1 + rng.below(3) {
        description.push(' ');
        description.push_str(&fill(EXTRAS[rng.below(EXTRAS.len())]));
    }
    let mut properties = Map::new();
    if matches!(
        v,
        "get" | "update" | "delete" | "archive" | "restore" | "assign" | "comment_on"
    ) {
        properties.insert(
            format!("{noun}_id"),
            json!({"type": "string", "description": format!("The {n}'s id.")}),
        );
    }
    while properties.len() < 2 + rng.below(4) {
        let p = PROPERTIES[rng.below(PROPERTIES.len())];
        properties.insert(
            p.to_owned(),
            json!({"type": "string", "description": format!("The {p}.")}),
        );
    }
    let required: Vec<&String> = properties.keys().take(1).collect();
    json!({
        "name": styled(style, &format!("{v}_{noun}")),
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
        "annotations": {"readOnlyHint": matches!(v, "list" | "get" | "search" | "export")}
    })
}

/// 50 backends × 40 tools: each backend has 8 nouns of its own, each with 5 verbs.
fn catalog() -> CatalogSnapshot {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut builder = CatalogBuilder::new();
    for (b, backend) in BACKENDS.iter().enumerate() {
        let mut tools = Vec::new();
        for k in 0..8 {
            let noun = NOUNS[(b * 13 + k * 5) % NOUNS.len()];
            for j in 0..5 {
                tools.push(tool(
                    &mut rng,
                    backend,
                    b % 3,
                    (b + k * 3 + j * 7) % VERBS.len(),
                    noun,
                ));
            }
        }
        builder.add(BackendListing {
            backend: (*backend).to_owned(),
            prefix: (*backend).to_owned(),
            tools,
            ..BackendListing::default()
        });
    }
    let snapshot = builder.build().expect("no collision");
    assert_eq!(snapshot.tools().len(), 2_000);
    snapshot
}

/// (what, query, backend).
const QUERIES: [(&str, &str, Option<&str>); 4] = [
    ("find_one_word", "invoice", None),
    ("find_three_words", "create pull request", None),
    (
        "find_sentence",
        "how do I export all the payments of a customer as csv",
        None,
    ),
    ("find_two_words_one_backend", "list files", Some("zendesk")),
];

fn bench(c: &mut Criterion) {
    let snapshot = catalog();
    let tools = snapshot.tools();
    let index = ToolIndex::build(tools);
    for (what, query, backend) in QUERIES {
        assert!(!index.find(query, backend, 10).is_empty(), "{what}");
    }
    let mut group = c.benchmark_group("search_2000_tools");
    group.bench_function("build", |b| b.iter(|| ToolIndex::build(black_box(tools))));
    for (what, query, backend) in QUERIES {
        group.bench_function(what, |b| {
            b.iter(|| index.find(black_box(query), backend, 10))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);

/// `find` timed one query at a time over the representative queries in turn, after a warm-up.
fn percentiles(index: &ToolIndex) -> (Duration, Duration, Duration) {
    const RUNS: usize = 10_000;
    for (_, query, backend) in QUERIES.iter().cycle().take(1_000) {
        black_box(index.find(query, *backend, 10));
    }
    let mut times = Vec::with_capacity(RUNS);
    for (_, query, backend) in QUERIES.iter().cycle().take(RUNS) {
        let start = Instant::now();
        black_box(index.find(black_box(query), *backend, 10));
        times.push(start.elapsed());
    }
    times.sort_unstable();
    (times[RUNS / 2], times[RUNS * 99 / 100], times[RUNS - 1])
}

/// A 2026-07-28 request of `method` with `params`, with its mirrored headers.
fn modern(
    method: &str,
    id: u64,
    mut params: Value,
) -> (actix_web::http::header::HeaderMap, bytes::Bytes) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}
    });
    let name = params["name"].as_str().map(str::to_owned);
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    (
        header_map(&pairs).unwrap(),
        bytes::Bytes::from(body.to_string()),
    )
}

/// The issue's own setting, end to end: an in-process gateway fronting 50 builtin mock backends of 40 tools
/// each (the mock's 9 and `--tools 31`), search on for principal `agent` only. The bytes of `tools/list`
/// over all its pages for a client without search and for the agent, and `find_tools` requests through the
/// whole pipeline (validation, the chain, dispatch, shaping) timed one by one: p50 / p99 / max.
fn end_to_end() {
    let mut config = String::from(
        "[[auth.api_key]]\nprincipal = \"agent\"\ndigest = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n\n[catalog]\nsearch = true\nprincipals = [\"agent\"]\n\n[server]\npage_size = 500\n",
    );
    for b in 0..50 {
        config.push_str(&format!(
            "\n[[backend]]\nname = \"b{b:02}\"\nbuiltin = [\"mock-backend\", \"--tools\", \"31\", \"--name\", \"b{b:02}\"]\n"
        ));
    }
    let config = Config::from_toml_str(&config, std::path::Path::new("bench.toml")).unwrap();
    let system = actix_rt::System::new();
    let gw = system.block_on(InProcessGateway::start(config)).unwrap();
    let who = |name: &str| {
        Some(Arc::new(Principal {
            name: name.to_owned(),
            source: mcpgw::auth::PrincipalSource::ApiKey,
            groups: Vec::new(),
            scopes: Vec::new(),
            token: None,
        }))
    };
    // Every page of tools/list, as a client without search and as the agent.
    let list_bytes = |principal: &str| -> (usize, usize) {
        let (mut bytes, mut tools, mut cursor) = (0, 0, None::<String>);
        loop {
            let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
            let (headers, body) = modern("tools/list", 1, params);
            let answer = system.block_on(gw.post_as(who(principal), headers, body));
            bytes += answer.body.len();
            let page: Value = serde_json::from_slice(&answer.body).unwrap();
            tools += page["result"]["tools"].as_array().map_or(0, Vec::len);
            match page["result"]["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return (bytes, tools),
            }
        }
    };
    let (full_bytes, full_tools) = list_bytes("ada");
    let (search_bytes, search_tools) = list_bytes("agent");
    const RUNS: usize = 5_000;
    let queries = [
        "integers",
        "returns text given",
        "sleep milliseconds",
        "synthetic tool",
    ];
    let mut times = Vec::with_capacity(RUNS);
    let mut answered = 0;
    system.block_on(async {
        for i in 0..(RUNS + 500) {
            let query = queries[i % queries.len()];
            let (headers, body) = modern(
                "tools/call",
                i as u64,
                json!({"name": "find_tools", "arguments": {"query": query}}),
            );
            let began = Instant::now();
            let answer = gw.post_as(who("agent"), headers, body).await;
            let took = began.elapsed();
            if i >= 500 {
                times.push(took);
                answered += usize::from(answer.status == 200);
            }
        }
    });
    times.sort_unstable();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    eprintln!(
        "\nend to end, 50 mock backends x 40 tools in-process: tools/list {full_bytes} bytes over all \
         pages ({full_tools} tools) without search, {search_bytes} bytes ({search_tools} tools) with; \
         find_tools through the pipeline ({answered} of {RUNS} answered 200, limit 10): p50 {:.1} µs, \
         p99 {:.1} µs, max {:.1} µs",
        at(0.5).as_nanos() as f64 / 1e3,
        at(0.99).as_nanos() as f64 / 1e3,
        times.last().unwrap().as_nanos() as f64 / 1e3,
    );
    gw.shutdown();
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    end_to_end();

    let snapshot = catalog();
    let tools = snapshot.tools();
    let index = ToolIndex::build(tools);
    let (p50, p99, max) = percentiles(&index);
    let listed = Value::Array(tools.iter().map(|t| t.tool.clone()).collect());
    let full = serde_json::to_vec(&listed).unwrap().len();
    let two = serde_json::to_vec(&gateway_tools()).unwrap().len();
    let hits = index.find("create pull request", None, 10);
    let answer = serde_json::to_vec(&found(tools, &hits)).unwrap().len();
    eprintln!(
        "\nsearch over {} tools of 50 backends: find p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs \
         (10,000 finds, the {} queries in turn, limit 10; goal p99 < 2 ms)",
        tools.len(),
        p50.as_nanos() as f64 / 1e3,
        p99.as_nanos() as f64 / 1e3,
        max.as_nanos() as f64 / 1e3,
        QUERIES.len(),
    );
    for (what, query, backend) in QUERIES {
        let top: Vec<&str> = index
            .find(query, backend, 3)
            .iter()
            .map(|h| tools[h.position].exposed_name.as_str())
            .collect();
        eprintln!("{what} {query:?} {backend:?}: {top:?}");
    }
    eprintln!(
        "tools list: {full} bytes for all {} tools (JSON array, all pages) against {two} bytes for \
         find_tools + call_tool ({:.0}× less); one find_tools result of 10 tools: {answer} bytes; the \
         index: {} bytes on the heap ({index:?})",
        tools.len(),
        full as f64 / two as f64,
        index.heap_bytes(),
    );
}
