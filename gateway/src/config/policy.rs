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

/// How many of the rules that cannot apply an error names besides the first.
const NAMED_AT_MOST: usize = 4;

/// Refuses `[[policy]]` rules that hide everything from every client: none allows anything, or — when no
/// request can carry a principal (`principals` is `false`: no `[auth]`, or stdio) — none of those that
/// apply to a request without one (`principal = "*"`) does. Such a config would serve no tool, prompt or
/// resource to anyone while starting and checking fine. `without` says why there is no principal
/// (`"without [auth]"`); the error names the first rule that cannot apply, its principal or group, and the
/// next few.
pub(crate) fn validate_reach(
    rules: &[PolicyRule],
    principals: bool,
    without: &str,
) -> Result<(), ConfigError> {
    if rules.is_empty() {
        return Ok(());
    }
    if rules.iter().all(|r| r.allow.is_empty()) {
        return Err(invalid(
            "policy",
            "no rule allows anything: every tool, prompt and resource would be hidden from every client (with a rule configured, what no rule allows is denied)",
        ));
    }
    if principals
        || rules
            .iter()
            .any(|r| r.applies_without_principal() && !r.allow.is_empty())
    {
        return Ok(());
    }
    // The rules that could allow something but cannot apply: each names a principal or a group.
    let mut stranded = rules
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.applies_without_principal() && !r.allow.is_empty());
    let Some((first, rule)) = stranded.next() else {
        return Ok(());
    };
    let others: Vec<String> = stranded
        .map(|(i, r)| format!("policy[{i}] ({})", r.names()))
        .collect();
    let also = match others.len() {
        0 => String::new(),
        n if n <= NAMED_AT_MOST => format!(" (so does {})", others.join(", ")),
        n => format!(
            " (so do {} and {} more)",
            others[..NAMED_AT_MOST].join(", "),
            n - NAMED_AT_MOST
        ),
    };
    let field = if rule.group.is_some() {
        "group"
    } else {
        "principal"
    };
    Err(invalid(
        format!("policy[{first}].{field}"),
        format!(
            "names {}, but {without} no request has a principal, so no rule that allows anything applies to any request{also}: every tool, prompt and resource would be hidden from every client; configure [[auth.api_key]] or [auth.jwt], or add a rule with principal = \"*\"",
            rule.names()
        ),
    ))
}

impl PolicyRule {
    /// Whether the rule applies to a request without a principal (stdio, `[auth]` off): only
    /// `principal = "*"` does (as `policy::Policy::audience` decides).
    pub(crate) fn applies_without_principal(&self) -> bool {
        self.group.is_none() && self.principal.as_deref() == Some("*")
    }

    /// What the rule names, for an error: `principal "alice"` or `group "ops"`.
    fn names(&self) -> String {
        match (&self.principal, &self.group) {
            (_, Some(g)) => format!("group {g:?}"),
            (Some(p), None) => format!("principal {p:?}"),
            (None, None) => "no principal".to_owned(),
        }
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

    /// Before: `[[policy]]` rules naming only principals or groups, with no `[auth]`, made every tool vanish
    /// for every client while the config validated (and `mcpgw check` said ok).
    #[test]
    fn a_policy_none_of_whose_rules_can_apply_without_auth_is_refused_naming_the_rule() {
        let key = "[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n";
        let table = |who: &str, allow: &str| format!("[[policy]]\n{who}\nallow = [{allow}]\n");
        let alice = table("principal = \"alice\"", "\"*\"");
        let ops = table("group = \"ops\"", "\"*\"");
        let everyone = table("principal = \"*\"", "\"tool:public__*\"");
        let deny_all = "[[policy]]\nprincipal = \"*\"\ndeny = [\"*\"]\n";
        let many: String = (0..7)
            .map(|i| table(&format!("principal = \"p{i}\""), "\"*\""))
            .collect();
        // (config, the field refused or None, what the message names)
        let cases: Vec<(String, Option<&str>, &[&str])> = vec![
            (
                alice.clone(),
                Some("policy[0].principal"),
                &["principal \"alice\"", "without [auth]"],
            ),
            (ops.clone(), Some("policy[0].group"), &["group \"ops\""]),
            (
                format!("{deny_all}{ops}{alice}"),
                Some("policy[1].group"),
                &["group \"ops\"", "so does policy[2] (principal \"alice\")"],
            ),
            (
                many,
                Some("policy[0].principal"),
                &["policy[4] (principal \"p4\")", "and 2 more"],
            ),
            // A glob other than "*" still needs a principal.
            (
                table("principal = \"a*\"", "\"*\""),
                Some("policy[0].principal"),
                &["\"a*\""],
            ),
            (
                deny_all.to_owned(),
                Some("policy"),
                &["no rule allows anything"],
            ),
            (
                format!("{key}{deny_all}"),
                Some("policy"),
                &["no rule allows anything"],
            ),
            // What can apply: a rule for everyone beside the others, or authentication.
            (format!("{ops}{everyone}"), None, &[]),
            (everyone.clone(), None, &[]),
            (format!("{key}{alice}{ops}"), None, &[]),
            (String::new(), None, &[]),
        ];
        for (policies, field, names) in cases {
            let toml =
                format!("[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n{policies}");
            let got = super::super::Config::from_toml_str(&toml, std::path::Path::new("t.toml"));
            match (got, field) {
                (Ok(_), None) => {}
                (Err(ConfigError::Invalid { field: f, message }), Some(field)) => {
                    assert_eq!(f, field, "{toml}");
                    for name in names {
                        assert!(message.contains(name), "{message:?} lacks {name:?}\n{toml}");
                    }
                }
                (other, _) => panic!("{toml}\nwanted {field:?}, got {other:?}"),
            }
        }
        // Stdio: no request has a principal even with [auth].
        let stranded = [rule(Some("alice"), None, &["*"])];
        assert!(validate_reach(&stranded, true, "without [auth]").is_ok());
        match validate_reach(&stranded, false, "over stdio") {
            Err(ConfigError::Invalid { field, message }) => {
                assert_eq!(field, "policy[0].principal");
                assert!(message.contains("over stdio"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
