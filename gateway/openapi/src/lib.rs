//! OpenAPI services as MCP tools, the pure half: an OpenAPI 3.0 or 3.1 document (JSON or YAML) becomes one
//! MCP tool per operation ([`Document::tools`]), a tool call becomes the description of one HTTP request
//! ([`Operation::request`]), and the HTTP answer becomes a `CallToolResult` ([`Operation::result`]).
//!
//! It must not do I/O: no file, no socket, no clock, no async runtime. Whoever uses it fetches the document,
//! sends the [`HttpRequest`] (with its own TLS, authentication, deadline and size bounds) and hands the answer
//! back. Local `$ref`s are inlined with cycles refused and the size bounded; nothing external is ever
//! followed. An operation that cannot be translated is left out and reported ([`Translation::refused`]), it
//! never fails the whole document.
//!
//! Files: `document` (parsing, the version check, the walk over the operations), `yaml` (YAML read into JSON
//! within a budget that bounds what aliases expand to), `operation` (an operation as
//! a tool; `operation::parameter`: where each argument goes), `schema` (schemas made self-contained JSON
//! Schema), `refs` (local references), `request` (a call as an HTTP request), `result` (an HTTP answer as a
//! tool result).

mod document;
#[cfg(test)]
mod fixtures;
mod operation;
mod refs;
mod request;
mod result;
mod schema;
mod yaml;

pub use document::{Document, Refused, Translation};
pub use operation::Operation;
pub use request::HttpRequest;
pub use schema::MAX_DOCUMENT_VALUES;
pub use yaml::MAX_ALIAS_NODES;

/// Why a document cannot be used at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenApiError {
    #[error("the document is not valid JSON: {0}")]
    Json(String),
    #[error("the document is not valid YAML: {0}")]
    Yaml(String),
    #[error(
        "the YAML document expands to more than {0} values once its aliases are copied (one per byte of its text plus {MAX_ALIAS_NODES}): refused"
    )]
    YamlTooLarge(usize),
    #[error(
        "the document's operations inline more than {MAX_DOCUMENT_VALUES} schema values in all once references are followed: refused"
    )]
    TooManyInlined,
    #[error("the document is not an object")]
    NotAnObject,
    #[error(
        "swagger {0} documents are not supported: only OpenAPI 3.0.x and 3.1.x (convert it to OpenAPI 3 first)"
    )]
    Swagger(String),
    #[error("not an OpenAPI document: it has no `openapi` version")]
    NoVersion,
    #[error("openapi version {0} is not supported: only 3.0.x and 3.1.x")]
    Version(String),
    #[error("`info.{0}` is missing or not a string")]
    Info(&'static str),
    #[error("`paths` is not an object")]
    Paths,
    #[error("path `{path}`: {why}")]
    PathItem { path: String, why: String },
}

/// Why a tool call cannot become an HTTP request (a missing or mistyped argument): a tool error for the
/// caller, never a protocol error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallError(String);

impl CallError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// The message, lower-case, naming the argument.
    pub fn message(&self) -> &str {
        &self.0
    }
}
