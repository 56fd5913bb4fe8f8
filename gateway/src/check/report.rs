//! What `mcpgw check` found, and how it is told: a readable report for standard output and one line per
//! problem for standard error. Pure: the backends' outcomes come in as values, text goes out.

use std::fmt::Write as _;

use handlers::TransportKind;
use protocol::Generation;
use serde_json::Value;

use crate::catalog::names::exposed_name;
use crate::catalog::{BackendListing, CatalogBuilder, CatalogError};

/// What happened to one backend.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It did not start or connect within its connect deadline.
    NotStarted {
        /// Why (the backend's own reason, or the deadline that passed).
        reason: String,
    },
    /// Each user authorizes it (`grant = "authorization_code"`) and it refused the gateway without a
    /// user's token: what is expected until a user connected (not a problem).
    AwaitsConsent {
        /// Its refusal.
        reason: String,
    },
    /// It connected but could not list what it offers.
    NotListed {
        /// Who it is.
        server: Server,
        /// Why.
        reason: String,
    },
    /// It connected and listed.
    Listed {
        /// Who it is.
        server: Server,
        /// Everything it listed.
        listing: BackendListing,
        /// The lists it announced but failed to give (the gateway serves the others).
        failed: Vec<crate::notify::listing::FailedList>,
    },
}

/// What a backend said about itself at its handshake.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// The generation it speaks (negotiated, for a legacy backend).
    pub generation: Generation,
    /// The transport it was found to speak.
    pub transport: TransportKind,
    /// `name version`, as it reported them (if it did).
    pub info: Option<String>,
}

/// One backend's line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendReport {
    /// Its configured name.
    pub name: String,
    /// How it is reached, as configured (`command …`, `url …`, `builtin …`).
    pub reached_by: String,
    /// What happened.
    pub outcome: Outcome,
}

/// The whole check: every backend in config order, and the collisions between those that listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Where the config came from.
    pub source: String,
    /// Every backend, in config order.
    pub backends: Vec<BackendReport>,
    /// Names two backends both expose, and names a backend exposes that the gateway reserves.
    pub collisions: Vec<CatalogError>,
}

impl Report {
    /// A report of these backends, with the collisions among those that listed.
    pub fn new(source: String, backends: Vec<BackendReport>) -> Report {
        let listings: Vec<&BackendListing> = backends
            .iter()
            .filter_map(|b| match &b.outcome {
                Outcome::Listed { listing, .. } => Some(listing),
                _ => None,
            })
            .collect();
        let collisions = collisions(&listings);
        Report {
            source,
            backends,
            collisions,
        }
    }

    /// The same report, with each listed backend that exposes one of the `reserved` tool names (`[catalog]
    /// search`'s) as a problem, decided by the same [`CatalogBuilder`] `mcpgw serve` uses.
    pub fn reserving(mut self, reserved: &[String]) -> Report {
        if reserved.is_empty() {
            return self;
        }
        for b in &self.backends {
            if let Outcome::Listed { listing, .. } = &b.outcome {
                let mut builder = CatalogBuilder::new();
                builder.reserve(reserved);
                builder.add(listing.clone());
                if let Err(e) = builder.build() {
                    self.collisions.push(e);
                }
            }
        }
        self
    }

    /// One line per problem: a backend that did not start, one that could not list, each collision.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for b in &self.backends {
            match &b.outcome {
                Outcome::NotStarted { reason } => {
                    out.push(format!("backend {}: did not start: {reason}", b.name));
                }
                Outcome::NotListed { reason, .. } => {
                    out.push(format!("backend {}: cannot list: {reason}", b.name));
                }
                Outcome::AwaitsConsent { .. } => {}
                Outcome::Listed { failed, .. } => {
                    out.extend(
                        failed
                            .iter()
                            .map(|f| format!("backend {}: cannot list {f}", b.name)),
                    );
                }
            }
        }
        out.extend(self.collisions.iter().map(|c| format!("catalog: {c}")));
        out
    }

    /// The readable report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let n = self.backends.len();
        let _ = writeln!(
            out,
            "mcpgw check: {} ({n} backend{})",
            self.source,
            if n == 1 { "" } else { "s" }
        );
        for b in &self.backends {
            let _ = writeln!(out, "\nbackend {} ({})", b.name, b.reached_by);
            match &b.outcome {
                Outcome::NotStarted { reason } => {
                    let _ = writeln!(out, "  did not start: {reason}");
                }
                Outcome::AwaitsConsent { reason } => {
                    let _ = writeln!(
                        out,
                        "  waits for its first user's consent (grant = \"authorization_code\"): {reason}; \
                         it lists its tools once a user connected, and offers mcpgw_connect until then"
                    );
                }
                Outcome::NotListed { server, reason } => {
                    let _ = writeln!(out, "  {}", describe(server));
                    let _ = writeln!(out, "  cannot list: {reason}");
                }
                Outcome::Listed {
                    server,
                    listing,
                    failed,
                } => {
                    let _ = writeln!(out, "  {}", describe(server));
                    for f in failed {
                        let _ = writeln!(out, "  cannot list {f}");
                    }
                    render_listing(&mut out, listing);
                }
            }
        }
        for c in &self.collisions {
            let _ = writeln!(out, "\ncollision: {c}");
        }
        let problems = self.problems().len();
        let _ = writeln!(
            out,
            "\n{}",
            match problems {
                0 if self
                    .backends
                    .iter()
                    .any(|b| matches!(b.outcome, Outcome::AwaitsConsent { .. })) =>
                    "ok: every backend started and listed or waits for a user's consent, no collisions"
                        .to_owned(),
                0 => "ok: every backend started and listed, no collisions".to_owned(),
                1 => "1 problem (on standard error)".to_owned(),
                n => format!("{n} problems (on standard error)"),
            }
        );
        out
    }
}

fn describe(server: &Server) -> String {
    let era = if server.generation.era() == protocol::Era::Legacy {
        "legacy"
    } else {
        "modern"
    };
    let transport = match server.transport {
        TransportKind::Stdio => "stdio",
        TransportKind::StreamableHttp => "streamable http",
        TransportKind::HttpSse => "http+sse (2024-11-05)",
        TransportKind::InProcess => "in process",
    };
    let info = server
        .info
        .as_ref()
        .map(|i| format!(", server {i}"))
        .unwrap_or_default();
    format!(
        "{} ({era}) over {transport}{info}",
        server.generation.as_str()
    )
}

fn render_listing(out: &mut String, l: &BackendListing) {
    let prefixed = |items: &[Value]| -> Vec<String> {
        names(items, "name")
            .map(|n| exposed_name(&l.prefix, n))
            .collect()
    };
    let lists = [
        ("tools", prefixed(&l.tools)),
        ("prompts", prefixed(&l.prompts)),
        (
            "resources",
            names(&l.resources, "uri").map(str::to_owned).collect(),
        ),
        (
            "resource templates",
            names(&l.resource_templates, "uriTemplate")
                .map(str::to_owned)
                .collect(),
        ),
    ];
    for (what, items) in lists {
        if items.is_empty() {
            let _ = writeln!(out, "  {what} (0)");
        } else {
            let _ = writeln!(out, "  {what} ({}): {}", items.len(), items.join(", "));
        }
    }
}

/// The string field `key` of each item that has one (what the catalog would list).
fn names<'a>(items: &'a [Value], key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    items
        .iter()
        .filter_map(move |i| i.get(key).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

/// Every pair of backends that cannot be served together, with the first name they share: each pair is
/// built into a catalog by the same [`CatalogBuilder`] `mcpgw serve` uses, so the check agrees with it.
pub fn collisions(listings: &[&BackendListing]) -> Vec<CatalogError> {
    let mut out = Vec::new();
    for (i, a) in listings.iter().enumerate() {
        for b in &listings[i + 1..] {
            let mut builder = CatalogBuilder::new();
            builder.add((*a).clone());
            builder.add((*b).clone());
            if let Err(e) = builder.build() {
                out.push(e);
            }
        }
    }
    out
}

/// A config error on one line: a parser's message with its source snippet (`2 | port = 1`, `  | ^^^^`)
/// keeps its location and its reason.
pub fn one_line(message: &str) -> String {
    let kept: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_snippet(l))
        .collect();
    kept.join(": ")
}

/// `|`, `2 | port = 1`, `| ^^^^`: the lines of a source excerpt.
fn is_snippet(line: &str) -> bool {
    let before_bar = line.split_once('|').map(|(b, _)| b.trim());
    before_bar.is_some_and(|b| b.is_empty() || b.bytes().all(|c| c.is_ascii_digit()))
}
