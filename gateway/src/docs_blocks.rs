//! The documentation's example blocks, for the tests that run or parse them: README.md and every page of
//! the book (`docs/src/**/*.md`), read at run time. A block is found by the marker before it,
//! `<!-- test: NAME ... -->` on a line of its own, then (blank lines allowed) a fenced block. The tests
//! crate's docs check holds every block with a language to such a marker and every marker to a test. The
//! `load` crate and the tests crate include this file as their own `docs_blocks` (they cannot depend on
//! this crate's tests).

use std::path::{Path, PathBuf};

/// A marked block of the docs.
#[derive(Debug)]
pub(crate) struct Block {
    /// The marker's NAME.
    pub(crate) name: String,
    /// The first word of the fence's info string (`toml`, `sh`, …; empty for none).
    pub(crate) language: String,
    /// The block's lines, each ending with a newline, as a file holding them would.
    pub(crate) text: String,
    /// The page it is on, relative to the repository's root.
    pub(crate) page: String,
}

/// The repository's root: the first directory above the crate holding `Cargo.lock` (this file is the
/// `load` crate's module too, by `#[path]`, one level deeper).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// README.md and every `.md` under docs/src, relative to the root, sorted.
pub(crate) fn pages() -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() {
                walk(&path, &format!("{rel}/{name}"), out);
            } else if name.ends_with(".md") {
                out.push(format!("{rel}/{name}"));
            }
        }
    }
    let mut pages = vec!["README.md".to_owned()];
    walk(&root().join("docs/src"), "docs/src", &mut pages);
    pages.sort();
    pages
}

/// The marked blocks of one page's text.
fn marked(page: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(rest) = lines[i].trim().strip_prefix("<!-- test: ") else {
            i += 1;
            continue;
        };
        let name = rest
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap_or_default()
            .trim_end_matches("-->")
            .to_owned();
        i += 1;
        while i < lines.len() && lines[i].trim().is_empty() {
            i += 1;
        }
        let Some(fence) = lines.get(i).filter(|l| l.trim_start().starts_with("```")) else {
            panic!(
                "{page}:{}: the marker `<!-- test: {name}` is not followed by a fenced block",
                i + 1
            );
        };
        let indent = fence.len() - fence.trim_start().len();
        let language = fence
            .trim()
            .trim_start_matches('`')
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let mut text = String::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            let line = lines[i];
            let spaces = line.len() - line.trim_start_matches(' ').len();
            text.push_str(&line[spaces.min(indent)..]);
            text.push('\n');
            i += 1;
        }
        blocks.push(Block {
            name,
            language,
            text,
            page: page.to_owned(),
        });
        i += 1;
    }
    blocks
}

/// Every marked block of README.md and docs/src, page by page.
pub(crate) fn blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|page| {
            let text = std::fs::read_to_string(root().join(page))
                .unwrap_or_else(|e| panic!("{page}: {e}"));
            marked(page, &text)
        })
        .collect()
}

/// The text of the `language` block marked `<!-- test: NAME` in README.md or docs/src (exactly one).
pub(crate) fn block(name: &str, language: &str) -> String {
    let mut found: Vec<Block> = blocks().into_iter().filter(|b| b.name == name).collect();
    match found.len() {
        0 => panic!("no block is marked `<!-- test: {name}` in README.md or docs/src/*.md"),
        1 => {}
        _ => panic!(
            "the marker `<!-- test: {name}` is on several pages: {:?}",
            found.iter().map(|b| &b.page).collect::<Vec<_>>()
        ),
    }
    let block = found.remove(0);
    assert_eq!(
        block.language, language,
        "the block marked `<!-- test: {name}` ({}) is not a {language} block",
        block.page
    );
    block.text
}

#[test]
fn a_marked_block_is_found_with_its_language_and_text() {
    let page = "intro\n\n<!-- test: two (a note) -->\n\n```toml\na = 1\n\nb = 2\n```\n\n```sh\nnot marked\n```\n\
                - item\n\n  <!-- test: indented -->\n  ```sh\n  echo hi\n  ```\n";
    let blocks = marked("p.md", page);
    let got: Vec<(&str, &str, &str)> = blocks
        .iter()
        .map(|b| (b.name.as_str(), b.language.as_str(), b.text.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("two", "toml", "a = 1\n\nb = 2\n"),
            ("indented", "sh", "echo hi\n")
        ]
    );
}

#[test]
#[should_panic(expected = "no block is marked `<!-- test: no-such-block`")]
fn a_missing_marker_is_named() {
    block("no-such-block", "sh");
}
