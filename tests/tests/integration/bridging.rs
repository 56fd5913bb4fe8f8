//! Bridging across eras with real peers (issue 4 §6):
//!
//! - `@modelcontextprotocol/server-everything` (legacy, stdio) behind the Python SDK client in 2026-07-28 mode:
//!   the backend's `sampling/createMessage` and `elicitation/create` reach the client as `input_required`
//!   results with a sealed state, the SDK answers them through its callbacks and retries, and the gateway
//!   replays the call, answering the backend from the retry: the callbacks' answers are in the tool results.
//! - A Python SDK 2026-07-28 backend (`py_asking_server.py`) whose tools answer `input_required`, behind legacy
//!   clients (raw HTTP, and the Python SDK client in legacy mode): the gateway asks the real elicitation and
//!   sampling requests on the request's SSE stream and retries the backend with the answers.
//! - 1,000 concurrent sessions (500 legacy, 500 2026-07-28 with a `subscriptions/listen` stream each) calling a
//!   stdio backend that reports progress, each with its own progress token: each hears only its own progress
//!   and its own response, then one list change reaches every GET and listen stream exactly once.
//!
//! - A regression test: a 2026-07-28 client calling a legacy backend hears the progress the backend sends right
//!   before its response.
//!
//! The first two need the interop peers (`tests/fixtures/interop/setup.sh`) and are skipped with
//! `MCPGW_SKIP_INTEROP=1`; the third needs only `python3`. Loopback only, every wait bounded, every process
//! killed on drop.

mod fanout;
mod peers;
mod sessions;
