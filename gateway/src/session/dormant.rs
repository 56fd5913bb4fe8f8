//! What a replica remembers of sealed sessions it holds no actor for: when each was last used here, its
//! log level, and which ended (a DELETE or idle expiry) — kept until the session's id expires, so an ended
//! session never comes back from its id. Small and fixed-size per session (32 bytes in the map's table and a
//! control byte: 38 to 75 bytes resident each as the table fills and doubles; 74 at 935,912 records in
//! `bench/run.sh` (d)), bounded in number: when full, expired records go first, then the ones nearest their
//! expiry (a tombstone dropped early lets its session's id open again until it expires; counted and logged).

use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;

use super::sealed::SessionKey;

/// One session's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Seconds since the Unix epoch (saturated to `u32`).
    pub last_use: u32,
    /// When its id expires, seconds since the Unix epoch.
    pub expires: u32,
    /// The `logging/setLevel` level as its index, `u8::MAX` for none.
    pub level: u8,
    /// The session ended: its id is refused until it expires.
    pub ended: bool,
}

/// The records, by session.
#[derive(Debug)]
pub struct Dormant {
    map: DashMap<SessionKey, Record>,
    max: usize,
    /// Tombstones dropped before their session's expiry to stay within `max`.
    pruned_early: AtomicU64,
}

/// Seconds as a record holds them.
pub fn secs(unix: u64) -> u32 {
    u32::try_from(unix).unwrap_or(u32::MAX)
}

impl Dormant {
    /// At most `max` records.
    pub fn new(max: usize) -> Dormant {
        Dormant {
            map: DashMap::new(),
            max: max.max(1),
            pruned_early: AtomicU64::new(0),
        }
    }

    /// Records a session (replacing what was recorded).
    pub fn put(&self, key: SessionKey, record: Record, now: u64) {
        if self.map.len() >= self.max && !self.map.contains_key(&key) {
            self.make_room(now);
        }
        self.map.insert(key, record);
    }

    /// The record of a session, taken out (its actor is rebuilt and holds its state from now on); an ended
    /// session's record stays.
    pub fn take(&self, key: SessionKey) -> Option<Record> {
        self.map
            .remove_if(&key, |_, r| !r.ended)
            .map(|(_, r)| r)
            .or_else(|| self.get(key))
    }

    /// The record of a session.
    pub fn get(&self, key: SessionKey) -> Option<Record> {
        self.map.get(&key).map(|r| *r)
    }

    /// Drops records whose sessions expired.
    pub fn sweep(&self, now: u64) {
        let now = secs(now);
        self.map.retain(|_, r| r.expires > now);
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Tombstones dropped early so far.
    pub fn pruned_early(&self) -> u64 {
        self.pruned_early.load(Ordering::Relaxed)
    }

    /// Expired records out; if that is not enough, the sixteenth nearest their expiry.
    fn make_room(&self, now: u64) {
        self.sweep(now);
        if self.map.len() < self.max {
            return;
        }
        let mut expiries: Vec<u32> = self.map.iter().map(|r| r.expires).collect();
        let cut = (expiries.len() / 16).max(1).min(expiries.len() - 1);
        let (_, nth, _) = expiries.select_nth_unstable(cut);
        let before = *nth;
        let mut dropped = 0u64;
        self.map.retain(|_, r| {
            let keep = r.expires > before;
            dropped += u64::from(!keep && r.ended);
            keep
        });
        if dropped > 0 {
            let total = self.pruned_early.fetch_add(dropped, Ordering::Relaxed) + dropped;
            tracing::warn!(
                dropped,
                total,
                max = self.max,
                "ended sessions forgotten before their ids expire: the replica holds its maximum of session records"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(expires: u32, ended: bool) -> Record {
        Record {
            last_use: 1,
            expires,
            level: u8::MAX,
            ended,
        }
    }

    #[test]
    fn records_are_bounded_expired_first_then_nearest_expiry() {
        let d = Dormant::new(32);
        for i in 0..32u128 {
            d.put(SessionKey(i), record(100 + i as u32, true), 0);
        }
        assert_eq!(d.len(), 32);
        // Full and nothing expired at 50: the nearest expiries go, the newest record is kept.
        d.put(SessionKey(999), record(10_000, true), 50);
        assert!(d.len() <= 32, "{}", d.len());
        assert!(d.get(SessionKey(999)).is_some());
        assert!(d.get(SessionKey(0)).is_none());
        assert!(d.get(SessionKey(31)).is_some());
        assert!(d.pruned_early() >= 1);
        // At 200, every record expired by then is swept first and not counted as early.
        let before = d.pruned_early();
        for i in 0..20u128 {
            d.put(SessionKey(2_000 + i), record(20_000, false), 200);
        }
        assert_eq!(d.len(), 21);
        assert_eq!(d.pruned_early(), before, "only expired tombstones went");
    }

    #[test]
    fn an_ended_record_is_not_taken_out() {
        let d = Dormant::new(8);
        d.put(SessionKey(1), record(100, true), 0);
        d.put(SessionKey(2), record(100, false), 0);
        assert!(d.take(SessionKey(1)).is_some_and(|r| r.ended));
        assert!(d.get(SessionKey(1)).is_some());
        assert!(d.take(SessionKey(2)).is_some());
        assert!(d.get(SessionKey(2)).is_none());
    }
}
