//! The crate's domains (its top-level modules) import only domains of lower layers, in the order
//! ARCHITECTURE.md declares (`LAYERS`, its line written out word for word), and no two files import each
//! other, nor does any longer circle of files. Both tests read every source file and resolve its
//! `crate::`/`super::`/`self::` paths to files (`import_graph`, shared with the `handlers` crate's test).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "../../handlers/src/import_graph.rs"]
mod import_graph;

use import_graph::{Import, circles, file_graph, imports, modules, pairs};

/// The domains by layer, highest first: a domain imports only domains of the layers after its own, never
/// one of its own layer. ARCHITECTURE.md says this line as [`declared_line`] writes it.
const LAYERS: &[&[&str]] = &[
    &["serve"],
    &["check", "client"],
    &["front"],
    &["pipeline", "reload"],
    &["notify"],
    &["state"],
    &[
        "bridge",
        "policy",
        "endpoint",
        "limit",
        "openapi",
        "redaction",
        "intercept",
    ],
    &["catalog", "session", "oauth"],
    &["auth"],
    &["cluster", "telemetry", "cache", "egress"],
    &["config"],
    &["tls"],
    &[
        "auth_context",
        "drain",
        "reloadable",
        "metrics",
        "glob",
        "probe",
        "tool_server",
        "docs_blocks",
    ],
];

/// Pairs of files that still import each other, each until its fix lands.
const KNOWN_CIRCLES: &[[&str; 2]] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layering as ARCHITECTURE.md words it: `` `a`, `b` → `c` → … ``.
fn declared_line() -> String {
    LAYERS
        .iter()
        .map(|layer| {
            layer
                .iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

fn layer_of(domain: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&domain))
}

/// The imports that break the layering: of a domain in the same or a higher layer, or of a domain in none.
fn against_the_layers(imports: &[Import], domains: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for import in imports {
        let from = import.file.split('/').next().unwrap_or_default();
        let from = from.trim_end_matches(".rs");
        let Some(to) = import.path.first().filter(|d| domains.contains(*d)) else {
            continue;
        };
        if from == to || from == "lib" || from == "layering" {
            continue;
        }
        match (layer_of(from), layer_of(to)) {
            (Some(a), Some(b)) if a < b => {}
            (Some(a), Some(b)) if a == b => {
                found.push(format!("{from} and {to} share a layer: {import}"));
            }
            (Some(_), Some(_)) => found.push(format!("{from} imports a higher layer: {import}")),
            (None, _) => found.push(format!("{from} is in no layer: {import}")),
            (_, None) => found.push(format!("{to} is in no layer: {import}")),
        }
    }
    found
}

/// The crate's domains: its top-level modules.
fn domains() -> BTreeSet<String> {
    modules(&src())
        .into_keys()
        .filter(|m| m.len() == 1 && m[0] != "layering")
        .map(|mut m| m.remove(0))
        .collect()
}

/// The library's public surface is its crate root: every domain is declared through `domains!` (private, or
/// public only with the `internals` feature), none with `pub mod`.
#[test]
fn the_crate_root_declares_no_public_module() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let mut public = Vec::new();
    let mut in_macro = false;
    for line in lib.lines() {
        let line = line.trim();
        if line.starts_with("macro_rules! domains") {
            in_macro = true;
        }
        if in_macro {
            if line == "}" {
                in_macro = false;
            }
            continue;
        }
        if line.starts_with("pub mod") || line.starts_with("pub(crate) mod") {
            public.push(line.to_owned());
        }
    }
    assert!(
        public.is_empty(),
        "lib.rs declares modules outside domains!: {public:?}"
    );
    for (domain, _) in std::fs::read_dir(src())
        .expect("src")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned();
            (!matches!(name.as_str(), "lib" | "main" | "layering" | "docs_blocks"))
                .then_some((name, ()))
        })
    {
        assert!(
            lib.contains(&format!("    {domain},")),
            "{domain} is not declared through domains! in lib.rs"
        );
    }
}

#[test]
fn the_domains_import_only_lower_layers() {
    let domains = domains();
    let placed: BTreeSet<String> = LAYERS
        .iter()
        .flat_map(|l| l.iter())
        .map(|d| (*d).to_owned())
        .collect();
    assert_eq!(
        domains, placed,
        "every domain is in exactly one layer of LAYERS (and ARCHITECTURE.md), and every one listed exists"
    );
    let broken = against_the_layers(&imports(&src()), &domains);
    assert!(
        broken.is_empty(),
        "against the declared layering ({}):\n{}",
        declared_line(),
        broken.join("\n")
    );
}

#[test]
fn architecture_declares_the_layers_the_test_checks() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md reads");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = declared_line();
    assert!(
        words.contains(&line),
        "ARCHITECTURE.md does not declare the layering {line}"
    );
}

#[test]
fn a_higher_layer_or_a_sibling_is_named_with_its_file() {
    let domains: BTreeSet<String> = ["state", "policy", "catalog", "session", "front", "x"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let import = |file: &str, path: &str| Import {
        file: file.to_owned(),
        line: 3,
        path: path.split("::").map(str::to_owned).collect(),
    };
    let found = against_the_layers(
        &[
            import("catalog/mod.rs", "state::Gateway"),
            import("state/mod.rs", "policy::Policy"),
            import("catalog/view.rs", "session::Store"),
            import("front/mod.rs", "state::Gateway"),
            import("x.rs", "state::Gateway"),
            import("state/live.rs", "state::live::Live"),
        ],
        &domains,
    );
    assert_eq!(
        found,
        [
            "catalog imports a higher layer: catalog/mod.rs:3 imports crate::state::Gateway",
            "catalog and session share a layer: catalog/view.rs:3 imports crate::session::Store",
            "x is in no layer: x.rs:3 imports crate::state::Gateway",
        ]
    );
}

#[test]
fn the_telemetry_metrics_and_glob_import_no_domain_but_the_config() {
    let domains = domains();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for import in imports(&src()) {
        let from = import
            .file
            .split('/')
            .next()
            .unwrap_or_default()
            .trim_end_matches(".rs");
        if let Some(to) = import
            .path
            .first()
            .filter(|d| domains.contains(*d) && *d != from)
        {
            graph.entry(from.to_owned()).or_default().insert(to.clone());
        }
    }
    // Telemetry is told plain facts by the pipeline; the metrics are a leaf every domain records into.
    let telemetry = graph.get("telemetry").cloned().unwrap_or_default();
    assert!(
        telemetry.iter().all(|d| d == "config"),
        "telemetry imports {telemetry:?}"
    );
    let metrics = graph.get("metrics").cloned().unwrap_or_default();
    assert!(metrics.is_empty(), "metrics imports {metrics:?}");
    // The glob matcher is a leaf the configuration, the catalog and the checks share.
    assert!(
        graph.get("glob").is_none_or(BTreeSet::is_empty),
        "glob imports {:?}",
        graph.get("glob")
    );
    assert!(
        graph.get("pipeline").is_some_and(|p| p.contains("catalog")),
        "the sources were read"
    );
}

#[test]
fn no_files_import_each_other() {
    let graph = file_graph(&src());
    assert!(
        graph.len() > 100,
        "the sources were read: {} files",
        graph.len()
    );
    let known: Vec<BTreeSet<String>> = KNOWN_CIRCLES
        .iter()
        .map(|pair| pair.iter().map(|f| (*f).to_owned()).collect())
        .collect();
    let found = circles(&graph);
    let mut shown: Vec<String> = pairs(&graph)
        .into_iter()
        .filter(|(a, b)| !known.iter().any(|k| k.contains(a) && k.contains(b)))
        .map(|(a, b)| format!("{a} and {b} import each other"))
        .collect();
    shown.extend(
        found
            .iter()
            .filter(|(group, _)| !known.contains(group))
            .map(|(group, way)| {
                let way: Vec<String> = way.iter().map(|i| format!("    {i}")).collect();
                let group: Vec<&str> = group.iter().map(String::as_str).collect();
                format!(
                    "files {} reach each other, for one:\n{}",
                    group.join(", "),
                    way.join("\n")
                )
            }),
    );
    for k in &known {
        if !found.iter().any(|(group, _)| group == k) {
            shown.push(format!(
                "{k:?} no longer import each other: take them out of KNOWN_CIRCLES"
            ));
        }
    }
    assert!(shown.is_empty(), "{}", shown.join("\n"));
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source folder reads") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
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
