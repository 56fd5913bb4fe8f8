//! `mcpgw check`'s report: what it prints for each outcome, one problem line per problem, collisions found
//! the way `mcpgw serve` finds them, and parser messages kept to one line.

use handlers::TransportKind;
use protocol::Generation;
use serde_json::json;

use super::*;
use crate::catalog::BackendListing;

fn listing(backend: &str, prefix: &str, tools: &[&str]) -> BackendListing {
    BackendListing {
        backend: backend.to_owned(),
        prefix: prefix.to_owned(),
        tools: tools
            .iter()
            .map(|t| json!({"name": t, "inputSchema": {"type": "object"}}))
            .collect(),
        ..BackendListing::default()
    }
}

fn server() -> Server {
    Server {
        generation: Generation::V2026_07_28,
        transport: TransportKind::Stdio,
        info: Some("mock-backend 0.1.0".to_owned()),
    }
}

fn listed(name: &str, listing: BackendListing) -> BackendReport {
    BackendReport {
        name: name.to_owned(),
        reached_by: "command mock".to_owned(),
        outcome: Outcome::Listed {
            server: server(),
            listing,
            failed: Vec::new(),
        },
    }
}

#[test]
fn a_healthy_backend_is_reported_with_its_era_transport_and_every_name() {
    let mut l = listing("demo", "demo", &["echo", "add"]);
    l.prompts = vec![json!({"name": "greet"})];
    l.resources = vec![json!({"uri": "mock://demo/readme"})];
    l.resource_templates = vec![json!({"uriTemplate": "mock://demo/items/{id}"})];
    let report = Report::new("config demo.toml".to_owned(), vec![listed("demo", l)]);
    assert!(report.problems().is_empty());
    let text = report.render();
    for want in [
        "mcpgw check: config demo.toml (1 backend)",
        "backend demo (command mock)",
        "2026-07-28 (modern) over stdio, server mock-backend 0.1.0",
        "tools (2): demo__echo, demo__add",
        "prompts (1): demo__greet",
        "resources (1): mock://demo/readme",
        "resource templates (1): mock://demo/items/{id}",
        "ok: every backend started and listed, no collisions",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
}

#[test]
fn each_problem_is_one_line_naming_its_backend() {
    let backends = vec![
        BackendReport {
            name: "gone".to_owned(),
            reached_by: "command /nonexistent".to_owned(),
            outcome: Outcome::NotStarted {
                reason: "cannot start /nonexistent: no such file".to_owned(),
            },
        },
        BackendReport {
            name: "mute".to_owned(),
            reached_by: "url http://127.0.0.1:1/mcp".to_owned(),
            outcome: Outcome::NotListed {
                server: Server {
                    generation: Generation::V2025_06_18,
                    transport: TransportKind::StreamableHttp,
                    info: None,
                },
                reason: "did not list within 5000 ms".to_owned(),
            },
        },
        listed("a", listing("a", "", &["echo"])),
        listed("b", listing("b", "", &["echo"])),
    ];
    let report = Report::new("config x.toml".to_owned(), backends);
    assert_eq!(
        report.problems(),
        [
            "backend gone: did not start: cannot start /nonexistent: no such file",
            "backend mute: cannot list: did not list within 5000 ms",
            "catalog: tool name echo collides: backends a and b both expose it",
        ]
    );
    let text = report.render();
    assert!(
        text.contains("2025-06-18 (legacy) over streamable http"),
        "{text}"
    );
    assert!(text.contains("3 problems (on standard error)"), "{text}");
    assert!(problems_are_single_lines(&report));
}

fn problems_are_single_lines(report: &Report) -> bool {
    report.problems().iter().all(|p| !p.contains('\n'))
}

#[test]
fn collisions_are_found_for_every_pair_the_way_serve_finds_them() {
    // (backends as (name, prefix, tools), the collisions expected as (first, second, name))
    type Case<'a> = (
        &'a [(&'a str, &'a str, &'a [&'a str])],
        &'a [(&'a str, &'a str, &'a str)],
    );
    let table: [Case; 5] = [
        (&[("a", "a", &["echo"]), ("b", "b", &["echo"])], &[]),
        (
            &[("a", "", &["echo"]), ("b", "", &["echo"])],
            &[("a", "b", "echo")],
        ),
        (
            &[("a", "x", &["echo"]), ("b", "x", &["echo"])],
            &[("a", "b", "x__echo")],
        ),
        (
            &[
                ("a", "", &["echo"]),
                ("b", "", &["echo"]),
                ("c", "", &["echo"]),
            ],
            &[("a", "b", "echo"), ("a", "c", "echo"), ("b", "c", "echo")],
        ),
        // Prefix `a` and tool `b__c` against prefix `a__b` and tool `c`: both `a__b__c`.
        (
            &[("one", "a", &["b__c"]), ("two", "a__b", &["c"])],
            &[("one", "two", "a__b__c")],
        ),
    ];
    for (backends, want) in table {
        let listings: Vec<BackendListing> = backends
            .iter()
            .map(|(name, prefix, tools)| listing(name, prefix, tools))
            .collect();
        let refs: Vec<&BackendListing> = listings.iter().collect();
        let got: Vec<(String, String, String)> = collisions(&refs)
            .into_iter()
            .map(|c| match c {
                crate::catalog::CatalogError::Collision {
                    name,
                    first,
                    second,
                    ..
                } => (first, second, name),
                crate::catalog::CatalogError::Reserved { name, backend } => {
                    (backend, String::new(), name)
                }
            })
            .collect();
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(a, b, n)| (a.to_string(), b.to_string(), n.to_string()))
            .collect();
        assert_eq!(got, want, "{backends:?}");
    }
}

#[test]
fn a_backend_that_did_not_start_is_in_the_report_and_not_in_the_collisions() {
    let backends = vec![
        listed("a", listing("a", "", &["echo"])),
        BackendReport {
            name: "b".to_owned(),
            reached_by: "url http://127.0.0.1:9/mcp".to_owned(),
            outcome: Outcome::NotStarted {
                reason: "connection refused".to_owned(),
            },
        },
    ];
    let report = Report::new("config x.toml".to_owned(), backends);
    assert!(report.collisions.is_empty());
    let text = report.render();
    assert!(
        text.contains(
            "backend b (url http://127.0.0.1:9/mcp)\n  did not start: connection refused"
        ),
        "{text}"
    );
    assert!(text.contains("1 problem (on standard error)"), "{text}");
}

#[test]
fn parser_messages_are_kept_to_one_line() {
    // (message, one line)
    let table = [
        (
            "TOML parse error at line 2, column 1\n  |\n2 | port = 1\n  | ^^^^\nunknown field `port`, expected one of `listen`, `workers`\n",
            "TOML parse error at line 2, column 1: unknown field `port`, expected one of `listen`, `workers`",
        ),
        (
            "invalid config: server.page_size: must be at least 1",
            "invalid config: server.page_size: must be at least 1",
        ),
        (
            "expected value at line 1 column 2",
            "expected value at line 1 column 2",
        ),
        ("a | b", "a | b"),
    ];
    for (message, want) in table {
        assert_eq!(one_line(message), want, "{message:?}");
    }
}

#[test]
fn a_backend_exposing_a_reserved_name_is_a_problem_only_with_search_on() {
    let backends = || {
        vec![
            listed("a", listing("a", "", &["find_tools", "x"])),
            listed("b", listing("b", "b", &["call_tool"])),
        ]
    };
    let off = Report::new("config x.toml".to_owned(), backends())
        .reserving(&crate::catalog::reserved(false));
    assert!(off.problems().is_empty(), "{:?}", off.problems());
    let on = Report::new("config x.toml".to_owned(), backends())
        .reserving(&crate::catalog::reserved(true));
    assert_eq!(
        on.problems(),
        [
            "catalog: tool name find_tools of backend a is reserved by the gateway's [catalog] search"
        ]
    );
}

#[test]
fn a_backend_url_is_reported_without_its_userinfo_or_query() {
    let toml = "[[backend]]\nname = \"hosted\"\nurl = \"https://u:USERINFO-SECRET@mcp.example/v1/mcp?key=QUERY-SECRET\"\n";
    let config =
        crate::config::Config::from_toml_str(toml, std::path::Path::new("c.toml")).unwrap();
    assert_eq!(
        reached_by(&config.backends[0]),
        "url https://mcp.example/v1/mcp"
    );
}

#[test]
fn a_per_user_backend_waiting_for_its_first_consent_is_said_and_is_no_problem() {
    let report = Report::new(
        "t.toml".into(),
        vec![BackendReport {
            name: "notes".into(),
            reached_by: "url https://notes.example/mcp".into(),
            outcome: Outcome::AwaitsConsent {
                reason: "server/discover answered HTTP 401 Unauthorized".into(),
            },
        }],
    );
    assert!(report.problems().is_empty());
    let text = report.render();
    assert!(
        text.contains("waits for its first user's consent"),
        "{text}"
    );
    assert!(text.contains("ok: every backend"), "{text}");
}
