//! `[[backend]]` catalog shaping as configured: `tools`, `prompts` and `resources` selections (`allow` and
//! `deny` globs on the backend's own names, or URIs), `[backend.rename]` and `[backend.describe]`, and their
//! validation. What it means for a listing is `catalog::shaping` (compiled by `notify::listing::Naming`);
//! this module must not import the catalog.

use serde::{Deserialize, Serialize};

use super::{BackendEntry, ConfigError, invalid};
use crate::glob::glob_match;

/// `{ allow = [globs], deny = [globs] }`: deny wins; no `allow` selects everything not denied.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SelectionEntry {
    /// Only these (globs `*`, `?`); absent: all.
    pub allow: Option<Vec<String>>,
    /// Never these.
    #[serde(default)]
    pub deny: Vec<String>,
}

impl SelectionEntry {
    /// Whether `name` is selected: not denied, and allowed (or no `allow` given).
    pub fn selects(&self, name: &str) -> bool {
        !self.deny.iter().any(|g| glob_match(g, name))
            && self
                .allow
                .as_ref()
                .is_none_or(|a| a.iter().any(|g| glob_match(g, name)))
    }
}

/// The longest tool or prompt name a rename may give (the MCP spec's advice for tool names).
const MAX_NAME: usize = 128;

/// Whether `name` is a valid tool name: 1 to 128 ASCII letters, digits, `_`, `-` or `.`.
fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Checks backend `i`'s shaping: non-empty globs; rename targets that are valid tool names, not two
/// originals to one name; no rename or describe key that the selection hides (an error, not a warning: it
/// would silently do nothing, most likely a typo).
pub(super) fn validate(i: usize, b: &BackendEntry) -> Result<(), ConfigError> {
    let field = |f: &str| format!("backend[{i}].{f}");
    for (kind, selection) in [
        ("tools", &b.tools),
        ("prompts", &b.prompts),
        ("resources", &b.resources),
    ] {
        let Some(s) = selection else { continue };
        let allow = s.allow.iter().flatten().map(|g| ("allow", g));
        for (j, (list, glob)) in allow
            .enumerate()
            .chain(s.deny.iter().map(|g| ("deny", g)).enumerate())
        {
            if glob.is_empty() || glob.chars().any(char::is_control) {
                return Err(invalid(
                    field(&format!("{kind}.{list}[{j}]")),
                    format!(
                        "{glob:?} must be a non-empty glob (`*`, `?`) without control characters"
                    ),
                ));
            }
        }
    }
    let selects =
        |s: &Option<SelectionEntry>, name: &str| s.as_ref().is_none_or(|s| s.selects(name));
    let mut targets: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for (original, new) in &b.rename {
        let at = field(&format!("rename.{original}"));
        if !valid_tool_name(new) {
            return Err(invalid(
                at,
                format!(
                    "{new:?} is not a valid tool name (1 to {MAX_NAME} letters, digits, '_', '-' or '.')"
                ),
            ));
        }
        if let Some(other) = targets.insert(new, original) {
            return Err(invalid(
                at,
                format!("{other:?} and {original:?} are both renamed to {new:?}"),
            ));
        }
        if !selects(&b.tools, original) && !selects(&b.prompts, original) {
            return Err(invalid(
                at,
                format!(
                    "{original:?} is not selected by tools or prompts: the rename would do nothing"
                ),
            ));
        }
    }
    for original in b.describe.keys() {
        if !selects(&b.tools, original) {
            return Err(invalid(
                field(&format!("describe.{original}")),
                format!("{original:?} is not selected by tools: the description would do nothing"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::config::Config;

    fn error(backend: &str) -> String {
        let text = format!("[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n{backend}");
        match Config::from_toml_str(&text, std::path::Path::new("t.toml")) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn shaping_validation_table() {
        // (the backend's shaping lines, the error's start; "" = valid)
        let table = [
            ("tools = { deny = [\"fail\"] }", ""),
            (
                "tools = { allow = [\"e*\"], deny = [\"echo\"] }\nprompts = { allow = [] }",
                "",
            ),
            (
                "[backend.rename]\nadd = \"plus\"\n[backend.describe]\nadd = \"adds\"",
                "",
            ),
            (
                "tools = { deny = [\"\"] }",
                "invalid config: backend[0].tools.deny[0]: \"\" must be a non-empty glob",
            ),
            (
                "resources = { allow = [\"a\\u0007\"] }",
                "invalid config: backend[0].resources.allow[0]:",
            ),
            ("tools = { only = [\"a\"] }", "t.toml: "),
            (
                "[backend.rename]\nadd = \"plus one\"",
                "invalid config: backend[0].rename.add: \"plus one\" is not a valid tool name",
            ),
            (
                "[backend.rename]\nadd = \"\"",
                "invalid config: backend[0].rename.add: \"\" is not a valid tool name",
            ),
            (
                "[backend.rename]\nadd = \"x\"\necho = \"x\"",
                "invalid config: backend[0].rename.echo: \"add\" and \"echo\" are both renamed to \"x\"",
            ),
            (
                "tools = { deny = [\"a*\"] }\nprompts = { allow = [] }\n[backend.rename]\nadd = \"plus\"",
                "invalid config: backend[0].rename.add: \"add\" is not selected",
            ),
            (
                "tools = { allow = [\"echo\"] }\n[backend.describe]\nadd = \"adds\"",
                "invalid config: backend[0].describe.add: \"add\" is not selected",
            ),
        ];
        for (lines, want) in table {
            let got = error(lines);
            if want.is_empty() {
                assert_eq!(got, "", "{lines}");
            } else {
                assert!(got.starts_with(want), "{lines}\n got {got}\nwant {want}");
            }
        }
    }
}
