//! The metrics' label values, each from a closed set: methods (the spec's, `other`, `none`), generations,
//! transports, outcomes with a bounded set of JSON-RPC codes, backend outcomes, session endings. Every
//! label set maps to an index into a fixed table, so recording is an array index and an atomic add.
//!
//! It must not name anything a client chose (a session id, a principal, an unknown method or tool name).

use protocol::method::HandlerKind;
use protocol::shape::Failure;
use protocol::{ErrorCode, Generation, Method};

/// The method of a request as a label: one of the spec's, `other` (a method name outside the spec's), or
/// `none` (refused before a method was read: a body that is not JSON-RPC, a batch, an HTTP-level refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodLabel {
    /// A method of the spec.
    Spec(Method),
    /// A method name the spec does not define.
    Other,
    /// No method was read.
    None,
}

/// How many method label values there are.
pub(super) const METHODS: usize = Method::ALL.len() + 2;

impl MethodLabel {
    /// The label of a method name as a client sent it.
    pub fn of_name(name: &str) -> MethodLabel {
        Method::parse(name).map_or(MethodLabel::Other, MethodLabel::Spec)
    }

    pub(super) fn index(self) -> usize {
        match self {
            MethodLabel::Spec(m) => m as usize,
            MethodLabel::Other => Method::ALL.len(),
            MethodLabel::None => Method::ALL.len() + 1,
        }
    }

    pub(super) fn at(index: usize) -> MethodLabel {
        match Method::ALL.get(index) {
            Some(m) => MethodLabel::Spec(*m),
            None if index == Method::ALL.len() => MethodLabel::Other,
            None => MethodLabel::None,
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            MethodLabel::Spec(m) => m.as_str(),
            MethodLabel::Other => "other",
            MethodLabel::None => "none",
        }
    }
}

impl From<Method> for MethodLabel {
    fn from(m: Method) -> Self {
        MethodLabel::Spec(m)
    }
}

/// How many generation label values there are (the five, and `none`).
pub(super) const GENERATIONS: usize = Generation::ALL.len() + 1;

pub(super) fn generation_index(g: Option<Generation>) -> usize {
    g.map_or(Generation::ALL.len(), |g| g as usize)
}

pub(super) fn generation_label(index: usize) -> &'static str {
    Generation::ALL.get(index).map_or("none", |g| g.as_str())
}

/// How a request reached the gateway (the metrics' own copy of `session::Transport`, which is above this
/// module: `session` converts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP, either era.
    StreamableHttp,
    /// 2024-11-05 HTTP+SSE.
    HttpSse,
    /// `mcpgw serve --stdio`.
    Stdio,
    /// The admin page's playground.
    Admin,
}

pub(super) const TRANSPORTS: usize = 4;

impl Transport {
    pub(super) const ALL: [Transport; TRANSPORTS] = [
        Transport::StreamableHttp,
        Transport::HttpSse,
        Transport::Stdio,
        Transport::Admin,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable_http",
            Transport::HttpSse => "http_sse",
            Transport::Stdio => "stdio",
            Transport::Admin => "admin",
        }
    }
}

/// The JSON-RPC codes that get a label value of their own; any other is `other`.
pub const KNOWN_CODES: [i64; 10] = [
    -32700, -32600, -32601, -32602, -32603, -32002, -32042, -32020, -32021, -32022,
];

/// A JSON-RPC error code as a label: one of [`KNOWN_CODES`] (as the gateway names it: resource not found
/// is -32002 on every generation), or `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(u8);

pub(super) const CODES: usize = KNOWN_CODES.len() + 1;

impl Code {
    /// The label of an error code.
    pub fn of(code: ErrorCode) -> Code {
        let raw = code.code();
        let at = KNOWN_CODES.iter().position(|c| *c == raw);
        Code(at.unwrap_or(KNOWN_CODES.len()) as u8)
    }

    /// The label value: the code in decimal, or `other`.
    pub fn as_str(self) -> &'static str {
        const NAMES: [&str; CODES] = [
            "-32700", "-32600", "-32601", "-32602", "-32603", "-32002", "-32042", "-32020",
            "-32021", "-32022", "other",
        ];
        NAMES[usize::from(self.0).min(CODES - 1)]
    }
}

/// What a request ended in, as the `outcome` label (with `code` for errors and rejections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result (not a tool error).
    Ok,
    /// A `tools/call` result with `isError: true` (the backend's, or a failure shaped as one).
    ToolError,
    /// A JSON-RPC error answer.
    JsonRpcError(Code),
    /// Refused before its handler ran (validation, a middleware's refusal), by its code.
    Rejection(Code),
    /// Refused for load: the worker's or a backend's bound, a full session store, a starting or stopping
    /// gateway (503).
    Overloaded,
    /// A deadline passed (the backend's, a tool's).
    Timeout,
}

pub(super) const OUTCOMES: usize = 4 + 2 * CODES;

impl Outcome {
    pub(super) fn index(self) -> usize {
        match self {
            Outcome::Ok => 0,
            Outcome::ToolError => 1,
            Outcome::Overloaded => 2,
            Outcome::Timeout => 3,
            Outcome::JsonRpcError(c) => 4 + usize::from(c.0),
            Outcome::Rejection(c) => 4 + CODES + usize::from(c.0),
        }
    }

    pub(super) fn at(index: usize) -> Outcome {
        match index {
            0 => Outcome::Ok,
            1 => Outcome::ToolError,
            2 => Outcome::Overloaded,
            3 => Outcome::Timeout,
            i if i < 4 + CODES => Outcome::JsonRpcError(Code((i - 4) as u8)),
            i => Outcome::Rejection(Code((i - 4 - CODES).min(CODES - 1) as u8)),
        }
    }

    /// The `outcome` and `code` label values (`code` empty when the outcome has none).
    pub fn labels(self) -> (&'static str, &'static str) {
        match self {
            Outcome::Ok => ("ok", ""),
            Outcome::ToolError => ("tool_error", ""),
            Outcome::Overloaded => ("overloaded", ""),
            Outcome::Timeout => ("timeout", ""),
            Outcome::JsonRpcError(c) => ("jsonrpc_error", c.as_str()),
            Outcome::Rejection(c) => ("rejection", c.as_str()),
        }
    }

    /// A handler failure's outcome for a request of `method`: a timeout, an overload, else what shaping
    /// makes of it — a tool error for `tools/call`, a JSON-RPC error with its code otherwise.
    pub fn of_failure(method: Method, f: &Failure) -> Outcome {
        match f {
            Failure::Timeout { .. } => Outcome::Timeout,
            Failure::Overloaded { .. } | Failure::OverShare { .. } | Failure::ShuttingDown => {
                Outcome::Overloaded
            }
            // As `protocol::shape` answers it: a tool error for a tool, unless the backend's error is
            // the request's own fault (a missing client capability).
            Failure::Backend { error, .. } if error.code().is_request_precondition() => {
                Outcome::JsonRpcError(Code::of(error.code()))
            }
            _ if method.handler_kind() == HandlerKind::Tool => Outcome::ToolError,
            other => Outcome::JsonRpcError(Code::of(other.to_error().code())),
        }
    }

    /// A refusal before any handler ran: 503 is overload, anything else a rejection by its code.
    pub fn of_refusal(status: u16, code: ErrorCode) -> Outcome {
        if status == 503 {
            Outcome::Overloaded
        } else {
            Outcome::Rejection(Code::of(code))
        }
    }
}

/// What one backend call ended in (`mcpgw_backend_requests_total{outcome}`): `ok`, `tool_error`, or the
/// failure's kind (`backend_error` — its own JSON-RPC error —, `timeout`, `unavailable`, `crashed`,
/// `overloaded`, `circuit_open`, `unauthorized`, `too_large`, `shutting_down`, `internal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendOutcome(u8);

const BACKEND_OUTCOME_NAMES: [&str; 12] = [
    "ok",
    "tool_error",
    "backend_error",
    "timeout",
    "unavailable",
    "crashed",
    "overloaded",
    "circuit_open",
    "unauthorized",
    "too_large",
    "shutting_down",
    "internal",
];

pub(super) const BACKEND_OUTCOMES: usize = BACKEND_OUTCOME_NAMES.len();

impl BackendOutcome {
    /// A result.
    pub const OK: BackendOutcome = BackendOutcome(0);
    /// A `tools/call` result with `isError: true`.
    pub const TOOL_ERROR: BackendOutcome = BackendOutcome(1);

    /// A failure, by its kind.
    pub fn of_failure(f: &Failure) -> BackendOutcome {
        let kind = f.kind();
        let at = BACKEND_OUTCOME_NAMES.iter().position(|n| *n == kind);
        BackendOutcome(at.unwrap_or(BACKEND_OUTCOMES - 1) as u8)
    }

    pub(super) fn index(self) -> usize {
        usize::from(self.0)
    }

    pub(super) fn label(index: usize) -> &'static str {
        BACKEND_OUTCOME_NAMES[index.min(BACKEND_OUTCOMES - 1)]
    }
}

/// Why a legacy session ended (`session::Ending` is this type: the session store says which, the metrics count
/// it by its `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// The client sent DELETE.
    Deleted,
    /// Idle for `session_idle_secs`.
    Idle,
    /// `session_max_lifetime_secs` passed.
    Expired,
    /// Its key left the key ring.
    KeyDropped,
    /// Standard input closed (stdio) or a new `initialize` replaced it.
    StdioClosed,
    /// Its HTTP+SSE stream closed.
    StreamClosed,
}

pub(super) const SESSION_ENDS: usize = 6;

impl SessionEnd {
    pub(super) const ALL: [SessionEnd; SESSION_ENDS] = [
        SessionEnd::Deleted,
        SessionEnd::Idle,
        SessionEnd::Expired,
        SessionEnd::KeyDropped,
        SessionEnd::StdioClosed,
        SessionEnd::StreamClosed,
    ];

    /// The `reason` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEnd::Deleted => "deleted",
            SessionEnd::Idle => "idle",
            SessionEnd::Expired => "expired",
            SessionEnd::KeyDropped => "key_dropped",
            SessionEnd::StdioClosed => "stdio_closed",
            SessionEnd::StreamClosed => "stream_closed",
        }
    }
}
