//! Results rewritten for the client's generation: `write_result` and its helpers.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Failure, Stamp};
use crate::generation::Generation;
use crate::id::RequestId;
use crate::meta::SERVER_INFO;
use crate::method::Method;
use crate::raw::RawObject;

/// Top-level keys that only 2026-07-28 results carry.
const MODERN_ONLY_KEYS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

pub(super) fn write_result(
    id: &RequestId,
    result: &RawValue,
    method: Method,
    g: Generation,
    stamp: &Stamp,
) -> Result<Vec<u8>, Failure> {
    let obj: RawObject<'_> = serde_json::from_str(result.get()).map_err(|_| Failure::Internal {
        reason: format!("the {method} result is not a JSON object"),
    })?;
    let result_type = obj
        .get("resultType")
        .and_then(|r| serde_json::from_str::<&str>(r.get()).ok());
    let input_required = result_type == Some("input_required");
    if input_required && !g.is_modern() {
        return Err(Failure::Internal {
            reason: format!(
                "the server asked for client input, which cannot be relayed to a {g} client here"
            ),
        });
    }
    let mut out = Vec::with_capacity(result.get().len() + 160);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.raw().as_bytes());
    out.extend_from_slice(b",\"result\":{");
    let mut first = true;
    let mut field = |out: &mut Vec<u8>, key: &str, value: &[u8]| {
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut *out, key).expect("writing to a Vec cannot fail");
        out.push(b':');
        out.extend_from_slice(value);
    };
    let cacheable = g.has_cache_fields() && method.is_cacheable() && !input_required;
    let legacy_tool = !g.is_modern() && method == Method::ToolsCall;
    let mut saw_meta = false;
    let mut saw_ttl = false;
    let mut saw_scope = false;
    // A legacy client whose generation cannot carry the structured content still gets it, as text, when the
    // result has no other content.
    let structured_as_text = if legacy_tool {
        obj.get("structuredContent")
            .filter(|v| !(g.has_structured_output() && v.get().starts_with('{')))
            .filter(|_| obj.get("content").is_none_or(|c| c.get().trim() == "[]"))
            .map(|v| serde_json::json!([{ "type": "text", "text": v.get() }]).to_string())
    } else {
        None
    };
    for (key, value) in obj.iter() {
        match key {
            k if !g.is_modern() && MODERN_ONLY_KEYS.contains(&k) => {}
            "resultType" => {
                if result_type.is_some() {
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            "ttlMs" if !cacheable => {}
            "cacheScope" if !cacheable => {}
            "ttlMs" => {
                if serde_json::from_str::<u64>(value.get()).is_ok() {
                    saw_ttl = true;
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            "cacheScope" => {
                if matches!(value.get(), "\"public\"" | "\"private\"") {
                    saw_scope = true;
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            "_meta" => {
                saw_meta = true;
                if let Some(meta) = meta_for(value, g, stamp) {
                    field(&mut out, key, &meta);
                }
            }
            "content" if legacy_tool => match &structured_as_text {
                Some(text) => field(&mut out, key, text.as_bytes()),
                None => field(&mut out, key, &content_for(value, g)),
            },
            "structuredContent" if legacy_tool => {
                if g.has_structured_output() && value.get().starts_with('{') {
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            _ => field(&mut out, key, value.get().as_bytes()),
        }
    }
    if method == Method::ToolsCall && !input_required && obj.get("content").is_none() {
        // `content` is required on every generation: repair a result that left it out, keeping any
        // structured content readable as text, as the spec recommends.
        let text = structured_as_text.or_else(|| {
            obj.get("structuredContent")
                .map(|v| serde_json::json!([{ "type": "text", "text": v.get() }]).to_string())
        });
        field(
            &mut out,
            "content",
            text.as_deref().unwrap_or("[]").as_bytes(),
        );
    }
    if g.has_result_type() {
        if result_type.is_none() {
            field(&mut out, "resultType", b"\"complete\"");
        }
        if !saw_meta {
            let mut meta = Vec::with_capacity(stamp.server_info.get().len() + 48);
            meta.extend_from_slice(b"{\"");
            meta.extend_from_slice(SERVER_INFO.as_bytes());
            meta.extend_from_slice(b"\":");
            meta.extend_from_slice(stamp.server_info.get().as_bytes());
            meta.push(b'}');
            field(&mut out, "_meta", &meta);
        }
    }
    if cacheable {
        if !saw_ttl {
            field(&mut out, "ttlMs", stamp.cache.ttl_ms.to_string().as_bytes());
        }
        if !saw_scope {
            field(
                &mut out,
                "cacheScope",
                stamp.cache.scope.as_json().as_bytes(),
            );
        }
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// The result `_meta` for the client: the gateway's serverInfo on 2026-07-28, none of it before. `None`
/// when nothing is left to send.
fn meta_for(meta: &RawValue, g: Generation, stamp: &Stamp) -> Option<Vec<u8>> {
    let obj: RawObject<'_> = serde_json::from_str(meta.get()).ok()?;
    let mut out = Vec::with_capacity(meta.get().len() + 64);
    out.push(b'{');
    let mut first = true;
    for (k, v) in obj.iter().filter(|(k, _)| *k != SERVER_INFO) {
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, k).expect("writing to a Vec cannot fail");
        out.push(b':');
        out.extend_from_slice(v.get().as_bytes());
    }
    if g.is_modern() {
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, SERVER_INFO).expect("writing to a Vec cannot fail");
        out.push(b':');
        out.extend_from_slice(stamp.server_info.get().as_bytes());
    }
    out.push(b'}');
    (!first).then_some(out)
}

#[derive(Deserialize)]
struct BlockKind<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a str>,
}

/// Tool-result content for a legacy client: blocks its generation lacks become text blocks saying what they were.
fn content_for(content: &RawValue, g: Generation) -> Vec<u8> {
    let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(content.get()) else {
        return content.get().as_bytes().to_vec();
    };
    let mut out = Vec::with_capacity(content.get().len());
    out.push(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let kind = serde_json::from_str::<BlockKind<'_>>(block.get())
            .ok()
            .and_then(|b| b.kind);
        let allowed = match kind {
            Some("text" | "image" | "resource") => true,
            Some("audio") => g.has_audio_content(),
            Some("resource_link") => g.has_structured_output(),
            _ => false,
        };
        if allowed {
            out.extend_from_slice(block.get().as_bytes());
        } else {
            let text = match serde_json::from_str::<Value>(block.get()) {
                Ok(Value::Object(b)) if kind == Some("resource_link") => format!(
                    "[resource link: {}]",
                    b.get("uri").and_then(Value::as_str).unwrap_or("?")
                ),
                _ => format!(
                    "[{} content not supported by {g}]",
                    kind.unwrap_or("unknown")
                ),
            };
            let block = serde_json::json!({ "type": "text", "text": text });
            serde_json::to_writer(&mut out, &block).expect("writing to a Vec cannot fail");
        }
    }
    out.push(b']');
    out
}
