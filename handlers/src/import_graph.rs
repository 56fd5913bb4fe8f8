//! Test-only: the `crate::`, `super::` and `self::` paths a crate's source files name, resolved to the files
//! they name, and the circles among those files. Both crates' layering tests use it (`handlers` declares it,
//! `gateway`'s `layering` includes this file by path), so it names nothing of either crate.
//!
//! A path names the file of its longest prefix that is a module with a file of its own: `crate::a::b::Item`
//! names `a/b.rs` (or `a/b/mod.rs`) when there is one, else `a.rs` (or `a/mod.rs`). Comments and string
//! literals are not read; `self` and `super` count from the inline module (`mod tests { .. }`) they are in.
//! A module's own children named without a prefix (`mod a; use a::X;`) are not counted: a parent declares its
//! children, and only a child reaching back (`super::`) with the parent reaching it by path makes a circle.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

/// One path a source file names, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Import {
    /// The file that names it, relative to `src` (`catalog/view.rs`).
    pub(crate) file: String,
    /// Its line in that file (from 1).
    pub(crate) line: usize,
    /// The path from the crate's root, `self` and `super` resolved
    /// (`["catalog", "snapshot", "CatalogSnapshot"]`).
    pub(crate) path: Vec<String>,
}

impl std::fmt::Display for Import {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{} imports crate::{}",
            self.file,
            self.line,
            self.path.join("::")
        )
    }
}

/// The crate's source files under `src` by module path (`lib.rs` is the root, `[]`; `main.rs`, another
/// crate, is left out).
pub(crate) fn modules(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files
        .into_iter()
        .filter(|rel| rel != "main.rs")
        .map(|rel| (module_of(&rel), rel))
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<String>) {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("the source folder reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).expect("under src");
                let parts: Vec<&str> = rel.iter().filter_map(|s| s.to_str()).collect();
                out.push(parts.join("/"));
            }
        }
    }
    walk(dir, dir, out);
}

/// `a/b.rs` and `a/b/mod.rs` are `[a, b]`; `lib.rs` is `[]`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.len() == 1 && parts[0] == "lib" || parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Every `crate::`/`super::`/`self::` path in the crate's sources under `src`, resolved from the root.
pub(crate) fn imports(src: &Path) -> Vec<Import> {
    let mut out = Vec::new();
    for (module, rel) in modules(src) {
        let text = std::fs::read_to_string(src.join(&rel)).expect("a source file reads");
        out.extend(imports_of(&rel, &module, &text));
    }
    out
}

/// The paths one file names; `module` is the file's module path.
pub(crate) fn imports_of(rel: &str, module: &[String], text: &str) -> Vec<Import> {
    let code: Vec<char> = strip(text).chars().collect();
    let mut out = Vec::new();
    // Inline modules open here: (name, the brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut line, mut i) = (0usize, 1usize, 0usize);
    while i < code.len() {
        let c = code[i];
        let starts_word = i == 0 || !is_ident(code[i - 1]) && code[i - 1] != ':';
        if c == '\n' {
            line += 1;
        } else if c == '{' {
            depth += 1;
        } else if c == '}' {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
        } else if starts_word && word_at(&code, i, "mod") {
            let mut j = skip_space(&code, i + 3);
            let name = ident_at(&code, j);
            j = skip_space(&code, j + name.len());
            if !name.is_empty() && code.get(j) == Some(&'{') {
                depth += 1;
                inline.push((name, depth));
                line += code[i..j].iter().filter(|c| **c == '\n').count();
                i = j + 1;
                continue;
            }
        } else if starts_word
            && ["crate", "super", "self"]
                .iter()
                .any(|w| word_at(&code, i, w) && follows(&code, i + w.len(), "::"))
        {
            let (paths, end) = tree(&code, i);
            let mut here: Vec<String> = module.to_vec();
            here.extend(inline.iter().map(|(n, _)| n.clone()));
            for p in paths {
                if let Some(path) = resolve(&here, &p) {
                    out.push(Import {
                        file: rel.to_owned(),
                        line,
                        path,
                    });
                }
            }
            line += code[i..end].iter().filter(|c| **c == '\n').count();
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    out
}

/// A path as written (`super::super::a::B`), from the module `here`, as a path from the crate's root.
fn resolve(here: &[String], written: &[String]) -> Option<Vec<String>> {
    let mut segments = written.iter();
    let mut path: Vec<String> = match segments.next()?.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => here[..here.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    for s in segments {
        match s.as_str() {
            "super" => {
                path.pop()?;
            }
            "self" => {}
            _ => path.push(s.clone()),
        }
    }
    Some(path)
}

/// The paths of a `use` tree or a path in code starting at `i` (groups expanded), and where it ends.
fn tree(code: &[char], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        if code.get(i) == Some(&'{') {
            let mut all = Vec::new();
            i += 1;
            loop {
                i = skip(code, i, |c| c.is_whitespace() || c == ',');
                match code.get(i) {
                    None => return (all, i),
                    Some('}') => return (all, i + 1),
                    Some(_) => {}
                }
                let (entries, end) = tree(code, i);
                all.extend(entries.into_iter().map(|e| [prefix.clone(), e].concat()));
                // Past an `as` alias to the next entry.
                i = skip(code, end, |c| c != ',' && c != '}');
            }
        }
        let name = ident_at(code, i);
        if name.is_empty() {
            return (vec![prefix], i);
        }
        i += name.len();
        prefix.push(name);
        let after = skip_space(code, i);
        if follows(code, after, "::") {
            let next = skip_space(code, after + 2);
            if code.get(next) == Some(&'<') {
                return (vec![prefix], i);
            }
            i = next;
        } else {
            return (vec![prefix], i);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_at(code: &[char], i: usize) -> String {
    code[i.min(code.len())..]
        .iter()
        .take_while(|c| is_ident(**c))
        .collect()
}

fn word_at(code: &[char], i: usize, word: &str) -> bool {
    follows(code, i, word) && !code.get(i + word.len()).is_some_and(|c| is_ident(*c))
}

fn follows(code: &[char], i: usize, text: &str) -> bool {
    text.chars()
        .enumerate()
        .all(|(k, t)| code.get(i + k) == Some(&t))
}

fn skip(code: &[char], mut i: usize, over: impl Fn(char) -> bool) -> usize {
    while code.get(i).is_some_and(|c| over(*c)) {
        i += 1;
    }
    i
}

fn skip_space(code: &[char], i: usize) -> usize {
    skip(code, i, char::is_whitespace)
}

/// The text with its comments, string literals and character literals blanked (line breaks kept).
pub(crate) fn strip(text: &str) -> String {
    let t: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, from: &[char]| {
        out.extend(from.iter().map(|c| if *c == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < t.len() {
        // A `b` prefix (`b'x'`, `br"x"`) does not make a literal part of an identifier.
        let prev_ident =
            i > 0 && is_ident(t[i - 1]) && !(t[i - 1] == 'b' && (i < 2 || !is_ident(t[i - 2])));
        let end = if follows(&t, i, "//") {
            skip(&t, i, |c| c != '\n')
        } else if follows(&t, i, "/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < t.len() {
                if follows(&t, j, "/*") {
                    depth += 1;
                    j += 2;
                } else if follows(&t, j, "*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if t[i] == 'r'
            && !prev_ident
            && matches!(t.get(skip(&t, i + 1, |c| c == '#')), Some('"'))
        {
            let hashes = skip(&t, i + 1, |c| c == '#') - (i + 1);
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let mut j = i + 2 + hashes;
            while j < t.len() && !follows(&t, j, &close) {
                j += 1;
            }
            (j + close.chars().count()).min(t.len())
        } else if t[i] == '"' {
            let mut j = i + 1;
            while j < t.len() && t[j] != '"' {
                j += if t[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(t.len())
        } else if t[i] == '\'' && !prev_ident {
            // A character literal (`'a'`, `'\n'`, `'\u{7f}'`), not a lifetime (`'a`).
            if t.get(i + 1) == Some(&'\\') {
                skip(&t, i + 3, |c| c != '\'') + 1
            } else if t.get(i + 2) == Some(&'\'') {
                i + 3
            } else {
                i
            }
        } else {
            i
        };
        if end > i {
            blank(&mut out, &t[i..end.min(t.len())]);
            i = end;
        } else {
            out.push(t[i]);
            i += 1;
        }
    }
    out
}

/// The file a path from the crate's root names: that of its longest prefix with a file.
pub(crate) fn file_of<'a>(
    modules: &'a BTreeMap<Vec<String>, String>,
    path: &[String],
) -> Option<&'a String> {
    (0..=path.len()).rev().find_map(|n| modules.get(&path[..n]))
}

/// File → the files it imports, with the first import that names each.
pub(crate) type FileGraph = BTreeMap<String, BTreeMap<String, Import>>;

/// Which file imports which, from the crate's sources under `src`.
pub(crate) fn file_graph(src: &Path) -> FileGraph {
    let modules = modules(src);
    let mut graph = FileGraph::new();
    for import in imports(src) {
        graph.entry(import.file.clone()).or_default();
        if let Some(to) = file_of(&modules, &import.path)
            && *to != import.file
        {
            graph
                .entry(import.file.clone())
                .or_default()
                .entry(to.clone())
                .or_insert(import);
        }
    }
    graph
}

/// The groups of files that reach each other through their imports (each of two files at least), in file
/// order, each with one shortest circle through its first file, as the imports along it.
pub(crate) fn circles(graph: &FileGraph) -> Vec<(BTreeSet<String>, Vec<Import>)> {
    let mut found = Vec::new();
    let mut placed = BTreeSet::new();
    for file in graph.keys() {
        if placed.contains(file) {
            continue;
        }
        // Files this one reaches and that reach it back: its strongly connected group.
        let forward = reach(graph, file, |g, f| {
            g.get(f)
                .into_iter()
                .flat_map(|t| t.keys())
                .cloned()
                .collect()
        });
        let backward = reach(graph, file, |g, f| {
            g.iter()
                .filter(|(_, to)| to.contains_key(f))
                .map(|(from, _)| from.clone())
                .collect()
        });
        let group: BTreeSet<String> = forward.intersection(&backward).cloned().collect();
        placed.extend(group.iter().cloned());
        if group.len() < 2 {
            continue;
        }
        found.push((group.clone(), shortest_circle(graph, file, &group)));
    }
    found
}

/// The pairs of files that import each other (`(a, b)` with `a < b`).
pub(crate) fn pairs(graph: &FileGraph) -> Vec<(String, String)> {
    graph
        .iter()
        .flat_map(|(a, to)| to.keys().map(move |b| (a, b)))
        .filter(|(a, b)| a < b && graph.get(*b).is_some_and(|t| t.contains_key(*a)))
        .map(|(a, b)| (a.clone(), b.clone()))
        .collect()
}

fn reach(
    graph: &FileGraph,
    from: &str,
    next: impl Fn(&FileGraph, &str) -> Vec<String>,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::from([from.to_owned()]);
    let mut queue = VecDeque::from([from.to_owned()]);
    while let Some(f) = queue.pop_front() {
        for n in next(graph, &f) {
            if seen.insert(n.clone()) {
                queue.push_back(n);
            }
        }
    }
    seen
}

/// The imports along a shortest way from `start` back to itself within `group`.
fn shortest_circle(graph: &FileGraph, start: &str, group: &BTreeSet<String>) -> Vec<Import> {
    let mut came_from: BTreeMap<String, Import> = BTreeMap::new();
    let mut queue = VecDeque::from([start.to_owned()]);
    while let Some(f) = queue.pop_front() {
        for (to, import) in graph.get(&f).into_iter().flatten() {
            if !group.contains(to) || came_from.contains_key(to) {
                continue;
            }
            came_from.insert(to.clone(), import.clone());
            if to == start {
                let mut way = vec![import.clone()];
                let mut at = import.file.clone();
                while at != start {
                    let step = came_from[&at].clone();
                    at = step.file.clone();
                    way.push(step);
                }
                way.reverse();
                return way;
            }
            queue.push_back(to.clone());
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str) -> Vec<String> {
        path.split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn named(module_path: &str, text: &str) -> Vec<String> {
        imports_of("x.rs", &module(module_path), text)
            .into_iter()
            .map(|i| i.path.join("::"))
            .collect()
    }

    #[test]
    fn paths_groups_and_aliases_are_read() {
        let text = "use crate::a::B;\nuse crate::{c::{d, e as E, self}, f::*};\nlet x = crate::g::h::<u8>();";
        assert_eq!(named("m", text), ["a::B", "c::d", "c::e", "c", "f", "g::h"]);
    }

    #[test]
    fn self_and_super_count_from_the_inline_module_they_are_in() {
        let text = "use super::A;\nmod tests {\n    use super::B;\n    use self::C;\n}\nuse self::D;\nuse super::super::E;";
        assert_eq!(
            named("a::b", text),
            ["a::A", "a::b::B", "a::b::tests::C", "a::b::D", "E"]
        );
    }

    #[test]
    fn comments_and_strings_name_nothing() {
        let text = "// use crate::a;\n/* crate::b /* crate::c */ */ let s = \"crate::d\";\nlet r = r#\"crate::e\"#; let c = '\"'; let b = b'\"'; fn f<'a>(x: &'a crate::g::H) {}";
        assert_eq!(named("m", text), ["g::H"]);
    }

    #[test]
    fn the_line_of_each_import_is_kept() {
        let found = imports_of("x.rs", &[], "\nuse crate::{\n    a,\n};\nuse crate::b;");
        let lines: Vec<usize> = found.iter().map(|i| i.line).collect();
        assert_eq!(lines, [2, 5]);
    }

    #[test]
    fn a_path_names_the_file_of_its_longest_prefix() {
        let modules: BTreeMap<Vec<String>, String> = [
            (module(""), "lib.rs"),
            (module("a"), "a/mod.rs"),
            (module("a::b"), "a/b.rs"),
        ]
        .into_iter()
        .map(|(m, f)| (m, f.to_owned()))
        .collect();
        assert_eq!(file_of(&modules, &module("a::b::Item")).unwrap(), "a/b.rs");
        assert_eq!(file_of(&modules, &module("a::Other")).unwrap(), "a/mod.rs");
        assert_eq!(file_of(&modules, &module("Root")).unwrap(), "lib.rs");
        assert_eq!(module_of("a/b/mod.rs"), module("a::b"));
    }

    fn graph(edges: &[(&str, &str)]) -> FileGraph {
        let mut g = FileGraph::new();
        for (from, to) in edges {
            g.entry((*from).to_owned()).or_default().insert(
                (*to).to_owned(),
                Import {
                    file: (*from).to_owned(),
                    line: 1,
                    path: vec![(*to).to_owned()],
                },
            );
            g.entry((*to).to_owned()).or_default();
        }
        g
    }

    #[test]
    fn a_pair_and_a_longer_circle_are_found_and_a_chain_is_not() {
        let g = graph(&[
            ("a", "b"),
            ("b", "a"),
            ("c", "d"),
            ("d", "e"),
            ("e", "c"),
            ("e", "f"),
            ("f", "g"),
        ]);
        let found = circles(&g);
        let groups: Vec<Vec<&str>> = found
            .iter()
            .map(|(g, _)| g.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(groups, [vec!["a", "b"], vec!["c", "d", "e"]]);
        assert_eq!(pairs(&g), [("a".to_owned(), "b".to_owned())]);
        let way: Vec<&str> = found[1].1.iter().map(|i| i.file.as_str()).collect();
        assert_eq!(way, ["c", "d", "e"]);
    }
}
