//! What a config reload replaces while the gateway serves (`reload::config`): the config in effect, the
//! backends' handles, the tools' own deadlines, the policy, the rate limits and the token exchangers — one
//! [`Live`], swapped whole. A request reads it with one atomic load (`arc-swap`), never a lock, and keeps the
//! `Arc` it loaded to its end: a request in flight to a backend that a reload removes or replaces finishes on
//! the handle it started with.
//!
//! It must not hold what a reload cannot change (the listener, the key ring, `[auth]`): those stay in
//! `Gateway`, read from the config the process started with.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use handlers::BackendHandle;

use crate::config::Config;

/// The reloadable part of the gateway's state, at one version.
#[derive(Debug)]
pub struct Live {
    /// 0 at start, one more for each reload applied.
    pub version: u64,
    /// The config in effect (its `[server]` section as the process started: a reload changes only what
    /// [`Live`] holds and the log level).
    pub config: Arc<Config>,
    /// Backends by configured name.
    pub backends: BTreeMap<String, BackendHandle>,
    /// Tools' own deadlines (`tool_timeouts_ms`), by backend and the backend's tool name; empty unless set.
    pub tool_timeouts: BTreeMap<String, BTreeMap<String, Duration>>,
    /// `[[policy]]`, compiled; `None` when no rule is configured (everything allowed).
    pub policy: Option<Arc<crate::policy::Policy>>,
    /// The `[[rate_limit]]` buckets' authority, shared by the workers; `None` when no limit is configured.
    pub limits: Option<Arc<crate::limit::Limits>>,
    /// Backends that take the client's token exchanged (RFC 8693), by name.
    pub exchanges: BTreeMap<String, Arc<crate::auth::exchange::Exchanger>>,
    /// `[redaction]`, compiled; `None` without the table (nothing scanned).
    pub redaction: Option<Arc<crate::redaction::Redactor>>,
}

impl Live {
    /// `[redaction]` compiled (validated with the config: its patterns compile).
    pub fn redaction(config: &Config) -> Option<Arc<crate::redaction::Redactor>> {
        let table = config.redaction.as_ref()?;
        match crate::redaction::Redactor::new(table) {
            Ok(r) => Some(Arc::new(r)),
            Err(why) => {
                tracing::error!(%why, "[redaction] does not compile: nothing is redacted");
                None
            }
        }
    }

    /// The tools' own deadlines a config sets.
    pub fn tool_timeouts(config: &Config) -> BTreeMap<String, BTreeMap<String, Duration>> {
        config
            .backends
            .iter()
            .filter(|b| !b.tool_timeouts_ms.is_empty())
            .map(|b| {
                let tools = b
                    .tool_timeouts_ms
                    .keys()
                    .filter_map(|t| Some((t.clone(), b.tool_timeout(t)?)))
                    .collect();
                (b.name.clone(), tools)
            })
            .collect()
    }

    /// The backend of this name, if configured now.
    pub fn backend(&self, name: &str) -> Option<&BackendHandle> {
        self.backends.get(name)
    }
}

/// The current [`Live`]: loaded per request without a lock, replaced whole.
#[derive(Debug)]
pub struct LiveStore(ArcSwap<Live>);

impl LiveStore {
    /// A store holding `live`.
    pub fn new(live: Live) -> LiveStore {
        LiveStore(ArcSwap::from_pointee(live))
    }

    /// The current one (an atomic load and a reference count; keep it for as long as the request runs).
    pub fn load(&self) -> Arc<Live> {
        self.0.load_full()
    }

    /// Makes `next` the current one; requests that loaded the previous one keep it.
    pub fn store(&self, next: Arc<Live>) {
        self.0.store(next);
    }
}
