//! What the gateway tells its operator about itself while it runs, beyond answering: its logs (`logs`: text
//! or JSON lines on standard error, written by a thread of its own, the level reloadable) and OpenTelemetry
//! traces (`[traces]`, exported over OTLP/HTTP). Process-wide, as the tracing subscriber and the tracer are.
//!
//! Off the hot path's locks: a log line is handed to a bounded queue and dropped (counted) when it is full;
//! spans go to the SDK's batch processor (its own thread, a bounded queue that drops when full) and are
//! exported by a client on a runtime of its own, never on an actix arbiter. This domain must not know
//! requests' transports or the pipeline: the pipeline calls it with plain facts (names, ids, header values).

mod batched;
mod collector;
pub mod logs;
pub mod parent;
pub mod spans;
mod text;
pub(crate) use text::civil;
pub mod traces;
