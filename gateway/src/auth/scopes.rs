//! Scopes a request needs (`[[auth.scope]]`, per method and per tool glob). The middleware that checks them
//! on the principal is `pipeline::builtin::RequireScopes`, the chain's first.

use protocol::Method;

use crate::config::ScopeRule;

pub use crate::glob::glob_match;

#[derive(Debug, Clone)]
struct Rule {
    method: Option<Method>,
    tool: Option<String>,
    scopes: Vec<String>,
}

/// The configured rules.
#[derive(Debug, Clone, Default)]
pub struct ScopeRules(Vec<Rule>);

impl ScopeRules {
    /// From `[[auth.scope]]` (validated).
    pub fn new(rules: &[ScopeRule]) -> ScopeRules {
        ScopeRules(
            rules
                .iter()
                .map(|r| Rule {
                    method: r.method.as_deref().and_then(Method::parse),
                    tool: r.tool.clone(),
                    scopes: r.scopes.clone(),
                })
                .collect(),
        )
    }

    /// Whether any rule is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every scope some rule requires, once each, in order of appearance.
    pub fn all(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.0.iter().flat_map(|r| &r.scopes) {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }

    /// The scopes a request for `method` (a `tools/call` of `tool`) needs that `granted` lacks.
    pub fn missing(&self, method: Method, tool: Option<&str>, granted: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for rule in &self.0 {
            let method_fits = rule.method.is_none_or(|m| m == method);
            let tool_fits = match &rule.tool {
                None => true,
                Some(glob) => {
                    method == Method::ToolsCall && tool.is_some_and(|t| glob_match(glob, t))
                }
            };
            if method_fits && tool_fits {
                for s in &rule.scopes {
                    if !granted.contains(s) && !out.contains(s) {
                        out.push(s.clone());
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let cases = [
            ("*", "anything", true),
            ("m__*", "m__echo", true),
            ("m__*", "n__echo", false),
            ("m__ech?", "m__echo", true),
            ("m__ech?", "m__echoes", false),
            ("*__admin_*", "ops__admin_reset", true),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("", "", true),
            ("", "x", false),
            ("**", "", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            // `?` is one character, however many bytes it takes.
            ("caf?", "café", true),
            ("caf??", "café", false),
            ("?é*", "xé-y", true),
            ("*é", "ééé", true),
            ("é?", "éé", true),
        ];
        for (p, t, want) in cases {
            assert_eq!(glob_match(p, t), want, "{p} ~ {t}");
        }
    }

    #[test]
    fn a_request_needs_the_scopes_of_every_rule_it_matches() {
        let rule = |method: Option<&str>, tool: Option<&str>, scopes: &[&str]| ScopeRule {
            method: method.map(str::to_owned),
            tool: tool.map(str::to_owned),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        };
        let rules = ScopeRules::new(&[
            rule(None, None, &["mcp"]),
            rule(Some("tools/call"), None, &["mcp:call"]),
            rule(None, Some("m__admin_*"), &["mcp:admin"]),
        ]);
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        type Case<'a> = (Method, Option<&'a str>, &'a [&'a str], &'a [&'a str]);
        let cases: &[Case] = &[
            (Method::ToolsList, None, &["mcp"], &[]),
            (Method::ToolsList, None, &[], &["mcp"]),
            (Method::ToolsCall, Some("m__echo"), &["mcp"], &["mcp:call"]),
            (
                Method::ToolsCall,
                Some("m__echo"),
                &["mcp", "mcp:call"],
                &[],
            ),
            (
                Method::ToolsCall,
                Some("m__admin_reset"),
                &["mcp", "mcp:call"],
                &["mcp:admin"],
            ),
            (
                Method::ToolsCall,
                Some("m__admin_reset"),
                &[],
                &["mcp", "mcp:call", "mcp:admin"],
            ),
            (Method::PromptsGet, None, &["mcp"], &[]),
        ];
        for (method, tool, granted, want) in cases {
            assert_eq!(
                rules.missing(*method, *tool, &s(granted)),
                s(want),
                "{method} {tool:?} {granted:?}"
            );
        }
        assert_eq!(rules.all(), s(&["mcp", "mcp:call", "mcp:admin"]));
    }
}
