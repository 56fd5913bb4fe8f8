//! Per-backend shaping of a listing before it becomes catalog entries (`[[backend]]` `tools`, `prompts`,
//! `resources`, `[backend.rename]`, `[backend.describe]`): which of the backend's own tools, prompts and
//! resources are selected, the new names of some of its tools and prompts (the prefix applies to the new
//! name), and new descriptions of some of its tools.
//!
//! Pure data and matching, compiled once from the config by the caller and carried (shared) in every
//! [`BackendListing`](super::BackendListing), so it applies to every listing — at start, after a
//! `list_changed`, a restart or a reload. What is not selected is simply absent from the snapshot, so it is
//! answered exactly like a name that never existed. It must not read the config or do I/O.

use std::collections::BTreeMap;

use crate::glob::glob_match;

/// `allow` and `deny` globs (`*`, `?`) on a backend's own names (or resource URIs). Deny wins; no allow
/// list selects everything not denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// `None`: everything is allowed (but what `deny` names).
    pub allow: Option<Vec<String>>,
    /// Never selected, whatever `allow` says.
    pub deny: Vec<String>,
}

impl Selection {
    /// Whether `name` is selected.
    pub fn selects(&self, name: &str) -> bool {
        if self.deny.iter().any(|g| glob_match(g, name)) {
            return false;
        }
        self.allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|g| glob_match(g, name)))
    }
}

/// How one backend's listing is shaped; the default shapes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shaping {
    /// Tools, by the backend's own name.
    pub tools: Selection,
    /// Prompts, by the backend's own name.
    pub prompts: Selection,
    /// Resources by `uri`, resource templates by `uriTemplate`.
    pub resources: Selection,
    /// A tool's or prompt's own name → the name it is exposed under (before the prefix).
    pub rename: BTreeMap<String, String>,
    /// A tool's own name → its description.
    pub describe: BTreeMap<String, String>,
}

impl Shaping {
    /// The name a selected tool or prompt `original` is exposed under, before the prefix.
    pub fn renamed<'a>(&'a self, original: &'a str) -> &'a str {
        self.rename.get(original).map_or(original, String::as_str)
    }

    /// The description that replaces tool `original`'s own, if one is configured.
    pub fn description(&self, original: &str) -> Option<&str> {
        self.describe.get(original).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(allow: Option<&[&str]>, deny: &[&str]) -> Selection {
        Selection {
            allow: allow.map(|a| a.iter().map(|s| (*s).to_owned()).collect()),
            deny: deny.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn selection_table() {
        // (allow, deny, name, selected)
        type Row<'a> = (Option<&'a [&'a str]>, &'a [&'a str], &'a str, bool);
        let table: [Row; 9] = [
            (None, &[], "anything", true),
            (None, &["fail"], "fail", false),
            (None, &["fail"], "echo", true),
            (Some(&["e*"]), &[], "echo", true),
            (Some(&["e*"]), &[], "add", false),
            (Some(&["*"]), &["a?d"], "add", false),
            (Some(&["add"]), &["add"], "add", false),
            (Some(&[]), &[], "echo", false),
            (None, &["file:///secret/*"], "file:///secret/a.txt", false),
        ];
        for (allow, deny, name, selected) in table {
            assert_eq!(
                sel(allow, deny).selects(name),
                selected,
                "allow {allow:?} deny {deny:?} {name}"
            );
        }
    }

    #[test]
    fn rename_and_describe_fall_back_to_the_backends_own() {
        let shaping = Shaping {
            rename: [("add".to_owned(), "plus".to_owned())].into(),
            describe: [("add".to_owned(), "adds".to_owned())].into(),
            ..Shaping::default()
        };
        assert_eq!(shaping.renamed("add"), "plus");
        assert_eq!(shaping.renamed("echo"), "echo");
        assert_eq!(shaping.description("add"), Some("adds"));
        assert_eq!(shaping.description("echo"), None);
    }
}
