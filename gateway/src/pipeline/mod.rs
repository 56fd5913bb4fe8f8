//! The request pipeline's middleware (the founding document's `MwContext`, `Next`, `Response::error`) and
//! the built-in middlewares. A validated call runs through the configured chain ([`Chain`]) to its
//! dispatch; a middleware may answer instead, at once, and its answer is shaped like any other.
//!
//! Every request has one context ([`RequestContext`]), built once where it is accepted and validated, and
//! borrowed by everything downstream. It must not shape answers but through `protocol::shape`
//! (`pipeline::response`), and a middleware must never see a request that did not pass validation.

pub mod answer;
pub mod builtin;
mod call;
pub mod context;
pub(crate) mod deliver;
pub mod dispatch;
mod middleware;
pub mod rate_limit;
mod intercepting;
mod redaction;
pub mod request_stream;
pub mod response;
pub mod routing;
mod search;

#[cfg(any(test, feature = "internals"))]
pub use context::{Accepted, RequestContext};
pub use middleware::{Added, Chain, Middleware, MwContext, Next, Principal, Response, Summary, Transport};
