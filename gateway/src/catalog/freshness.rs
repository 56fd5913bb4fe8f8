//! How long the aggregated lists may be reused, and by whom: the 2026-07-28 `ttlMs` / `cacheScope` the gateway
//! puts on its own `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list` results
//! (MCP-DIGEST §5 caching).
//!
//! The gateway's list is as fresh as its least fresh contributor: its `ttlMs` is the smallest `ttlMs` any
//! backend put on any page of that list, counted from when the gateway asked, and it is `public` only when every
//! page of every contributor said `public`. A backend that says nothing (every legacy backend, or a 2026 backend
//! with an invalid or negative value) contributes `ttlMs: 0`, as the spec tells a client to read it. A list no
//! backend contributes to says `ttlMs: 0`, and so does every list while a backend is left out of the catalog:
//! a backend may come up at any moment.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::ListKind;

/// What one page (or a whole list) says about its reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListFreshness {
    /// `ttlMs`: how long it may be reused, counted from when it was asked for.
    pub ttl_ms: u64,
    /// `cacheScope: "public"` (shared caches may keep it), else `"private"`.
    pub public: bool,
}

impl ListFreshness {
    /// Not reusable: what a page without valid cache fields means.
    pub const NONE: ListFreshness = ListFreshness {
        ttl_ms: 0,
        public: true,
    };

    /// The cache fields of one result page as a backend sent it. `ttlMs` absent, negative or not an integer
    /// reads as 0; `cacheScope` other than `"public"` reads as private.
    pub fn of_page(page: &Map<String, Value>) -> ListFreshness {
        let ttl_ms = page.get("ttlMs").and_then(Value::as_u64).unwrap_or(0);
        let public = match page.get("cacheScope") {
            Some(Value::String(s)) => s == "public",
            // No scope at all: only meaningful with a ttl, and a ttl without a scope is not a valid result.
            None => ttl_ms == 0,
            Some(_) => false,
        };
        ListFreshness { ttl_ms, public }
    }

    /// The freshness of two parts seen together: the shorter ttl, public only if both are.
    #[must_use]
    pub fn and(self, other: ListFreshness) -> ListFreshness {
        ListFreshness {
            ttl_ms: self.ttl_ms.min(other.ttl_ms),
            public: self.public && other.public,
        }
    }

    /// `"public"` or `"private"`.
    pub fn scope(self) -> &'static str {
        if self.public { "public" } else { "private" }
    }
}

/// One backend's contribution to each list; `None` where it lists nothing of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListsFreshness {
    /// `tools/list`.
    pub tools: Option<ListFreshness>,
    /// `prompts/list`.
    pub prompts: Option<ListFreshness>,
    /// `resources/list`.
    pub resources: Option<ListFreshness>,
    /// `resources/templates/list`.
    pub resource_templates: Option<ListFreshness>,
}

impl ListsFreshness {
    /// The same contribution `elapsed` later: every ttl shortened by it (a listing kept from an earlier
    /// build counts down from when it was made, not from the build that reuses it).
    #[must_use]
    pub fn aged(self, elapsed: Duration) -> ListsFreshness {
        let elapsed = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        let age = |f: Option<ListFreshness>| {
            f.map(|f| ListFreshness {
                ttl_ms: f.ttl_ms.saturating_sub(elapsed),
                ..f
            })
        };
        ListsFreshness {
            tools: age(self.tools),
            prompts: age(self.prompts),
            resources: age(self.resources),
            resource_templates: age(self.resource_templates),
        }
    }

    /// Every list at [`ListFreshness::NONE`] (what a gateway with no backend listed says).
    pub(super) const NONE: [ListFreshness; 4] = [ListFreshness::NONE; 4];

    /// Folds one backend's contribution into the lists' freshness so far (`None` = no contributor yet).
    pub(super) fn fold_into(&self, acc: &mut [Option<ListFreshness>; 4]) {
        let parts = [
            self.tools,
            self.prompts,
            self.resources,
            self.resource_templates,
        ];
        for (slot, part) in acc.iter_mut().zip(parts) {
            if let Some(part) = part {
                *slot = Some(slot.map_or(part, |s| s.and(part)));
            }
        }
    }
}

/// The index of a list in the `[_; 4]` arrays above.
pub(super) fn index(kind: ListKind) -> usize {
    match kind {
        ListKind::Tools => 0,
        ListKind::Prompts => 1,
        ListKind::Resources => 2,
        ListKind::ResourceTemplates => 3,
    }
}

/// The freshness of a list at `now`, given when it was asked for: the ttl shrinks as time passes.
pub(super) fn at(whole: ListFreshness, listed_at: Option<Instant>, now: Instant) -> ListFreshness {
    let Some(listed_at) = listed_at else {
        return ListFreshness { ttl_ms: 0, ..whole };
    };
    let elapsed = now.saturating_duration_since(listed_at).as_millis();
    let left = u128::from(whole.ttl_ms).saturating_sub(elapsed);
    ListFreshness {
        ttl_ms: u64::try_from(left).unwrap_or(u64::MAX),
        ..whole
    }
}

/// When the first list with a positive ttl goes stale (the gateway lists its backends again then).
pub(super) fn first_expiry(
    lists: &[ListFreshness; 4],
    listed_at: Option<Instant>,
) -> Option<Instant> {
    let listed_at = listed_at?;
    lists
        .iter()
        .filter(|f| f.ttl_ms > 0)
        .map(|f| listed_at + Duration::from_millis(f.ttl_ms))
        .min()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn page(v: Value) -> ListFreshness {
        ListFreshness::of_page(v.as_object().unwrap())
    }

    #[test]
    fn a_page_reads_its_cache_fields() {
        let cases = [
            (json!({}), 0, true),
            (json!({"ttlMs": 5000, "cacheScope": "public"}), 5000, true),
            (json!({"ttlMs": 5000, "cacheScope": "private"}), 5000, false),
            (json!({"ttlMs": -1, "cacheScope": "public"}), 0, true),
            (json!({"ttlMs": 1.5, "cacheScope": "public"}), 0, true),
            (json!({"ttlMs": "9", "cacheScope": "public"}), 0, true),
            (json!({"ttlMs": 5000}), 5000, false),
            (json!({"ttlMs": 5000, "cacheScope": "shared"}), 5000, false),
            (json!({"ttlMs": 5000, "cacheScope": 1}), 5000, false),
        ];
        for (result, ttl_ms, public) in cases {
            assert_eq!(
                page(result.clone()),
                ListFreshness { ttl_ms, public },
                "{result}"
            );
        }
    }

    #[test]
    fn contributions_fold_to_the_least_fresh() {
        let mut acc = [None; 4];
        ListsFreshness {
            tools: Some(ListFreshness {
                ttl_ms: 60_000,
                public: true,
            }),
            prompts: Some(ListFreshness {
                ttl_ms: 1_000,
                public: false,
            }),
            ..ListsFreshness::default()
        }
        .fold_into(&mut acc);
        ListsFreshness {
            tools: Some(ListFreshness {
                ttl_ms: 30_000,
                public: true,
            }),
            resources: Some(ListFreshness::NONE),
            ..ListsFreshness::default()
        }
        .fold_into(&mut acc);
        assert_eq!(
            acc,
            [
                Some(ListFreshness {
                    ttl_ms: 30_000,
                    public: true
                }),
                Some(ListFreshness {
                    ttl_ms: 1_000,
                    public: false
                }),
                Some(ListFreshness::NONE),
                None,
            ]
        );
    }

    #[test]
    fn the_ttl_counts_down_from_the_listing() {
        let start = Instant::now();
        let whole = ListFreshness {
            ttl_ms: 10_000,
            public: true,
        };
        let later = start + Duration::from_millis(2_500);
        assert_eq!(at(whole, Some(start), later).ttl_ms, 7_500);
        assert_eq!(
            at(whole, Some(start), start + Duration::from_secs(60)).ttl_ms,
            0
        );
        assert_eq!(at(whole, None, later).ttl_ms, 0);
        let lists = [
            ListFreshness::NONE,
            whole,
            ListFreshness {
                ttl_ms: 4_000,
                public: false,
            },
            ListFreshness::NONE,
        ];
        assert_eq!(
            first_expiry(&lists, Some(start)),
            Some(start + Duration::from_millis(4_000))
        );
        assert_eq!(first_expiry(&ListsFreshness::NONE, Some(start)), None);
    }
}
