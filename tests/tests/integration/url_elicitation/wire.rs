//! What mcpgw sends a client about URL elicitation, read off the wire and validated against the official
//! schema of the generation the client speaks (`../shared/spec/schema/`): the -32042 kept for a 2025-11-25
//! session, the `elicitation/create` it relays or makes, the `notifications/elicitation/complete` it sends,
//! and the `input_required` result a 2026-07-28 client gets.

use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Setup, setup, token_of};
use crate::support::{JSON_HEADERS, client, into_reply, modern_call_as, post_raw, sse_messages};

const WAIT: Duration = Duration::from_secs(30);

/// Validates `instance` against the definition `def` of `version`'s official schema.
fn conforms(version: &str, def: &str, instance: &Value) {
    let dir = std::env::var_os("MCPGW_SCHEMA_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec/schema"),
        PathBuf::from,
    );
    let path = dir.join(version).join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut schema: Value = serde_json::from_str(&text).unwrap();
    assert!(schema["$defs"].get(def).is_some(), "{version} has no {def}");
    schema["$ref"] = Value::String(format!("#/$defs/{def}"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{version} {def}: {errors:?}\n{instance}");
}

/// A 2025-11-25 session of `sub` that declared `elicitation.url`.
struct Session<'a> {
    url: &'a str,
    id: String,
    bearer: String,
}

impl<'a> Session<'a> {
    fn open(s: &'a Setup, sub: &str) -> Session<'a> {
        let bearer = format!("Bearer {}", token_of(sub));
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}, "url": {}}},
            "clientInfo": {"name": "wire", "version": "1"}}});
        let mut headers = JSON_HEADERS.to_vec();
        headers.push(("Authorization", bearer.as_str()));
        let reply = post_raw(&s.gw.url, &headers, init.to_string());
        assert_eq!(reply.status, 200, "{reply:?}");
        let id = reply.header("mcp-session-id").unwrap();
        let session = Session {
            url: &s.gw.url,
            id,
            bearer,
        };
        let done = session.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(done.status().as_u16(), 202);
        session
    }

    fn post(&self, body: &Value) -> reqwest::blocking::Response {
        let mut req = client().post(self.url).body(body.to_string());
        for (k, v) in JSON_HEADERS {
            req = req.header(k, v);
        }
        req.header("Authorization", &self.bearer)
            .header("Mcp-Session-Id", &self.id)
            .header("MCP-Protocol-Version", "2025-11-25")
            .send()
            .unwrap()
    }

    /// A `tools/call` of `tool`, its messages as they come (a JSON answer is one message).
    fn call(&self, tool: &str) -> Receiver<Value> {
        let resp = self.post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}}));
        let sse = resp
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
        if sse {
            return sse_messages(resp);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(into_reply(resp).json()).unwrap();
        rx
    }
}

/// Opens a consent link as the user's browser would.
fn open(link: &str) {
    let status = client().get(link).send().unwrap().status().as_u16();
    assert_eq!(status, 200, "{link}");
}

#[test]
fn what_mcpgw_says_about_url_elicitation_conforms_to_each_generation_s_schema() {
    let Some(s) = setup("url-wire") else {
        return;
    };
    // A legacy backend's -32042, kept for a 2025-11-25 session.
    let session = Session::open(&s, "wire-legacy");
    let answer = session.call("lu__url_required").recv_timeout(WAIT).unwrap();
    assert_eq!(answer["error"]["code"], -32042, "{answer}");
    conforms("2025-11-25", "URLElicitationRequiredError", &answer);

    // A legacy backend's mid-call elicitation/create, relayed as it is.
    let stream = session.call("lu__url_ask");
    let asked = stream.recv_timeout(WAIT).unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    conforms("2025-11-25", "ElicitRequest", &asked);
    open(asked["params"]["url"].as_str().unwrap());
    let reply =
        session.post(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}}));
    assert_eq!(reply.status().as_u16(), 202);
    let done = stream.recv_timeout(WAIT).unwrap();
    assert_eq!(
        done["result"]["content"][0]["text"], "asked and consented as wire-legacy",
        "{done}"
    );

    // A 2026-07-28 backend's URL input request, made an elicitation/create with mcpgw's elicitationId, and
    // its completion once the backend's retry is answered.
    let session = Session::open(&s, "wire-bridged");
    let stream = session.call("mu__url_required");
    let asked = stream.recv_timeout(WAIT).unwrap();
    conforms("2025-11-25", "ElicitRequest", &asked);
    let id = asked["params"]["elicitationId"]
        .as_str()
        .unwrap()
        .to_owned();
    open(asked["params"]["url"].as_str().unwrap());
    let reply =
        session.post(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}}));
    assert_eq!(reply.status().as_u16(), 202);
    let mut rest: Vec<Value> = Vec::new();
    while let Ok(m) = stream.recv_timeout(WAIT) {
        rest.push(m);
    }
    let complete = rest
        .iter()
        .find(|m| m["method"] == "notifications/elicitation/complete")
        .unwrap_or_else(|| panic!("no completion: {rest:?}"));
    assert_eq!(complete["params"]["elicitationId"], id.as_str());
    conforms("2025-11-25", "ElicitationCompleteNotification", complete);
    let done = rest
        .iter()
        .find(|m| m["id"] == 5)
        .unwrap_or_else(|| panic!("{rest:?}"));
    assert_eq!(
        done["result"]["content"][0]["text"], "consented as wire-bridged",
        "{done}"
    );

    // A 2026-07-28 client's input_required result, for a legacy backend's -32042.
    let caps = json!({"elicitation": {"url": {}}});
    let answer = modern_call_as(
        &token_of("wire-modern"),
        &s.gw.url,
        "lu__url_required",
        caps,
        json!({"arguments": {}}),
    );
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    conforms("2026-07-28", "InputRequiredResult", &answer["result"]);
    for request in answer["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .values()
    {
        conforms("2026-07-28", "ElicitRequestURLParams", &request["params"]);
        assert!(
            request["params"].get("elicitationId").is_none(),
            "{request}"
        );
    }
    assert!(answer["result"].get("content").is_none(), "{answer}");
}
