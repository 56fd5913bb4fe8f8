//! [`Failure`]: why a handler could not answer, and how that reads as a JSON-RPC error.

use std::fmt;

use crate::error::{Error, ErrorCode};

/// Why a handler could not answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The backend answered with a JSON-RPC error (its code already named with [`ErrorCode::from_peer`]).
    Backend {
        /// The backend's configured name.
        backend: String,
        /// Its error.
        error: Error,
    },
    /// The backend did not answer within its deadline.
    Timeout {
        /// The backend's configured name.
        backend: String,
        /// The deadline that passed, in milliseconds.
        after_ms: u64,
    },
    /// The backend cannot be reached (down, restarting, circuit open, connection refused).
    Unavailable {
        /// The backend's configured name.
        backend: String,
        /// Why.
        reason: String,
    },
    /// The backend refused the credential the request carried as its principal's own (HTTP 401, or 403):
    /// that principal's token is missing, expired, revoked or short of a scope. Never the backend's fault,
    /// so it is not counted against the backend's circuit.
    Unauthorized {
        /// The backend's configured name.
        backend: String,
        /// The HTTP status (401 or 403).
        status: u16,
        /// Its `WWW-Authenticate` challenge, if any (at most 4 KiB), for the gateway to read.
        challenge: Option<String>,
    },
    /// The backend died while the request was in flight.
    Crashed {
        /// The backend's configured name.
        backend: String,
        /// What is known of the exit.
        reason: String,
    },
    /// Too many requests in flight for this backend; answered at once instead of queued.
    Overloaded {
        /// The backend's configured name.
        backend: String,
    },
    /// One caller (a principal, a session, or a client address) already holds its share of the backend's
    /// permits (`max_in_flight_per_caller`) and the backend has no more than a share's worth free: kept
    /// for callers under their share.
    OverShare {
        /// The backend's configured name.
        backend: String,
        /// The share: requests one caller may have in flight at this backend.
        share: usize,
    },
    /// The backend's circuit breaker is open (its calls kept failing at the transport): refused at once.
    CircuitOpen {
        /// The backend's configured name.
        backend: String,
        /// When the next probe may go, in milliseconds (0: a probe is in flight).
        retry_in_ms: u64,
    },
    /// The backend's answer to the request was larger than its bounds allow (`max_message_bytes` per
    /// message, `max_stream_bytes` for a response stream in all): that request's failure, not the
    /// backend's outage, so it is not counted against the backend's circuit.
    TooLarge {
        /// The backend's configured name.
        backend: String,
        /// The bound it passed, in bytes.
        limit: usize,
        /// Which bound: `"message"` or `"stream"`.
        per: &'static str,
    },
    /// The gateway is shutting down and its drain timeout passed before the request was answered.
    ShuttingDown,
    /// A failure inside the gateway or an in-process handler.
    Internal {
        /// What failed.
        reason: String,
    },
}

impl Failure {
    /// A short machine-readable name of the failure kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Backend { .. } => "backend_error",
            Failure::Timeout { .. } => "timeout",
            Failure::Unavailable { .. } => "unavailable",
            Failure::Unauthorized { .. } => "unauthorized",
            Failure::Crashed { .. } => "crashed",
            Failure::Overloaded { .. } | Failure::OverShare { .. } => "overloaded",
            Failure::CircuitOpen { .. } => "circuit_open",
            Failure::TooLarge { .. } => "too_large",
            Failure::ShuttingDown => "shutting_down",
            Failure::Internal { .. } => "internal",
        }
    }

    /// The backend the request was routed to, if any.
    pub fn backend(&self) -> Option<&str> {
        match self {
            Failure::Backend { backend, .. }
            | Failure::Timeout { backend, .. }
            | Failure::Unavailable { backend, .. }
            | Failure::Unauthorized { backend, .. }
            | Failure::Crashed { backend, .. }
            | Failure::Overloaded { backend }
            | Failure::OverShare { backend, .. }
            | Failure::CircuitOpen { backend, .. }
            | Failure::TooLarge { backend, .. } => Some(backend),
            Failure::ShuttingDown | Failure::Internal { .. } => None,
        }
    }

    /// The failure as a JSON-RPC error: a backend's own error as it is, anything else an internal error.
    pub fn to_error(&self) -> Error {
        match self {
            Failure::Backend { error, .. } => error.clone(),
            other => Error::new(ErrorCode::InternalError, other.to_string()).with_data(
                serde_json::json!({
                    "backend": other.backend(),
                    "kind": other.kind(),
                }),
            ),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Backend { backend, error } => {
                write!(f, "backend {backend} failed: {}", error.message())
            }
            Failure::Timeout { backend, after_ms } => {
                write!(f, "backend {backend} did not answer within {after_ms} ms")
            }
            Failure::Unavailable { backend, reason } => {
                write!(f, "backend {backend} is unavailable: {reason}")
            }
            Failure::Unauthorized {
                backend, status, ..
            } => write!(
                f,
                "backend {backend} refused this client's credential (HTTP {status})"
            ),
            Failure::Crashed { backend, reason } => {
                write!(
                    f,
                    "backend {backend} stopped while handling the request: {reason}"
                )
            }
            Failure::Overloaded { backend } => {
                write!(
                    f,
                    "backend {backend} is at its concurrency limit; try again shortly"
                )
            }
            Failure::OverShare { backend, share } => write!(
                f,
                "overloaded: backend {backend} is busy and this client already has {share} or more requests \
                 in flight there, its share (max_in_flight_per_caller); the permits left are kept for other \
                 clients; try again shortly"
            ),
            Failure::CircuitOpen {
                backend,
                retry_in_ms,
            } => write!(
                f,
                "backend {backend}'s circuit is open: its calls kept failing, so they are refused at once \
                 (the next probe in {retry_in_ms} ms)"
            ),
            Failure::TooLarge {
                backend,
                limit,
                per,
            } => write!(
                f,
                "backend {backend}'s answer is larger than the gateway accepts from it: more than \
                 {limit} bytes {}",
                if *per == "stream" {
                    "on its response stream in all"
                } else {
                    "in one message"
                }
            ),
            Failure::ShuttingDown => f.write_str("gateway shutting down"),
            Failure::Internal { reason } => write!(f, "internal error: {reason}"),
        }
    }
}
