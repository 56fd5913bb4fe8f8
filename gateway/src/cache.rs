//! The gateway's cache of `resources/read` results, as the 2026-07-28 caching rules allow a shared gateway:
//! results a backend marked `cacheScope: "public"` with `ttlMs > 0` are kept for that long and shared by
//! every client; results marked `"private"` are kept under the authorization context of the client that
//! read them ([`AuthContext`]) and reused for that context only. Results of `input_required` retries are
//! never cached; an update or list change for the URI drops its entries. A hit answers with the time left as
//! its `ttlMs`. Bounded: at most [`MAX_ENTRIES`] entries; the lock is held only for map operations.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use protocol::raw::RawObject;
use serde_json::value::RawValue;

use crate::auth_context::AuthContext;

/// Entries held at most; past it, expired ones are swept and then the soonest to expire goes.
pub const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
struct Entry {
    result: Box<RawValue>,
    expires: Instant,
}

/// An entry's key: the URI, and the authorization context for a private entry (`None`: public).
type Key = (String, Option<AuthContext>);

/// Cached `resources/read` results by URI (and, for private ones, authorization context).
#[derive(Debug, Default)]
pub struct ResourceCache {
    entries: Mutex<HashMap<Key, Entry>>,
}

impl ResourceCache {
    /// A fresh cached result for `uri` that `auth` may reuse (a public one, else its own private one), its
    /// `ttlMs` set to the time left.
    pub fn get(&self, uri: &str, auth: &AuthContext) -> Option<Box<RawValue>> {
        let now = Instant::now();
        let (result, left) = {
            let mut entries = self.entries.lock().ok()?;
            // The public entry first, then the caller's private one (one key, its scope changed).
            let mut key: Key = (uri.to_owned(), None);
            let mut found = None;
            for scope in [None, Some(*auth)] {
                key.1 = scope;
                match entries.get(&key) {
                    Some(entry) if entry.expires > now => {
                        found = Some((entry.result.clone(), entry.expires - now));
                        break;
                    }
                    Some(_) => {
                        entries.remove(&key);
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

    /// Keeps a backend's result read by `auth` when it says it may be reused: `resultType` complete,
    /// `ttlMs` above zero; shared when `cacheScope` is public, for `auth` only when private.
    pub fn offer(&self, uri: &str, auth: &AuthContext, result: &RawValue) {
        let Some((ttl, public)) = reusable(result) else {
            return;
        };
        let key = (uri.to_owned(), (!public).then_some(*auth));
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let now = Instant::now();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            entries.retain(|_, e| e.expires > now);
            if entries.len() >= MAX_ENTRIES {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, e)| e.expires)
                    .map(|(k, _)| k.clone());
                if let Some(k) = soonest {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(
            key,
            Entry {
                result: result.to_owned(),
                expires: now + ttl,
            },
        );
    }

    /// Drops the entries of `uri`, public and private (the backend said it changed).
    pub fn invalidate(&self, uri: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|(u, _), _| u != uri);
        }
    }

    /// Drops everything (the resource list changed).
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
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
            cache.offer(&uri, &alice, &raw(result));
            assert_eq!(cache.get(&uri, &alice).is_some(), *reader, "{result}");
            assert_eq!(cache.get(&uri, &bob).is_some(), *other, "{result}");
            assert_eq!(
                cache.get(&uri, &AuthContext::ANONYMOUS).is_some(),
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
            "u",
            &alice,
            &raw(r#"{"contents":[{"uri":"u","text":"t"}],"ttlMs":60000,"cacheScope":"public"}"#),
        );
        cache.offer(
            "u",
            &alice,
            &raw(
                r#"{"contents":[{"uri":"u","text":"mine"}],"ttlMs":60000,"cacheScope":"private"}"#,
            ),
        );
        let hit: serde_json::Value =
            serde_json::from_str(cache.get("u", &alice).unwrap().get()).unwrap();
        let left = hit["ttlMs"].as_u64().unwrap();
        assert!(left <= 60_000 && left > 50_000, "{left}");
        cache.invalidate("u");
        assert!(cache.get("u", &alice).is_none());
        cache.offer(
            "v",
            &alice,
            &raw(r#"{"contents":[],"ttlMs":1,"cacheScope":"public"}"#),
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(cache.get("v", &alice).is_none(), "expired");
    }
}
