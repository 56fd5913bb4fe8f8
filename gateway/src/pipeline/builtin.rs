//! The middlewares built into mcpgw, chosen and ordered by `[[middleware]]` tables:
//! - `access_log`: one line per JSON-RPC request (target `mcpgw::access`, at info, message `access`): method, backend,
//!   outcome, code, duration, generation, transport, principal — never arguments, results or tokens;
//! - `require_scopes` (not in `[[middleware]]`: always first when `[[auth.scope]]` rules exist): the
//!   principal's scopes;
//! - `rate_limit` (not in `[[middleware]]`: right after the scope check when `[[rate_limit]]` tables
//!   exist, never otherwise: no default limit), in `pipeline::rate_limit`;
//! - `allow_methods`: only the listed methods pass; any other is answered exactly as an unknown method is
//!   (-32601; 404 on 2026-07-28), before any backend is called.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use protocol::shape::Refusal;
use protocol::validate::Target;
use protocol::{Error, ErrorCode, Method};

use super::middleware::{Added, Chain, Middleware, MwContext, Next, Response, Summary};
use super::rate_limit::RateLimit;
use super::intercepting::Intercepting;
use super::redaction::Redaction;
use crate::config::{MiddlewareEntry, MiddlewareKind};
use crate::pipeline::response::Outcome;

/// The scopes of `[[auth.scope]]`, checked on the principal authentication established: the chain's first
/// middleware when rules exist. A principal lacking one gets 403 with `WWW-Authenticate: Bearer
/// error="insufficient_scope", scope="…"` (RFC 6750 §3.1) through `Response::refuse`, answered at once, no
/// backend called. Requests without a principal (stdio, authentication off) are not checked.
#[derive(Debug, Clone)]
pub struct RequireScopes(pub Arc<crate::auth::Authenticator>);

impl Middleware for RequireScopes {
    fn name(&self) -> &str {
        "require_scopes"
    }

    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        let Some(principal) = ctx.principal() else {
            return next(ctx);
        };
        let tool = ctx.call().and_then(|c| match c.target() {
            Some(Target::Tool { name, .. }) => Some(name.as_str()),
            _ => None,
        });
        let missing = self.0.scopes.missing(ctx.method(), tool, &principal.scopes);
        if missing.is_empty() {
            return next(ctx);
        }
        tracing::info!(principal = %principal.name, method = %ctx.method(), scopes = %missing.join(" "),
            "refused: insufficient scope");
        let err = Error::new(
            ErrorCode::InvalidRequest,
            format!(
                "forbidden: this request needs the scope {}",
                missing.join(" ")
            ),
        );
        let challenge = self.0.insufficient_scope(&missing);
        let response =
            Response::refuse(ctx.id(), 403, err).with_header("WWW-Authenticate", challenge);
        Box::pin(async move { response })
    }
}

/// The configured chain: the scope check first when `[[auth.scope]]` rules exist (it is part of the
/// authenticate phase, never reordered), then the rate limits when `[[rate_limit]]` tables exist (a new
/// instance per call: each worker builds its own chain and so holds its own leases), then the
/// `[[middleware]]` tables in order (a `library` table places the `added` middleware it names), then the
/// `added` middlewares no table names, in the order added — the rate limits and tables of the config in
/// effect (`live`).
pub fn chain(gw: &crate::state::Gateway, live: &crate::state::Live, added: &Added) -> Chain {
    let scopes = gw
        .auth
        .as_ref()
        .filter(|a| !a.scopes.is_empty())
        .map(|a| Arc::new(RequireScopes(a.clone())) as Arc<dyn Middleware>);
    let limits = live
        .limits
        .as_ref()
        .map(|l| Arc::new(RateLimit::new(l.clone())) as Arc<dyn Middleware>);
    let redaction = live.redaction.as_ref().map(|r| {
        Arc::new(Redaction {
            redactor: r.clone(),
            metrics: gw.metrics.clone(),
        }) as Arc<dyn Middleware>
    });
    let interceptors = gw
        .interceptors
        .as_ref()
        .map(|i| Arc::new(Intercepting(i.clone())) as Arc<dyn Middleware>);
    Chain::new(
        scopes
            .into_iter()
            .chain(limits)
            .chain(configured(
                &live.config.middlewares,
                added,
                Stages {
                    interceptors,
                    redaction,
                },
            ))
            .collect(),
    )
}

/// The stages a `[[middleware]]` table may place, when configured.
#[derive(Default)]
#[allow(missing_debug_implementations)] // middlewares are `dyn`: `Chain` shows their names instead
pub struct Stages {
    /// `[[interceptor]]`.
    pub interceptors: Option<Arc<dyn Middleware>>,
    /// `[redaction]`.
    pub redaction: Option<Arc<dyn Middleware>>,
}

/// The `[[middleware]]` tables' middlewares, in order, then the `added` ones no table names, then the
/// interceptors and then redaction (closest to the dispatch), each unless a table placed it.
pub fn configured(
    entries: &[MiddlewareEntry],
    added: &Added,
    stages: Stages,
) -> Vec<Arc<dyn Middleware>> {
    let Stages {
        interceptors,
        redaction,
    } = stages;
    let named = |e: &MiddlewareEntry| e.name.as_deref().and_then(|n| added.named(n)).cloned();
    let tables = entries.iter().filter_map(|e| -> Option<Arc<dyn Middleware>> {
        match e.kind {
            MiddlewareKind::AccessLog => Some(Arc::new(AccessLog)),
            MiddlewareKind::AllowMethods => Some(Arc::new(AllowMethods::new(
                e.methods.iter().flatten().filter_map(|m| Method::parse(m)),
            ))),
            // Checked at start and before a reload (`Config::unknown_library`): one named is there.
            MiddlewareKind::Library => named(e),
            MiddlewareKind::Redaction => redaction.clone(),
            MiddlewareKind::Interceptors => interceptors.clone(),
        }
    });
    let placed = |m: &Arc<dyn Middleware>| {
        entries
            .iter()
            .any(|e| e.kind == MiddlewareKind::Library && e.name.as_deref() == Some(m.name()))
    };
    let rest = added.all().filter(|m| !placed(m)).cloned();
    let unplaced = |kind: MiddlewareKind, stage: &Option<Arc<dyn Middleware>>| {
        stage.clone().filter(|_| !entries.iter().any(|e| e.kind == kind))
    };
    let last = [
        unplaced(MiddlewareKind::Interceptors, &interceptors),
        unplaced(MiddlewareKind::Redaction, &redaction),
    ];
    tables.chain(rest).chain(last.into_iter().flatten()).collect()
}


/// One line per JSON-RPC request, after it was answered.
#[derive(Debug, Clone, Copy)]
pub struct AccessLog;

impl Middleware for AccessLog {
    fn name(&self) -> &str {
        "access_log"
    }

    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        // Nothing to write (the log filter drops the line): nothing to measure or summarise either.
        if !tracing::enabled!(target: "mcpgw::access", tracing::Level::INFO) {
            return next(ctx);
        }
        let method = ctx.method();
        let generation = ctx.generation();
        let transport = ctx.transport();
        let started = ctx.started();
        let principal = ctx.principal().map(|p| p.name.clone());
        Box::pin(async move {
            let response = next(ctx).await;
            let micros = started.elapsed().as_micros();
            let (outcome, code, status) = match response.summary() {
                Summary::Ok => ("ok", None, None),
                Summary::ToolError => ("tool_error", None, None),
                Summary::Failed(kind) => (kind, None, None),
                Summary::Error(code) => ("error", Some(code), None),
                Summary::Refused(status, code) => ("refused", Some(code), Some(status)),
            };
            tracing::info!(
                target: "mcpgw::access",
                %method,
                backend = response.backend().unwrap_or("-"),
                outcome,
                code,
                status,
                duration_us = micros as u64,
                %generation,
                transport = transport.as_str(),
                principal = principal.as_deref().unwrap_or("-"),
                "access"
            );
            response
        })
    }
}

/// Only the listed methods pass.
#[derive(Debug, Clone)]
pub struct AllowMethods {
    allowed: HashSet<Method>,
}

impl AllowMethods {
    /// Lets these methods pass (`ping` always passes: a client checking liveness is not refused).
    pub fn new(methods: impl IntoIterator<Item = Method>) -> AllowMethods {
        let mut allowed: HashSet<Method> = methods.into_iter().collect();
        allowed.insert(Method::Ping);
        AllowMethods { allowed }
    }
}

impl Middleware for AllowMethods {
    fn name(&self) -> &str {
        "allow_methods"
    }

    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        if self.allowed.contains(&ctx.method()) {
            return next(ctx);
        }
        tracing::info!(method = %ctx.method(), "refused by allow_methods");
        let refused = Refusal::unknown_method(ctx.method().as_str(), ctx.generation());
        let response = Response::dispatched(Outcome::Refused(refused), None);
        Box::pin(async move { response })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn auth_check(ctx: MwContext, next: Next) -> Response {
        next(ctx).await
    }

    async fn tag(ctx: MwContext, next: Next) -> Response {
        next(ctx).await
    }

    fn entry(kind: MiddlewareKind, name: Option<&str>) -> MiddlewareEntry {
        MiddlewareEntry {
            kind,
            methods: (kind == MiddlewareKind::AllowMethods).then(|| vec!["tools/call".into()]),
            name: name.map(str::to_owned),
        }
    }

    #[test]
    fn added_middlewares_run_where_a_library_table_places_them_and_the_rest_after_the_tables() {
        let added = Added::new(vec![Arc::new(tag), Arc::new(auth_check)]);
        let cases: &[(&[MiddlewareEntry], &[&str])] = &[
            (&[], &["tag", "auth_check"]),
            (
                &[entry(MiddlewareKind::AccessLog, None)],
                &["access_log", "tag", "auth_check"],
            ),
            (
                &[
                    entry(MiddlewareKind::Library, Some("auth_check")),
                    entry(MiddlewareKind::AccessLog, None),
                ],
                &["auth_check", "access_log", "tag"],
            ),
            (
                &[
                    entry(MiddlewareKind::AccessLog, None),
                    entry(MiddlewareKind::Library, Some("auth_check")),
                    entry(MiddlewareKind::AllowMethods, None),
                    entry(MiddlewareKind::Library, Some("tag")),
                ],
                &["access_log", "auth_check", "allow_methods", "tag"],
            ),
        ];
        for (entries, expected) in cases {
            let names: Vec<String> = configured(entries, &added, Stages::default())
                .iter()
                .map(|m| m.name().to_owned())
                .collect();
            assert_eq!(names, *expected, "{entries:?}");
        }
    }
}
