//! The docs hold together (README.md and the book's pages, docs/src/**/*.md), read as files, no process
//! started:
//!
//! - every fenced block in a language someone would paste or copy (`sh`, `toml`, `json`, …) is directly
//!   preceded (blank lines allowed) by a `<!-- test: NAME` marker; blocks with no language, `text` or
//!   `console` show output and are exempt;
//! - every marker names one block, its NAME is on no other marker, and `"NAME"` is a string literal of
//!   some `.rs` file of the workspace other than this one (some test finds the block by it);
//! - every relative link `[x](target)` reaches an existing file (from the page's directory; README's from
//!   the root), its `#anchor` a heading of that page by mdBook's rule; pages in docs/src link only inside
//!   docs/src, which the book is built from (`{{#include}}` of a file outside it is not a link);
//! - SUMMARY.md lists every page of docs/src, and only existing ones;
//! - README.md is at most 200 lines.
//!
//! Every problem is reported at once, each as `file:line: what is wrong`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use crate::support::*;

/// Fenced languages whose blocks must carry a marker (what a reader pastes or copies).
const MARKED_LANGUAGES: [&str; 11] = [
    "sh",
    "bash",
    "toml",
    "json",
    "jsonc",
    "python",
    "py",
    "ts",
    "typescript",
    "js",
    "yaml",
];

/// README.md's length at most.
const README_MAX_LINES: usize = 200;

/// mdBook's anchor of a heading: its text lower-cased, every character but letters, digits, `-`, `_` and
/// whitespace dropped, whitespace made `-`. Markdown's own marks (backquotes, a link's target) are not
/// part of the text.
fn slug(heading: &str) -> String {
    heading_text(heading)
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// A heading's text as rendered: backquotes and emphasis dropped, a link `[text](target)` its text.
fn heading_text(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find("](") {
        let close = rest[open..].find(')').map_or(rest.len(), |c| open + c + 1);
        out.push_str(&rest[..open]);
        rest = &rest[close..];
    }
    out.push_str(rest);
    out.chars()
        .filter(|c| !matches!(c, '`' | '[' | '*'))
        .collect()
}

/// The anchors of a page's headings, in order, a repeated one numbered as mdBook numbers it (`a`, `a-1`).
fn anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for line in outside_fences(text).lines() {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let n = seen.entry(base.clone()).or_default();
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// `text` with every fenced block's lines (fences included) emptied, its line numbers unchanged.
fn outside_fences(text: &str) -> String {
    let mut lines = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            lines.push("");
        } else if fenced {
            lines.push("");
        } else {
            lines.push(line);
        }
    }
    lines.join("\n")
}

/// `text` outside its fenced blocks, every HTML comment emptied and every inline code span made `code`:
/// what is left is prose, its line numbers unchanged.
fn prose(text: &str) -> String {
    let without_comments = replace_spans(&outside_fences(text), "<!--", "-->", "");
    without_code_spans(&without_comments)
}

/// `text` with every span from `open` to `close` replaced by `by`, its newlines kept.
fn replace_spans(text: &str, open: &str, close: &str, by: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let Some(len) = rest[start..].find(close) else {
            break;
        };
        let span = &rest[start..start + len + close.len()];
        out.push_str(&rest[..start]);
        out.push_str(by);
        out.extend(span.chars().filter(|&c| c == '\n'));
        rest = &rest[start + len + close.len()..];
    }
    out.push_str(rest);
    out
}

/// `text` with each inline code span (a run of backquotes to the next run as long) made `code`, its newlines
/// kept; an unmatched run stays as it is.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        let mut j = i + run;
        let close = loop {
            if j >= chars.len() {
                break None;
            }
            if chars[j] == '`' {
                let n = chars[j..].iter().take_while(|&&c| c == '`').count();
                if n == run {
                    break Some(j);
                }
                j += n;
            } else {
                j += 1;
            }
        };
        match close {
            Some(j) => {
                out.push_str("code");
                out.extend(chars[i + run..j].iter().filter(|&&c| c == '\n'));
                i = j + run;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// The links of a page's prose (images too): each one's line and target.
fn links(text: &str) -> Vec<(usize, String)> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = prose[from..].find("](") {
        let start = from + at + 2;
        let mut depth = 1;
        let mut end = start;
        for (i, c) in prose[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                '\n' => break,
                _ => {}
            }
            if depth == 0 {
                end = start + i;
                break;
            }
        }
        from = start;
        if end == start && !prose[start..].starts_with(')') {
            continue;
        }
        let target = prose[start..end]
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_owned();
        let line = prose[..start].matches('\n').count() + 1;
        out.push((line, target));
    }
    out
}

/// `path` with `.` and `..` resolved, without touching the file system.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// A page's text as the book renders it: each `{{#include FILE}}` (or `FILE:FROM:` / `FILE:FROM:TO`,
/// 1-based lines) replaced by what it includes; the problems of includes that name no file.
fn expanded(page: &str, text: &str) -> (String, Vec<String>) {
    let dir = Path::new(page).parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(spec) = line
            .trim()
            .strip_prefix("{{#include ")
            .and_then(|s| s.strip_suffix("}}"))
        else {
            out.push(line.to_owned());
            continue;
        };
        let mut parts = spec.trim().split(':');
        let file = parts.next().unwrap_or_default();
        let from: usize = parts.next().and_then(|s| s.parse().ok()).unwrap_or(1);
        let to: Option<usize> = parts.next().and_then(|s| s.parse().ok());
        let path = normalized(&dir.join(file));
        match std::fs::read_to_string(repo_root().join(&path)) {
            Ok(included) => out.extend(
                included
                    .lines()
                    .enumerate()
                    .filter(|(i, _)| i + 1 >= from && to.is_none_or(|to| *i < to))
                    .map(|(_, l)| l.to_owned()),
            ),
            Err(e) => problems.push(format!(
                "{page}:{}: {{{{#include {file}}}}} includes {}: {e}",
                n + 1,
                path.display()
            )),
        }
    }
    (out.join("\n"), problems)
}

/// The text of every `.rs` file of the workspace but `except` (its canonical path).
fn rust_sources(except: &Path) -> Vec<String> {
    fn walk(dir: &Path, except: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                    walk(&path, except, out);
                }
            } else if name.ends_with(".rs") && path.canonicalize().ok().as_deref() != Some(except) {
                out.push(std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo_root(), except, &mut out);
    out
}

/// The problems of the docs as they are now, one line each.
fn problems() -> Vec<String> {
    let root = repo_root();
    let pages = doc_pages();
    let texts: BTreeMap<String, String> = pages
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
            (p.clone(), text)
        })
        .collect();
    let mut problems = Vec::new();

    // Blocks and markers.
    let this_file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/docs_check.rs")
        .canonicalize()
        .unwrap();
    let sources = rust_sources(&this_file);
    let mut markers: BTreeMap<String, String> = BTreeMap::new();
    for (page, text) in &texts {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim().strip_prefix("<!-- test: ") else {
                continue;
            };
            let here = format!("{page}:{}", i + 1);
            let name = rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_end_matches("-->");
            if !rest.trim_end().ends_with("-->") {
                problems.push(format!(
                    "{here}: the marker {name} ends on its own line with -->"
                ));
            }
            let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
            if !next.is_some_and(|l| l.trim_start().starts_with("```")) {
                problems.push(format!(
                    "{here}: the marker {name} is not followed by a fenced block"
                ));
            }
            if name.is_empty() {
                problems.push(format!("{here}: a marker without a name"));
                continue;
            }
            if let Some(first) = markers.insert(name.to_owned(), here.clone()) {
                problems.push(format!(
                    "{here}: the marker {name} is also at {first} (names are unique)"
                ));
            }
            let literal = format!("\"{name}\"");
            if !sources.iter().any(|s| s.contains(&literal)) {
                problems.push(format!(
                    "{here}: no test uses the marker {name} (no .rs file of the workspace has the \
                     string literal \"{name}\")"
                ));
            }
        }
        for fence in fences(text) {
            if matches!(fence.language.as_str(), "sh" | "bash") {
                problems.extend(
                    hidden_failures(&fence.text)
                        .into_iter()
                        .map(|why| format!("{page}:{}: {why}", fence.line)),
                );
            }
            if MARKED_LANGUAGES.contains(&fence.language.as_str()) && fence.marker.is_none() {
                problems.push(format!(
                    "{page}:{}: a {} block without a `<!-- test: NAME` marker right before it \
                     (output shown goes in a block with no language or `text`)",
                    fence.line, fence.language
                ));
            }
        }
    }

    // Links.
    let mut anchors_of: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    for (page, text) in &texts {
        let (text, include_problems) = expanded(page, text);
        problems.extend(include_problems);
        anchors_of.insert(PathBuf::from(page), anchors(&text));
    }
    for (page, text) in &texts {
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        let in_book = page.starts_with("docs/src/");
        for (line, target) in links(text) {
            let here = format!("{page}:{line}");
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                PathBuf::from(page)
            } else {
                normalized(&dir.join(file))
            };
            if file.is_empty() && anchor.is_none() {
                problems.push(format!("{here}: an empty link"));
                continue;
            }
            if in_book && !path.starts_with("docs/src") {
                problems.push(format!(
                    "{here}: {target} is outside docs/src, which the book is built from (name a \
                     repository file as `path`, not as a link)"
                ));
                continue;
            }
            if !root.join(&path).exists() {
                problems.push(format!(
                    "{here}: {target}: {} does not exist",
                    path.display()
                ));
                continue;
            }
            let Some(anchor) = anchor else {
                continue;
            };
            let anchors = anchors_of.get(&path).cloned().unwrap_or_else(|| {
                std::fs::read_to_string(root.join(&path))
                    .map(|t| anchors(&t))
                    .unwrap_or_default()
            });
            if path.extension().is_none_or(|e| e != "md") {
                problems.push(format!(
                    "{here}: {target}: an anchor in a file that is not a page"
                ));
            } else if !anchors.iter().any(|a| a == anchor) {
                problems.push(format!(
                    "{here}: {target}: {} has no heading whose anchor is #{anchor} (its anchors: {})",
                    path.display(),
                    anchors.join(", ")
                ));
            }
        }
    }

    // The book's table of contents.
    let summary = "docs/src/SUMMARY.md";
    match texts.get(summary) {
        None => problems.push(format!("{summary} does not exist")),
        Some(text) => {
            let mut listed = BTreeSet::new();
            for (line, target) in links(text) {
                let path = normalized(&Path::new("docs/src").join(&target));
                if !root.join(&path).is_file() {
                    problems.push(format!(
                        "{summary}:{line}: lists {target}, which does not exist"
                    ));
                }
                listed.insert(path.to_string_lossy().into_owned());
            }
            for page in pages
                .iter()
                .filter(|p| p.starts_with("docs/src/") && p.as_str() != summary)
            {
                if !listed.contains(page) {
                    problems.push(format!("{summary}: does not list {page}"));
                }
            }
        }
    }

    // README.md stays short.
    let readme_lines = texts.get("README.md").map_or(0, |t| t.lines().count());
    if readme_lines > README_MAX_LINES {
        problems.push(format!(
            "README.md:{readme_lines}: {readme_lines} lines, more than {README_MAX_LINES}: move \
             the detail into docs/src"
        ));
    }
    problems
}

/// What in a shell example could hide a failure (issue 35 §1): a wait with no bound (`until`, `while
/// true`), or a process started in the background whose output is thrown away (so a failed start says
/// nothing).
fn hidden_failures(script: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in script.lines() {
        let code = line.split(" #").next().unwrap_or_default().trim();
        if code.starts_with("until ") || code.contains("; until ") || code.starts_with("while true")
        {
            found.push(format!(
                "a wait with no bound (loop a counted number of times): {code}"
            ));
        }
        let backgrounded = code.contains(" & ") || code.ends_with(" &");
        let discarded = code.contains(">/dev/null") || code.contains("> /dev/null");
        if backgrounded && discarded && !code.starts_with("for ") {
            found.push(format!(
                "a background process whose output is discarded (keep it in a log shown on failure): {code}"
            ));
        }
    }
    found
}

#[test]
fn waits_are_bounded_and_background_logs_kept() {
    // (script, how many problems)
    let table = [
        ("until curl -sf http://x/readyz; do sleep 0.2; done", 1),
        ("while true; do sleep 1; done", 1),
        ("mcpgw serve >/dev/null 2>&1 & A=$!", 1),
        ("mcpgw serve >gw.log 2>&1 & A=$!", 0),
        (
            "for i in $(seq 100); do curl -sf http://x >/dev/null && break; sleep 0.1; done",
            0,
        ),
        ("curl -s http://x > /dev/null", 0),
    ];
    for (script, n) in table {
        assert_eq!(hidden_failures(script).len(), n, "{script}");
    }
}

#[test]
fn the_docs_hold_together() {
    let problems = problems();
    assert!(
        problems.is_empty(),
        "{} problems in README.md and docs/src:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn anchors_follow_mdbooks_rule() {
    for (heading, anchor) in [
        ("Getting started", "getting-started"),
        (
            "Host config files: `--mcp-json`",
            "host-config-files---mcp-json",
        ),
        ("`[server]`", "server"),
        ("`[[auth.api_key]]`", "authapi_key"),
        ("`[endpoint.access]`", "endpointaccess"),
        (
            "Virtual servers (`[[endpoint]]`)",
            "virtual-servers-endpoint",
        ),
        (
            "A search tool for huge catalogs (`[catalog] search`)",
            "a-search-tool-for-huge-catalogs-catalog-search",
        ),
        (
            "`protocol` — the wire protocol, pure",
            "protocol--the-wire-protocol-pure",
        ),
        ("Threat model, in short", "threat-model-in-short"),
        ("Bird's-eye view", "birds-eye-view"),
        (
            "The [admin view](operations.md) today",
            "the-admin-view-today",
        ),
        (
            "Synthetic backend: `mcpgw mock-backend`",
            "synthetic-backend-mcpgw-mock-backend",
        ),
    ] {
        assert_eq!(slug(heading), anchor, "{heading}");
    }
    let page = "# Title\n\n```sh\n# not a heading\n```\n\n## Same\n\n### Same\n\n#hashtag\n";
    assert_eq!(anchors(page), ["title", "same", "same-1"]);
}

#[test]
fn links_are_read_from_prose_only() {
    let page = "See [a](a.md#x) and ![img](images/i.png \"title\").\n\n```sh\n[no](link.md)\n```\n\n\
                `[code](not.md)` and [`[[policy]]`](policy.md), <!-- [c](comment.md) -->\n\
                a span `across\nlines [x](y.md)` then [z](https://example.com)\n";
    assert_eq!(
        links(page),
        [
            (1, "a.md#x".to_owned()),
            (1, "images/i.png".to_owned()),
            (7, "policy.md".to_owned()),
            (9, "https://example.com".to_owned()),
        ]
    );
}
