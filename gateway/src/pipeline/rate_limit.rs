//! The rate-limit middleware (`[[rate_limit]]`; not in `[[middleware]]`: placed by `builtin::chain` right
//! after the scope check whenever a limit is configured, never otherwise). One instance per worker, holding
//! that worker's leases (`limit::WorkerLimits`); the buckets are `limit`'s.
//!
//! A refused `tools/call` is a tool error the model can read and wait on ("rate limited: retry after N s",
//! `retryAfterMs` in the result's `_meta`); any other method gets -32000 "rate limited" with
//! `data.retryAfterMs`, 429 with `Retry-After` when it is the request's own answer (in a batch only the
//! entry is kept, and the batch is 200). It logs a refusal at info (principal, limit, method), never a
//! request's arguments.

use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use protocol::{Error, ErrorCode, Method};
use serde_json::json;

use super::middleware::{Middleware, MwContext, Next, Response};
use crate::limit::{Facts, Limits, Refused, Step, Subject, WorkerLimits};

/// The JSON-RPC code of a rate-limited request that is not a `tools/call` (the implementation-defined
/// server-error range).
pub const RATE_LIMITED: i64 = -32000;

/// The rate limits, as one worker applies them.
#[derive(Debug)]
pub struct RateLimit(Arc<WorkerLimits>);

impl RateLimit {
    /// A worker's middleware over the process's `limits`.
    pub fn new(limits: Arc<Limits>) -> RateLimit {
        RateLimit(Arc::new(WorkerLimits::new(limits)))
    }
}

impl Middleware for RateLimit {
    fn name(&self) -> &str {
        "rate_limit"
    }

    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        let limits = self.0.limits();
        let facts = Facts {
            method: ctx.method(),
            subject: match (ctx.principal(), ctx.client()) {
                (Some(p), _) => Subject::Principal(p),
                (None, Some(address)) => Subject::Address(address),
                (None, None) => Subject::Local,
            },
            backend: if limits.backend_matters() {
                ctx.backend()
            } else {
                None
            },
            tool: ctx.tool(),
        };
        let keys = limits.keys(&facts);
        if keys.is_empty() {
            return next(ctx);
        }
        match self.0.check(&keys, limits.now()) {
            Step::Admit => next(ctx),
            Step::Refuse(refused) => {
                let response = refuse(&ctx, &refused);
                Box::pin(async move { response })
            }
            Step::Ask(at) => {
                let mut keys = keys;
                limits.name(&mut keys, &facts);
                let worker = self.0.clone();
                Box::pin(async move {
                    match worker.admit(&keys, at).await {
                        Ok(()) => next(ctx).await,
                        Err(refused) => refuse(&ctx, &refused),
                    }
                })
            }
        }
    }
}

/// The answer to a refused request.
fn refuse(ctx: &MwContext, refused: &Refused) -> Response {
    let ms = refused.retry_ms.max(1);
    let secs = ms.div_ceil(1000);
    tracing::info!(principal = ctx.principal().map(|p| p.name.as_str()).unwrap_or("-"),
        limit = %refused.limit, method = %ctx.method(), retry_after_ms = ms, "refused: rate limited");
    if ctx.method() == Method::ToolsCall {
        return Response::tool_error(
            ctx.id(),
            format!("rate limited: retry after {secs} s"),
            Some(json!({ "retryAfterMs": ms })),
        );
    }
    let err = Error::new(ErrorCode::Other(RATE_LIMITED), "rate limited")
        .with_data(json!({ "retryAfterMs": ms }));
    Response::refuse(ctx.id(), 429, err).with_header("retry-after", secs.to_string())
}
