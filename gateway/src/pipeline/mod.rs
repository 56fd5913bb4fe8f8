//! The request pipeline's middleware (the founding document's `MwContext`, `Next`, `Response::error`) and
//! the built-in middlewares. A validated call runs through the configured chain ([`Chain`]) to its
//! dispatch; a middleware may answer instead, at once, and its answer is shaped like any other.
//!
//! It must not shape answers itself (that is the response actor, through `protocol::shape`), and a
//! middleware must never see a request that did not pass validation.

pub mod answer;
pub mod builtin;
pub(crate) mod deliver;
pub mod dispatch;
mod middleware;
pub mod rate_limit;
pub mod request_stream;
pub mod response;
pub mod routing;
mod search;

pub use middleware::{Chain, Middleware, MwContext, Next, Principal, Response, Summary, Transport};
