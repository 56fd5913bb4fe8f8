//! The founding error model's API: `Error::new(ErrorCode::X, "msg").with_data(json)`, `ErrorCode` with the
//! named variants, the generation-dependent `ErrorCode::RESOURCE_NOT_FOUND`, and `wire_code(generation)`.
//!
//! This module only holds errors. Turning an error into wire JSON happens in exactly one function,
//! [`crate::shape::error_object`].

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::generation::Generation;
use crate::method::Method;

/// A JSON-RPC error code. Codes that no variant names are kept as raw integers and passed on unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// -32700: the body is not valid JSON.
    ParseError,
    /// -32600: not a valid JSON-RPC request object.
    InvalidRequest,
    /// -32601: unknown method (or a tool no backend owns, by default).
    MethodNotFound,
    /// -32602: invalid params (also a missing required `_meta` key on 2026-07-28).
    InvalidParams,
    /// -32603: internal error.
    InternalError,
    /// -32042: URL elicitation required (2025-11-25).
    UrlElicitationRequiredError,
    /// -32020: a routing header differs from the body, or is missing or malformed (2026-07-28).
    HeaderMismatch,
    /// -32021: the request needs a client capability the client did not declare (2026-07-28).
    MissingRequiredClientCapability,
    /// -32022: the peer names a protocol version that is not supported (2026-07-28).
    UnsupportedProtocolVersion,
    /// Resource not found. On the wire: -32002 for legacy generations, -32602 for 2026-07-28.
    #[deprecated(
        note = "use ErrorCode::RESOURCE_NOT_FOUND, whose wire code follows the client's generation"
    )]
    ResourceNotFound,
    /// Any other code, kept as received.
    Other(i64),
}

#[allow(deprecated)]
impl ErrorCode {
    /// Resource not found, whose wire code follows the generation: -32602 on 2026-07-28, -32002 before.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode::ResourceNotFound;

    /// The code as this crate names it (resource-not-found as its legacy -32002).
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::UrlElicitationRequiredError => -32042,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::Other(c) => c,
        }
    }

    /// Names a raw code. -32002 is resource-not-found; codes without a variant become `Other`.
    pub const fn from_code(code: i64) -> ErrorCode {
        match code {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::InternalError,
            -32042 => ErrorCode::UrlElicitationRequiredError,
            -32020 => ErrorCode::HeaderMismatch,
            -32021 => ErrorCode::MissingRequiredClientCapability,
            -32022 => ErrorCode::UnsupportedProtocolVersion,
            -32002 => ErrorCode::ResourceNotFound,
            other => ErrorCode::Other(other),
        }
    }

    /// Names a code received from a peer that speaks `peer` in answer to `method`. A 2026-07-28 peer says
    /// "resource not found" with -32602 on `resources/read`; it is recognised so that an older client gets
    /// its own -32002 back (and the other way round through [`ErrorCode::wire_code`]).
    pub fn from_peer(code: i64, peer: Generation, method: Option<Method>) -> ErrorCode {
        if code == -32602 && peer.is_modern() && method == Some(Method::ResourcesRead) {
            return ErrorCode::RESOURCE_NOT_FOUND;
        }
        ErrorCode::from_code(code)
    }

    /// The code to put on the wire for a client of `generation`. Resource-not-found is -32602 on
    /// 2026-07-28 and -32002 on older generations. A missing client capability has no code before 2026-07-28:
    /// legacy clients get -32602 (as the legacy spec answers an undeclared elicitation mode), with the same
    /// `data`. -32042 (URL elicitation required) is reserved on 2026-07-28 and goes out as -32603 there.
    /// Every other code goes out as it is.
    pub const fn wire_code(self, generation: Generation) -> i64 {
        match self {
            ErrorCode::ResourceNotFound => generation.resource_not_found_code(),
            ErrorCode::MissingRequiredClientCapability if !generation.is_modern() => -32602,
            // Reserved on 2026-07-28, where a URL elicitation is an `input_required` result instead.
            ErrorCode::UrlElicitationRequiredError if generation.is_modern() => -32603,
            other => other.code(),
        }
    }

    /// Errors that are about the request itself rather than the handler's work: even on `tools/call` they
    /// stay JSON-RPC errors instead of becoming tool errors (a client must see that it has to declare a
    /// capability, not a model-readable failure).
    pub const fn is_request_precondition(self) -> bool {
        matches!(self, ErrorCode::MissingRequiredClientCapability)
    }

    /// Codes the 2026-07-28 HTTP transport answers with status 400 wherever they arise.
    pub const fn is_modern_http_400(self) -> bool {
        matches!(
            self,
            ErrorCode::HeaderMismatch
                | ErrorCode::MissingRequiredClientCapability
                | ErrorCode::UnsupportedProtocolVersion
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

/// A JSON-RPC error: code, message and optional data. Generation-neutral until it is shaped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct Error {
    code: ErrorCode,
    message: Cow<'static, str>,
    data: Option<Value>,
}

impl Error {
    /// An error with a code and a readable message.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Error {
        Error {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` attached.
    pub fn with_data(mut self, data: Value) -> Error {
        self.data = Some(data);
        self
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The data, if any.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// Splits the error into its parts.
    pub fn into_parts(self) -> (ErrorCode, Cow<'static, str>, Option<Value>) {
        (self.code, self.message, self.data)
    }

    /// Resource not found for `uri`, with `data.uri` as the spec shows it.
    pub fn resource_not_found(uri: &str) -> Error {
        Error::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("resource not found: {uri}"),
        )
        .with_data(serde_json::json!({ "uri": uri }))
    }

    /// `UnsupportedProtocolVersion` with `data.supported` (newest first) and `data.requested`.
    pub fn unsupported_version(supported: &[&str], requested: &str) -> Error {
        Error::new(
            ErrorCode::UnsupportedProtocolVersion,
            format!("unsupported protocol version {requested:?}"),
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// `MissingRequiredClientCapability` for `capability` (a `ClientCapabilities` field), with
    /// `data.requiredCapabilities` naming it as the spec shows it.
    pub fn missing_client_capability(
        capability: &str,
        message: impl Into<Cow<'static, str>>,
    ) -> Error {
        Error::new(ErrorCode::MissingRequiredClientCapability, message)
            .with_data(serde_json::json!({ "requiredCapabilities": { capability: {} } }))
    }

    /// `HeaderMismatch` with a readable reason.
    pub fn header_mismatch(reason: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorCode::HeaderMismatch, reason)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        use serde_json::error::Category;
        let code = match e.classify() {
            Category::Syntax | Category::Eof => ErrorCode::ParseError,
            Category::Data => ErrorCode::InvalidParams,
            Category::Io => ErrorCode::InternalError,
        };
        let what = match code {
            ErrorCode::ParseError => "parse error",
            ErrorCode::InvalidParams => "invalid params",
            _ => "internal error",
        };
        Error::new(code, format!("{what}: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(ErrorCode::InternalError, format!("internal error: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Generation::*;

    #[test]
    #[allow(deprecated)]
    fn codes_round_trip_and_unknown_codes_are_kept() {
        let named = [
            (ErrorCode::ParseError, -32700),
            (ErrorCode::InvalidRequest, -32600),
            (ErrorCode::MethodNotFound, -32601),
            (ErrorCode::InvalidParams, -32602),
            (ErrorCode::InternalError, -32603),
            (ErrorCode::UrlElicitationRequiredError, -32042),
            (ErrorCode::HeaderMismatch, -32020),
            (ErrorCode::MissingRequiredClientCapability, -32021),
            (ErrorCode::UnsupportedProtocolVersion, -32022),
            (ErrorCode::ResourceNotFound, -32002),
        ];
        for (code, n) in named {
            assert_eq!(code.code(), n);
            assert_eq!(ErrorCode::from_code(n), code);
        }
        for raw in [-32000, -32001, -1, 0, 42, i64::MIN, i64::MAX] {
            assert_eq!(ErrorCode::from_code(raw), ErrorCode::Other(raw));
            assert_eq!(ErrorCode::from_code(raw).wire_code(V2026_07_28), raw);
        }
    }

    #[test]
    fn resource_not_found_follows_the_generation() {
        // (code, generation, wire code)
        let table = [
            (ErrorCode::RESOURCE_NOT_FOUND, V2024_11_05, -32002),
            (ErrorCode::RESOURCE_NOT_FOUND, V2025_03_26, -32002),
            (ErrorCode::RESOURCE_NOT_FOUND, V2025_06_18, -32002),
            (ErrorCode::RESOURCE_NOT_FOUND, V2025_11_25, -32002),
            (ErrorCode::RESOURCE_NOT_FOUND, V2026_07_28, -32602),
            (ErrorCode::InvalidParams, V2024_11_05, -32602),
            (
                ErrorCode::MissingRequiredClientCapability,
                V2025_11_25,
                -32602,
            ),
            (
                ErrorCode::MissingRequiredClientCapability,
                V2026_07_28,
                -32021,
            ),
            (ErrorCode::InvalidParams, V2026_07_28, -32602),
        ];
        for (code, g, wire) in table {
            assert_eq!(code.wire_code(g), wire, "{code:?} on {g}");
        }
    }

    #[test]
    fn peer_codes_are_recognised_by_generation_and_method() {
        // a modern backend's -32602 on resources/read is resource-not-found: a legacy client gets -32002
        let c = ErrorCode::from_peer(-32602, V2026_07_28, Some(Method::ResourcesRead));
        assert_eq!(c, ErrorCode::RESOURCE_NOT_FOUND);
        assert_eq!(c.wire_code(V2025_06_18), -32002);
        // a legacy backend's -32002 becomes -32602 for a modern client
        let c = ErrorCode::from_peer(-32002, V2025_03_26, Some(Method::ResourcesRead));
        assert_eq!(c.wire_code(V2026_07_28), -32602);
        // -32602 elsewhere stays invalid params
        let c = ErrorCode::from_peer(-32602, V2026_07_28, Some(Method::ToolsCall));
        assert_eq!(c, ErrorCode::InvalidParams);
        let c = ErrorCode::from_peer(-32602, V2025_11_25, Some(Method::ResourcesRead));
        assert_eq!(c, ErrorCode::InvalidParams);
    }

    #[test]
    fn conversions_let_question_mark_work() {
        fn parse(s: &str) -> Result<Value, Error> {
            Ok(serde_json::from_str(s)?)
        }
        assert_eq!(parse("{").unwrap_err().code(), ErrorCode::ParseError);
        let data_err: Error = serde_json::from_str::<u8>("300").unwrap_err().into();
        assert_eq!(data_err.code(), ErrorCode::InvalidParams);
        let io: Error = std::io::Error::other("disk on fire").into();
        assert_eq!(io.code(), ErrorCode::InternalError);
        assert!(io.message().contains("disk on fire"));
    }

    #[test]
    fn builders() {
        let e = Error::new(ErrorCode::InvalidParams, "bad").with_data(serde_json::json!({"x": 1}));
        assert_eq!(e.message(), "bad");
        assert_eq!(e.data(), Some(&serde_json::json!({"x": 1})));
        let u = Error::unsupported_version(&["2026-07-28"], "1999-01-01");
        assert_eq!(u.code(), ErrorCode::UnsupportedProtocolVersion);
        assert_eq!(u.data().unwrap()["requested"], "1999-01-01");
        assert_eq!(
            Error::resource_not_found("file:///x").data().unwrap()["uri"],
            "file:///x"
        );
    }
}
