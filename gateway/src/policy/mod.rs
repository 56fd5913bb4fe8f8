//! What each principal may use (`[[policy]]`): per principal or group, `allow` and `deny` globs on exposed
//! tool, prompt and resource names, on backends (`backend:NAME`) and on tool annotations. A deny of any rule
//! that applies wins; with any rule configured, what no rule allows is denied.
//! A resource URI is judged in its raw and its normalized form (the view keeps it only when both are
//! allowed: `catalog::view`).
//!
//! The principals that the same rules apply to are one audience and see one view of the catalog
//! ([`views`]): built once per audience and catalog by [`CatalogSnapshot::restricted`], and validated
//! against like the full catalog, so a request for something the principal may not use gets exactly the
//! answer an unregistered name gets, whatever else is wrong with it.
//!
//! It must not decide per request what a view already decided, and must never log arguments.

pub mod views;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::Value;

use crate::auth::Principal;
use crate::auth::scopes::glob_match;
use crate::catalog::{Item, Restriction};
use crate::config::PolicyRule;

/// The configured rules, compiled.
#[derive(Debug)]
pub struct Policy {
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    applies: Applies,
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
}

#[derive(Debug)]
enum Applies {
    /// A glob on the principal's name; `*` also applies to requests without one.
    Principal(String),
    /// A glob on the principal's groups.
    Group(String),
}

#[derive(Debug)]
struct Pattern {
    /// As configured (for the decision's log line).
    text: String,
    on: On,
}

#[derive(Debug)]
enum On {
    Backend(String),
    Tool(String),
    Prompt(String),
    Resource(String),
    Annotation(Hint),
    /// Tool and prompt names, resource URIs and `uriTemplate`s.
    Any(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    ReadOnly,
    Destructive,
}

impl Pattern {
    fn compile(text: &str) -> Pattern {
        let on = match text.split_once(':') {
            Some(("backend", g)) => On::Backend(g.to_owned()),
            Some(("tool", g)) => On::Tool(g.to_owned()),
            Some(("prompt", g)) => On::Prompt(g.to_owned()),
            Some(("resource", g)) => On::Resource(g.to_owned()),
            Some(("annotation", "readOnlyHint")) => On::Annotation(Hint::ReadOnly),
            Some(("annotation", _)) => On::Annotation(Hint::Destructive),
            _ => On::Any(text.to_owned()),
        };
        Pattern {
            text: text.to_owned(),
            on,
        }
    }

    fn matches(&self, item: Item<'_>) -> bool {
        match (&self.on, item) {
            (On::Backend(g), Item::Backend(b))
            | (
                On::Backend(g),
                Item::Tool { backend: b, .. }
                | Item::Prompt { backend: b, .. }
                | Item::Resource { backend: b, .. }
                | Item::Template { backend: b, .. },
            ) => glob_match(g, b),
            (On::Tool(g) | On::Any(g), Item::Tool { name, .. })
            | (On::Prompt(g) | On::Any(g), Item::Prompt { name, .. })
            | (On::Resource(g) | On::Any(g), Item::Resource { uri: name, .. })
            | (
                On::Resource(g) | On::Any(g),
                Item::Template {
                    uri_template: name, ..
                },
            ) => glob_match(g, name),
            (On::Annotation(hint), Item::Tool { tool, .. }) => has_hint(tool, *hint),
            // A bare glob names backends too (`allow = ["*"]` lets the view name every backend).
            (On::Any(g), Item::Backend(b)) => glob_match(g, b),
            _ => false,
        }
    }
}

/// Whether a tool carries a hint, read as the spec defines its default: `readOnlyHint` is false unless
/// said; `destructiveHint` is true unless said, and means nothing for a read-only tool.
fn has_hint(tool: &Value, hint: Hint) -> bool {
    let annotation = |key: &str| {
        tool.pointer(&format!("/annotations/{key}"))
            .and_then(Value::as_bool)
    };
    let read_only = annotation("readOnlyHint") == Some(true);
    match hint {
        Hint::ReadOnly => read_only,
        Hint::Destructive => !read_only && annotation("destructiveHint") != Some(false),
    }
}

/// Which rules apply to a principal: one audience, one view of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Audience(Box<[u16]>);

/// How a request's item was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// An allow matched and no deny did.
    Allowed,
    /// A deny of rule `rule` (its index in `[[policy]]`) matched.
    Denied {
        /// The rule's index.
        rule: usize,
        /// The pattern that matched, as configured.
        pattern: String,
    },
    /// No rule that applies allows it.
    NotAllowed,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decision::Allowed => f.write_str("allowed"),
            Decision::Denied { rule, pattern } => write!(f, "policy[{rule}] denies {pattern:?}"),
            Decision::NotAllowed => f.write_str("no rule allows it"),
        }
    }
}

impl Policy {
    /// The compiled `[[policy]]` tables (validated); `None` when there is none: no policy, everything
    /// allowed.
    pub fn new(rules: &[PolicyRule]) -> Option<Arc<Policy>> {
        if rules.is_empty() {
            return None;
        }
        let rules = rules
            .iter()
            .map(|r| Rule {
                applies: match (&r.principal, &r.group) {
                    (_, Some(g)) => Applies::Group(g.clone()),
                    (p, None) => Applies::Principal(p.clone().unwrap_or_else(|| "*".to_owned())),
                },
                allow: r.allow.iter().map(|p| Pattern::compile(p)).collect(),
                deny: r.deny.iter().map(|p| Pattern::compile(p)).collect(),
            })
            .collect();
        Some(Arc::new(Policy { rules }))
    }

    /// The rules that apply to `principal` (`None`: a request without one, which only `principal = "*"`
    /// rules apply to).
    pub fn audience(&self, principal: Option<&Principal>) -> Audience {
        let applies = |rule: &Rule| match (&rule.applies, principal) {
            (Applies::Principal(g), _) if g == "*" => true,
            (Applies::Principal(g), Some(p)) => p.is_named(g),
            (Applies::Group(g), Some(p)) => p.in_group(g),
            (_, None) => false,
        };
        Audience(
            self.rules
                .iter()
                .enumerate()
                .filter(|(_, r)| applies(r))
                .filter_map(|(i, _)| u16::try_from(i).ok())
                .collect(),
        )
    }

    /// What `audience` may do.
    pub fn subject(self: &Arc<Self>, audience: Audience) -> Subject {
        Subject {
            policy: self.clone(),
            audience,
        }
    }
}

/// The rules of one audience, applied.
#[derive(Debug, Clone)]
pub struct Subject {
    policy: Arc<Policy>,
    audience: Audience,
}

impl Subject {
    fn rules(&self) -> impl Iterator<Item = (usize, &Rule)> {
        self.audience.0.iter().filter_map(|&i| {
            self.policy
                .rules
                .get(usize::from(i))
                .map(|r| (usize::from(i), r))
        })
    }

    /// Whether this audience may use `item`: a matching deny wins, then a matching allow.
    pub fn decide(&self, item: Item<'_>) -> Decision {
        for (i, rule) in self.rules() {
            if let Some(p) = rule.deny.iter().find(|p| p.matches(item)) {
                return Decision::Denied {
                    rule: i,
                    pattern: p.text.clone(),
                };
            }
        }
        if self
            .rules()
            .any(|(_, rule)| rule.allow.iter().any(|p| p.matches(item)))
        {
            Decision::Allowed
        } else {
            Decision::NotAllowed
        }
    }
}

impl Restriction for Subject {
    fn keeps(&self, item: Item<'_>) -> bool {
        // A backend is named only when a `backend:` pattern allows it (one with an allowed entry is named
        // anyway, by the view).
        self.decide(item) == Decision::Allowed
    }
}
