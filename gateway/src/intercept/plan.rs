//! The pure part of interception (SEP-2624): an interceptor's descriptor as `interceptors/list` gives it,
//! which of them a request's event and phase select and in what order, what an `interceptor/invoke`
//! answer means (pass, refuse, replace the payload), and the invocation's params. No I/O.

use serde_json::{Map, Value, json};

use crate::config::InterceptorMode;

/// The side of a governed operation an interceptor sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The client's request, before the dispatch.
    Request,
    /// The backend's result, before the client has it.
    Response,
}

impl Phase {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Request => "request",
            Phase::Response => "response",
        }
    }
}

/// What an interceptor does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Answers valid or not.
    Validation,
    /// Answers a replacement payload.
    Mutation,
}

/// One interceptor as its server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    /// Its name, unique on its server.
    pub name: String,
    /// Validation or mutation.
    pub kind: Kind,
    /// Each hook: the events and the phase.
    pub hooks: Vec<(Vec<String>, Phase)>,
    /// Its author's mode (`active`/`enforce` or `audit`).
    pub mode: Option<InterceptorMode>,
    /// Its author's failure policy.
    pub fail_open: Option<bool>,
    /// Its priority for each phase (lower first; mutations only).
    pub priority: [i64; 2],
}

impl Descriptor {
    /// One entry of an `interceptors/list` result; `None` for what cannot be selected (an unknown type or
    /// mode, no name: the extension's fail-safe skip). Unknown fields are ignored.
    pub fn parse(entry: &Value) -> Option<Descriptor> {
        let name = entry.get("name")?.as_str()?.to_owned();
        let kind = match entry.get("type")?.as_str()? {
            "validation" => Kind::Validation,
            "mutation" => Kind::Mutation,
            _ => return None,
        };
        let mode = match entry.get("mode").map(Value::as_str) {
            None => None,
            Some(Some("active" | "enforce")) => Some(InterceptorMode::Enforce),
            Some(Some("audit")) => Some(InterceptorMode::Audit),
            Some(_) => return None,
        };
        let mut hooks = Vec::new();
        for hook in entry.get("hooks")?.as_array()? {
            let phase = match hook.get("phase").and_then(Value::as_str) {
                Some("request") => Phase::Request,
                Some("response") => Phase::Response,
                _ => continue,
            };
            let events = hook
                .get("events")
                .and_then(Value::as_array)
                .map(|e| e.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            hooks.push((events, phase));
        }
        let priority = match entry.get("priorityHint") {
            Some(Value::Number(n)) => {
                let p = n.as_i64().unwrap_or(0);
                [p, p]
            }
            Some(Value::Object(o)) => [
                o.get("request").and_then(Value::as_i64).unwrap_or(0),
                o.get("response").and_then(Value::as_i64).unwrap_or(0),
            ],
            _ => [0, 0],
        };
        Some(Descriptor {
            name,
            kind,
            hooks,
            mode,
            fail_open: entry.get("failOpen").and_then(Value::as_bool),
            priority,
        })
    }

    /// Whether a hook names `event` (or `*`, or a `namespace/*` covering it) in `phase`.
    pub fn hooks(&self, event: &str, phase: Phase) -> bool {
        self.hooks.iter().any(|(events, p)| {
            *p == phase
                && events.iter().any(|e| {
                    e == "*"
                        || e == event
                        || e.strip_suffix("/*")
                            .is_some_and(|ns| event.strip_prefix(ns).is_some_and(|r| r.starts_with('/')))
                })
        })
    }
}

/// An interceptor chosen for one request's phase, with the policy it runs under.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Its server's index among the `[[interceptor]]` tables.
    pub host: usize,
    /// Its name.
    pub name: String,
    /// Validation or mutation.
    pub kind: Kind,
    /// The mode in effect: the gateway's override, else its author's, else enforce.
    pub mode: InterceptorMode,
    /// The failure policy in effect: the gateway's override, else its author's, else closed.
    pub fail_open: bool,
    /// Its priority in this phase.
    pub priority: i64,
}

/// The interceptors a phase runs: the validators (in any order: they all see one snapshot) and the
/// mutators in their order (priority, then name, then the configured order of their servers).
pub fn order(mut chosen: Vec<Chosen>) -> (Vec<Chosen>, Vec<Chosen>) {
    let (validators, mut mutators): (Vec<Chosen>, Vec<Chosen>) =
        chosen.drain(..).partition(|c| c.kind == Kind::Validation);
    mutators.sort_by(|a, b| {
        a.priority
            .cmp(&b.priority)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.host.cmp(&b.host))
    });
    (validators, mutators)
}

/// What one invocation came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A validator's verdict: whether it refuses (`valid: false` with severity `error`, or none, or one
    /// not known), and its messages (for the log only: they never reach the client).
    Verdict { refuses: bool, messages: Vec<String> },
    /// A mutator's answer: the replacement payload when it changed it.
    Rewrite(Option<Value>),
    /// No usable answer: unreachable, timed out, an error, or a malformed result.
    Failed(String),
}

/// Reads an `interceptor/invoke` result for `chosen` in `phase`. A result that does not echo its
/// interceptor, type and phase, or lacks what its type must say, is malformed: a failure.
pub fn answer(chosen: &Chosen, phase: Phase, result: &Value) -> Answer {
    let echoes = result.get("interceptor").and_then(Value::as_str) == Some(chosen.name.as_str())
        && result.get("phase").and_then(Value::as_str) == Some(phase.as_str());
    let kind = result.get("type").and_then(Value::as_str);
    match chosen.kind {
        Kind::Validation => {
            let Some(valid) = result.get("valid").and_then(Value::as_bool) else {
                return Answer::Failed("the validation result has no valid".into());
            };
            if !echoes || kind != Some("validation") {
                return Answer::Failed("the result does not echo its interceptor, type and phase".into());
            }
            let severity = result.get("severity").and_then(Value::as_str);
            let refuses = !valid && !matches!(severity, Some("warn" | "info"));
            let messages = result
                .get("messages")
                .and_then(Value::as_array)
                .map(|m| {
                    m.iter()
                        .filter_map(|x| x.get("message").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            Answer::Verdict { refuses, messages }
        }
        Kind::Mutation => {
            if !echoes || kind != Some("mutation") {
                return Answer::Failed("the result does not echo its interceptor, type and phase".into());
            }
            match (result.get("modified").and_then(Value::as_bool), result.get("payload")) {
                (Some(true), Some(payload)) => Answer::Rewrite(Some(payload.clone())),
                (Some(false), _) => Answer::Rewrite(None),
                _ => Answer::Failed("the mutation result has no modified and payload".into()),
            }
        }
    }
}

/// Whether an answer, under its interceptor's policy, refuses the operation: an enforcing validator's
/// refusal, or a failure of an enforcing interceptor that fails closed. Audit never refuses.
pub fn refuses(chosen: &Chosen, answer: &Answer) -> bool {
    if chosen.mode == InterceptorMode::Audit {
        return false;
    }
    match answer {
        Answer::Verdict { refuses, .. } => *refuses,
        Answer::Rewrite(_) => false,
        Answer::Failed(_) => !chosen.fail_open,
    }
}

/// The request phase's payload: the governed request's method and params (the names as the client sent
/// them), without `_meta`.
pub fn request_payload(method: &str, params: Option<&Value>) -> Value {
    let mut params = params.cloned().unwrap_or_else(|| json!({}));
    if let Some(p) = params.as_object_mut() {
        p.remove("_meta");
    }
    json!({"method": method, "params": params})
}

/// The params of `interceptor/invoke`.
pub fn invoke_params(
    chosen: &Chosen,
    event: &str,
    phase: Phase,
    payload: &Value,
    timeout_ms: u64,
    principal: Option<&str>,
    now: std::time::SystemTime,
) -> Value {
    let mut context = Map::new();
    context.insert(
        "principal".into(),
        match principal {
            Some(id) => json!({"type": "user", "id": id}),
            None => json!({"type": "anonymous"}),
        },
    );
    context.insert("timestamp".into(), Value::String(rfc3339(now)));
    json!({
        "name": chosen.name,
        "event": event,
        "phase": phase.as_str(),
        "payload": payload,
        "timeoutMs": timeout_ms,
        "context": context,
    })
}

/// `2026-12-07T15:04:05Z` (UTC, whole seconds).
pub fn rfc3339(at: std::time::SystemTime) -> String {
    let secs = at
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let rest = secs % 86_400;
    let (year, month, day) = crate::telemetry::civil(secs / 86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests;
