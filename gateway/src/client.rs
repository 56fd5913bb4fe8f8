//! `mcpgw tools` and `mcpgw call`: the gateway's own MCP client for a person at a terminal, so that a first
//! tool answer needs no hand-written JSON-RPC. It reaches any MCP server (mcpgw or another) the way mcpgw
//! reaches its backends — the `handlers` crate, either era, found by the era probe or pinned — lists the
//! server's tools or calls one, and renders the answer as text. It never prints a credential; the token it
//! sends comes from a file, never from the command line.

use std::sync::Arc;
use std::time::Duration;

use handlers::{
    BackendConfig, BackendHandle, BackendRequest, Credential, ServerDescription, Transport,
};
use protocol::method::Method;
use protocol::shape::Failure;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::config::BackendEra;
use crate::notify::listing::list_tools;

/// Where the client goes and how.
#[derive(Debug, Clone)]
pub struct Target {
    /// The MCP endpoint (`http://127.0.0.1:7800/mcp`).
    pub url: String,
    /// The generation spoken: probed (`auto`) or pinned.
    pub era: BackendEra,
    /// `Authorization: Bearer …` with this token (read from a file by the binary), if any.
    pub bearer: Option<String>,
    /// The deadline of the handshake and of each request.
    pub timeout: Duration,
}

/// Why the client got no answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached or refused the handshake.
    #[error("cannot reach {url}: {reason} (is `mcpgw serve` running there?)")]
    Unreachable {
        /// The URL, as shown (no userinfo or query).
        url: String,
        /// Why.
        reason: String,
    },
    /// The server does not offer tools.
    #[error("{url} offers no tools (its capabilities have no `tools`)")]
    NoTools {
        /// The URL, as shown.
        url: String,
    },
    /// The arguments given are not a JSON object.
    #[error("the arguments must be a JSON object, as in '{{\"text\": \"hi\"}}': {0}")]
    Arguments(String),
    /// The request failed: a JSON-RPC error, a timeout, a broken connection.
    #[error("{0}")]
    Failed(String),
}

/// The tools `target` lists, every page of them, as it sent them (its other lists are not asked for).
pub fn tools(target: &Target) -> Result<Vec<Value>, ClientError> {
    actix_rt::System::new().block_on(async {
        let (handle, url, description) = connect(target).await?;
        let listed = if description.capabilities.tools.is_some() {
            list_tools(&handle).await.map_err(ClientError::Failed)
        } else {
            Err(ClientError::NoTools { url })
        };
        handle.shutdown();
        listed
    })
}

/// Calls tool `name` of `target` with `arguments` (a JSON object, as text) and returns its result.
pub fn call(target: &Target, name: &str, arguments: &str) -> Result<Value, ClientError> {
    let arguments = parse_arguments(arguments)?;
    actix_rt::System::new().block_on(async {
        let (handle, ..) = connect(target).await?;
        let params = serde_json::json!({"name": name, "arguments": arguments});
        let params = serde_json::value::to_raw_value(&params)
            .map_err(|e| ClientError::Failed(e.to_string()))?;
        let mut request = BackendRequest::new(Method::ToolsCall, Some(params));
        request.name = Some(name.to_owned());
        request.timeout = Some(target.timeout);
        let answer = handle.call(request).await;
        handle.shutdown();
        let raw = answer.map_err(|f| ClientError::Failed(failure_text(&f)))?;
        serde_json::from_str(raw.get()).map_err(|e| ClientError::Failed(e.to_string()))
    })
}

/// The arguments of `mcpgw call`: a JSON object; empty text is no arguments.
fn parse_arguments(text: &str) -> Result<Map<String, Value>, ClientError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ClientError::Arguments(format!("got {}", kind_of(&other)))),
        Err(e) => Err(ClientError::Arguments(e.to_string())),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Starts the connection and waits for its handshake: the handle, the URL as shown in messages, and what
/// the server said of itself.
async fn connect(
    target: &Target,
) -> Result<(BackendHandle, String, Arc<ServerDescription>), ClientError> {
    let url = handlers::shown_url_text(&target.url);
    let mut config = BackendConfig::new(url.clone(), Transport::http(target.url.clone()));
    config.era = target.era.into();
    config.request_timeout = target.timeout;
    config.connect_timeout = target.timeout;
    config.client_info.name = "mcpgw-cli".to_owned();
    if let Some(token) = &target.bearer {
        config.credential = Credential::fixed("authorization", &format!("Bearer {token}"))
            .map_err(|why| ClientError::Failed(format!("the token cannot be sent: {why}")))?;
    }
    // Nobody reads the events of a one-shot connection: the receiver is dropped, and the backend's
    // `try_send` of each event fails at once.
    let (events, _) = mpsc::channel(1);
    let handle = BackendHandle::start(config, events);
    match handle
        .wait_settled(target.timeout + Duration::from_secs(1))
        .await
    {
        Some(description) => Ok((handle, url, description)),
        None => {
            let reason = handle
                .down_reason()
                .unwrap_or_else(|| format!("no answer within {} ms", target.timeout.as_millis()));
            handle.shutdown();
            Err(ClientError::Unreachable { url, reason })
        }
    }
}

/// A failure as a person reads it: the server's own JSON-RPC error with its code, else what went wrong.
fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Backend { error, .. } => {
            format!("error {}: {}", error.code().code(), error.message())
        }
        other => other.to_string(),
    }
}

/// `mcpgw tools`: one paragraph a tool — its name, the first line of its description, its arguments
/// (name, type, required or not) from its input schema.
pub fn render_tools(tools: &[Value]) -> String {
    let mut out = String::new();
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or("?");
        out.push_str(name);
        if let Some(description) = tool["description"].as_str().and_then(|d| d.lines().next()) {
            out.push_str("  ");
            out.push_str(&shortened(description.trim()));
        }
        out.push('\n');
        let schema = &tool["inputSchema"];
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(properties) = schema["properties"].as_object().filter(|p| !p.is_empty()) {
            let args: Vec<String> = properties
                .iter()
                .map(|(arg, s)| {
                    let kind = s["type"].as_str().unwrap_or("any");
                    let needed = if required.contains(&arg.as_str()) {
                        ", required"
                    } else {
                        ""
                    };
                    format!("{arg} ({kind}{needed})")
                })
                .collect();
            out.push_str("    arguments: ");
            out.push_str(&args.join(", "));
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "{} tool{}\n",
        tools.len(),
        if tools.len() == 1 { "" } else { "s" }
    ));
    out
}

/// The longest description `mcpgw tools` shows on a tool's line, in characters (`--json` has them whole).
const DESCRIPTION_CHARS: usize = 90;

/// `text` cut to [`DESCRIPTION_CHARS`] at a word boundary, with `…` when cut.
fn shortened(text: &str) -> String {
    if text.chars().count() <= DESCRIPTION_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(DESCRIPTION_CHARS).collect();
    let at = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end_matches([' ', ',', ';', ':', '.']))
}

/// `mcpgw call`: the result's content as text (a text item as it is; other items named by kind), else its
/// structured content; and whether it is a tool error (`isError`).
pub fn render_result(result: &Value) -> (String, bool) {
    let mut parts: Vec<String> = Vec::new();
    for item in result["content"].as_array().into_iter().flatten() {
        parts.push(match item["type"].as_str() {
            Some("text") => item["text"].as_str().unwrap_or_default().to_owned(),
            Some(kind @ ("image" | "audio")) => format!(
                "[{kind} {}, {} bytes of base64]",
                item["mimeType"].as_str().unwrap_or("?"),
                item["data"].as_str().map_or(0, str::len)
            ),
            Some("resource_link") => {
                format!("[resource link {}]", item["uri"].as_str().unwrap_or("?"))
            }
            Some("resource") => format!(
                "[resource {}]",
                item["resource"]["uri"].as_str().unwrap_or("?")
            ),
            _ => item.to_string(),
        });
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let is_error = result["isError"].as_bool().unwrap_or(false);
    (parts.join("\n"), is_error)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tools_are_rendered_with_their_arguments() {
        let tools = [
            json!({"name": "demo__add", "description": "Adds two numbers.\nMore.",
                   "inputSchema": {"type": "object", "properties": {"a": {"type": "number"},
                   "b": {"type": "number"}, "note": {}}, "required": ["a", "b"]}}),
            json!({"name": "bare", "inputSchema": {"type": "object"}}),
        ];
        assert_eq!(
            render_tools(&tools),
            "demo__add  Adds two numbers.\n    arguments: a (number, required), b (number, required), \
             note (any)\nbare\n2 tools\n"
        );
        assert_eq!(render_tools(&[]), "0 tools\n");
        let long = json!({"name": "t", "description": "word ".repeat(40)});
        let line = render_tools(&[long]);
        let first = line.lines().next().unwrap();
        assert!(
            first.ends_with("word…") && first.chars().count() <= 3 + DESCRIPTION_CHARS + 1,
            "{first}"
        );
    }

    #[test]
    fn results_are_rendered_by_content_kind() {
        // (result, text, is a tool error)
        let table = [
            (
                json!({"content": [{"type": "text", "text": "42"}]}),
                "42",
                false,
            ),
            (
                json!({"content": [{"type": "text", "text": "no"}], "isError": true}),
                "no",
                true,
            ),
            (
                json!({"content": [{"type": "image", "mimeType": "image/png", "data": "AAAA"}]}),
                "[image image/png, 4 bytes of base64]",
                false,
            ),
            (
                json!({"content": [{"type": "resource_link", "uri": "mock://x", "name": "x"}]}),
                "[resource link mock://x]",
                false,
            ),
            (
                json!({"content": [], "structuredContent": {"sum": 42}}),
                "{\n  \"sum\": 42\n}",
                false,
            ),
        ];
        for (result, text, is_error) in table {
            assert_eq!(
                render_result(&result),
                (text.to_owned(), is_error),
                "{result}"
            );
        }
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert!(parse_arguments("").unwrap().is_empty());
        assert_eq!(parse_arguments(r#"{"a": 1}"#).unwrap()["a"], 1);
        for (text, says) in [("[1]", "got an array"), ("{", "EOF"), ("7", "got a number")] {
            let e = parse_arguments(text).unwrap_err().to_string();
            assert!(e.starts_with("the arguments must be a JSON object"), "{e}");
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
