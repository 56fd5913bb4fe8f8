//! Test support: validates JSON against a definition of the official schema of a generation
//! (`../shared/spec/schema/<version>/schema.json`, or `$MCPGW_SCHEMA_DIR/<version>/schema.json`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::generation::Generation;
use crate::method::Method;

fn schema_dir() -> PathBuf {
    match std::env::var_os("MCPGW_SCHEMA_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec/schema"),
    }
}

type Cache = Mutex<HashMap<(Generation, String), Arc<jsonschema::Validator>>>;

fn validator(g: Generation, def: &str) -> Arc<jsonschema::Validator> {
    static ROOTS: OnceLock<Mutex<HashMap<Generation, Value>>> = OnceLock::new();
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().expect("cache lock").get(&(g, def.to_owned())) {
        return v.clone();
    }
    let root = {
        let mut roots = ROOTS
            .get_or_init(Default::default)
            .lock()
            .expect("roots lock");
        roots
            .entry(g)
            .or_insert_with(|| {
                let path = schema_dir().join(g.as_str()).join("schema.json");
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
                serde_json::from_str(&text).expect("schema is JSON")
            })
            .clone()
    };
    let defs_key = if root.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    assert!(
        root[defs_key].get(def).is_some(),
        "{g} schema has no definition {def}"
    );
    let mut schema = root;
    schema["$ref"] = Value::String(format!("#/{defs_key}/{def}"));
    let v =
        Arc::new(jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{g} {def}: {e}")));
    cache
        .lock()
        .expect("cache lock")
        .insert((g, def.to_owned()), v.clone());
    v
}

/// Validates `instance` against definition `def` of generation `g`'s schema.
pub(crate) fn check(g: Generation, def: &str, instance: &Value) -> Result<(), String> {
    let v = validator(g, def);
    let errors: Vec<String> = v
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{g} {def}: {}", errors.join("; ")))
    }
}

/// The definition a method's result must match on `g`.
pub(crate) fn result_def(g: Generation, method: Method, result: &Value) -> Option<&'static str> {
    if g.is_modern() && result["resultType"] == "input_required" {
        return Some("InputRequiredResult");
    }
    Some(match method {
        Method::Initialize => "InitializeResult",
        Method::Ping => "EmptyResult",
        Method::ServerDiscover => "DiscoverResult",
        Method::ToolsList => "ListToolsResult",
        Method::ToolsCall => "CallToolResult",
        Method::ResourcesList => "ListResourcesResult",
        Method::ResourcesTemplatesList => "ListResourceTemplatesResult",
        Method::ResourcesRead => "ReadResourceResult",
        Method::PromptsList => "ListPromptsResult",
        Method::PromptsGet => "GetPromptResult",
        Method::CompletionComplete => "CompleteResult",
        Method::SubscriptionsListen => "SubscriptionsListenResult",
        _ => return None,
    })
}

/// Validates a whole response message the gateway emits to a client of `g`: the envelope, the result
/// against the method's result type, and on 2026-07-28 errors against their specific error type.
pub(crate) fn check_response(
    g: Generation,
    method: Option<Method>,
    message: &Value,
) -> Result<(), String> {
    let modern_envelopes = g >= Generation::V2025_11_25;
    if let Some(result) = message.get("result") {
        check(
            g,
            if modern_envelopes {
                "JSONRPCResultResponse"
            } else {
                "JSONRPCResponse"
            },
            message,
        )?;
        if let Some(def) = method.and_then(|m| result_def(g, m, result)) {
            check(g, def, result)?;
        }
        return Ok(());
    }
    let error_def = if modern_envelopes {
        "JSONRPCErrorResponse"
    } else {
        "JSONRPCError"
    };
    if message.get("id") == Some(&Value::Null) && !modern_envelopes {
        // JSON-RPC 2.0 requires `"id": null` when the id is unreadable; these schemas cannot express it.
        let mut with_id = message.clone();
        with_id["id"] = Value::from(0);
        return check(g, error_def, &with_id);
    }
    check(g, error_def, message)?;
    if g.is_modern() {
        let specific = match message["error"]["code"].as_i64() {
            Some(-32700) => Some("ParseError"),
            Some(-32600) => Some("InvalidRequestError"),
            Some(-32601) => Some("MethodNotFoundError"),
            Some(-32602) => Some("InvalidParamsError"),
            Some(-32603) => Some("InternalError"),
            Some(-32020) => Some("HeaderMismatchError"),
            Some(-32021) => Some("MissingRequiredClientCapabilityError"),
            Some(-32022) => Some("UnsupportedProtocolVersionError"),
            _ => None,
        };
        if let Some(def) = specific {
            // Some specific error types describe the bare error object, others the whole response.
            let defs_whole = check(g, def, message);
            let bare = check(g, def, &message["error"]);
            if defs_whole.is_err() && bare.is_err() {
                return defs_whole;
            }
        }
    }
    Ok(())
}
