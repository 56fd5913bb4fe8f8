//! The routing checks both eras share, run once the request itself is well-formed: the tool, resource or
//! prompt must exist, `Mcp-Param-*` headers must mirror the arguments (2026-07-28), and the client must have
//! declared the capabilities the tool needs.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Ctx, Rejection, Target, UnknownToolCode};
use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::headers::{argument_at, decode_value, header_matches};
use crate::message::Request;
use crate::method::Method;
use crate::payload::missing_capabilities;

/// Checks what the request names and returns it as a routing target.
pub(super) fn target(
    ctx: &Ctx<'_>,
    g: Generation,
    request: &Request,
    method: Method,
    name: Option<String>,
    uri: Option<String>,
    declared: &Value,
) -> Result<Option<Target>, Rejection> {
    let reject = |status: u16, err: Error| {
        Err(Rejection::new(status, Some(request.id.clone()), err).for_generation(g))
    };
    let malformed = if g.is_modern() { 400 } else { 200 };
    match method {
        Method::ToolsCall => {
            let Some(name) = name else {
                return reject(
                    malformed,
                    invalid("invalid params: tools/call needs a string \"name\""),
                );
            };
            let Some(route) = ctx.catalog.tool(&name) else {
                let code = match ctx.config.unknown_tool {
                    UnknownToolCode::MethodNotFound => ErrorCode::MethodNotFound,
                    UnknownToolCode::InvalidParams => ErrorCode::InvalidParams,
                };
                return reject(
                    200,
                    Error::new(code, format!("unknown tool: {name}"))
                        .with_data(json!({ "name": name })),
                );
            };
            if g.has_routing_headers() && !ctx.stdio {
                if let Err(e) = check_param_headers(ctx, request, route.header_params) {
                    return reject(400, e);
                }
            }
            if let Some(required) = route.required_capabilities {
                if let Some(missing) = missing_capabilities(required, declared) {
                    return reject(malformed, missing_capability(&name, missing));
                }
            }
            let route = route.key;
            Ok(Some(Target::Tool { name, route }))
        }
        Method::ResourcesRead | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            let Some(uri) = uri else {
                return reject(
                    malformed,
                    invalid(format!("invalid params: {method} needs a string \"uri\"")),
                );
            };
            let Some(route) = ctx.catalog.resource(&uri) else {
                return reject(200, Error::resource_not_found(&uri));
            };
            Ok(Some(Target::Resource { uri, route }))
        }
        Method::PromptsGet => {
            let Some(name) = name else {
                return reject(
                    malformed,
                    invalid("invalid params: prompts/get needs a string \"name\""),
                );
            };
            let Some(route) = ctx.catalog.prompt(&name) else {
                return reject(
                    200,
                    invalid(format!("unknown prompt: {name}")).with_data(json!({ "name": name })),
                );
            };
            Ok(Some(Target::Prompt { name, route }))
        }
        _ => Ok(None),
    }
}

fn invalid(msg: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorCode::InvalidParams, msg)
}

/// `MissingRequiredClientCapability`: -32021 on 2026-07-28; `wire_code` gives legacy generations, which have no
/// such code, -32602 with the same data (as the legacy spec answers an undeclared elicitation mode).
fn missing_capability(tool: &str, missing: Value) -> Error {
    Error::new(
        ErrorCode::MissingRequiredClientCapability,
        format!("tool {tool} needs client capabilities the client did not declare"),
    )
    .with_data(json!({ "requiredCapabilities": missing }))
}

#[derive(Deserialize)]
struct ArgumentsView {
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

/// Every annotated argument present in the body has its header with the same value; every header of an
/// annotation has its argument. Headers no annotation names are ignored (intermediaries forward them).
fn check_param_headers(
    ctx: &Ctx<'_>,
    request: &Request,
    annotations: &[crate::headers::ParamHeader],
) -> Result<(), Error> {
    if annotations.is_empty() {
        return Ok(());
    }
    let args: Option<Map<String, Value>> = match request.params.as_deref() {
        Some(p) => {
            serde_json::from_str::<ArgumentsView>(p.get())
                .map_err(|e| invalid(format!("invalid params: {e}")))?
                .arguments
        }
        None => None,
    };
    for ann in annotations {
        let body = argument_at(args.as_ref(), &ann.path);
        let mut headers = ctx
            .headers
            .params
            .iter()
            .filter(|(suffix, _)| suffix.eq_ignore_ascii_case(&ann.header));
        let header = headers.next();
        if headers.next().is_some() {
            return Err(Error::header_mismatch(format!(
                "header mismatch: Mcp-Param-{} is given twice",
                ann.header
            )));
        }
        match (header, body) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(Error::header_mismatch(format!(
                    "header mismatch: Mcp-Param-{} is sent but argument {} is absent",
                    ann.header,
                    ann.path.join(".")
                )));
            }
            (None, Some(_)) => {
                return Err(Error::header_mismatch(format!(
                    "header mismatch: argument {} is present but header Mcp-Param-{} is missing",
                    ann.path.join("."),
                    ann.header
                )));
            }
            (Some((_, raw)), Some(value)) => {
                let decoded = decode_value(raw).map_err(|e| {
                    Error::header_mismatch(format!(
                        "header mismatch: Mcp-Param-{}: {e}",
                        ann.header
                    ))
                })?;
                if !header_matches(ann.kind, &decoded, value) {
                    return Err(Error::header_mismatch(format!(
                        "header mismatch: Mcp-Param-{} does not match argument {}",
                        ann.header,
                        ann.path.join(".")
                    )));
                }
            }
        }
    }
    Ok(())
}
