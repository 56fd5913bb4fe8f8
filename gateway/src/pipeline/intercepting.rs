//! The `[[interceptor]]` stage: a `tools/call`, `resources/read` or `prompts/get` that an interceptor
//! server is asked about goes to its validators and mutators (`intercept`) before the dispatch — a
//! refusal answers at once, rewritten arguments go on — and the backend's result goes to them after it,
//! before the client has it. A refusal is a tool error for `tools/call` and a JSON-RPC error otherwise,
//! naming the interceptor and never repeating its messages (they stay in the gateway's log).

use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use protocol::shape::Refusal;
use serde_json::Value;

use super::middleware::{Middleware, MwContext, Next, Response};
use super::response::Outcome;
use crate::intercept::plan::{Phase, request_payload};
use crate::intercept::{Interceptors, Outcome as Passed};

/// The stage, over the started servers.
#[derive(Debug, Clone)]
pub struct Intercepting(pub(crate) Arc<Interceptors>);

fn refused(host: &str, name: &str) -> Outcome {
    Outcome::Refused(Refusal::ToolError {
        message: format!("refused by the gateway's interceptor {host}/{name}"),
        meta: None,
    })
}

impl Middleware for Intercepting {
    fn name(&self) -> &str {
        "interceptors"
    }

    fn handle(&self, mut ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        let event = ctx.method().as_str();
        if !crate::config::INTERCEPTED_EVENTS.contains(&event) {
            return next(ctx);
        }
        let Some(backend) = ctx.backend().map(str::to_owned) else {
            return next(ctx);
        };
        let tool = ctx.tool().map(str::to_owned);
        if !self.0.wanted(event, tool.as_deref(), &backend) {
            return next(ctx);
        }
        let interceptors = self.0.clone();
        let principal = ctx.principal_shared();
        Box::pin(async move {
            let payload = || {
                let params: Option<Value> = ctx
                    .call()
                    .and_then(|c| c.request().params.as_deref())
                    .and_then(|p| serde_json::from_str(p.get()).ok());
                Some(request_payload(event, params.as_ref()))
            };
            let (tool, principal) = (tool.as_deref(), principal.as_deref().map(|p| p.name.as_str()));
            match interceptors
                .run(event, Phase::Request, tool, &backend, payload, principal)
                .await
            {
                Passed::Refused { host, name } => {
                    return Response::dispatched(refused(&host, &name), Some(backend));
                }
                Passed::Pass(Some(rewritten)) => {
                    // Only the arguments are taken: the request still names what validation resolved.
                    let arguments = rewritten
                        .pointer("/params/arguments")
                        .and_then(Value::as_object)
                        .cloned();
                    if let Some(arguments) = arguments
                        && let Err(e) = ctx.set_arguments(arguments)
                    {
                        tracing::warn!(error = %e, "an interceptor's arguments were not applied");
                        return Response::dispatched(refused("gateway", "arguments"), Some(backend));
                    }
                }
                Passed::Pass(None) => {}
            }
            let mut response = next(ctx).await;
            let Outcome::Result(raw) = &response.outcome else {
                return response;
            };
            let result = || serde_json::from_str::<Value>(raw.get()).ok();
            match interceptors
                .run(event, Phase::Response, tool, &backend, result, principal)
                .await
            {
                Passed::Refused { host, name } => response.outcome = refused(&host, &name),
                Passed::Pass(Some(rewritten)) if rewritten.is_object() => {
                    if let Ok(raw) = serde_json::value::to_raw_value(&rewritten) {
                        response.outcome = Outcome::Result(raw);
                    }
                }
                Passed::Pass(_) => {}
            }
            response
        })
    }
}
