//! `[redaction]` compiled: the built-in secret patterns and the operator's, matched against what backends
//! answer. A result is first scanned whole, as JSON text, by one `RegexSet` (the common case — nothing
//! found — costs that one linear pass); only a result that holds a match is parsed, and in `redact` mode
//! each matching string is rewritten. It must not log or keep what it matched: only the patterns' names.
//!
//! A pattern is matched against the text as JSON carries it (before and after unescaping, a secret holds
//! no quote, backslash or control character): one that must span such characters is not supported.

use std::borrow::Cow;

use protocol::{Error, ErrorCode, Notification, Request};
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::config::{RedactionConfig, RedactionMode};
use crate::metrics::Metrics;

/// The built-in secret patterns, by name (the metric's `pattern` label). Each is specific enough to be
/// rare in ordinary text: a prefix the issuer documents, a fixed shape.
pub const SECRETS: &[(&str, &str)] = &[
    (
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[A-Za-z0-9+/=\s\\n]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)?",
    ),
    ("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "aws_secret_access_key",
        r"(?i)aws_secret_access_key\s*[=:]\s*[A-Za-z0-9/+=]{40}",
    ),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    ),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20,}\b"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("stripe_key", r"\b[sr]k_live_[0-9A-Za-z]{24,}\b"),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
];

/// The metric label of the operator's own patterns (their names are not labels: any number of them).
pub const CUSTOM: &str = "custom";

/// The metric labels: each built-in secret's name, then [`CUSTOM`].
pub fn labels() -> impl Iterator<Item = &'static str> {
    SECRETS.iter().map(|(name, _)| *name).chain([CUSTOM])
}

/// How many metric labels there are.
pub const LABELS: usize = SECRETS.len() + 1;

/// One pattern, compiled.
#[derive(Debug)]
struct Pattern {
    name: String,
    /// Its metric label's index in [`labels`].
    label: usize,
    regex: Regex,
}

/// `[redaction]`, compiled once per config.
#[derive(Debug)]
pub struct Redactor {
    mode: RedactionMode,
    backends: Vec<String>,
    patterns: Vec<Pattern>,
    set: RegexSet,
}

/// What a scan found: the patterns that matched (their names and metric labels), each once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found(Vec<(String, usize)>);

impl Found {
    /// Nothing matched.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names of the patterns that matched, in order.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The metric labels' indices of the patterns that matched.
    pub fn labels(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|(_, l)| *l)
    }
}

impl Redactor {
    /// Compiles `config` (validated: its patterns compile).
    pub fn new(config: &RedactionConfig) -> Result<Redactor, String> {
        let mut patterns = Vec::new();
        if config.secrets {
            for (label, (name, re)) in SECRETS.iter().enumerate() {
                patterns.push(Pattern {
                    name: (*name).to_owned(),
                    label,
                    regex: compile(re)?,
                });
            }
        }
        for p in &config.patterns {
            patterns.push(Pattern {
                name: p.name.clone(),
                label: LABELS - 1,
                regex: compile(&p.regex)?,
            });
        }
        let set = RegexSetBuilder::new(patterns.iter().map(|p| p.regex.as_str()))
            .size_limit(crate::config::PATTERN_SIZE_LIMIT * patterns.len().max(1))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Redactor {
            mode: config.mode,
            backends: config.backends.clone(),
            patterns,
            set,
        })
    }

    /// What a match does.
    pub fn mode(&self) -> RedactionMode {
        self.mode
    }

    /// Whether answers of `backend` are scanned.
    pub fn applies_to(&self, backend: &str) -> bool {
        self.backends
            .iter()
            .any(|p| crate::glob::glob_match(p, backend))
    }

    /// The patterns `text` (a result as JSON text) holds.
    pub fn scan(&self, text: &str) -> Found {
        let matched = self.set.matches(text);
        if !matched.matched_any() {
            return Found::default();
        }
        Found(
            matched
                .iter()
                .filter_map(|i| self.patterns.get(i))
                .map(|p| (p.name.clone(), p.label))
                .collect(),
        )
    }

    /// Replaces every match in every string of `value` (keys too are left alone: they are the result's
    /// shape) by `[redacted: NAME]`; what was replaced.
    pub fn redact(&self, value: &mut Value) -> Found {
        let mut found = Found::default();
        self.walk(value, &mut found);
        found
    }

    fn walk(&self, value: &mut Value, found: &mut Found) {
        match value {
            Value::String(text) => {
                for p in &self.patterns {
                    if p.regex.is_match(text) {
                        let replaced = p
                            .regex
                            .replace_all(text, format!("[redacted: {}]", p.name).as_str())
                            .into_owned();
                        *text = replaced;
                        if !found.0.iter().any(|(n, _)| *n == p.name) {
                            found.0.push((p.name.clone(), p.label));
                        }
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v, found)),
            Value::Object(fields) => fields.values_mut().for_each(|v| self.walk(v, found)),
            _ => {}
        }
    }
}

impl Redactor {
    /// The patterns a message's `params` hold (nothing when this table does not scan `backend`).
    fn held(&self, backend: &str, params: Option<&RawValue>) -> Found {
        match params {
            Some(p) if self.applies_to(backend) => self.scan(p.get()),
            _ => Found::default(),
        }
    }

    /// A message's `params`, which hold what `found` names, judged by the mode: `Ok` with what to send —
    /// as they were (`audit`) or redacted — and what was found; `Err` with what was found when they are
    /// withheld (`refuse`, or `redact` of params that cannot be parsed).
    fn judge(
        &self,
        found: Found,
        params: Option<Box<RawValue>>,
    ) -> Result<(Found, Option<Box<RawValue>>), Found> {
        match (self.mode, params) {
            (RedactionMode::Audit, params) => Ok((found, params)),
            (RedactionMode::Refuse, _) | (RedactionMode::Redact, None) => Err(found),
            (RedactionMode::Redact, Some(raw)) => {
                let Ok(mut value) = serde_json::from_str::<Value>(raw.get()) else {
                    return Err(found);
                };
                let redacted = self.redact(&mut value);
                match serde_json::value::to_raw_value(&value) {
                    Ok(raw) => Ok((redacted, Some(raw))),
                    Err(_) => Err(redacted),
                }
            }
        }
    }

    /// What `backend` sent beside its answers — a log message, a call's progress — scanned as its answers
    /// are: `redact` rewrites its strings, `audit` passes it on, and `refuse` withholds it (`None`: a
    /// notification has no place for a refusal, so it is not sent; the call's answer is judged on its own).
    /// Copied only when it holds a match. A match is counted and logged as for an answer; `principal` is
    /// whom it was for (`-`: many).
    pub fn notification<'n>(
        &self,
        metrics: &Metrics,
        backend: &str,
        principal: &str,
        n: &'n Notification,
    ) -> Option<Cow<'n, Notification>> {
        let found = self.held(backend, n.params.as_deref());
        if found.is_empty() {
            return Some(Cow::Borrowed(n));
        }
        let judged = self.judge(found, n.params.clone());
        let (found, params) = match judged {
            Ok((found, params)) => (found, Some(params)),
            Err(found) => (found, None),
        };
        self.record(metrics, &found, backend, &n.method, principal, Seen::Notification);
        params.map(|params| {
            Cow::Owned(Notification {
                method: n.method.clone(),
                params,
            })
        })
    }

    /// A request `backend` sends the client while it serves the client's call (sampling, elicitation,
    /// roots), judged as its answers are: `redact` rewrites its params, `audit` asks it as it is, `refuse`
    /// withholds it — `Err` with the error the backend is answered instead (the client is not asked; the
    /// call's answer is judged on its own).
    pub fn question(
        &self,
        metrics: &Metrics,
        backend: &str,
        principal: &str,
        request: Request,
    ) -> Result<Request, Error> {
        let found = self.held(backend, request.params.as_deref());
        if found.is_empty() {
            return Ok(request);
        }
        let Request { id, method, params } = request;
        let judged = self.judge(found, params);
        let found = match &judged {
            Ok((found, _)) | Err(found) => found,
        };
        self.record(metrics, found, backend, &method, principal, Seen::Question);
        match judged {
            Ok((_, params)) => Ok(Request { id, method, params }),
            Err(found) => Err(Error::new(
                ErrorCode::InvalidParams,
                format!(
                    "invalid params: mcpgw withheld this {method} from the client: it held {}",
                    found.names().join(", ")
                ),
            )),
        }
    }

    /// One of the `inputRequests` of a 2026-07-28 backend's `input_required` that a legacy client is asked
    /// as a request of its own, judged likewise: its `params` redacted in place, or `Err` with the names of
    /// what it held when it is withheld (`refuse`: the call is refused, since its backend waits for every
    /// answer).
    pub fn asked(
        &self,
        metrics: &Metrics,
        backend: &str,
        principal: &str,
        method: &str,
        params: Option<&mut Value>,
    ) -> Result<(), String> {
        let Some(params) = params.filter(|_| self.applies_to(backend)) else {
            return Ok(());
        };
        let found = self.scan(&params.to_string());
        if found.is_empty() {
            return Ok(());
        }
        let found = match self.mode {
            RedactionMode::Redact => self.redact(params),
            RedactionMode::Refuse | RedactionMode::Audit => found,
        };
        self.record(metrics, &found, backend, method, principal, Seen::Question);
        match self.mode {
            RedactionMode::Refuse => Err(found.names().join(", ")),
            RedactionMode::Redact | RedactionMode::Audit => Ok(()),
        }
    }

    /// Counts a match in `mcpgw_redactions_total` and logs it (the patterns' names, never what matched).
    pub fn record(
        &self,
        metrics: &Metrics,
        found: &Found,
        backend: &str,
        method: &str,
        principal: &str,
        seen: Seen,
    ) {
        let mode = match self.mode {
            RedactionMode::Redact => 0,
            RedactionMode::Refuse => 1,
            RedactionMode::Audit => 2,
        };
        for label in found.labels() {
            metrics.redacted(label, mode);
        }
        let patterns = found.names().join(",");
        let mode = self.mode.as_str();
        match seen {
            Seen::Answer => tracing::warn!(%backend, %method, %patterns, mode, principal,
                "a backend's answer held a secret or pattern"),
            Seen::Notification => tracing::warn!(%backend, %method, %patterns, mode, principal,
                "a backend's notification held a secret or pattern"),
            Seen::Question => tracing::warn!(%backend, %method, %patterns, mode, principal,
                "a backend's request to the client held a secret or pattern"),
        }
    }
}

/// Where a match was found.
#[derive(Debug, Clone, Copy)]
pub enum Seen {
    /// In the answer to a request.
    Answer,
    /// In a notification (a log message, a call's progress).
    Notification,
    /// In a request to the client (sampling, elicitation, roots).
    Question,
}

fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(crate::config::PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PatternEntry;
    use protocol::RequestId;
    use serde_json::json;

    fn redactor(mode: RedactionMode, patterns: &[(&str, &str)]) -> Redactor {
        Redactor::new(&RedactionConfig {
            mode,
            secrets: true,
            backends: vec!["*".into()],
            patterns: patterns
                .iter()
                .map(|(n, r)| PatternEntry {
                    name: (*n).into(),
                    regex: (*r).into(),
                })
                .collect(),
        })
        .expect("compiles")
    }

    #[test]
    fn each_built_in_secret_is_found_and_ordinary_text_is_not() {
        let r = redactor(RedactionMode::Redact, &[("employee", r"EMP-[0-9]{6}")]);
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----";
        let cases: &[(&str, Option<&str>)] = &[
            (key, Some("private_key")),
            ("-----BEGIN OPENSSH PRIVATE KEY-----", Some("private_key")),
            ("id AKIAIOSFODNN7EXAMPLE here", Some("aws_access_key_id")),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                Some("aws_secret_access_key"),
            ),
            ("ghp_0123456789abcdefghijABCDEFGHIJ012345", Some("github_token")),
            ("github_pat_11ABCDEFG0123456789_abcdefghij", Some("github_token")),
            ("glpat-abcdefghij0123456789", Some("gitlab_token")),
            ("xoxb-123456789012-abcdefghij", Some("slack_token")),
            ("AIzaSyA-1234567890abcdefghijklmnopqrstu", Some("google_api_key")),
            ("sk_live_0123456789abcdefghijklmn", Some("stripe_key")),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                Some("jwt"),
            ),
            ("staff EMP-123456 joined", Some("employee")),
            ("the weather is fine; ghp is a word; AKIA123", None),
            ("sk_test_0123456789abcdefghijklmn", None),
        ];
        for (text, expected) in cases {
            let raw = serde_json::to_string(&json!({"content": [{"type": "text", "text": text}]}))
                .expect("JSON");
            let found = r.scan(&raw);
            assert_eq!(found.names().first().copied(), *expected, "scan of {text:?}");
            let mut value: Value = serde_json::from_str(&raw).expect("JSON");
            let redacted = r.redact(&mut value);
            assert_eq!(redacted.names().first().copied(), *expected, "redact of {text:?}");
            if let Some(name) = expected {
                let out = value["content"][0]["text"].as_str().unwrap_or_default();
                assert!(out.contains(&format!("[redacted: {name}]")), "{out}");
                assert!(r.scan(&value.to_string()).is_empty(), "nothing left: {out}");
            }
        }
    }

    #[test]
    fn a_backends_questions_are_redacted_withheld_or_passed_as_its_answers_are() {
        let metrics = Metrics::new(["m"], false, Default::default());
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let said = format!("Summarize: {token}");
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": said}}]});
        let text = |p: &Value| p["messages"][0]["content"]["text"].as_str().unwrap_or_default().to_owned();
        // (mode, what the client is asked, or the names the refusal gives)
        let table: &[(RedactionMode, Result<&str, &str>)] = &[
            (RedactionMode::Redact, Ok("Summarize: [redacted: github_token]")),
            (RedactionMode::Refuse, Err("github_token")),
            (RedactionMode::Audit, Ok(&said)),
        ];
        for (mode, expected) in table {
            let r = redactor(*mode, &[]);
            // A legacy backend's own request, relayed.
            let request = Request::new(RequestId::number(1), "sampling/createMessage", Some(&params));
            match (r.question(&metrics, "m", "alice", request), expected) {
                (Ok(asked), Ok(want)) => {
                    let p: Value = serde_json::from_str(asked.params.as_ref().expect("params").get())
                        .expect("JSON");
                    assert_eq!(text(&p), *want, "{mode:?}");
                    assert_eq!(asked.id, RequestId::number(1));
                }
                (Err(e), Err(names)) => {
                    assert_eq!(e.code(), ErrorCode::InvalidParams);
                    assert!(e.message().ends_with(names), "{}", e.message());
                    assert!(!e.message().contains(token), "{}", e.message());
                }
                (got, want) => panic!("{mode:?}: {got:?}, expected {want:?}"),
            }
            // One of a 2026-07-28 backend's inputRequests, asked of a legacy client.
            let mut value = params.clone();
            match (r.asked(&metrics, "m", "alice", "sampling/createMessage", Some(&mut value)), expected) {
                (Ok(()), Ok(want)) => assert_eq!(text(&value), *want, "{mode:?}"),
                (Err(held), Err(names)) => assert_eq!(held, *names),
                (got, want) => panic!("{mode:?}: {got:?}, expected {want:?}"),
            }
            // Clean questions, and questions of a backend the table does not name, pass as they were.
            let clean = json!({"message": "What is your name?"});
            let request = Request::new(RequestId::number(2), "elicitation/create", Some(&clean));
            let asked = r.question(&metrics, "m", "alice", request).expect("asked");
            assert_eq!(asked.params.expect("params").get(), clean.to_string());
            let scoped = Redactor::new(&RedactionConfig {
                mode: *mode,
                secrets: true,
                backends: vec!["crm-*".into()],
                patterns: Vec::new(),
            })
            .expect("compiles");
            let request = Request::new(RequestId::number(3), "sampling/createMessage", Some(&params));
            let asked = scoped.question(&metrics, "m", "alice", request).expect("asked");
            assert_eq!(asked.params.expect("params").get(), params.to_string());
            let mut value = params.clone();
            let judged = scoped.asked(&metrics, "m", "-", "sampling/createMessage", Some(&mut value));
            assert_eq!(judged, Ok(()));
            assert_eq!(value, params);
        }
    }

    #[test]
    fn backends_are_chosen_by_pattern_and_custom_patterns_share_one_label() {
        let mut config = RedactionConfig {
            mode: RedactionMode::Audit,
            secrets: false,
            backends: vec!["crm-*".into()],
            patterns: vec![PatternEntry {
                name: "ticket".into(),
                regex: r"TCK-\d+".into(),
            }],
        };
        let r = Redactor::new(&config).expect("compiles");
        assert!(r.applies_to("crm-eu"));
        assert!(!r.applies_to("files"));
        let found = r.scan(r#"{"text":"see TCK-42"}"#);
        assert_eq!(found.names(), ["ticket"]);
        assert_eq!(found.labels().collect::<Vec<_>>(), [LABELS - 1]);
        config.patterns.clear();
        assert!(config.validate().is_err(), "nothing to look for");
    }
}
