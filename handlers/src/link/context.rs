//! What every transport shares ([`LinkContext`]: name, configuration, events, the `_meta` stamp, how failures
//! read), what a connect attempt ends in ([`Connected`], [`ConnectFailure`]) and the era it finds
//! ([`Verdict`]). The transports build on it; the [`super::Link`] over them is above it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use protocol::method::Method;
use protocol::shape::Failure;
use protocol::{Error, ErrorCode, Generation};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::config::{BackendConfig, Transport};
use crate::description::ServerDescription;
use crate::events::Notifier;
use crate::handshake::{self, MODERN};
use crate::meta::{self, ModernMeta};
use crate::pending::{Lost, NoReply};
use crate::request::BackendRequest;
use crate::wire;

/// The longest a stdio `server/discover` probe may go unanswered before the backend counts as legacy.
const STDIO_PROBE_LIMIT: Duration = Duration::from_secs(5);

/// What every connection of one backend shares.
pub(crate) struct LinkContext {
    /// Unique in the process: keys what each thread keeps for this backend (its HTTP client).
    pub(crate) id: u64,
    pub(crate) config: BackendConfig,
    pub(crate) notifier: Notifier,
    /// The rustls configuration of its HTTP clients, built once (or why it cannot be).
    tls: Result<rustls::ClientConfig, String>,
    client_info: Box<RawValue>,
    modern_version: Box<RawValue>,
    empty_object: Box<RawValue>,
    /// Retries of HTTP requests that never reached the backend.
    pub(crate) retries: crate::retry::RetryBudget,
}

impl std::fmt::Debug for LinkContext {
    // The configuration may carry secrets (environment variables, URLs with tokens): only the name shows.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkContext")
            .field("backend", &self.name())
            .finish_non_exhaustive()
    }
}

impl LinkContext {
    pub(crate) fn new(config: BackendConfig, notifier: Notifier) -> Arc<LinkContext> {
        let raw = |text: String| {
            RawValue::from_string(text).unwrap_or_else(|_| unreachable!("serialized JSON is valid"))
        };
        let client_info = serde_json::to_string(&config.client_info)
            .unwrap_or_else(|_| r#"{"name":"mcpgw","version":"0"}"#.to_owned());
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let https =
            matches!(&config.transport, Transport::Http { url } if url.starts_with("https://"));
        Arc::new(LinkContext {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            tls: crate::http::tls::client_config(&config.tls, https),
            config,
            notifier,
            client_info: raw(client_info),
            modern_version: raw(format!("\"{}\"", MODERN.as_str())),
            empty_object: raw("{}".to_owned()),
            retries: crate::retry::RetryBudget::default(),
        })
    }

    /// The backend's name.
    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// The rustls configuration of the backend's HTTP clients.
    pub(crate) fn tls(&self) -> Result<&rustls::ClientConfig, String> {
        self.tls.as_ref().map_err(Clone::clone)
    }

    /// How long a stdio era probe may take.
    pub(crate) fn stdio_probe_timeout(&self) -> Duration {
        self.config.connect_timeout.min(STDIO_PROBE_LIMIT)
    }

    fn modern_meta<'a>(&'a self, capabilities: &'a RawValue) -> ModernMeta<'a> {
        ModernMeta {
            protocol_version: &self.modern_version,
            client_capabilities: capabilities,
            client_info: &self.client_info,
        }
    }

    /// `server/discover` params: only the modern `_meta`, with no client capabilities.
    pub(crate) fn discover_params(&self) -> Box<RawValue> {
        meta::for_modern(None, self.modern_meta(&self.empty_object))
            .unwrap_or_else(|_| unreachable!("absent params always take _meta"))
    }

    /// `initialize` params.
    pub(crate) fn initialize_params(&self) -> Box<RawValue> {
        handshake::initialize_params(&self.client_info)
    }

    /// The request's params with `_meta` as a backend of `generation` wants it.
    pub(crate) fn params_for(
        &self,
        generation: Generation,
        request: &mut BackendRequest,
    ) -> Result<Option<Box<RawValue>>, Failure> {
        let Taken {
            params,
            capabilities,
        } = self.take_params(generation, request)?;
        if !generation.is_modern() {
            return Ok(meta::for_legacy(params));
        }
        let capabilities = capabilities.as_deref().unwrap_or(&self.empty_object);
        meta::for_modern(params.as_deref(), self.modern_meta(capabilities))
            .map(Some)
            .map_err(|e| self.unsendable(request.method, e))
    }

    /// The whole JSON-RPC request for a 2026-07-28 backend, under `id`: the body is written once, the
    /// client's params spliced in with the modern `_meta` (what `params_for` and `wire::request` make in
    /// two passes and three copies).
    pub(crate) fn modern_body(
        &self,
        id: i64,
        request: &mut BackendRequest,
    ) -> Result<Vec<u8>, Failure> {
        let Taken {
            params,
            capabilities,
        } = self.take_params(MODERN, request)?;
        let capabilities = capabilities.as_deref().unwrap_or(&self.empty_object);
        let stamp = self.modern_meta(capabilities);
        wire::request_with(id, request.wire_name(), params.as_deref(), |out| {
            meta::write_modern(out, params.as_deref(), stamp)
        })
        .map_err(|e| self.unsendable(request.method, e))
    }

    /// The request's params (its trace context stamped) and, for a modern backend, the client's
    /// capabilities as JSON.
    fn take_params(
        &self,
        generation: Generation,
        request: &mut BackendRequest,
    ) -> Result<Taken, Failure> {
        if !generation.is_modern() && request.credential.is_some() {
            return Err(Failure::Internal {
                reason: format!(
                    "backend {} speaks {generation} over a transport with one session: a credential per principal needs a backend session per principal, which the gateway opens with 2026-07-28 and Streamable HTTP backends only",
                    self.name()
                ),
            });
        }
        let mut params = request.params.take();
        if let Some(trace) = &request.trace {
            params = trace.stamp(params);
        }
        if !generation.is_modern() {
            return Ok(Taken {
                params,
                capabilities: None,
            });
        }
        let capabilities = match &request.client_capabilities {
            None => None,
            Some(c) if c.is_object() => serde_json::value::to_raw_value(c).ok(),
            Some(_) => {
                return Err(Failure::Internal {
                    reason: "client capabilities must be a json object".to_owned(),
                });
            }
        };
        Ok(Taken {
            params,
            capabilities,
        })
    }

    fn unsendable(&self, method: Method, e: meta::ParamsError) -> Failure {
        Failure::Internal {
            reason: format!("cannot send {method} to backend {}: {e}", self.name()),
        }
    }

    /// A JSON-RPC error the backend answered, its code named for the backend's generation and the method.
    pub(crate) fn backend_error(
        &self,
        generation: Generation,
        method: Method,
        error: Error,
    ) -> Failure {
        let (code, message, data) = error.into_parts();
        let mut error = Error::new(
            ErrorCode::from_peer(code.code(), generation, Some(method)),
            message,
        );
        if let Some(data) = data {
            error = error.with_data(data);
        }
        Failure::Backend {
            backend: self.name().to_owned(),
            error,
        }
    }

    /// The request passed its deadline.
    pub(crate) fn timeout(&self) -> Failure {
        Failure::Timeout {
            backend: self.name().to_owned(),
            after_ms: u64::try_from(self.config.request_timeout.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The backend cannot be reached.
    pub(crate) fn unavailable(&self, reason: impl Into<String>) -> Failure {
        Failure::Unavailable {
            backend: self.name().to_owned(),
            reason: reason.into(),
        }
    }

    /// Why a request got no answer, as a failure.
    pub(crate) fn unanswered(&self, u: Unanswered) -> Failure {
        match u {
            Unanswered::Timeout => self.timeout(),
            Unanswered::Overloaded => Failure::Overloaded {
                backend: self.name().to_owned(),
            },
            Unanswered::Lost(lost) => lost.into_failure(self.name()),
            Unanswered::Failed(reason) => self.unavailable(reason),
            Unanswered::Refused(failure) => failure,
        }
    }
}

/// A request that never went out because the connection was already gone: the backend is down (restarting),
/// which is `Unavailable`; only requests in flight when it died are `Crashed`.
pub(crate) fn not_sent(lost: Lost) -> Unanswered {
    Unanswered::Failed(format!("the backend is down: {}", lost.reason()))
}

/// Why a request sent on a multiplexed connection got no answer.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// Its deadline passed.
    Timeout,
    /// The connection's write queue is full.
    Overloaded,
    /// The connection died or was closed.
    Lost(Lost),
    /// It could not be sent (an HTTP POST failed).
    Failed(String),
    /// Its reply was refused as it arrived (`Failure::TooLarge`).
    Refused(Failure),
}

impl From<NoReply> for Unanswered {
    fn from(no_reply: NoReply) -> Unanswered {
        match no_reply {
            NoReply::Lost(lost) => Unanswered::Lost(lost),
            NoReply::Refused(failure) => Unanswered::Refused(failure),
        }
    }
}

/// A backend's era, as found by its probe and remembered across reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// 2026-07-28: `server/discover`, `_meta` on every request.
    Modern,
    /// `initialize` handshake (stdio or Streamable HTTP).
    Legacy,
    /// `initialize` over the 2024-11-05 HTTP+SSE transport.
    LegacySse,
}

/// What a failed connect taught about the era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VerdictUpdate {
    /// Nothing (an outage).
    Keep,
    /// The backend is of this era.
    Learned(Verdict),
    /// The remembered era proved wrong: probe again next time.
    Forget,
}

/// Why a connect attempt failed, and what it taught.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnectFailure {
    pub(crate) reason: String,
    pub(crate) verdict: VerdictUpdate,
}

impl ConnectFailure {
    pub(crate) fn new(reason: impl Into<String>, verdict: VerdictUpdate) -> ConnectFailure {
        ConnectFailure {
            reason: reason.into(),
            verdict,
        }
    }

    /// A backend pinned to `era` (`[[backend]] era`) that cannot be reached in it: `why` says what it
    /// answered instead. Nothing learned: the pin decides the next attempt too.
    pub(crate) fn pinned(era: crate::config::EraPin, why: &str) -> ConnectFailure {
        ConnectFailure::outage(format!("era = \"{}\" is set, but {why}", era.label()))
    }

    /// An outage: nothing learned about the era.
    pub(crate) fn outage(reason: impl Into<String>) -> ConnectFailure {
        ConnectFailure::new(reason, VerdictUpdate::Keep)
    }
}

/// A finished handshake, with the transport's link `L`.
#[derive(Debug)]
pub(crate) struct Connected<L> {
    pub(crate) link: L,
    pub(crate) description: Arc<ServerDescription>,
    pub(crate) verdict: Verdict,
    /// Cut when the connection is gone for good (stdio exit, event stream end).
    pub(crate) lifeline: Lifeline,
}

impl<L> Connected<L> {
    /// The same handshake with its link made another (a transport's link into the [`super::Link`]).
    pub(crate) fn map<M>(self, into: impl FnOnce(L) -> M) -> Connected<M> {
        Connected {
            link: into(self.link),
            description: self.description,
            verdict: self.verdict,
            lifeline: self.lifeline,
        }
    }
}

/// Cut once when a connection dies, with why.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lifeline {
    token: CancellationToken,
    reason: Arc<OnceLock<String>>,
}

impl Lifeline {
    /// The connection is gone; the first reason counts.
    pub(crate) fn cut(&self, reason: impl Into<String>) {
        let _ = self.reason.set(reason.into());
        self.token.cancel();
    }

    /// Waits until it is cut; why.
    pub(crate) async fn wait(&self) -> String {
        self.token.cancelled().await;
        self.reason.get().cloned().unwrap_or_default()
    }

    /// The token cancelled with it.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }
}

/// Asks the actor to replace an expired legacy session (given the session id that expired); however many
/// requests saw it expire, one `initialize` is sent.
/// `Send`: a request's future, which holds it, may be handed across threads before it runs.
pub(crate) type Renew =
    Box<dyn FnOnce(Option<String>) -> BoxFuture<'static, Result<(), Failure>> + Send>;

/// What a backend request's params are made from: the client's params (its trace context stamped) and,
/// for a modern backend, the client's capabilities as JSON.
struct Taken {
    params: Option<Box<RawValue>>,
    capabilities: Option<Box<RawValue>>,
}
