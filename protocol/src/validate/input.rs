//! What validation is given: the deployment [`Config`], the [`Catalog`] facts, the legacy [`Session`] and the [`HttpRequest`].

use serde_json::Value;

use super::{Headers, HttpMethod};
use crate::generation::{Generation, GenerationSet};
use crate::headers::ParamHeader;

/// Which code an unregistered tool name gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownToolCode {
    /// `MethodNotFound` (-32601): the founding document's default.
    #[default]
    MethodNotFound,
    /// `InvalidParams` (-32602): what the MCP spec suggests.
    InvalidParams,
}

/// Validation settings of a deployment.
#[derive(Debug, Clone)]
pub struct Config {
    /// The generations served.
    pub served: GenerationSet,
    /// The code for an unregistered tool name.
    pub unknown_tool: UnknownToolCode,
    /// The largest body accepted (413 above).
    pub max_body_bytes: usize,
    /// The most entries a JSON-RPC batch may hold (-32600 naming the limit above).
    pub max_batch: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            served: GenerationSet::ALL,
            unknown_tool: UnknownToolCode::default(),
            max_body_bytes: 4 * 1024 * 1024,
            max_batch: 100,
        }
    }
}

/// Where the catalog routes a tool, resource or prompt, in the catalog's own terms (an index into its
/// snapshot): opaque to validation, which hands it on in the [`Target`](super::Target) so that nothing
/// after validation looks the name up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RouteKey(pub u32);

/// What routing knows of a tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolRoute<'a> {
    /// Where the catalog routes it.
    pub key: RouteKey,
    /// The tool's `x-mcp-header` annotations, as the gateway advertises them.
    pub header_params: &'a [ParamHeader],
    /// Client capabilities the tool needs (a capabilities object), if any.
    pub required_capabilities: Option<&'a Value>,
}

/// The catalog facts validation needs: which tools, resources and prompts exist. Implemented over the
/// gateway's catalog snapshot.
pub trait Catalog {
    /// The tool by its exposed name, or `None` when no backend owns it.
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>>;
    /// Where a resource URI is routed (a listed resource or a template), or `None` when no backend
    /// serves it.
    fn resource(&self, uri: &str) -> Option<RouteKey>;
    /// Where a prompt is routed, or `None` when no backend serves it.
    fn prompt(&self, name: &str) -> Option<RouteKey>;
}

/// What a legacy session established at `initialize`, as the caller's session store holds it.
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    /// The negotiated generation.
    pub generation: Generation,
    /// The client's declared capabilities (a capabilities object).
    pub client_capabilities: &'a Value,
}

/// An HTTP request in parts.
#[derive(Clone, Copy)]
pub struct HttpRequest<'a> {
    /// The method.
    pub method: HttpMethod,
    /// The headers.
    pub headers: &'a dyn Headers,
    /// The body bytes.
    pub body: &'a [u8],
}

impl std::fmt::Debug for HttpRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("body_len", &self.body.len())
            .finish()
    }
}
