//! The `[redaction]` stage: a backend's answer to `tools/call`, `resources/read` or `prompts/get` scanned
//! for the secrets and patterns of `redaction::Redactor`, and redacted, withheld or reported as its mode
//! says, counted in `mcpgw_redactions_total`. Placed closest to the dispatch unless a `[[middleware]]
//! kind = "redaction"` table places it: every stage before it (the access log, interceptors, a library's
//! middlewares) sees the answer as the client will. What the backend says beside its answer while the
//! call runs is judged where it is relayed (`request_stream`, `Redactor::notification`).

use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use protocol::Method;
use protocol::shape::Refusal;

use super::middleware::{Middleware, MwContext, Next, Response};
use super::response::Outcome;
use crate::config::RedactionMode;
use crate::metrics::Metrics;
use crate::redaction::{Redactor, Seen};

/// The stage, for one config's `[redaction]`.
#[derive(Debug, Clone)]
pub struct Redaction {
    pub(crate) redactor: Arc<Redactor>,
    pub(crate) metrics: Arc<Metrics>,
}

impl Middleware for Redaction {
    fn name(&self) -> &str {
        "redaction"
    }

    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        let method = ctx.method();
        if !matches!(
            method,
            Method::ToolsCall | Method::ResourcesRead | Method::PromptsGet
        ) {
            return next(ctx);
        }
        let Some(backend) = ctx
            .backend()
            .filter(|b| self.redactor.applies_to(b))
            .map(str::to_owned)
        else {
            return next(ctx);
        };
        let principal = ctx.principal_shared();
        let (redactor, metrics) = (self.redactor.clone(), self.metrics.clone());
        Box::pin(async move {
            let mut response = next(ctx).await;
            let Outcome::Result(raw) = &response.outcome else {
                return response;
            };
            let found = redactor.scan(raw.get());
            if found.is_empty() {
                return response;
            }
            let mode = redactor.mode();
            let (found, outcome) = match mode {
                RedactionMode::Audit => (found, None),
                RedactionMode::Refuse => {
                    let message = format!(
                        "the answer of backend {backend} was withheld: it held {}",
                        found.names().join(", ")
                    );
                    let refused = Outcome::Refused(Refusal::ToolError {
                        message,
                        meta: None,
                    });
                    (found, Some(refused))
                }
                RedactionMode::Redact => {
                    let mut value: serde_json::Value = match serde_json::from_str(raw.get()) {
                        Ok(v) => v,
                        Err(_) => return response,
                    };
                    let redacted = redactor.redact(&mut value);
                    match serde_json::value::to_raw_value(&value) {
                        Ok(raw) => (redacted, Some(Outcome::Result(raw))),
                        Err(_) => (redacted, None),
                    }
                }
            };
            let principal = principal.as_deref().map_or("-", |p| p.name.as_str());
            redactor.record(&metrics, &found, &backend, method.as_str(), principal, Seen::Answer);
            if let Some(outcome) = outcome {
                response.outcome = outcome;
            }
            response
        })
    }
}
