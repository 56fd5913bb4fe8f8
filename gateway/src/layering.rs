//! The crate's domains (its top-level modules: `front`, `pipeline`, `bridge`, `notify`, `catalog`,
//! `session`, `state`, …) import each other without a circle: this test reads every source file, collects
//! the `crate::` paths each domain names, and fails with the circle when there is one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level modules a source text names through `crate::` (also inside `use crate::{a, b::c}`).
fn named_domains(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Only the first segment of each entry at the group's top level.
            let mut depth = 0usize;
            let mut entry_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => entry_start = true,
                    c if entry_start && depth == 0 && c.is_ascii_lowercase() => {
                        let name: String = group[i..]
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                            .collect();
                        out.insert(name);
                        entry_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source folder reads") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Domain → the domains it imports.
fn domain_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).expect("under src");
        let first = rel
            .iter()
            .next()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if first == "lib.rs" || first == "main.rs" {
            continue;
        }
        let domain = first.trim_end_matches(".rs").to_owned();
        let text = std::fs::read_to_string(&file).expect("a source file reads");
        let named = named_domains(&text);
        let entry = graph.entry(domain.clone()).or_default();
        entry.extend(named.into_iter().filter(|d| *d != domain));
    }
    graph
}

/// A circle through `from`, if any (depth-first).
fn circle(
    graph: &BTreeMap<String, BTreeSet<String>>,
    at: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|p| p == at) {
        let mut found = path[i..].to_vec();
        found.push(at.to_owned());
        return Some(found);
    }
    if done.contains(at) {
        return None;
    }
    path.push(at.to_owned());
    for next in graph.get(at).into_iter().flatten() {
        if let Some(found) = circle(graph, next, path, done) {
            return Some(found);
        }
    }
    path.pop();
    done.insert(at.to_owned());
    None
}

#[test]
fn the_domains_import_each_other_without_a_circle() {
    let graph = domain_graph();
    for must in [
        "front", "pipeline", "bridge", "notify", "catalog", "session", "limit", "metrics", "glob",
    ] {
        assert!(graph.contains_key(must), "no domain {must}: {graph:?}");
    }
    // The limits are below the pipeline and the state that hold them, and above the cluster they lease from.
    let limit = graph.get("limit").cloned().unwrap_or_default();
    for below in ["pipeline", "state", "session", "front", "serve"] {
        assert!(!limit.contains(below), "limit imports {below}: {limit:?}");
    }
    // Telemetry is told plain facts by the pipeline: it imports only the config it is built from.
    let telemetry = graph.get("telemetry").cloned().unwrap_or_default();
    assert!(
        telemetry.iter().all(|d| d == "config"),
        "telemetry imports {telemetry:?}"
    );
    // The glob matcher is a leaf the configuration, the catalog and the checks share.
    assert!(
        graph.get("glob").is_none_or(BTreeSet::is_empty),
        "glob imports {:?}",
        graph.get("glob")
    );
    // The metrics are a leaf every domain records into: they import nothing above the configuration.
    let metrics = graph.get("metrics").cloned().unwrap_or_default();
    assert!(
        metrics.iter().all(|d| d == "config"),
        "metrics imports {metrics:?}"
    );
    let mut done = BTreeSet::new();
    for domain in graph.keys() {
        if let Some(found) = circle(&graph, domain, &mut Vec::new(), &mut done) {
            panic!("an import circle: {}\n{graph:#?}", found.join(" -> "));
        }
    }
}

#[test]
fn named_domains_reads_plain_paths_and_groups() {
    let text = "use crate::a::B;\nuse crate::{c::{d, e}, f};\nlet x = crate::g::h();";
    let named: Vec<String> = named_domains(text).into_iter().collect();
    assert_eq!(named, ["a", "c", "f", "g"]);
}

#[test]
fn a_circle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    let found = circle(&graph, "a", &mut Vec::new(), &mut BTreeSet::new());
    assert_eq!(
        found,
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn no_front_matches_on_an_answer() {
    // The one transport adapter is `pipeline::deliver`: a front that matched on `Answer` would decide for
    // itself what a session, a batch or a stream becomes.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root.join("front"), &mut files);
    sources(&root.join("serve"), &mut files);
    assert!(files.len() > 5, "the fronts' sources were found");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            !text.contains("Answer::"),
            "{} matches on an Answer: write an Output for pipeline::deliver instead",
            file.display()
        );
    }
}
