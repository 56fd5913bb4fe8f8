//! The mock's tools: the fixed ones (`echo`, `add`, `sleep`, `sleeping`, `fail`, `jsonrpc_error`, `big`,
//! `regional`, `asks`) and the synthetic `tool_0..tool_{N-1}`; their definitions as each generation lists them, and what each
//! does when called. Latency and error injection happen in the dispatcher, before a tool runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use protocol::headers::{ParamHeader, param_headers};
use protocol::payload::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, Tool, ToolAnnotations,
};
use protocol::{Error, ErrorCode, Generation};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::pagination;

/// The longest `sleep` honoured.
pub(crate) const MAX_SLEEP_MS: u64 = 60_000;
/// What `big` returns when `--payload-bytes` is 0 and no `bytes` argument is given.
const BIG_DEFAULT_BYTES: usize = 64 * 1024;
/// The most `big` returns, whatever it is asked.
const BIG_MAX_BYTES: usize = 16 * 1024 * 1024;

/// What a tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Echo,
    Add,
    Sleep,
    Sleeping,
    Fail,
    JsonRpcError,
    Big,
    Regional,
    /// Asks the client (`asking`): run by the dispatcher (2026-07-28) or the HTTP transport (legacy).
    Asks,
    Synthetic,
}

/// One tool: its definition, its `x-mcp-header` annotations and what it does.
#[derive(Debug)]
pub(crate) struct Entry {
    tool: Tool,
    headers: Vec<ParamHeader>,
    kind: Kind,
}

impl Entry {
    /// The tool's `x-mcp-header` annotations (what validation checks `Mcp-Param-*` against).
    pub(crate) fn headers(&self) -> &[ParamHeader] {
        &self.headers
    }

    /// Whether this is the `asks` tool, which asks the client questions (`asking`).
    pub(crate) fn asks(&self) -> bool {
        self.kind == Kind::Asks
    }
}

/// Every tool of the mock, in listing order.
#[derive(Debug)]
pub(crate) struct ToolSet {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
    payload_bytes: usize,
    /// The result of every synthetic tool when `--payload-bytes` > 0, serialized once.
    synthetic: Option<Box<RawValue>>,
    /// `sleep` calls running now: what tests read (through the `sleeping` tool) to see that a cancelled
    /// call's work really stopped.
    sleeping: Arc<AtomicUsize>,
}

/// Counts a running `sleep` while it lives (a cancelled call is dropped, and so is this).
struct Asleep(Arc<AtomicUsize>);

impl Asleep {
    fn new(count: &Arc<AtomicUsize>) -> Asleep {
        count.fetch_add(1, Ordering::SeqCst);
        Asleep(Arc::clone(count))
    }
}

impl Drop for Asleep {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn tool(name: &str, title: &str, description: &str, input_schema: Value) -> Tool {
    Tool {
        name: name.to_owned(),
        title: Some(title.to_owned()),
        description: Some(description.to_owned()),
        input_schema,
        output_schema: None,
        annotations: None,
        execution: None,
        icons: None,
        meta: None,
        extra: Map::new(),
    }
}

fn read_only() -> Option<ToolAnnotations> {
    Some(ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    })
}

fn fixed_tools() -> Vec<(Tool, Kind)> {
    let mut add = tool(
        "add",
        "Add",
        "Adds two integers; the sum is also structured content.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
    );
    add.output_schema = Some(
        json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}),
    );
    add.annotations = read_only();
    let mut echo = tool(
        "echo",
        "Echo",
        "Returns the text it is given.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    );
    echo.annotations = read_only();
    vec![
        (echo, Kind::Echo),
        (add, Kind::Add),
        (
            tool(
                "sleep",
                "Sleep",
                "Sleeps for ms milliseconds (at most 60000), then answers.",
                json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}, "required": ["ms"]}),
            ),
            Kind::Sleep,
        ),
        (
            tool(
                "sleeping",
                "Sleeping",
                "How many sleep calls are running now (cancelled ones stop at once).",
                json!({"type": "object"}),
            ),
            Kind::Sleeping,
        ),
        (
            tool(
                "fail",
                "Fail",
                "Always fails: answers an isError result with the message.",
                json!({"type": "object", "properties": {"message": {"type": "string"}}}),
            ),
            Kind::Fail,
        ),
        (
            tool(
                "jsonrpc_error",
                "JSON-RPC error",
                "Answers a JSON-RPC error with the given code, message and data.",
                json!({"type": "object", "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}}, "required": ["code"]}),
            ),
            Kind::JsonRpcError,
        ),
        (
            tool(
                "big",
                "Big",
                "Returns a long text: bytes characters, else --payload-bytes, else 65536.",
                json!({"type": "object", "properties": {"bytes": {"type": "integer", "minimum": 0}}}),
            ),
            Kind::Big,
        ),
        (
            tool(
                "regional",
                "Regional",
                "Echoes region and text; region is mirrored in the Mcp-Param-Region header.",
                json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "text": {"type": "string"}
                }, "required": ["region"]}),
            ),
            Kind::Regional,
        ),
        (
            tool(
                "asks",
                "Asks",
                "Asks the client one elicitation and one sampling question (those it declared) and returns \
                 the answers. 2026-07-28: input_required, then the retry's answers, on any transport; legacy \
                 sessions: on the call's SSE stream, over HTTP (--listen) only, else a tool error.",
                json!({"type": "object"}),
            ),
            Kind::Asks,
        ),
    ]
}

impl ToolSet {
    /// The fixed tools plus `synthetic` tools `tool_0..`, each answering `payload_bytes` characters.
    pub(crate) fn new(synthetic: usize, payload_bytes: usize) -> ToolSet {
        let mut list = fixed_tools();
        list.extend((0..synthetic).map(|i| {
            let t = tool(
                &format!("tool_{i}"),
                &format!("Tool {i}"),
                "Synthetic tool: answers a text of --payload-bytes characters.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            );
            (t, Kind::Synthetic)
        }));
        let entries: Vec<Entry> = list
            .into_iter()
            .map(|(tool, kind)| Entry {
                headers: param_headers(&tool.input_schema).unwrap_or_default(),
                tool,
                kind,
            })
            .collect();
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.tool.name.clone(), i))
            .collect();
        let synthetic = (payload_bytes > 0)
            .then(|| to_raw(&CallToolResponse::text("x".repeat(payload_bytes))).ok())
            .flatten();
        ToolSet {
            entries,
            by_name,
            payload_bytes,
            synthetic,
            sleeping: Arc::default(),
        }
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    /// One page of `tools/list` as generation `g` lists tools.
    pub(crate) fn list(
        &self,
        g: Generation,
        cursor: Option<&str>,
    ) -> Result<ListToolsResult, Error> {
        let (page, next_cursor) = pagination::page("tools/list", &self.entries, cursor)?;
        Ok(ListToolsResult {
            tools: page.iter().map(|e| for_generation(&e.tool, g)).collect(),
            next_cursor,
            ..ListToolsResult::default()
        })
    }

    /// Runs a tool. Bad arguments are tool errors (`isError: true`), as the spec asks since 2025-11-25.
    pub(crate) async fn call(
        &self,
        entry: &Entry,
        params: &CallToolRequestParams,
    ) -> Result<Box<RawValue>, Error> {
        let args = params.arguments.as_ref();
        let result = match entry.kind {
            Kind::Echo => match string_arg(args, "text") {
                Some(text) => CallToolResponse::text(text),
                None => bad_args("echo needs a string argument \"text\""),
            },
            Kind::Add => match (int_arg(args, "a"), int_arg(args, "b")) {
                (Some(a), Some(b)) => match a.checked_add(b) {
                    Some(sum) => CallToolResponse::json(json!({ "sum": sum })),
                    None => CallToolResponse::error("the sum overflows a 64-bit integer"),
                },
                _ => bad_args("add needs integer arguments \"a\" and \"b\""),
            },
            Kind::Sleep => match args.and_then(|a| a.get("ms")).and_then(Value::as_u64) {
                Some(ms) => {
                    let ms = ms.min(MAX_SLEEP_MS);
                    let _asleep = Asleep::new(&self.sleeping);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    CallToolResponse::text(format!("slept {ms} ms"))
                }
                None => bad_args("sleep needs a non-negative integer argument \"ms\""),
            },
            Kind::Sleeping => {
                CallToolResponse::text(self.sleeping.load(Ordering::SeqCst).to_string())
            }
            Kind::Fail => {
                CallToolResponse::error(string_arg(args, "message").unwrap_or("failure requested"))
            }
            Kind::JsonRpcError => {
                let Some(code) = int_arg(args, "code") else {
                    return to_raw(&bad_args(
                        "jsonrpc_error needs an integer argument \"code\"",
                    ));
                };
                let message = string_arg(args, "message")
                    .unwrap_or("error requested")
                    .to_owned();
                // -32002 stays -32002 (not the generation-dependent resource-not-found), and -32042 stays
                // -32042 on 2026-07-28 too (where the gateway would write -32603): the tests ask for exact
                // codes. The others are named, so that their HTTP status follows them.
                let code = if code == -32002 || code == -32042 {
                    ErrorCode::Other(code)
                } else {
                    ErrorCode::from_code(code)
                };
                let error = Error::new(code, message);
                return Err(match args.and_then(|a| a.get("data")) {
                    Some(data) => error.with_data(data.clone()),
                    None => error,
                });
            }
            Kind::Big => {
                let requested = args
                    .and_then(|a| a.get("bytes"))
                    .and_then(Value::as_u64)
                    .map(|b| usize::try_from(b).unwrap_or(usize::MAX));
                let n = requested
                    .or((self.payload_bytes > 0).then_some(self.payload_bytes))
                    .unwrap_or(BIG_DEFAULT_BYTES)
                    .min(BIG_MAX_BYTES);
                CallToolResponse::text("x".repeat(n))
            }
            Kind::Regional => match string_arg(args, "region") {
                Some(region) => {
                    let text = string_arg(args, "text").unwrap_or_default();
                    CallToolResponse::text(format!("region={region} text={text}"))
                }
                None => bad_args("regional needs a string argument \"region\""),
            },
            Kind::Asks => CallToolResponse::error(
                "asks can ask a legacy session only over HTTP (mock-backend --listen), on the call's \
                 SSE stream; 2026-07-28 clients are asked on any transport",
            ),
            Kind::Synthetic => {
                if let Some(raw) = &self.synthetic {
                    return Ok(raw.clone());
                }
                CallToolResponse::text(string_arg(args, "text").unwrap_or("ok"))
            }
        };
        to_raw(&result)
    }
}

/// A tool definition as generation `g` knows tools: `title` and `outputSchema` since 2025-06-18,
/// `annotations` since 2025-03-26.
fn for_generation(tool: &Tool, g: Generation) -> Tool {
    let mut t = tool.clone();
    if g < Generation::V2025_06_18 {
        t.title = None;
        t.output_schema = None;
    }
    if g < Generation::V2025_03_26 {
        t.annotations = None;
    }
    t
}

fn string_arg<'a>(args: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    args?.get(key)?.as_str()
}

fn int_arg(args: Option<&Map<String, Value>>, key: &str) -> Option<i64> {
    args?.get(key)?.as_i64()
}

fn bad_args(why: &str) -> CallToolResponse {
    CallToolResponse::error(format!("invalid arguments: {why}"))
}

/// A payload as a raw JSON result.
pub(crate) fn to_raw<T: serde::Serialize>(value: &T) -> Result<Box<RawValue>, Error> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| Error::new(ErrorCode::InternalError, format!("internal error: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(name: &str, args: Value) -> CallToolRequestParams {
        serde_json::from_value(json!({"name": name, "arguments": args})).unwrap()
    }

    async fn call(set: &ToolSet, name: &str, args: Value) -> Result<Value, Error> {
        let entry = set.get(name).unwrap();
        let raw = set.call(entry, &params(name, args)).await?;
        Ok(serde_json::from_str(raw.get()).unwrap())
    }

    #[tokio::test]
    async fn each_tool_answers_as_documented() {
        let set = ToolSet::new(2, 5);
        // (tool, arguments, expected result)
        let table = [
            (
                "echo",
                json!({"text": "hi"}),
                json!({"content": [{"type": "text", "text": "hi"}]}),
            ),
            (
                "add",
                json!({"a": 2, "b": 40}),
                json!({"content": [{"type": "text", "text": "{\"sum\":42}"}], "structuredContent": {"sum": 42}}),
            ),
            (
                "sleep",
                json!({"ms": 1}),
                json!({"content": [{"type": "text", "text": "slept 1 ms"}]}),
            ),
            (
                "fail",
                json!({"message": "nope"}),
                json!({"content": [{"type": "text", "text": "nope"}], "isError": true}),
            ),
            (
                "big",
                json!({"bytes": 3}),
                json!({"content": [{"type": "text", "text": "xxx"}]}),
            ),
            (
                "big",
                json!({}),
                json!({"content": [{"type": "text", "text": "xxxxx"}]}),
            ),
            (
                "regional",
                json!({"region": "eu", "text": "t"}),
                json!({"content": [{"type": "text", "text": "region=eu text=t"}]}),
            ),
            (
                "tool_1",
                json!({}),
                json!({"content": [{"type": "text", "text": "xxxxx"}]}),
            ),
            (
                "echo",
                json!({"text": 5}),
                json!({"content": [{"type": "text", "text": "invalid arguments: echo needs a string argument \"text\""}], "isError": true}),
            ),
            (
                "add",
                json!({"a": i64::MAX, "b": 1}),
                json!({"content": [{"type": "text", "text": "the sum overflows a 64-bit integer"}], "isError": true}),
            ),
        ];
        for (name, args, want) in table {
            assert_eq!(
                call(&set, name, args.clone()).await.unwrap(),
                want,
                "{name} {args}"
            );
        }
        let plain = ToolSet::new(1, 0);
        assert_eq!(
            call(&plain, "tool_0", json!({"text": "t"})).await.unwrap(),
            json!({"content": [{"type": "text", "text": "t"}]})
        );
        let big = call(&plain, "big", json!({})).await.unwrap();
        assert_eq!(
            big["content"][0]["text"].as_str().unwrap().len(),
            BIG_DEFAULT_BYTES
        );
    }

    #[tokio::test]
    async fn jsonrpc_error_keeps_the_code() {
        let set = ToolSet::new(0, 0);
        for code in [-32603, -32602, -32002, -32001, 42] {
            let err = call(&set, "jsonrpc_error", json!({"code": code, "message": "m"}))
                .await
                .unwrap_err();
            assert_eq!(err.code().code(), code);
            assert_eq!(err.message(), "m");
            assert_eq!(err.code().wire_code(Generation::V2026_07_28), code);
        }
    }

    #[test]
    fn listing_follows_the_generation_and_the_annotations_are_valid() {
        let set = ToolSet::new(3, 0);
        let modern = set.list(Generation::V2026_07_28, None).unwrap();
        assert_eq!(modern.tools.len(), 12);
        let add = modern.tools.iter().find(|t| t.name == "add").unwrap();
        assert!(add.output_schema.is_some() && add.title.is_some() && add.annotations.is_some());
        let old = set.list(Generation::V2024_11_05, None).unwrap();
        let add = old.tools.iter().find(|t| t.name == "add").unwrap();
        assert!(add.output_schema.is_none() && add.title.is_none() && add.annotations.is_none());
        let regional = set.get("regional").unwrap();
        assert_eq!(regional.headers().len(), 1);
        assert_eq!(regional.headers()[0].header, "Region");
        assert!(set.get("echo").unwrap().headers().is_empty());
        assert!(set.get("tool_3").is_none());
    }
}
