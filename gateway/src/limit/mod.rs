//! Rate limits (`[[rate_limit]]`): token buckets per principal (or client address), per backend and per
//! tool, with a burst. Two tiers keep them off every shared lock and every network round trip on a
//! request's path: each worker takes tokens from a small lease it holds ([`lease`], its own map, touched
//! by that worker only), and only when the lease is used up does it ask the [`authority`] for the next one —
//! a bucket in this process, or in Redis shared by the replicas ([`redis`]). A refused request remembers
//! until when the bucket is empty, so refusals cost no round trip either.
//!
//! How far a limit can be exceeded: leased tokens are usable for [`lease::LEASE_TTL_US`] (250 ms) after
//! they were asked for and then dropped, so the requests admitted in any `t` seconds used tokens that the
//! authority's bucket granted within `t` + 0.25 s: at most `burst + rate × (t + 0.25)` — across any number
//! of replicas and workers, as long as they share one Redis. Without Redis (or while it is unreachable)
//! each replica has its own buckets: N replicas admit up to N times that.
//!
//! This module decides; it does not answer. The middleware (`pipeline::rate_limit`) reads a request's
//! facts and shapes the refusal. A request's arguments are never looked at.

pub mod authority;
pub mod bucket;
pub mod lease;
pub mod redis;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use protocol::Method;

use crate::cluster::redis::RedisLink;
use crate::config::{LimitPer, RateLimitConfig};
use crate::glob::glob_match;

use authority::{Authority, Kind, Rate};
use lease::{Leases, Local, WORKER_KEYS};

/// Who a bucket counts.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// The principal authentication established, counted by its id (`api_key:NAME`, `jwt:…`).
    Principal(&'a crate::auth::Principal),
    /// The client's IP address (a request without a principal over HTTP): the same key on every replica.
    /// An IPv6 address counts as its /64 (`auth::proxies::limited_as`): one client holds a whole /64.
    Address(std::net::IpAddr),
    /// The one client of a stdio gateway.
    Local,
}

impl Subject<'_> {
    /// The address a bucket is kept by (its /64 for IPv6), else `None`.
    fn address(&self) -> Option<std::net::IpAddr> {
        match self {
            Subject::Address(ip) => Some(crate::auth::proxies::limited_as(*ip)),
            _ => None,
        }
    }
}

/// What the limits look at of one request.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The method.
    pub method: Method,
    /// Who asks.
    pub subject: Subject<'a>,
    /// The backend it is routed to (`None`: the gateway answers it itself).
    pub backend: Option<&'a str>,
    /// The exposed tool name of a `tools/call`.
    pub tool: Option<&'a str>,
}

/// One bucket a request must take a token from: its rule, its id in this process (what a worker's leases
/// are kept by, hashed per request without building a string), and — named only when the authority is
/// asked — the key the replicas share.
#[derive(Debug, Clone)]
pub struct Key {
    rule: usize,
    id: u64,
    key: String,
    kind: Kind,
}

/// The hasher of bucket ids: keyed at random once per process, so no client can aim two buckets at one id.
fn ids() -> &'static std::collections::hash_map::RandomState {
    static IDS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    IDS.get_or_init(Default::default)
}

/// A request a limit refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The limit's name.
    pub limit: Arc<str>,
    /// When a token is expected, milliseconds (at least 1).
    pub retry_ms: u64,
}

/// What the worker's leases decide without asking anyone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Every bucket gave a token.
    Admit,
    /// A bucket is empty.
    Refuse(Refused),
    /// The bucket at this index of the keys needs a lease first ([`WorkerLimits::admit`]).
    Ask(usize),
}

#[derive(Debug)]
struct Rule {
    name: Arc<str>,
    per: Vec<LimitPer>,
    rate: Rate,
    lease: u32,
    methods: Option<Vec<Method>>,
    backend: Option<String>,
    tool: Option<String>,
}

impl Rule {
    fn applies(&self, f: &Facts<'_>) -> bool {
        self.methods.as_ref().is_none_or(|m| m.contains(&f.method))
            && self
                .backend
                .as_deref()
                .is_none_or(|g| f.backend.is_some_and(|b| glob_match(g, b)))
            && self.tool.as_deref().is_none_or(|g| {
                f.method == Method::ToolsCall && f.tool.is_some_and(|t| glob_match(g, t))
            })
    }
}

/// The configured limits and their authority: one per gateway process, shared by its workers.
#[derive(Debug)]
pub struct Limits {
    rules: Vec<Rule>,
    authority: Authority,
    epoch: Instant,
    backend_matters: bool,
}

impl Limits {
    /// The limits of `config` (`None` when there is none), their buckets in Redis when `redis` is given.
    pub fn new(config: &[RateLimitConfig], redis: Option<Arc<RedisLink>>) -> Option<Arc<Limits>> {
        if config.is_empty() {
            return None;
        }
        let rules: Vec<Rule> = config
            .iter()
            .enumerate()
            .map(|(i, c)| Rule {
                name: c.display_name(i).into(),
                per: c.per_keys(),
                rate: Rate {
                    rate: c.rate,
                    burst: c.burst,
                },
                lease: bucket::lease_size(c.rate, c.burst),
                methods: c.method_set(),
                backend: c.backend.clone(),
                tool: c.tool.clone(),
            })
            .collect();
        let backend_matters = rules
            .iter()
            .any(|r| r.backend.is_some() || r.per.contains(&LimitPer::Backend));
        Some(Arc::new(Limits {
            rules,
            authority: Authority::new(redis),
            epoch: Instant::now(),
            backend_matters,
        }))
    }

    /// Now on the limiter's clock, microseconds.
    pub fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Whether any limit looks at the backend (else [`Facts::backend`] need not be found).
    pub fn backend_matters(&self) -> bool {
        self.backend_matters
    }

    /// The buckets a request with these facts takes a token from, in the configured order, by id (not yet
    /// named: see [`Limits::name`]).
    pub fn keys(&self, f: &Facts<'_>) -> Vec<Key> {
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.applies(f))
            .map(|(i, r)| Key {
                rule: i,
                id: bucket_id(i, r, f),
                key: String::new(),
                kind: match f.subject {
                    _ if !r.per.contains(&LimitPer::Principal) => Kind::Shared,
                    Subject::Principal(_) => Kind::Principal,
                    Subject::Address(_) => Kind::Address,
                    Subject::Local => Kind::Shared,
                },
            })
            .collect()
    }

    /// Names `keys` (of a request with these facts) for the authority: what a worker does before it asks
    /// for a lease, never on a request its leases serve.
    pub fn name(&self, keys: &mut [Key], f: &Facts<'_>) {
        for k in keys {
            if let Some(rule) = self.rules.get(k.rule) {
                k.key = bucket_key(k.rule, rule, f);
            }
        }
    }

    /// [`Limits::keys`], named.
    #[cfg(any(test, feature = "internals"))]
    pub fn named(&self, f: &Facts<'_>) -> Vec<Key> {
        let mut keys = self.keys(f);
        self.name(&mut keys, f);
        keys
    }
}

/// A bucket's id in this process: a keyed hash of what [`bucket_key`] names, the same parts.
fn bucket_id(i: usize, rule: &Rule, f: &Facts<'_>) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = ids().build_hasher();
    i.hash(&mut h);
    let per = |p| rule.per.contains(&p);
    if per(LimitPer::Principal) {
        match f.subject {
            Subject::Principal(p) => {
                0u8.hash(&mut h);
                p.hash_id(&mut h);
            }
            Subject::Address(_) => (1u8, f.subject.address()).hash(&mut h),
            Subject::Local => 2u8.hash(&mut h),
        }
    }
    f.backend.filter(|_| per(LimitPer::Backend)).hash(&mut h);
    f.tool.filter(|_| per(LimitPer::Tool)).hash(&mut h);
    h.finish()
}

/// A bucket's key: the limit (its place and name), then what it is kept per (`-` for what it is not);
/// a principal's name is length-prefixed so that no name can pose as another's key.
fn bucket_key(i: usize, rule: &Rule, f: &Facts<'_>) -> String {
    use std::fmt::Write;
    let mut key = String::with_capacity(48);
    let _ = write!(key, "{i}.{}|", rule.name);
    let per = |p| rule.per.contains(&p);
    if per(LimitPer::Principal) {
        match f.subject {
            Subject::Principal(p) => {
                let id = p.id();
                let _ = write!(key, "p{}:{id}", id.len());
            }
            Subject::Address(_) => {
                let ip = f
                    .subject
                    .address()
                    .unwrap_or(std::net::IpAddr::from([0u8; 4]));
                let _ = write!(key, "a:{ip}");
            }
            Subject::Local => key.push_str("local"),
        }
    } else {
        key.push('-');
    }
    key.push('|');
    key.push_str(f.backend.filter(|_| per(LimitPer::Backend)).unwrap_or("-"));
    key.push('|');
    key.push_str(f.tool.filter(|_| per(LimitPer::Tool)).unwrap_or("-"));
    key
}

/// One worker's view of the limits: its leases (its own lock, never contended by another worker) and the
/// process's shared authority.
#[derive(Debug)]
pub struct WorkerLimits {
    limits: Arc<Limits>,
    leases: Mutex<Leases>,
}

impl WorkerLimits {
    /// A worker's leases of `limits`, none held yet.
    pub fn new(limits: Arc<Limits>) -> WorkerLimits {
        WorkerLimits {
            limits,
            leases: Mutex::new(Leases::new(WORKER_KEYS)),
        }
    }

    /// The limits.
    pub fn limits(&self) -> &Arc<Limits> {
        &self.limits
    }

    fn leases(&self) -> MutexGuard<'_, Leases> {
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refused(&self, key: &Key, retry_ms: u64) -> Refused {
        Refused {
            limit: self.limits.rules[key.rule].name.clone(),
            retry_ms,
        }
    }

    /// Takes a token of each bucket from this worker's leases, at `now`, until one is empty or needs a
    /// lease.
    pub fn check(&self, keys: &[Key], now: u64) -> Step {
        let mut leases = self.leases();
        for (i, k) in keys.iter().enumerate() {
            match leases.take(k.id, now) {
                Local::Admit => {}
                Local::Refuse(ms) => return Step::Refuse(self.refused(k, ms)),
                Local::Ask => return Step::Ask(i),
            }
        }
        Step::Admit
    }

    /// Goes on from the bucket at `at` (what [`WorkerLimits::check`] asked for): leases from the authority
    /// where needed, then takes the remaining buckets' tokens; `keys` named ([`Limits::name`]). A token taken before a later bucket refuses
    /// is not given back.
    pub async fn admit(&self, keys: &[Key], mut at: usize) -> Result<(), Refused> {
        while let Some(k) = keys.get(at) {
            let rule = &self.limits.rules[k.rule];
            let asked = self.limits.now();
            let grant = self
                .limits
                .authority
                .lease(&k.key, k.kind, rule.rate, rule.lease, asked)
                .await;
            let now = self.limits.now();
            if let Local::Refuse(ms) = self.leases().granted(k.id, grant, asked, now) {
                return Err(self.refused(k, ms));
            }
            let rest = keys.get(at + 1..).unwrap_or_default();
            match self.check(rest, now) {
                Step::Admit => return Ok(()),
                Step::Refuse(r) => return Err(r),
                Step::Ask(i) => at += 1 + i,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
