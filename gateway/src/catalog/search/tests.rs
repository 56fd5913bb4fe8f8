//! The tool search: terms, ranking, bounds, and the two tools' definitions against JSON Schema and the
//! MCP schema.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;
use crate::catalog::{BackendListing, CatalogBuilder, CatalogSnapshot};

fn all_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    terms::terms(text, |t| {
        out.push(t.to_owned());
        true
    });
    out
}

#[test]
fn terms_split_lower_case_and_fold() {
    let cases: &[(&str, &[&str])] = &[
        // `create` and `issue` folded (a final `e`), like every form of them.
        ("github__createIssue", &["github", "creat", "issu"]),
        ("list_pull_requests", &["list", "pull", "request"]),
        ("HTTPServer getURL", &["http", "server", "get", "url"]),
        ("v2Beta s3-bucket", &["v2", "beta", "s3", "bucket"]),
        (
            "Creates, created, creating: create!",
            &["creat", "creat", "creat", "creat"],
        ),
        (
            "issues entries boxes matches classes",
            &["issu", "entry", "box", "match", "class"],
        ),
        (
            "running setting called passing added",
            &["run", "set", "call", "pass", "add"],
        ),
        (
            "status analysis process",
            &["status", "analysis", "process"],
        ),
        // Stems shorter than three characters are left alone.
        (
            "uses used bed ring lies",
            &["use", "used", "bed", "ring", "lie"],
        ),
        ("the file of a user", &["fil", "user"]),
        ("Ünïcode ÉTÉ 東京", &["ünïcod", "été", "東京"]),
        ("", &[]),
        ("  __ -- !!", &[]),
    ];
    for (text, want) in cases {
        assert_eq!(all_terms(text), *want, "{text:?}");
    }
}

#[test]
fn a_long_word_is_cut_the_same_way_everywhere() {
    let long = "x".repeat(100);
    assert_eq!(all_terms(&long), vec!["x".repeat(terms::MAX_TERM_BYTES)]);
    // Cut at a character boundary: 2-byte characters, an even budget.
    assert_eq!(
        all_terms(&"é".repeat(40)),
        vec!["é".repeat(terms::MAX_TERM_BYTES / 2)]
    );
}

fn tool(name: &str, description: &str, properties: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = properties
        .iter()
        .map(|p| ((*p).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"name": name, "description": description,
           "inputSchema": {"type": "object", "properties": properties}})
}

fn listing(backend: &str, tools: Vec<Value>) -> BackendListing {
    BackendListing {
        backend: backend.to_owned(),
        prefix: backend.to_owned(),
        tools,
        ..BackendListing::default()
    }
}

fn catalog() -> CatalogSnapshot {
    let mut b = CatalogBuilder::new();
    b.add(listing(
        "weather",
        vec![
            tool(
                "get_forecast",
                "The weather forecast for a city, for the next days.",
                &["city", "days"],
            ),
            tool(
                "current",
                "Current conditions at a place: temperature, humidity and wind.",
                &["place"],
            ),
        ],
    ));
    b.add(listing(
        "github",
        vec![
            tool(
                "createIssue",
                "Opens a new issue in a repository.",
                &["owner", "repo", "title"],
            ),
            tool(
                "list_issues",
                "Lists the issues of a repository, newest first.",
                &["owner", "repo"],
            ),
            tool(
                "merge_pull_request",
                "Merges a pull request into its base branch.",
                &["owner", "repo", "number"],
            ),
            tool(
                "search_code",
                "Searches code across repositories; an issue number may be given as #N.",
                &["query"],
            ),
        ],
    ));
    b.add(listing(
        "fs",
        vec![
            tool("read_file", "Reads a text file.", &["path"]),
            tool(
                "write_file",
                "Writes text to a file, replacing what it held.",
                &["path", "content"],
            ),
            tool(
                "list_directory",
                "Lists the entries of a directory.",
                &["path"],
            ),
        ],
    ));
    b.build().expect("no collision")
}

fn names(snapshot: &CatalogSnapshot, hits: &[Hit]) -> Vec<String> {
    hits.iter()
        .map(|h| snapshot.tools()[h.position].exposed_name.clone())
        .collect()
}

#[test]
fn ranking() {
    let snapshot = catalog();
    let index = ToolIndex::build(snapshot.tools());
    assert_eq!(index.len(), 9);
    assert!(index.heap_bytes() > 9 * 8, "{}", index.heap_bytes());
    let cases: &[(&str, Option<&str>, usize, &[&str])] = &[
        // A word of a description finds the tool.
        ("humidity", None, 10, &["weather__current"]),
        (
            "forecasts for tomorrow",
            None,
            10,
            &["weather__get_forecast"],
        ),
        // A name outranks a mere mention in a description.
        (
            "issue",
            None,
            10,
            &[
                "github__createIssue",
                "github__list_issues",
                "github__search_code",
            ],
        ),
        // Inflections and camelCase meet.
        ("creating issues", None, 1, &["github__createIssue"]),
        ("createIssue", None, 1, &["github__createIssue"]),
        (
            "merging pull requests",
            None,
            1,
            &["github__merge_pull_request"],
        ),
        // An inputSchema property name counts, a little.
        ("place", None, 10, &["weather__current"]),
        // The backend filter.
        ("list", Some("fs"), 10, &["fs__list_directory"]),
        ("list", Some("github"), 10, &["github__list_issues"]),
        ("file", Some("weather"), 10, &[]),
        ("file", Some("nowhere"), 10, &[]),
        // The limit.
        ("file", None, 1, &["fs__read_file"]),
        ("file", None, 0, &[]),
        // Nothing to look for.
        ("", None, 10, &[]),
        ("  ?! ", None, 10, &[]),
        ("the of a", None, 10, &[]),
        ("zeppelin", None, 10, &[]),
    ];
    for (query, backend, limit, want) in cases {
        let hits = index.find(query, *backend, *limit);
        assert_eq!(
            names(&snapshot, &hits),
            *want,
            "{query:?} {backend:?} {limit}"
        );
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "{query:?}: {hits:?}"
        );
    }
    // Both file tools match `file` in name and description; all of a query's words count.
    let both = names(&snapshot, &index.find("file", None, 10));
    assert_eq!(both.len(), 2, "{both:?}");
    assert_eq!(
        names(&snapshot, &index.find("write a file", None, 10))[0],
        "fs__write_file"
    );
}

#[test]
fn ties_are_broken_by_position() {
    let mut b = CatalogBuilder::new();
    // One prefix term each (so equal lengths), added out of order.
    for backend in ["zeta", "alpha", "beta"] {
        b.add(listing(
            backend,
            vec![tool("same", "The same tool everywhere.", &[])],
        ));
    }
    let snapshot = b.build().expect("no collision");
    let index = ToolIndex::build(snapshot.tools());
    let hits = index.find("same tool", None, 10);
    assert_eq!(
        names(&snapshot, &hits),
        ["alpha__same", "beta__same", "zeta__same"]
    );
    assert_eq!(
        hits.iter().map(|h| h.position).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert!(
        hits.iter()
            .all(|h| h.score == hits[0].score && h.score > 0.0)
    );
    assert_eq!(index.find("same tool", None, 2), hits[..2]);
    assert_eq!(index.find("same tool", None, 10), hits);
}

#[test]
fn a_query_is_read_up_to_its_bounds() {
    let snapshot = catalog();
    let index = ToolIndex::build(snapshot.tools());
    // Terms: 63 unknown words, then the 64th is read, the 65th is not.
    let filler: String = (0..63).map(|i| format!("zz{i}q ")).collect();
    assert_eq!(
        names(
            &snapshot,
            &index.find(&format!("{filler}humidity"), None, 10)
        ),
        ["weather__current"]
    );
    assert!(
        index
            .find(&format!("{filler}zzq humidity"), None, 10)
            .is_empty()
    );
    // Bytes: a word ending at byte 1,024 is read whole, one past it is cut (`humidit` matches nothing).
    let pad = " ".repeat(MAX_QUERY_BYTES - "humidity".len());
    assert_eq!(
        names(&snapshot, &index.find(&format!("{pad}humidity"), None, 10)),
        ["weather__current"]
    );
    assert!(index.find(&format!("{pad} humidity"), None, 10).is_empty());
    // Cut inside a character: no panic.
    let pad = " ".repeat(MAX_QUERY_BYTES - 1);
    assert!(index.find(&format!("{pad}é"), None, 10).is_empty());
}

#[test]
fn an_empty_catalog_finds_nothing() {
    let index = ToolIndex::build(&[]);
    assert!(index.is_empty());
    assert!(index.find("anything", None, 10).is_empty());
    assert_eq!(
        format!("{index:?}"),
        "ToolIndex { tools: 0, backends: 0, terms: 0, postings: 0 }"
    );
}

fn spec_schema(version: &str) -> Value {
    let dir = std::env::var_os("MCPGW_SCHEMA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec/schema")
        });
    let path = dir.join(version).join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("schema is JSON")
}

/// A validator for definition `def` of the MCP schema of `version`.
fn spec_validator(version: &str, def: &str) -> jsonschema::Validator {
    let mut schema = spec_schema(version);
    let defs = if schema.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    assert!(schema[defs].get(def).is_some(), "{version} has no {def}");
    schema["$ref"] = json!(format!("#/{defs}/{def}"));
    jsonschema::validator_for(&schema).expect("the MCP schema compiles")
}

/// The generations whose Tool has `title` and `outputSchema`.
const VERSIONS: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];

#[test]
fn the_gateway_tools_are_valid_tools_with_valid_schemas() {
    let [find, call] = gateway_tools();
    assert_eq!(find["name"], FIND_TOOLS);
    assert_eq!(call["name"], CALL_TOOL);
    assert_eq!(find["annotations"]["readOnlyHint"], true);
    assert!(
        call["description"]
            .as_str()
            .expect("a description")
            .contains(FIND_TOOLS)
    );
    for version in VERSIONS {
        let v = spec_validator(version, "Tool");
        for t in [&find, &call] {
            let errors: Vec<String> = v.iter_errors(t).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{version} {}: {errors:?}", t["name"]);
        }
    }
    for t in [&find, &call] {
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        for required in schema["required"].as_array().expect("required") {
            let name = required.as_str().expect("a name");
            assert!(schema["properties"].get(name).is_some(), "{name}");
        }
        jsonschema::meta::validate(schema).expect("a valid JSON Schema");
    }
    jsonschema::meta::validate(&find["outputSchema"]).expect("a valid JSON Schema");

    let arguments = |t: &Value, args: Value| jsonschema::is_valid(&t["inputSchema"], &args);
    let cases = [
        (&find, json!({"query": "issue"}), true),
        (
            &find,
            json!({"query": "issue", "backend": "github", "limit": 50}),
            true,
        ),
        (&find, json!({}), false),
        (&find, json!({"query": ""}), false),
        (&find, json!({"query": "x", "limit": 0}), false),
        (&find, json!({"query": "x", "limit": 51}), false),
        (&find, json!({"query": "x", "limit": 2.5}), false),
        (&find, json!({"query": "x", "other": 1}), false),
        (&call, json!({"name": "github__createIssue"}), true),
        (
            &call,
            json!({"name": "github__createIssue", "arguments": {"title": "t"}}),
            true,
        ),
        (&call, json!({"arguments": {}}), false),
        (&call, json!({"name": "t", "arguments": ["a"]}), false),
        (&call, json!({"name": "t", "args": {}}), false),
    ];
    for (t, args, valid) in cases {
        assert_eq!(arguments(t, args.clone()), valid, "{} {args}", t["name"]);
    }
}

#[test]
fn found_gives_the_listed_tools_in_rank_order() {
    let snapshot = catalog();
    let index = ToolIndex::build(snapshot.tools());
    let hits = index.find("issue", None, 2);
    let result = found(snapshot.tools(), &hits);
    let listed: Vec<&Value> = hits
        .iter()
        .map(|h| &snapshot.tools()[h.position].tool)
        .collect();
    assert_eq!(
        result["structuredContent"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .collect::<Vec<_>>(),
        listed
    );
    assert_eq!(
        result["structuredContent"]["tools"][0]["name"],
        "github__createIssue"
    );
    assert_eq!(result["content"][0]["type"], "text");
    let text: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(text, result["structuredContent"]["tools"]);

    let [find, _] = gateway_tools();
    assert!(jsonschema::is_valid(
        &find["outputSchema"],
        &result["structuredContent"]
    ));
    for version in VERSIONS {
        let v = spec_validator(version, "CallToolResult");
        // As `protocol::shape` completes it for a 2026-07-28 client.
        let mut result = result.clone();
        if version == "2026-07-28" {
            result["resultType"] = json!("complete");
        }
        let errors: Vec<String> = v.iter_errors(&result).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{version}: {errors:?}");
    }
    assert_eq!(
        found(snapshot.tools(), &[])["structuredContent"]["tools"],
        json!([])
    );
}

#[test]
fn the_index_can_be_shared() {
    fn shared<T: Send + Sync>() {}
    shared::<ToolIndex>();
}
