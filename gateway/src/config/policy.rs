//! `[[policy]]`: what each principal or group may use — `allow` and `deny` globs on exposed tool, prompt and
//! resource names and on backends. Off until a table is configured; then what no rule allows is denied.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// One `[[policy]]` table.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    /// The principal it applies to (a glob: `"*"` applies to every request, one without a principal too).
    #[serde(default)]
    pub principal: Option<String>,
    /// The group it applies to (a principal's groups come from its API key or token).
    #[serde(default)]
    pub group: Option<String>,
    /// What it allows (see [`PATTERN_KINDS`]).
    #[serde(default)]
    pub allow: Vec<String>,
    /// What it denies; a deny of any rule that applies wins over every allow.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// The prefixes a pattern may carry: `backend:NAME`, `tool:NAME`, `prompt:NAME`, `resource:URI` (a resource's
/// URI or a template's `uriTemplate`), `annotation:HINT`; a bare glob matches tool and prompt names and
/// resource URIs alike.
pub const PATTERN_KINDS: &[&str] = &["backend", "tool", "prompt", "resource", "annotation"];

/// The tool annotations a rule may name.
pub const ANNOTATIONS: &[&str] = &["readOnlyHint", "destructiveHint"];

impl PolicyRule {
    pub(super) fn validate(&self, i: usize) -> Result<(), ConfigError> {
        let field = |f: &str| format!("policy[{i}].{f}");
        match (&self.principal, &self.group) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    field("group"),
                    "a rule names a principal or a group, not both",
                ));
            }
            (None, None) => {
                return Err(invalid(
                    field("principal"),
                    "a rule must name a principal (\"*\" for everyone) or a group",
                ));
            }
            (Some(p), None) if p.is_empty() => {
                return Err(invalid(field("principal"), "must not be empty"));
            }
            (None, Some(g)) if g.is_empty() => {
                return Err(invalid(field("group"), "must not be empty"));
            }
            _ => {}
        }
        if self.allow.is_empty() && self.deny.is_empty() {
            return Err(invalid(
                field("allow"),
                "a rule must allow or deny something",
            ));
        }
        for (list, patterns) in [("allow", &self.allow), ("deny", &self.deny)] {
            for (j, p) in patterns.iter().enumerate() {
                check_pattern(p).map_err(|why| invalid(format!("policy[{i}].{list}[{j}]"), why))?;
            }
        }
        Ok(())
    }
}

/// Whether a pattern is well formed: a known kind (if any) and a non-empty glob; an annotation one of
/// [`ANNOTATIONS`].
fn check_pattern(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("a pattern must not be empty".to_owned());
    }
    let Some((kind, rest)) = p.split_once(':') else {
        return Ok(());
    };
    if !PATTERN_KINDS.contains(&kind) {
        // A URI glob (`file:///docs/*`) is a bare pattern whose scheme is not a kind.
        return Ok(());
    }
    if rest.is_empty() {
        return Err(format!("{p:?}: nothing after {kind:?}"));
    }
    if kind == "annotation" && !ANNOTATIONS.contains(&rest) {
        return Err(format!(
            "{p:?}: the annotations a rule may name are {}",
            ANNOTATIONS.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(principal: Option<&str>, group: Option<&str>, allow: &[&str]) -> PolicyRule {
        PolicyRule {
            principal: principal.map(str::to_owned),
            group: group.map(str::to_owned),
            allow: allow.iter().map(|s| (*s).to_owned()).collect(),
            deny: Vec::new(),
        }
    }

    #[test]
    fn a_rule_is_refused_with_its_field_when_malformed() {
        let cases: &[(PolicyRule, &str)] = &[
            (rule(Some("a"), Some("g"), &["x"]), "policy[0].group"),
            (rule(None, None, &["x"]), "policy[0].principal"),
            (rule(Some(""), None, &["x"]), "policy[0].principal"),
            (rule(Some("a"), None, &[]), "policy[0].allow"),
            (rule(Some("a"), None, &[""]), "policy[0].allow[0]"),
            (
                rule(Some("a"), None, &["ok", "tool:"]),
                "policy[0].allow[1]",
            ),
            (
                rule(Some("a"), None, &["annotation:openWorldHint"]),
                "policy[0].allow[0]",
            ),
        ];
        for (r, field) in cases {
            match r.validate(0) {
                Err(ConfigError::Invalid { field: f, .. }) => assert_eq!(&f, field, "{r:?}"),
                other => panic!("{r:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn well_formed_rules_pass() {
        for r in [
            rule(Some("*"), None, &["*"]),
            rule(None, Some("ops"), &["backend:time", "tool:mock__*"]),
            rule(
                Some("alice"),
                None,
                &["file:///docs/*", "resource:mock://*"],
            ),
            rule(Some("bob"), None, &["annotation:readOnlyHint"]),
        ] {
            assert!(r.validate(0).is_ok(), "{r:?}");
        }
    }
}
