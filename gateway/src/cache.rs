//! The gateway's cache of `resources/read` results, as the 2026-07-28 caching rules allow a shared gateway:
//! results a backend marked `cacheScope: "public"` with `ttlMs > 0` are kept for that long and shared by
//! every client; results marked `"private"` are kept under the authorization context of the client that
//! read them ([`AuthContext`]) and reused for that context only. Results of `input_required` retries are
//! never cached; an update or list change for the URI drops its entries. A hit answers with the time left as
//! its `ttlMs`.
//!
//! An entry is the answer of one backend: it is keyed by the backend the request's view routed the URI to
//! (as well as the URI), so a view that routes the URI elsewhere (or cannot see that backend) never reads
//! it, and no backend fills the entry of a URI another backend serves. A read is kept only if nothing
//! dropped entries while it ran ([`ResourceCache::ticket`]): a reload (which replaces backends under their
//! names and clears the cache), a list change or an update makes a read begun before it not kept, so no entry
//! of a replaced backend, or older than an update, outlives the clear.
//!
//! Bounded in entries ([`MAX_ENTRIES`]) and in bytes (`[server] cache_max_bytes`: the cached results' JSON
//! text, counted exactly), both at all times: to make room, expired entries leave first, then the soonest to
//! expire, from the front of an index by expiry kept beside the map (O(log n) each, no scan). A result larger
//! than the whole byte bound is served and not cached. The lock is held only for map operations.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use protocol::raw::RawObject;
use serde_json::value::RawValue;

use crate::auth_context::AuthContext;

/// Entries held at most.
pub const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
struct Entry {
    result: Box<RawValue>,
    /// Its place in the index by expiry: when it expires, and a tie-breaker.
    at: (Instant, u64),
}

/// An entry's key: the backend that answered, the URI, and the authorization context for a private entry
/// (`None`: public).
type Key = (String, String, Option<AuthContext>);

/// When a read began, as the cache counts: taken before the backend is asked, handed back with its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

/// Cached `resources/read` results by backend and URI (and, for private ones, authorization context).
#[derive(Debug)]
pub struct ResourceCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    /// The same entries by expiry, soonest first.
    by_expiry: BTreeMap<(Instant, u64), Key>,
    /// The bytes of every entry's result, exactly.
    bytes: usize,
    next: u64,
    /// One more each time entries are dropped for a reason other than room (clear, invalidation).
    generation: u64,
}

impl Inner {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        self.by_expiry.remove(&entry.at);
        self.bytes -= entry.result.get().len();
        Some(entry)
    }

    /// Drops the entry that expires soonest; false when there is none.
    fn drop_soonest(&mut self) -> bool {
        let Some((_, key)) = self.by_expiry.pop_first() else {
            return false;
        };
        if let Some(entry) = self.entries.remove(&key) {
            self.bytes -= entry.result.get().len();
        }
        true
    }

    fn drop_expired(&mut self, now: Instant) {
        while self
            .by_expiry
            .first_key_value()
            .is_some_and(|((expires, _), _)| *expires <= now)
        {
            self.drop_soonest();
        }
    }

    fn insert(&mut self, key: Key, result: Box<RawValue>, expires: Instant) {
        let at = (expires, self.next);
        self.next += 1;
        self.bytes += result.get().len();
        self.by_expiry.insert(at, key.clone());
        self.entries.insert(key, Entry { result, at });
    }
}

impl Default for ResourceCache {
    fn default() -> ResourceCache {
        ResourceCache::new(MAX_ENTRIES, crate::config::DEFAULT_CACHE_MAX_BYTES)
    }
}

impl ResourceCache {
    /// An empty cache holding at most `max_entries` results of at most `max_bytes` in all.
    pub fn new(max_entries: usize, max_bytes: usize) -> ResourceCache {
        ResourceCache {
            max_entries,
            max_bytes,
            inner: Mutex::default(),
        }
    }

    /// What a read about to begin hands back to [`ResourceCache::offer`] with its result.
    pub fn ticket(&self) -> Ticket {
        Ticket(self.inner.lock().map_or(u64::MAX, |inner| inner.generation))
    }

    /// A fresh cached result of `backend` for `uri` that `auth` may reuse (a public one, else its own private
    /// one), its `ttlMs` set to the time left.
    pub fn get(&self, backend: &str, uri: &str, auth: &AuthContext) -> Option<Box<RawValue>> {
        let now = Instant::now();
        let (result, left) = {
            let mut inner = self.inner.lock().ok()?;
            // The public entry first, then the caller's private one (one key, its scope changed).
            let mut key: Key = (backend.to_owned(), uri.to_owned(), None);
            let mut found = None;
            for scope in [None, Some(*auth)] {
                key.2 = scope;
                match inner.entries.get(&key) {
                    Some(entry) if entry.at.0 > now => {
                        found = Some((entry.result.clone(), entry.at.0 - now));
                        break;
                    }
                    Some(_) => {
                        inner.remove(&key);
                    }
                    None => {}
                }
            }
            found?
        };
        let mut object = RawObject::parse(&result)?;
        object.set_value("ttlMs", &(left.as_millis() as u64));
        Some(object.to_raw())
    }

    /// Keeps `backend`'s result for `uri`, read by `auth` with `ticket`, when it says it may be reused:
    /// `resultType` complete, `ttlMs` above zero; shared when `cacheScope` is public, for `auth` only when
    /// private. It replaces the entry it is a newer read of; one larger than the whole byte bound is not
    /// kept, and neither is one whose read began before entries were cleared or invalidated.
    pub fn offer(
        &self,
        ticket: Ticket,
        backend: &str,
        uri: &str,
        auth: &AuthContext,
        result: &RawValue,
    ) {
        let Some((ttl, public)) = reusable(result) else {
            return;
        };
        let key = (
            backend.to_owned(),
            uri.to_owned(),
            (!public).then_some(*auth),
        );
        let size = result.get().len();
        let kept = (size <= self.max_bytes).then(|| result.to_owned());
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.generation != ticket.0 {
            return;
        }
        inner.remove(&key);
        let Some(result) = kept else {
            return;
        };
        let now = Instant::now();
        inner.drop_expired(now);
        while (inner.entries.len() >= self.max_entries || inner.bytes + size > self.max_bytes)
            && inner.drop_soonest()
        {}
        if inner.entries.len() < self.max_entries && inner.bytes + size <= self.max_bytes {
            inner.insert(key, result, now + ttl);
        }
    }

    /// Drops the entries of `uri`, public and private, of every backend (a backend said it changed); reads
    /// in flight are not kept.
    pub fn invalidate(&self, uri: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.generation += 1;
            let keys: Vec<Key> = inner
                .entries
                .keys()
                .filter(|(_, u, _)| u == uri)
                .cloned()
                .collect();
            for key in keys {
                inner.remove(&key);
            }
        }
    }

    /// Drops everything (the resource list changed, or a reload replaced backends); reads in flight are not
    /// kept.
    pub fn clear(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            let generation = inner.generation + 1;
            *inner = Inner {
                generation,
                ..Inner::default()
            };
        }
    }
}

/// How long a result may be reused, and whether by everyone (public) or its reader only (private).
fn reusable(result: &RawValue) -> Option<(Duration, bool)> {
    let object = RawObject::parse(result)?;
    let complete = object
        .get("resultType")
        .is_none_or(|t| t.get() == "\"complete\"");
    let public = match object.get("cacheScope").map(RawValue::get) {
        Some("\"public\"") => true,
        Some("\"private\"") => false,
        _ => return None,
    };
    let ttl: u64 = serde_json::from_str(object.get("ttlMs")?.get()).ok()?;
    (complete && ttl > 0).then(|| (Duration::from_millis(ttl), public))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    impl ResourceCache {
        /// The URIs held (sorted) and their bytes, checking the counter and the index against the map.
        fn held(&self) -> (Vec<String>, usize) {
            let inner = self.inner.lock().unwrap();
            let bytes: usize = inner.entries.values().map(|e| e.result.get().len()).sum();
            assert_eq!(inner.bytes, bytes, "the byte count is exact");
            assert_eq!(inner.entries.len(), inner.by_expiry.len());
            let mut uris: Vec<String> = inner.entries.keys().map(|(_, u, _)| u.clone()).collect();
            uris.sort();
            (uris, bytes)
        }
    }

    /// A public result of exactly `bytes` bytes, reusable for `ttl_ms`.
    fn sized(bytes: usize, ttl_ms: u64) -> Box<RawValue> {
        let with = |text: &str| {
            format!(
                r#"{{"contents":[{{"text":"{text}"}}],"ttlMs":{ttl_ms},"cacheScope":"public"}}"#
            )
        };
        let text = "x".repeat(bytes - with("").len());
        let result = raw(&with(&text));
        assert_eq!(result.get().len(), bytes);
        result
    }

    #[test]
    fn the_resource_cache_is_bounded_in_bytes() {
        // 3 entries, 1000 bytes. (uri, result bytes, ttl ms, what is held after it)
        let cache = ResourceCache::new(3, 1000);
        let table: [(&str, usize, u64, &[&str]); 11] = [
            ("a", 400, 60_000, &["a"]),
            ("b", 400, 30_000, &["a", "b"]),
            // no room for 400 more: the soonest to expire goes
            ("c", 400, 90_000, &["a", "c"]),
            // larger than the whole bound: served, never cached, nothing else dropped for it
            ("big", 1001, 60_000, &["a", "c"]),
            // a newer read of a replaces it, and needs c's room too
            ("a", 1000, 60_000, &["a"]),
            ("d", 100, 120_000, &["d"]),
            ("e", 100, 120_000, &["d", "e"]),
            ("f", 100, 120_000, &["d", "e", "f"]),
            // the entry bound: the soonest to expire (d, the oldest of equal lifetimes) goes
            ("g", 100, 120_000, &["e", "f", "g"]),
            // a newer read of e too large to keep: the stale one goes, the new one is not kept
            ("e", 1001, 60_000, &["f", "g"]),
            // up to the bound exactly
            ("h", 800, 60_000, &["f", "g", "h"]),
        ];
        for (uri, bytes, ttl, want) in table {
            cache.offer(
                cache.ticket(),
                "b",
                uri,
                &AuthContext::ANONYMOUS,
                &sized(bytes, ttl),
            );
            let (held, total) = cache.held();
            assert_eq!(held, want, "after {uri} ({bytes} bytes)");
            assert!(total <= 1000 && held.len() <= 3, "{total} bytes");
        }
        assert!(cache.get("b", "big", &AuthContext::ANONYMOUS).is_none());
        assert!(cache.get("b", "h", &AuthContext::ANONYMOUS).is_some());
        cache.invalidate("h");
        cache.clear();
        assert_eq!(cache.held(), (vec![], 0));
    }

    #[test]
    fn expired_results_leave_as_new_ones_arrive() {
        let cache = ResourceCache::new(3, 1000);
        cache.offer(
            cache.ticket(),
            "b",
            "x",
            &AuthContext::ANONYMOUS,
            &sized(100, 1),
        );
        cache.offer(
            cache.ticket(),
            "b",
            "y",
            &AuthContext::ANONYMOUS,
            &sized(400, 60_000),
        );
        std::thread::sleep(Duration::from_millis(5));
        // z fits beside both, but x has expired: it leaves, y stays
        cache.offer(
            cache.ticket(),
            "b",
            "z",
            &AuthContext::ANONYMOUS,
            &sized(100, 90_000),
        );
        assert_eq!(cache.held(), (vec!["y".into(), "z".into()], 500));
        cache.invalidate("y");
        assert_eq!(cache.held(), (vec!["z".into()], 100));
    }

    #[test]
    fn complete_results_with_a_ttl_are_kept_public_for_all_private_for_their_reader() {
        let cache = ResourceCache::default();
        let alice = AuthContext::from_authorization(Some(b"Bearer alice"));
        let bob = AuthContext::from_authorization(Some(b"Bearer bob"));
        // (result, reused by its reader, reused by another)
        let table = [
            (
                r#"{"contents":[],"resultType":"complete","ttlMs":60000,"cacheScope":"public"}"#,
                true,
                true,
            ),
            (
                r#"{"contents":[],"ttlMs":60000,"cacheScope":"public"}"#,
                true,
                true,
            ),
            (
                r#"{"contents":[],"resultType":"complete","ttlMs":60000,"cacheScope":"private"}"#,
                true,
                false,
            ),
            (
                r#"{"contents":[],"resultType":"complete","ttlMs":0,"cacheScope":"public"}"#,
                false,
                false,
            ),
            (
                r#"{"contents":[],"resultType":"complete","ttlMs":60000,"cacheScope":"shared"}"#,
                false,
                false,
            ),
            (
                r#"{"resultType":"input_required","ttlMs":60000,"cacheScope":"public"}"#,
                false,
                false,
            ),
            (r#"{"contents":[]}"#, false, false),
        ];
        for (i, (result, reader, other)) in table.iter().enumerate() {
            let uri = format!("u{i}");
            cache.offer(cache.ticket(), "b", &uri, &alice, &raw(result));
            assert_eq!(cache.get("b", &uri, &alice).is_some(), *reader, "{result}");
            assert_eq!(cache.get("b", &uri, &bob).is_some(), *other, "{result}");
            assert_eq!(
                cache.get("b", &uri, &AuthContext::ANONYMOUS).is_some(),
                *other,
                "{result}"
            );
        }
    }

    #[test]
    fn hits_report_the_time_left_and_invalidation_drops_every_scope() {
        let cache = ResourceCache::default();
        let alice = AuthContext::from_authorization(Some(b"Bearer alice"));
        cache.offer(
            cache.ticket(),
            "b",
            "u",
            &alice,
            &raw(r#"{"contents":[{"uri":"u","text":"t"}],"ttlMs":60000,"cacheScope":"public"}"#),
        );
        cache.offer(
            cache.ticket(),
            "b",
            "u",
            &alice,
            &raw(
                r#"{"contents":[{"uri":"u","text":"mine"}],"ttlMs":60000,"cacheScope":"private"}"#,
            ),
        );
        let hit: serde_json::Value =
            serde_json::from_str(cache.get("b", "u", &alice).unwrap().get()).unwrap();
        let left = hit["ttlMs"].as_u64().unwrap();
        assert!(left <= 60_000 && left > 50_000, "{left}");
        cache.invalidate("u");
        assert!(cache.get("b", "u", &alice).is_none());
        cache.offer(
            cache.ticket(),
            "b",
            "v",
            &alice,
            &raw(r#"{"contents":[],"ttlMs":1,"cacheScope":"public"}"#),
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(cache.get("b", "v", &alice).is_none(), "expired");
    }

    #[test]
    fn an_entry_is_the_answer_of_the_backend_it_was_routed_to() {
        let cache = ResourceCache::new(3, 1000);
        let from = |text: &str| {
            raw(&format!(
                r#"{{"contents":[{{"text":"{text}"}}],"ttlMs":60000,"cacheScope":"public"}}"#
            ))
        };
        let text = |hit: Option<Box<RawValue>>| -> Option<String> {
            let hit: serde_json::Value = serde_json::from_str(hit?.get()).unwrap();
            hit["contents"][0]["text"].as_str().map(str::to_owned)
        };
        let anyone = AuthContext::ANONYMOUS;
        cache.offer(cache.ticket(), "a", "u", &anyone, &from("a's"));
        assert_eq!(text(cache.get("b", "u", &anyone)), None, "not b's");
        cache.offer(cache.ticket(), "b", "u", &anyone, &from("b's"));
        assert_eq!(text(cache.get("a", "u", &anyone)).as_deref(), Some("a's"));
        assert_eq!(text(cache.get("b", "u", &anyone)).as_deref(), Some("b's"));
        // Both count against the bound: two more entries make room by dropping the soonest to expire (a's).
        cache.offer(cache.ticket(), "a", "v", &anyone, &from("v"));
        cache.offer(cache.ticket(), "a", "w", &anyone, &from("w"));
        assert_eq!(cache.held().0, ["u", "v", "w"]);
        assert_eq!(text(cache.get("a", "u", &anyone)), None);
        // An update of u drops it whoever served it.
        cache.invalidate("u");
        assert_eq!(cache.held().0, ["v", "w"]);
    }

    #[test]
    fn a_read_begun_before_a_clear_or_an_invalidation_is_not_kept() {
        let cache = ResourceCache::default();
        let result = raw(r#"{"contents":[],"ttlMs":60000,"cacheScope":"public"}"#);
        let anyone = AuthContext::ANONYMOUS;
        type Meanwhile = fn(&ResourceCache);
        // (what happens while the read runs, whether its result is kept)
        let table: [(Meanwhile, bool); 4] = [
            (|_| {}, true),
            (ResourceCache::clear, false),
            (|c| c.invalidate("some other uri"), false),
            (|c| c.invalidate("u"), false),
        ];
        for (i, (meanwhile, kept)) in table.into_iter().enumerate() {
            cache.clear();
            let ticket = cache.ticket();
            meanwhile(&cache);
            cache.offer(ticket, "b", "u", &anyone, &result);
            assert_eq!(cache.get("b", "u", &anyone).is_some(), kept, "case {i}");
        }
    }
}
