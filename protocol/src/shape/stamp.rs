//! What the gateway stamps on 2026-07-28 results: [`Stamp`] and its cache fields.

use serde_json::value::RawValue;

/// Who may reuse a cacheable 2026-07-28 result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Any client, and shared caches.
    Public,
    /// Only the same authorization context.
    Private,
}

impl CacheScope {
    pub(super) fn as_json(self) -> &'static str {
        match self {
            CacheScope::Public => "\"public\"",
            CacheScope::Private => "\"private\"",
        }
    }
}

/// What the gateway says about caching a result when the backend said nothing valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// `ttlMs`.
    pub ttl_ms: u64,
    /// `cacheScope`.
    pub scope: CacheScope,
}

impl CachePolicy {
    /// Not cacheable: `ttlMs: 0`, `cacheScope: "private"` (also for results of `input_required` retries).
    pub const NONE: CachePolicy = CachePolicy {
        ttl_ms: 0,
        scope: CacheScope::Private,
    };
}

/// What the gateway stamps on every 2026-07-28 result.
#[derive(Debug, Clone)]
pub struct Stamp {
    pub(super) server_info: Box<RawValue>,
    /// The cache fields for cacheable results that carry none (or invalid ones).
    pub cache: CachePolicy,
}

impl Stamp {
    /// A stamp naming the gateway (its `Implementation`, serialized once here).
    pub fn new(server_info: &crate::payload::Implementation, cache: CachePolicy) -> Stamp {
        let server_info =
            serde_json::value::to_raw_value(server_info).expect("Implementation serializes");
        Stamp { server_info, cache }
    }
}
