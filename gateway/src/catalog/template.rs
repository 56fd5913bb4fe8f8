//! Matching a resource URI against an RFC 6570 URI template (`resources/templates/list`).
//!
//! Matching is anchored (the whole URI) and byte-exact outside expressions. What each expression matches:
//!
//! | Expression | Matches |
//! | --- | --- |
//! | `{var}`, `{a,b}` (level 1, 3) | one or more characters other than `/` |
//! | `{+var}` (reserved) | one or more characters, `/` included |
//! | `{#var}` (fragment) | nothing, or `#` followed by anything |
//! | `{/var}`, `{/a,b}` (path segments) | up to one `/segment` per variable (a segment has no `/`) |
//! | `{?a,b}` (form query) | nothing, or `?` and up to one `name` or `name=value` pair per variable, joined by `&`, names from the list, values without `&` or `#` |
//! | `{&a,b}` (query continuation) | nothing, or up to one `&name=value` pair per variable |
//!
//! The explode modifier (`{/var*}`, `{?var*}`, `{&var*}`) lifts the count limit and accepts any pair names
//! (`/` then anything; `?` or `&` then anything but `#`); elsewhere it changes nothing. A prefix modifier
//! (`{var:3}`) is accepted and its length not enforced. The label (`.`) and path-parameter (`;`) operators and the
//! reserved ones (`=`, `,`, `!`, `@`, `|`) are not supported, and neither are malformed templates (unclosed
//! `{`, a stray `}`, an invalid variable name): such a template matches nothing rather than everything.
//!
//! The matcher runs in time linear in the URI per expression (it tracks the set of positions reachable after
//! each part instead of backtracking), so no URI can make it slow.

/// Whether `uri` matches `template` (see the module documentation); a template that cannot be parsed matches
/// nothing.
#[cfg(any(test, feature = "internals"))]
pub fn matches(template: &str, uri: &str) -> bool {
    UriTemplate::parse(template).is_ok_and(|t| t.is_match(uri))
}

/// Why a template is not supported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` without its `}`.
    #[error("unclosed expression in uri template")]
    Unclosed,
    /// A `}` outside an expression.
    #[error("stray '}}' in uri template")]
    StrayClose,
    /// A variable name that RFC 6570 does not allow, or a bad modifier.
    #[error("invalid variable {0:?} in uri template")]
    BadVariable(String),
    /// An operator this matcher does not support.
    #[error("unsupported operator {0:?} in uri template")]
    UnsupportedOperator(char),
}

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Expr {
    op: Operator,
    /// Variable names, modifiers stripped.
    names: Vec<String>,
    /// Whether any variable has the explode modifier.
    explode: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Simple,
    Reserved,
    Fragment,
    PathSegment,
    Query,
    QueryContinuation,
}

impl UriTemplate {
    /// Parses a template; see the module documentation for what is supported.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let open = rest.find('{').unwrap_or(rest.len());
            let literal = &rest[..open];
            if literal.contains('}') {
                return Err(TemplateError::StrayClose);
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(literal.to_owned()));
            }
            rest = &rest[open..];
            let Some(body) = rest.strip_prefix('{') else {
                break;
            };
            let close = body.find('}').ok_or(TemplateError::Unclosed)?;
            let expr = &body[..close];
            if expr.contains('{') {
                return Err(TemplateError::Unclosed);
            }
            parts.push(Part::Expr(parse_expr(expr)?));
            rest = &body[close + 1..];
        }
        Ok(UriTemplate { parts })
    }

    /// The length of the literal text before the first expression (the whole template when it has none).
    pub fn literal_prefix_len(&self) -> usize {
        match self.parts.first() {
            Some(Part::Literal(l)) => l.len(),
            _ => 0,
        }
    }

    /// Whether the whole of `uri` matches.
    pub fn is_match(&self, uri: &str) -> bool {
        let uri = uri.as_bytes();
        let mut reach = vec![false; uri.len() + 1];
        reach[0] = true;
        for part in &self.parts {
            reach = match part {
                Part::Literal(l) => literal(uri, &reach, l.as_bytes()),
                Part::Expr(e) => e.step(uri, &reach),
            };
            if !reach.iter().any(|&r| r) {
                return false;
            }
        }
        reach.last().copied().unwrap_or(false)
    }
}

fn parse_expr(expr: &str) -> Result<Expr, TemplateError> {
    let (op, list) = match expr.chars().next() {
        Some('+') => (Operator::Reserved, &expr[1..]),
        Some('#') => (Operator::Fragment, &expr[1..]),
        Some('/') => (Operator::PathSegment, &expr[1..]),
        Some('?') => (Operator::Query, &expr[1..]),
        Some('&') => (Operator::QueryContinuation, &expr[1..]),
        Some(c @ ('.' | ';' | '=' | ',' | '!' | '@' | '|')) => {
            return Err(TemplateError::UnsupportedOperator(c));
        }
        _ => (Operator::Simple, expr),
    };
    let mut names = Vec::new();
    let mut explode = false;
    for spec in list.split(',') {
        let (name, modifier_ok) = if let Some(name) = spec.strip_suffix('*') {
            explode = true;
            (name, true)
        } else if let Some((name, len)) = spec.split_once(':') {
            let ok = (1..=4).contains(&len.len())
                && len.bytes().all(|b| b.is_ascii_digit())
                && !len.starts_with('0');
            (name, ok)
        } else {
            (spec, true)
        };
        if !modifier_ok || !is_varname(name) {
            return Err(TemplateError::BadVariable(spec.to_owned()));
        }
        names.push(name.to_owned());
    }
    Ok(Expr { op, names, explode })
}

/// RFC 6570 `varname`: varchars (`ALPHA / DIGIT / "_" / pct-encoded`) joined by single dots.
fn is_varname(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|piece| {
            let b = piece.as_bytes();
            let mut i = 0;
            while i < b.len() {
                match b[i] {
                    c if c.is_ascii_alphanumeric() || c == b'_' => i += 1,
                    b'%' if b.len() > i + 2
                        && b[i + 1].is_ascii_hexdigit()
                        && b[i + 2].is_ascii_hexdigit() =>
                    {
                        i += 3;
                    }
                    _ => return false,
                }
            }
            !b.is_empty()
        })
}

impl Expr {
    /// Positions reachable after this expression, from the positions in `from`.
    fn step(&self, uri: &[u8], from: &[bool]) -> Vec<bool> {
        let any = |_: u8| true;
        let not_slash = |b: u8| b != b'/';
        let not_hash = |b: u8| b != b'#';
        match self.op {
            Operator::Simple => run(uri, from, true, not_slash),
            Operator::Reserved => run(uri, from, true, any),
            Operator::Fragment => union(from, &run(uri, &literal(uri, from, b"#"), false, any)),
            Operator::PathSegment if self.explode => {
                union(from, &run(uri, &literal(uri, from, b"/"), false, any))
            }
            Operator::PathSegment => {
                let mut acc = from.to_vec();
                let mut cur = from.to_vec();
                for _ in &self.names {
                    cur = run(uri, &literal(uri, &cur, b"/"), false, not_slash);
                    acc = union(&acc, &cur);
                }
                acc
            }
            Operator::Query | Operator::QueryContinuation if self.explode => {
                let lead: &[u8] = if self.op == Operator::Query {
                    b"?"
                } else {
                    b"&"
                };
                union(from, &run(uri, &literal(uri, from, lead), false, not_hash))
            }
            Operator::Query | Operator::QueryContinuation => {
                let lead: &[u8] = if self.op == Operator::Query {
                    b"?"
                } else {
                    b"&"
                };
                let mut acc = from.to_vec();
                let mut cur = literal(uri, from, lead);
                for (i, _) in self.names.iter().enumerate() {
                    if i > 0 {
                        cur = literal(uri, &cur, b"&");
                    }
                    cur = self.pair(uri, &cur);
                    acc = union(&acc, &cur);
                }
                acc
            }
        }
    }

    /// `name` or `name=value` for one of the expression's names; values stop at `&` and `#`.
    fn pair(&self, uri: &[u8], from: &[bool]) -> Vec<bool> {
        let mut out = vec![false; from.len()];
        for name in &self.names {
            let named = literal(uri, from, name.as_bytes());
            let valued = run(uri, &literal(uri, &named, b"="), false, |b| {
                b != b'&' && b != b'#'
            });
            out = union(&out, &union(&named, &valued));
        }
        out
    }
}

/// Positions after `lit`, from each position in `from` where `uri` continues with `lit`.
fn literal(uri: &[u8], from: &[bool], lit: &[u8]) -> Vec<bool> {
    let mut out = vec![false; from.len()];
    for (p, _) in from.iter().enumerate().filter(|(_, r)| **r) {
        if uri.get(p..).is_some_and(|rest| rest.starts_with(lit)) {
            if let Some(slot) = out.get_mut(p + lit.len()) {
                *slot = true;
            }
        }
    }
    out
}

/// Positions reachable from `from` by a run of bytes that are all `allowed` (at least one byte when
/// `non_empty`). One sweep: `carry` says some reachable start lies behind an unbroken allowed run.
fn run(uri: &[u8], from: &[bool], non_empty: bool, allowed: impl Fn(u8) -> bool) -> Vec<bool> {
    let mut out = vec![false; from.len()];
    let mut carry = false;
    for (e, slot) in out.iter_mut().enumerate() {
        let here = from.get(e).copied().unwrap_or(false);
        *slot = carry || (here && !non_empty);
        carry = (carry || here) && uri.get(e).is_some_and(|&b| allowed(b));
    }
    out
}

fn union(a: &[bool], b: &[bool]) -> Vec<bool> {
    a.iter().zip(b).map(|(x, y)| *x || *y).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_table() {
        // (template, uri, matches)
        let table = [
            // level 1: one or more characters other than '/'
            ("file:///logs/{name}", "file:///logs/app.log", true),
            ("file:///logs/{name}", "file:///logs/", false),
            ("file:///logs/{name}", "file:///logs/a/b", false),
            ("file:///logs/{name}", "file:///logs/app.log?x=1", true),
            ("file:///logs/{name}", "xfile:///logs/app.log", false),
            ("file:///logs/{name}", "file:///logs/app.logx/", false),
            ("db://{schema}/{table}", "db://public/users", true),
            ("db://{schema}/{table}", "db://public/users/extra", false),
            ("db://{schema}/{table}", "db:///users", false),
            ("{a}{b}", "xy", true),
            ("{a}{b}", "x", false),
            ("{a,b}", "x,y", true),
            ("users://{id}/profile", "users://42/profile", true),
            ("users://{id}/profile", "users://42/profile/", false),
            ("weather://{city}", "weather://Zürich", true),
            // no expression: exact
            ("config://app", "config://app", true),
            ("config://app", "config://app2", false),
            ("", "", true),
            ("", "x", false),
            // reserved
            ("file:///{+path}", "file:///a/b/c.txt", true),
            ("file:///{+path}", "file:///", false),
            ("file:///{+path}/raw", "file:///a/b/raw", true),
            ("file:///{+path}/raw", "file:///a/b/rawx", false),
            // fragment
            ("doc://{id}{#section}", "doc://7", true),
            ("doc://{id}{#section}", "doc://7#intro/part", true),
            ("doc://x{#section}", "doc://x#", true),
            ("doc://x{#section}", "doc://xy", false),
            // path segments
            ("repo://r{/owner,name}", "repo://r", true),
            ("repo://r{/owner,name}", "repo://r/a", true),
            ("repo://r{/owner,name}", "repo://r/a/b", true),
            ("repo://r{/owner,name}", "repo://r/a/b/c", false),
            ("repo://r{/path*}", "repo://r/a/b/c", true),
            ("repo://r{/path*}", "repo://rx", false),
            // form-style query
            ("search://q{?term,limit}", "search://q", true),
            ("search://q{?term,limit}", "search://q?term=rust", true),
            (
                "search://q{?term,limit}",
                "search://q?term=rust&limit=5",
                true,
            ),
            (
                "search://q{?term,limit}",
                "search://q?limit=5&term=rust",
                true,
            ),
            ("search://q{?term,limit}", "search://q?term", true),
            ("search://q{?term,limit}", "search://q?other=1", false),
            (
                "search://q{?term,limit}",
                "search://q?term=a&limit=1&term=b",
                false,
            ),
            ("search://q{?term,limit}", "search://q?", false),
            ("search://q{?term}", "search://q?term=a#frag", false),
            ("search://q{?term}{#f}", "search://q?term=a#frag", true),
            ("search://q{?params*}", "search://q?x=1&y=2", true),
            ("search://q{?a}{&b}", "search://q?a=1&b=2", true),
            ("search://q{?a}{&b}", "search://q&b=2", true),
            ("search://q{?a}{&b}", "search://q?a=1&c=2", false),
            // prefix modifier accepted (length not enforced), explode on simple
            ("x://{id:3}", "x://abcdef", true),
            ("x://{list*}", "x://a,b", true),
            // unsupported or malformed: matches nothing
            ("x://{.ext}", "x://.json", false),
            ("x://{;p}", "x://;p=1", false),
            ("x://{=a}", "x://=a", false),
            ("x://{name", "x://{name", false),
            ("x://name}", "x://name}", false),
            ("x://{}", "x://{}", false),
            ("x://{a b}", "x://q", false),
            ("x://{a:0}", "x://q", false),
            ("x://{a:12345}", "x://q", false),
            ("x://{a..b}", "x://q", false),
            ("x://{{a}}", "x://q", false),
            // varname with dots and pct-encoding
            ("x://{a.b}", "x://q", true),
            ("x://{a%20b}", "x://q", true),
            ("x://{a%2}", "x://q", false),
        ];
        for (template, uri, want) in table {
            assert_eq!(matches(template, uri), want, "{template:?} ~ {uri:?}");
        }
    }

    #[test]
    fn parse_errors() {
        let table = [
            ("x://{.ext}", TemplateError::UnsupportedOperator('.')),
            ("x://{|a}", TemplateError::UnsupportedOperator('|')),
            ("x://{a", TemplateError::Unclosed),
            ("x://a}", TemplateError::StrayClose),
            ("x://{}", TemplateError::BadVariable(String::new())),
        ];
        for (template, want) in table {
            assert_eq!(UriTemplate::parse(template), Err(want), "{template:?}");
        }
    }

    #[test]
    fn literal_prefix() {
        let table = [
            ("file:///logs/{name}", 13),
            ("{+uri}", 0),
            ("config://app", 12),
        ];
        for (template, want) in table {
            let t = UriTemplate::parse(template).expect("parses");
            assert_eq!(t.literal_prefix_len(), want, "{template:?}");
        }
    }

    #[test]
    fn long_uris_are_cheap() {
        // Many unbounded expressions over a long URI: linear per expression, no backtracking blow-up.
        let template = "x://{+a}{+b}{+c}{+d}{+e}{+f}{+g}{+h}/end";
        let uri = format!("x://{}", "a".repeat(100_000));
        assert!(!matches(template, &uri));
        assert!(matches(template, &format!("{uri}/end")));
    }
}
