//! `[[interceptor]]` servers (the MCP interceptors extension, SEP-2624), each reached like a backend
//! (`handlers::BackendHandle`: stdio or HTTP, its TLS, credential, deadline, concurrency bound and circuit):
//! what each lists (`interceptors/list`, kept a minute), which of them a request's event and phase choose,
//! and the passes that invoke them (`interceptor/invoke`): every validator at once, then the mutators in
//! order. It decides pass, refuse or rewrite; it must not shape an answer (the pipeline's stage does).

pub mod plan;

use std::sync::Arc;
use std::time::{Duration, Instant};

use handlers::{BackendEvent, BackendHandle, BackendRequest};
use protocol::Method;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::config::{Config, InterceptorEntry, InterceptorMode};
use plan::{Answer, Chosen, Descriptor, Phase};

/// How long a server's list is kept before it is asked again.
const LIST_FOR: Duration = Duration::from_secs(60);
/// At most this many interceptors are kept of one server's list.
const MAX_LISTED: usize = 256;
/// A server's failures are logged at warn at most once this often (each at debug): one that is down
/// would otherwise log a line per request.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// One `[[interceptor]]` server.
#[derive(Debug)]
struct Host {
    entry: InterceptorEntry,
    handle: BackendHandle,
    /// Its list and when it was read.
    listed: std::sync::Mutex<Option<(Instant, Arc<Vec<Descriptor>>)>>,
    /// When a failure of its was last logged at warn.
    warned: std::sync::Mutex<Option<Instant>>,
}

impl Host {
    /// Whether a failure now is logged at warn (at most once per [`WARN_EVERY`]).
    fn loud(&self) -> bool {
        let mut warned = self
            .warned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if warned.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            return false;
        }
        *warned = Some(Instant::now());
        true
    }
}

/// Every `[[interceptor]]` server of the config, started.
#[derive(Debug)]
pub struct Interceptors {
    hosts: Vec<Host>,
}

/// What a pass came to.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Go on, with this payload when a mutator replaced it.
    Pass(Option<Value>),
    /// Refused by this interceptor (its server's `[[interceptor]] name` and its own name).
    Refused { host: String, name: String },
}

impl Interceptors {
    /// Starts each `[[interceptor]]` server (on the current arbiter); `None` without any.
    pub fn start(
        config: &Config,
        credentials: &std::collections::BTreeMap<String, handlers::Credential>,
    ) -> Option<Arc<Interceptors>> {
        if config.interceptors.is_empty() {
            return None;
        }
        // What the servers' actors report is not news to anyone: drained.
        let (events, mut drained) = mpsc::channel::<BackendEvent>(64);
        actix_rt::spawn(async move { while drained.recv().await.is_some() {} });
        let hosts = config
            .interceptors
            .iter()
            .filter_map(|entry| {
                let backend = entry.as_backend().ok()?;
                let mut bc = handlers::BackendConfig::new(entry.name.clone(), transport(&backend));
                bc.request_timeout = Duration::from_millis(entry.timeout_ms);
                bc.max_in_flight = entry.max_in_flight;
                bc.circuit = entry.circuit.to_config();
                bc.tls = backend.tls();
                if let Some(c) = credentials.get(&entry.name) {
                    bc.credential = c.clone();
                }
                Some(Host {
                    entry: entry.clone(),
                    handle: BackendHandle::start(bc, events.clone()),
                    listed: std::sync::Mutex::new(None),
                    warned: std::sync::Mutex::new(None),
                })
            })
            .collect();
        Some(Arc::new(Interceptors { hosts }))
    }

    /// Whether any server is asked about `event` for this tool (exposed name) of this backend.
    pub fn wanted(&self, event: &str, tool: Option<&str>, backend: &str) -> bool {
        self.hosts.iter().any(|h| selects(&h.entry, event, tool, backend))
    }

    /// Runs one phase's passes over the payload: the validators (all, at once), then — unless one refused
    /// — the mutators, one after another, each given the last one's payload. `payload` is built only when
    /// an interceptor is chosen for the phase (a result is not parsed for request-only interceptors); one
    /// that cannot be built (a result that is not JSON) passes.
    pub async fn run(
        &self,
        event: &str,
        phase: Phase,
        tool: Option<&str>,
        backend: &str,
        payload: impl FnOnce() -> Option<Value>,
        principal: Option<&str>,
    ) -> Outcome {
        let mut chosen = Vec::new();
        for (index, host) in self.hosts.iter().enumerate() {
            if !selects(&host.entry, event, tool, backend) {
                continue;
            }
            chosen.extend(self.choose(index, host, event, phase).await);
        }
        if chosen.is_empty() {
            return Outcome::Pass(None);
        }
        let Some(payload) = payload() else {
            return Outcome::Pass(None);
        };
        let (validators, mutators) = plan::order(chosen);
        let verdicts = futures_util::future::join_all(
            validators
                .iter()
                .map(|c| self.invoke(c, event, phase, &payload, principal)),
        )
        .await;
        let mut refused = None;
        for (c, answer) in validators.iter().zip(&verdicts) {
            let refusing = plan::refuses(c, answer);
            self.log(c, event, phase, answer, refusing);
            if refused.is_none() && refusing {
                refused = Some(self.refusal(c));
            }
        }
        if let Some(refused) = refused {
            return refused;
        }
        let mut current: Option<Value> = None;
        for c in &mutators {
            let input = current.as_ref().unwrap_or(&payload);
            let answer = self.invoke(c, event, phase, input, principal).await;
            let refusing = plan::refuses(c, &answer);
            self.log(c, event, phase, &answer, refusing);
            if refusing {
                return self.refusal(c);
            }
            if let (Answer::Rewrite(Some(next)), InterceptorMode::Enforce) = (answer, c.mode) {
                current = Some(next);
            }
        }
        Outcome::Pass(current)
    }

    fn refusal(&self, c: &Chosen) -> Outcome {
        Outcome::Refused {
            host: self.hosts.get(c.host).map(|h| h.entry.name.clone()).unwrap_or_default(),
            name: c.name.clone(),
        }
    }

    /// The interceptors of `host` chosen for `event` in `phase`: those it lists whose hooks name it
    /// (within `use` when given); each `use` name it does not list (or its list cannot be read) counts as
    /// chosen, and fails: so a fail-closed one refuses while its server is away.
    async fn choose(&self, index: usize, host: &Host, event: &str, phase: Phase) -> Vec<Chosen> {
        let listed = self.list(host).await;
        let entry = &host.entry;
        let used = |name: &str| entry.uses.is_empty() || entry.uses.iter().any(|u| u == name);
        let mut chosen: Vec<Chosen> = listed
            .iter()
            .flat_map(|l| l.iter())
            .filter(|d| used(&d.name) && d.hooks(event, phase))
            .map(|d| Chosen {
                host: index,
                name: d.name.clone(),
                kind: d.kind,
                mode: entry.mode.or(d.mode).unwrap_or(InterceptorMode::Enforce),
                fail_open: entry.fail_open.or(d.fail_open).unwrap_or(false),
                priority: d.priority[usize::from(phase == Phase::Response)],
            })
            .collect();
        let missing = entry.uses.iter().filter(|u| {
            !listed
                .as_ref()
                .is_some_and(|l| l.iter().any(|d| &d.name == *u))
        });
        chosen.extend(missing.map(|name| Chosen {
            host: index,
            name: name.clone(),
            // Unlisted: whatever it does, it cannot be asked; a validator's failure is what counts.
            kind: plan::Kind::Validation,
            mode: entry.mode.unwrap_or(InterceptorMode::Enforce),
            fail_open: entry.fail_open.unwrap_or(false),
            priority: 0,
        }));
        // With no `use` and no list, the server's absence is one failure of its own.
        if entry.uses.is_empty() && listed.is_none() {
            chosen.push(Chosen {
                host: index,
                name: "interceptors/list".into(),
                kind: plan::Kind::Validation,
                mode: entry.mode.unwrap_or(InterceptorMode::Enforce),
                fail_open: entry.fail_open.unwrap_or(false),
                priority: 0,
            });
        }
        chosen
    }

    /// The server's list: kept for a minute; asked again after that or while there is none.
    async fn list(&self, host: &Host) -> Option<Arc<Vec<Descriptor>>> {
        let kept = host
            .listed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some((at, list)) = &kept
            && at.elapsed() < LIST_FOR
        {
            return Some(list.clone());
        }
        // A server still connecting (the gateway just started) is waited for, within one deadline.
        let deadline = Duration::from_millis(host.entry.timeout_ms);
        host.handle.wait_settled(deadline).await;
        let mut request = BackendRequest::new(
            Method::ToolsList,
            serde_json::value::to_raw_value(&serde_json::json!({})).ok(),
        );
        request.extension = Some("interceptors/list");
        let fresh = match host.handle.call(request).await {
            Ok(raw) => serde_json::from_str::<Value>(raw.get()).ok().map(|v| {
                Arc::new(
                    v.get("interceptors")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .take(MAX_LISTED)
                                .filter_map(Descriptor::parse)
                                .collect::<Vec<_>>()
                        })
                        .unwrap_or_default(),
                )
            }),
            Err(failure) => {
                if host.loud() {
                    tracing::warn!(interceptor = %host.entry.name, %failure, "interceptors/list failed");
                } else {
                    tracing::debug!(interceptor = %host.entry.name, %failure, "interceptors/list failed");
                }
                None
            }
        };
        match fresh {
            Some(list) => {
                *host
                    .listed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((Instant::now(), list.clone()));
                Some(list)
            }
            // A stale list serves until a fresh one is read.
            None => kept.map(|(_, l)| l),
        }
    }

    async fn invoke(
        &self,
        c: &Chosen,
        event: &str,
        phase: Phase,
        payload: &Value,
        principal: Option<&str>,
    ) -> Answer {
        let Some(host) = self.hosts.get(c.host) else {
            return Answer::Failed("no such server".into());
        };
        if c.name == "interceptors/list" {
            return Answer::Failed("its server's interceptors cannot be listed".into());
        }
        let params = plan::invoke_params(
            c,
            event,
            phase,
            payload,
            host.entry.timeout_ms,
            principal,
            std::time::SystemTime::now(),
        );
        let mut request = BackendRequest::new(Method::ToolsCall, serde_json::value::to_raw_value(&params).ok());
        request.extension = Some("interceptor/invoke");
        match host.handle.call(request).await {
            Ok(raw) => match serde_json::from_str::<Value>(raw.get()) {
                Ok(result) => plan::answer(c, phase, &result),
                Err(e) => Answer::Failed(format!("the result is not JSON: {e}")),
            },
            Err(failure) => Answer::Failed(failure.to_string()),
        }
    }

    /// Stops every server (at shutdown).
    pub fn shutdown(&self) {
        for h in &self.hosts {
            h.handle.shutdown();
        }
    }
}

/// Whether `[[interceptor]]` `entry` is asked about `event` for this tool of this backend.
fn selects(entry: &InterceptorEntry, event: &str, tool: Option<&str>, backend: &str) -> bool {
    let glob = |patterns: &[String], name: &str| {
        patterns.iter().any(|p| crate::glob::glob_match(p, name))
    };
    entry.events.iter().any(|e| e == event)
        && glob(&entry.backends, backend)
        && tool.is_none_or(|t| glob(&entry.tools, t))
}

/// The transport of a server reached as `backend` says.
fn transport(backend: &crate::config::BackendEntry) -> handlers::Transport {
    match backend.transport() {
        crate::config::BackendTransport::Stdio { command, env, cwd } => {
            handlers::Transport::Stdio { command, env, cwd }
        }
        crate::config::BackendTransport::Http { url } => handlers::Transport::Http { url },
        // Validated: an interceptor has a command or a URL.
        _ => handlers::Transport::Http { url: String::new() },
    }
}

impl Interceptors {
    /// Each answer logged: a refusal at info, with the interceptor's messages at debug only (they may quote
    /// what the client sent); a failure at warn, at most once per [`WARN_EVERY`] for its server.
    fn log(&self, c: &Chosen, event: &str, phase: Phase, answer: &Answer, refusing: bool) {
        match answer {
            Answer::Verdict { refuses: true, messages } => {
                tracing::info!(interceptor = %c.name, %event, phase = phase.as_str(), mode = ?c.mode,
                    refusing, "an interceptor found the operation invalid");
                tracing::debug!(interceptor = %c.name, messages = ?messages, "its messages");
            }
            Answer::Failed(why) if self.hosts.get(c.host).is_some_and(Host::loud) => {
                tracing::warn!(interceptor = %c.name, %event, phase = phase.as_str(), mode = ?c.mode,
                    fail_open = c.fail_open, refusing, %why, "an interceptor's invocation failed");
            }
            Answer::Failed(why) => {
                tracing::debug!(interceptor = %c.name, %event, phase = phase.as_str(), mode = ?c.mode,
                    fail_open = c.fail_open, refusing, %why, "an interceptor's invocation failed");
            }
            Answer::Rewrite(Some(_)) => {
                tracing::debug!(interceptor = %c.name, %event, phase = phase.as_str(), mode = ?c.mode,
                    "an interceptor rewrote the payload");
            }
            _ => {}
        }
    }
}
