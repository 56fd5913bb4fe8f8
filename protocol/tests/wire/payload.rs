//! Every official 2026-07-28 example of a payload type reads into its Rust type and writes back as the same
//! JSON value.
//!
//! The examples live at `/work/shared/spec/schema/2026-07-28/examples/<TypeName>/*.json`, found from this
//! crate as `../../shared/...`. Every example directory must be accounted for: in [`TABLE`], skipped by the
//! full-message suffix rule ([`is_full_message`]), or in [`NOT_MODELLED`] with a reason.

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use protocol::payload::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Reads `text` as `T` and writes it back as a JSON value.
fn rt<T: DeserializeOwned + Serialize>(text: &str) -> Value {
    let parsed: T = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("does not read as {}: {e}", std::any::type_name::<T>()));
    serde_json::to_value(&parsed).unwrap_or_else(|e| panic!("does not write back: {e}"))
}

/// A content block of a known type (not [`ContentBlock::Unknown`]) whose `type` is `kind`.
fn block(text: &str, kind: &str) -> Value {
    let b: ContentBlock =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("does not read as ContentBlock: {e}"));
    assert!(
        !matches!(b, ContentBlock::Unknown(_)),
        "read as ContentBlock::Unknown"
    );
    assert_eq!(b.kind(), kind);
    serde_json::to_value(&b).unwrap_or_else(|e| panic!("does not write back: {e}"))
}

/// Resource contents of the expected variant (`"text"` or `"blob"`).
fn contents(text: &str, kind: &str) -> Value {
    let c: ResourceContents = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("does not read as ResourceContents: {e}"));
    let got = match c {
        ResourceContents::Text(_) => "text",
        ResourceContents::Blob(_) => "blob",
        ResourceContents::Unknown(_) => "unknown",
    };
    assert_eq!(got, kind);
    serde_json::to_value(&c).unwrap_or_else(|e| panic!("does not write back: {e}"))
}

/// Elicitation params in the expected mode.
fn elicit(text: &str, url_mode: bool) -> Value {
    let p: ElicitRequestParams = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("does not read as ElicitRequestParams: {e}"));
    assert_eq!(p.is_url_mode(), url_mode, "mode");
    serde_json::to_value(&p).unwrap_or_else(|e| panic!("does not write back: {e}"))
}

/// Whether `value` reads as `T` and writes back unchanged.
fn fits<T: DeserializeOwned + Serialize>(value: &Value) -> bool {
    serde_json::from_value::<T>(value.clone())
        .is_ok_and(|t| serde_json::to_value(&t).is_ok_and(|back| back == *value))
}

/// An `inputResponses` map whose every entry round-trips as one of the three client result types.
fn input_responses(text: &str) -> Value {
    let map: InputResponses = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("does not read as InputResponses: {e}"));
    for (key, response) in &map {
        let ok = fits::<ElicitResult>(response)
            || fits::<CreateMessageResult>(response)
            || fits::<ListRootsResult>(response);
        assert!(
            ok,
            "inputResponses[{key}] is none of ElicitResult, CreateMessageResult, ListRootsResult"
        );
    }
    serde_json::to_value(&map).unwrap_or_else(|e| panic!("does not write back: {e}"))
}

/// An `inputRequests` entry (`{method, params}`) whose params read as the type its method names.
fn input_request(text: &str) -> Value {
    let r: InputRequest =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("does not read as InputRequest: {e}"));
    let params_back = match r.method.as_str() {
        "sampling/createMessage" => {
            serde_json::to_value(r.params_as::<CreateMessageRequestParams>().expect("params"))
        }
        "elicitation/create" => {
            serde_json::to_value(r.params_as::<ElicitRequestParams>().expect("params"))
        }
        "roots/list" => Ok(r.params.clone()),
        other => panic!("unexpected method {other}"),
    };
    assert_eq!(
        params_back.expect("params write back"),
        r.params,
        "params of {}",
        r.method
    );
    serde_json::to_value(&r).unwrap_or_else(|e| panic!("does not write back: {e}"))
}

/// An `InputRequiredResult` whose requests each pass [`input_request`].
fn input_required(text: &str) -> Value {
    let r: InputRequiredResult = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("does not read as InputRequiredResult: {e}"));
    assert_eq!(r.result_type, "input_required");
    for req in r.input_requests.iter().flat_map(|m| m.values()) {
        input_request(&serde_json::to_string(req).expect("request writes"));
    }
    serde_json::to_value(&r).unwrap_or_else(|e| panic!("does not write back: {e}"))
}

type Check = fn(&str) -> Value;

/// Example directory → how to round-trip one of its files.
const TABLE: &[(&str, Check)] = &[
    // content.rs
    ("TextContent", |t| block(t, "text")),
    ("ImageContent", |t| block(t, "image")),
    ("AudioContent", |t| block(t, "audio")),
    ("ResourceLink", |t| block(t, "resource_link")),
    ("EmbeddedResource", |t| block(t, "resource")),
    ("ToolUseContent", |t| block(t, "tool_use")),
    ("ToolResultContent", |t| block(t, "tool_result")),
    ("TextResourceContents", |t| contents(t, "text")),
    ("BlobResourceContents", |t| contents(t, "blob")),
    // tools.rs
    ("Tool", rt::<Tool>),
    ("PaginatedRequestParams", rt::<PaginatedRequestParams>),
    ("ListToolsResult", rt::<ListToolsResult>),
    ("CallToolRequestParams", rt::<CallToolRequestParams>),
    ("CallToolResult", rt::<CallToolResponse>),
    // resources.rs
    ("Resource", rt::<Resource>),
    ("ListResourcesResult", rt::<ListResourcesResult>),
    (
        "ListResourceTemplatesResult",
        rt::<ListResourceTemplatesResult>,
    ),
    ("ReadResourceResult", rt::<ReadResourceResult>),
    // prompts.rs
    ("GetPromptRequestParams", rt::<GetPromptRequestParams>),
    ("GetPromptResult", rt::<GetPromptResult>),
    ("ListPromptsResult", rt::<ListPromptsResult>),
    // completion.rs
    ("CompleteRequestParams", rt::<CompleteRequestParams>),
    ("CompleteResult", rt::<CompleteResult>),
    // input.rs
    ("InputRequiredResult", input_required),
    ("InputRequests", rt::<InputRequests>),
    ("InputResponses", input_responses),
    (
        "CreateMessageRequestParams",
        rt::<CreateMessageRequestParams>,
    ),
    ("CreateMessageResult", rt::<CreateMessageResult>),
    ("SamplingMessage", rt::<SamplingMessage>),
    ("ModelPreferences", rt::<ModelPreferences>),
    ("ElicitRequestFormParams", |t| elicit(t, false)),
    ("ElicitRequestURLParams", |t| elicit(t, true)),
    ("ElicitResult", rt::<ElicitResult>),
    ("ListRootsResult", rt::<ListRootsResult>),
    ("Root", rt::<Root>),
    // On 2026-07-28 these three are not JSON-RPC messages but `{method, params}` entries of `inputRequests`
    // (the schema gives them no `jsonrpc`/`id`), so they are payloads despite the `Request` suffix.
    ("CreateMessageRequest", input_request),
    ("ElicitRequest", input_request),
    ("ListRootsRequest", input_request),
    // notifications.rs
    (
        "ProgressNotificationParams",
        rt::<ProgressNotificationParams>,
    ),
    (
        "CancelledNotificationParams",
        rt::<CancelledNotificationParams>,
    ),
    (
        "LoggingMessageNotificationParams",
        rt::<LoggingMessageNotificationParams>,
    ),
    (
        "ResourceUpdatedNotificationParams",
        rt::<ResourceUpdatedNotificationParams>,
    ),
    ("SubscriptionsListenResult", rt::<SubscriptionsListenResult>),
    // capabilities.rs / lifecycle.rs
    ("ClientCapabilities", rt::<ClientCapabilities>),
    ("ServerCapabilities", rt::<ServerCapabilities>),
    ("DiscoverResult", rt::<DiscoverResult>),
    // Elicitation form field schemas: carried as plain JSON inside `ElicitRequestParams.requestedSchema`, so
    // modelled as `serde_json::Value` round trips only.
    ("BooleanSchema", rt::<Value>),
    ("NumberSchema", rt::<Value>),
    ("StringSchema", rt::<Value>),
    ("TitledMultiSelectEnumSchema", rt::<Value>),
    ("TitledSingleSelectEnumSchema", rt::<Value>),
    ("UntitledMultiSelectEnumSchema", rt::<Value>),
    ("UntitledSingleSelectEnumSchema", rt::<Value>),
];

/// Full JSON-RPC messages (and bare error objects) rather than payloads: `*Request`, `*Notification`,
/// `*ResultResponse`, `*Error`. (`*RequestParams` / `*NotificationParams` do not match: they are payloads.)
fn is_full_message(dir: &str) -> bool {
    ["Request", "Notification", "ResultResponse", "Error"]
        .iter()
        .any(|suffix| dir.ends_with(suffix))
}

/// Example directories of payload types deliberately not modelled, with the reason. None at present: every
/// payload example is in [`TABLE`].
const NOT_MODELLED: &[(&str, &str)] = &[];

/// Payloads inside full messages that have no example directory of their own: (message directory, JSON
/// pointer, check).
const EMBEDDED: &[(&str, &str, Check)] = &[
    ("CallToolRequest", "/params", rt::<CallToolRequestParams>),
    ("CallToolResultResponse", "/result", rt::<CallToolResult>),
    (
        "CancelledNotification",
        "/params",
        rt::<CancelledNotificationParams>,
    ),
    ("CompleteRequest", "/params", rt::<CompleteRequestParams>),
    ("CompleteResultResponse", "/result", rt::<CompleteResult>),
    ("DiscoverResultResponse", "/result", rt::<DiscoverResult>),
    ("GetPromptRequest", "/params", rt::<GetPromptRequestParams>),
    ("GetPromptResultResponse", "/result", rt::<GetPromptResult>),
    (
        "ListPromptsRequest",
        "/params",
        rt::<ListPromptsRequestParams>,
    ),
    (
        "ListPromptsResultResponse",
        "/result",
        rt::<ListPromptsResult>,
    ),
    (
        "ListResourceTemplatesRequest",
        "/params",
        rt::<ListResourceTemplatesRequestParams>,
    ),
    (
        "ListResourceTemplatesResultResponse",
        "/result",
        rt::<ListResourceTemplatesResult>,
    ),
    (
        "ListResourcesRequest",
        "/params",
        rt::<ListResourcesRequestParams>,
    ),
    (
        "ListResourcesResultResponse",
        "/result",
        rt::<ListResourcesResult>,
    ),
    ("ListToolsRequest", "/params", rt::<ListToolsRequestParams>),
    ("ListToolsResultResponse", "/result", rt::<ListToolsResult>),
    (
        "LoggingMessageNotification",
        "/params",
        rt::<LoggingMessageNotificationParams>,
    ),
    (
        "ProgressNotification",
        "/params",
        rt::<ProgressNotificationParams>,
    ),
    (
        "ReadResourceRequest",
        "/params",
        rt::<ReadResourceRequestParams>,
    ),
    (
        "ReadResourceResultResponse",
        "/result",
        rt::<ReadResourceResult>,
    ),
    (
        "ResourceUpdatedNotification",
        "/params",
        rt::<ResourceUpdatedNotificationParams>,
    ),
    (
        "SubscriptionsAcknowledgedNotification",
        "/params",
        rt::<SubscriptionsAcknowledgedNotificationParams>,
    ),
    (
        "SubscriptionsListenRequest",
        "/params",
        rt::<SubscriptionsListenRequestParams>,
    ),
    (
        "SubscriptionsListenResultResponse",
        "/result",
        rt::<SubscriptionsListenResult>,
    ),
];

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec/schema/2026-07-28/examples")
}

/// The `.json` files of one example directory, sorted; panics if the directory is missing or has none.
fn example_files(dir: &str) -> Vec<PathBuf> {
    let path = examples_dir().join(dir);
    let entries = fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("example directory {} is missing: {e}", path.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| {
            e.unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
                .path()
        })
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "example directory {} has no .json files",
        path.display()
    );
    files
}

fn read_json(file: &Path) -> (String, Value) {
    let text =
        fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", file.display()));
    (text, value)
}

/// Runs `check` on `text`, returning a failure message (panic payload or mismatch) instead of panicking.
fn run(check: Check, text: &str, want: &Value) -> Result<(), String> {
    match panic::catch_unwind(AssertUnwindSafe(|| check(text))) {
        Ok(got) if got == *want => Ok(()),
        Ok(got) => Err(format!(
            "round trip changed the value:\n  want {want}\n  got  {got}"
        )),
        Err(payload) => Err(payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "panicked".to_owned())),
    }
}

#[test]
fn every_payload_example_round_trips() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (dir, check) in TABLE {
        for file in example_files(dir) {
            let (text, want) = read_json(&file);
            checked += 1;
            if let Err(why) = run(*check, &text, &want) {
                failures.push(format!(
                    "{dir}/{}: {why}",
                    file.file_name().unwrap_or_default().to_string_lossy()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} examples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{checked} example files round-tripped");
}

#[test]
fn payloads_inside_full_messages_round_trip() {
    let mut failures = Vec::new();
    for (dir, pointer, check) in EMBEDDED {
        assert!(
            is_full_message(dir),
            "{dir} is not a full-message directory"
        );
        for file in example_files(dir) {
            let (_, message) = read_json(&file);
            let name = format!(
                "{dir}/{}#{pointer}",
                file.file_name().unwrap_or_default().to_string_lossy()
            );
            let Some(want) = message.pointer(pointer) else {
                failures.push(format!("{name}: no such member"));
                continue;
            };
            if let Err(why) = run(*check, &want.to_string(), want) {
                failures.push(format!("{name}: {why}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} embedded payloads failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_example_directory_is_accounted_for() {
    let root = examples_dir();
    let mut dirs: Vec<String> = fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("examples directory {} is missing: {e}", root.display()))
        .map(|e| e.unwrap_or_else(|e| panic!("reading {}: {e}", root.display())))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "no example directories under {}",
        root.display()
    );

    let in_table = |d: &str| TABLE.iter().any(|(t, _)| *t == d);
    let not_modelled = |d: &str| NOT_MODELLED.iter().any(|(t, _)| *t == d);
    let unaccounted: Vec<&String> = dirs
        .iter()
        .filter(|d| !in_table(d) && !is_full_message(d) && !not_modelled(d))
        .collect();
    assert!(
        unaccounted.is_empty(),
        "example directories neither tested, skipped as full messages, nor listed as not modelled: {unaccounted:?}"
    );

    // The table names each directory once, and every name in the lists exists.
    for (i, (dir, _)) in TABLE.iter().enumerate() {
        assert!(
            !TABLE[..i].iter().any(|(d, _)| d == dir),
            "{dir} is in TABLE twice"
        );
        assert!(
            dirs.iter().any(|d| d == dir),
            "{dir} is in TABLE but has no example directory"
        );
    }
    for (dir, reason) in NOT_MODELLED {
        assert!(!reason.is_empty(), "{dir} needs a reason");
        assert!(
            !in_table(dir),
            "{dir} is both tested and listed as not modelled"
        );
    }
    let skipped: Vec<&String> = dirs
        .iter()
        .filter(|d| is_full_message(d) && !in_table(d))
        .collect();
    println!(
        "{} directories tested, {} skipped as full messages: {skipped:?}",
        TABLE.len(),
        skipped.len()
    );
}
