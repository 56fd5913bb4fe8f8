//! Typed payloads: the `params` of requests and notifications and the `result`s the gateway handles.
//!
//! Conventions, the same in every file here:
//! - one struct per schema type, named as the spec names it (`CallToolRequestParams`, `ListToolsResult`);
//! - fields are the union over all five generations, optional wherever any generation leaves them out;
//! - `_meta` is `meta: Option<Meta>`; every struct ends with `#[serde(flatten)] extra: Map<String, Value>`, so
//!   fields this crate does not know are preserved on the way through (a newer peer's fields are not dropped);
//! - JSON that a payload passes on without looking inside (tool arguments, schemas) stays a `Value`.

pub mod capabilities;
pub mod completion;
pub mod content;
pub mod input;
pub mod lifecycle;
pub mod notifications;
pub mod prompts;
pub mod resource_contents;
pub mod resources;
pub mod tools;

pub use capabilities::*;
pub use completion::*;
pub use content::*;
pub use input::*;
pub use lifecycle::*;
pub use notifications::*;
pub use prompts::*;
pub use resource_contents::*;
pub use resources::*;
pub use tools::*;

/// A `_meta` object.
pub type Meta = serde_json::Map<String, serde_json::Value>;
/// Unknown fields kept on the way through.
pub type Extra = serde_json::Map<String, serde_json::Value>;
