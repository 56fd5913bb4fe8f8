//! The gateway's cache of `resources/read` results, as the 2026-07-28 caching rules allow a shared gateway:
//! only results a backend marked `cacheScope: "public"` with `ttlMs > 0` are kept, for that long, keyed by URI;
//! `"private"` results are never shared (the gateway has no authorization contexts to key them by yet);
//! results of `input_required` retries are never cached; an update or list change for the URI drops the entry.
//! A hit answers with the time left as its `ttlMs`. Bounded: at most [`MAX_ENTRIES`] entries.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use protocol::raw::RawObject;
use serde_json::value::RawValue;

/// Entries held at most; past it, expired ones are swept and then the soonest to expire goes.
pub const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
struct Entry {
    result: Box<RawValue>,
    expires: Instant,
}

/// Cached `resources/read` results by URI.
#[derive(Debug, Default)]
pub struct ResourceCache {
    entries: Mutex<HashMap<String, Entry>>,
}

impl ResourceCache {
    /// A fresh cached result for `uri`, its `ttlMs` set to the time left.
    pub fn get(&self, uri: &str) -> Option<Box<RawValue>> {
        let now = Instant::now();
        let (result, left) = {
            let mut entries = self.entries.lock().ok()?;
            let entry = entries.get(uri)?;
            if entry.expires <= now {
                entries.remove(uri);
                return None;
            }
            (entry.result.clone(), entry.expires - now)
        };
        let mut object = RawObject::parse(&result)?;
        object.set_value("ttlMs", &(left.as_millis() as u64));
        Some(object.to_raw())
    }

    /// Keeps a backend's result when it says it may be shared: `resultType` complete, `cacheScope` public,
    /// `ttlMs` above zero.
    pub fn offer(&self, uri: &str, result: &RawValue) {
        let Some(ttl) = shareable_ttl(result) else {
            return;
        };
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let now = Instant::now();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(uri) {
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
            uri.to_owned(),
            Entry {
                result: result.to_owned(),
                expires: now + ttl,
            },
        );
    }

    /// Drops the entry of `uri` (the backend said it changed).
    pub fn invalidate(&self, uri: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(uri);
        }
    }

    /// Drops everything (the resource list changed).
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
    }
}

/// The time a result may be shared, if it may.
fn shareable_ttl(result: &RawValue) -> Option<Duration> {
    let object = RawObject::parse(result)?;
    let complete = object
        .get("resultType")
        .is_none_or(|t| t.get() == "\"complete\"");
    let public = object
        .get("cacheScope")
        .is_some_and(|s| s.get() == "\"public\"");
    let ttl: u64 = serde_json::from_str(object.get("ttlMs")?.get()).ok()?;
    (complete && public && ttl > 0).then(|| Duration::from_millis(ttl))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn only_public_complete_results_with_a_ttl_are_kept() {
        let cache = ResourceCache::default();
        // (result, kept)
        let table = [
            (
                r#"{"contents":[],"resultType":"complete","ttlMs":60000,"cacheScope":"public"}"#,
                true,
            ),
            (
                r#"{"contents":[],"ttlMs":60000,"cacheScope":"public"}"#,
                true,
            ),
            (
                r#"{"contents":[],"resultType":"complete","ttlMs":60000,"cacheScope":"private"}"#,
                false,
            ),
            (
                r#"{"contents":[],"resultType":"complete","ttlMs":0,"cacheScope":"public"}"#,
                false,
            ),
            (
                r#"{"resultType":"input_required","ttlMs":60000,"cacheScope":"public"}"#,
                false,
            ),
            (r#"{"contents":[]}"#, false),
        ];
        for (i, (result, kept)) in table.iter().enumerate() {
            let uri = format!("u{i}");
            cache.offer(&uri, &raw(result));
            assert_eq!(cache.get(&uri).is_some(), *kept, "{result}");
        }
    }

    #[test]
    fn hits_report_the_time_left_and_invalidation_drops() {
        let cache = ResourceCache::default();
        cache.offer(
            "u",
            &raw(r#"{"contents":[{"uri":"u","text":"t"}],"ttlMs":60000,"cacheScope":"public"}"#),
        );
        let hit: serde_json::Value = serde_json::from_str(cache.get("u").unwrap().get()).unwrap();
        let left = hit["ttlMs"].as_u64().unwrap();
        assert!(left <= 60_000 && left > 50_000, "{left}");
        assert_eq!(hit["contents"][0]["text"], "t");
        cache.invalidate("u");
        assert!(cache.get("u").is_none());
        cache.offer(
            "v",
            &raw(r#"{"contents":[],"ttlMs":1,"cacheScope":"public"}"#),
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(cache.get("v").is_none(), "expired");
    }
}
