//! What the gateway knows of each backend's catalog between builds: its last good listing and when it was
//! made, whether the latest attempt to list it failed (and since when it has been down), and when it is due
//! to be listed again. One short `std` mutex, never held across an `.await`: a build fetches first, then
//! decides under the lock in one synchronous pass.
//!
//! The rule (issue 11): a backend whose listing fails keeps its last good catalog, marked stale, and is
//! listed again with backoff until it answers; it is left out only when it is really down — not connected
//! for longer than the grace period (`[server] down_grace_ms`), or never listed at all.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::catalog::{BackendListing, CatalogBuilder, CatalogError, CatalogSnapshot, ListKind};

/// The first retry of a failed listing waits this long; each further one twice as long.
const RETRY_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between two attempts to list a backend that keeps failing.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// What one attempt to list a backend came to.
#[derive(Debug)]
pub enum Attempt {
    /// Every list it announces, all pages.
    Listed(BackendListing),
    /// Some of the lists it announces, the others failed: those it keeps from its last good listing (if
    /// any), marked stale, retried like a failed listing.
    Partial(BackendListing, Vec<FailedList>),
    /// It was up but did not list (refused, timed out, invalid pages).
    Failed(String),
    /// It is not connected (connecting, down, shut down).
    Down(String),
}

/// A list a backend announced but did not give; its other lists were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedList {
    /// Which list.
    pub kind: ListKind,
    /// Why (the backend's error, a timeout, an invalid page).
    pub reason: String,
}

impl std::fmt::Display for FailedList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.method(), self.reason)
    }
}

/// A backend's place in the catalog, as `/readyz` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Listed by the latest attempt.
    Up,
    /// Listed from its last good listing: the latest attempt failed, or it is down within the grace period.
    Stale {
        /// Why the latest attempt did not list it.
        reason: String,
    },
    /// Left out of the catalog.
    Down {
        /// Why.
        reason: String,
    },
}

impl Standing {
    /// `"up"`, `"stale"` or `"down"`.
    pub fn label(&self) -> &'static str {
        match self {
            Standing::Up => "up",
            Standing::Stale { .. } => "stale",
            Standing::Down { .. } => "down",
        }
    }

    /// Why it is not up.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Standing::Up => None,
            Standing::Stale { reason } | Standing::Down { reason } => Some(reason),
        }
    }
}

/// One backend, as `/readyz` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendReport {
    /// The configured name.
    pub name: String,
    /// Up, stale or down, and why.
    pub standing: Standing,
    /// How old the catalog the gateway holds for it is (`None`: never listed).
    pub catalog_age: Option<Duration>,
}

#[derive(Debug, Clone)]
struct Slot {
    good: Option<(BackendListing, Instant)>,
    standing: Standing,
    /// When it was first seen not connected in the current outage.
    down_since: Option<Instant>,
    /// Consecutive failed attempts (sets the retry's backoff).
    failures: u32,
    /// When it is to be listed again without being asked to.
    due: Option<Instant>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            good: None,
            standing: Standing::Down {
                reason: "not listed yet".to_owned(),
            },
            down_since: None,
            failures: 0,
            due: None,
        }
    }
}

/// Every backend's catalog state (see the module docs).
#[derive(Debug)]
pub struct Ledger {
    grace: Duration,
    slots: Mutex<BTreeMap<String, Slot>>,
    /// Tool names no backend may expose (set at start and by a reload; locked only inside `slots`' lock,
    /// never the other way round).
    reserved: Mutex<Vec<String>>,
}

impl Ledger {
    /// A ledger for these backends; a backend down for longer than `grace` is left out.
    pub fn new<'a>(backends: impl IntoIterator<Item = &'a str>, grace: Duration) -> Ledger {
        let slots = backends
            .into_iter()
            .map(|name| (name.to_owned(), Slot::new()))
            .collect();
        Ledger {
            grace,
            slots: Mutex::new(slots),
            reserved: Mutex::new(Vec::new()),
        }
    }

    /// The same ledger, reserving these tool names for the gateway.
    pub fn reserving(self, names: Vec<String>) -> Ledger {
        *self.reserved.lock().unwrap_or_else(PoisonError::into_inner) = names;
        self
    }

    fn reserved(&self) -> Vec<String> {
        self.reserved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records what the attempts of one build came to (backends without an attempt keep what they had, but
    /// their grace period is looked at again), schedules the retries, and builds the snapshot: each backend
    /// added fresh (its ttl aged to `now`), added stale, or missing. All under one lock, so `/readyz` never
    /// reports a standing the build then rejects.
    ///
    /// A collision fails the build when `asked` is `None` (at start: a configuration error). Otherwise the
    /// backend whose new listing collides (the one `asked` includes, else the second named) is left out —
    /// down, the collision its reason — and the rest are built: one backend never freezes the catalog of
    /// all of them. Each round leaves one out, so this ends.
    pub fn build(
        &self,
        attempts: BTreeMap<String, Attempt>,
        listed_at: Instant,
        now: Instant,
        asked: Option<&dyn Fn(&str) -> bool>,
    ) -> Result<CatalogSnapshot, CatalogError> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut attempts = attempts;
        for (name, slot) in slots.iter_mut() {
            let before = slot.standing.label();
            match attempts.remove(name) {
                Some(attempt) => self.record(slot, attempt, now),
                None => self.reconsider(slot, now),
            }
            log_change(name, before, slot);
        }
        let reserved = self.reserved();
        loop {
            let mut builder = CatalogBuilder::new();
            builder.reserve(&reserved);
            builder.listed_at(listed_at);
            fill(&slots, &mut builder, now);
            let (error, asked) = match (builder.build(), asked) {
                (Err(error), Some(asked)) => (error, asked),
                (built, _) => return built,
            };
            let culprit = match &error {
                CatalogError::Collision { first, second, .. } => {
                    if asked(second) || !asked(first) {
                        second
                    } else {
                        first
                    }
                }
                CatalogError::Reserved { backend, .. } => backend,
            };
            tracing::error!(backend = %culprit, %error, "backend left out of the catalog");
            let Some(slot) = slots.get_mut(culprit.as_str()) else {
                return Err(error);
            };
            slot.good = None;
            slot.due = None;
            slot.standing = Standing::Down {
                reason: format!("{error}; left out until it lists again"),
            };
        }
    }

    /// A config reload's catalog, built beside the current one: the backends are now `names`; those in
    /// `fresh` (added, or changed and restarted) start over with `attempts`' outcome, the others keep what
    /// they had. A collision is an error and changes nothing (the reload is refused and the old catalog
    /// stays); otherwise the ledger holds the new set from then on.
    pub fn reconfigure(
        &self,
        names: &[&str],
        fresh: &BTreeSet<String>,
        reserved: &[String],
        attempts: BTreeMap<String, Attempt>,
        listed_at: Instant,
        now: Instant,
    ) -> Result<CatalogSnapshot, CatalogError> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut attempts = attempts;
        let mut next: BTreeMap<String, Slot> = BTreeMap::new();
        for name in names {
            let mut slot = match slots.get(*name) {
                Some(kept) if !fresh.contains(*name) => kept.clone(),
                _ => Slot::new(),
            };
            match attempts.remove(*name) {
                Some(attempt) => self.record(&mut slot, attempt, now),
                None => self.reconsider(&mut slot, now),
            }
            next.insert((*name).to_owned(), slot);
        }
        let mut builder = CatalogBuilder::new();
        builder.reserve(reserved);
        builder.listed_at(listed_at);
        fill(&next, &mut builder, now);
        let snapshot = builder.build()?;
        *slots = next;
        *self.reserved.lock().unwrap_or_else(PoisonError::into_inner) = reserved.to_vec();
        Ok(snapshot)
    }

    fn record(&self, slot: &mut Slot, attempt: Attempt, now: Instant) {
        match attempt {
            Attempt::Listed(listing) => {
                slot.good = Some((listing, now));
                slot.standing = Standing::Up;
                slot.down_since = None;
                slot.failures = 0;
                slot.due = None;
            }
            Attempt::Partial(mut listing, failed) => {
                if let Some((previous, _)) = &slot.good {
                    for f in &failed {
                        keep_list(&mut listing, previous, f.kind);
                    }
                }
                let reasons: Vec<String> = failed.iter().map(ToString::to_string).collect();
                slot.good = Some((listing, now));
                slot.down_since = None;
                slot.failures = slot.failures.saturating_add(1);
                slot.due = Some(now + retry_delay(slot.failures));
                slot.standing = Standing::Stale {
                    reason: reasons.join("; "),
                };
            }
            Attempt::Failed(reason) => {
                slot.down_since = None;
                slot.failures = slot.failures.saturating_add(1);
                slot.due = Some(now + retry_delay(slot.failures));
                slot.standing = if slot.good.is_some() {
                    Standing::Stale { reason }
                } else {
                    Standing::Down { reason }
                };
            }
            Attempt::Down(reason) => {
                let since = *slot.down_since.get_or_insert(now);
                // It is listed again when it comes back (its `Ready`); until then only the end of the grace
                // period changes anything.
                slot.failures = 0;
                let grace_ends = since + self.grace;
                slot.standing = if slot.good.is_some() && now < grace_ends {
                    slot.due = Some(grace_ends);
                    Standing::Stale { reason }
                } else {
                    slot.due = None;
                    Standing::Down { reason }
                };
            }
        }
    }

    /// A backend not asked in this build: only its grace period can have run out.
    fn reconsider(&self, slot: &mut Slot, now: Instant) {
        if let (Some(since), Standing::Stale { reason }) = (slot.down_since, &slot.standing) {
            if now >= since + self.grace {
                slot.standing = Standing::Down {
                    reason: reason.clone(),
                };
                slot.due = None;
            }
        }
    }

    /// When the next backend is due to be listed again (a retry, or the end of a grace period).
    pub fn next_due(&self) -> Option<Instant> {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.values().filter_map(|s| s.due).min()
    }

    /// The backends due by `now` (their due time cleared: the build that lists them sets the next one).
    pub fn take_due(&self, now: Instant) -> BTreeSet<String> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots
            .iter_mut()
            .filter(|(_, s)| s.due.is_some_and(|d| d <= now))
            .map(|(name, s)| {
                s.due = None;
                name.clone()
            })
            .collect()
    }

    /// Every backend's standing and the age of the catalog held for it, in name order.
    pub fn report(&self, now: Instant) -> Vec<BackendReport> {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots
            .iter()
            .map(|(name, s)| BackendReport {
                name: name.clone(),
                standing: s.standing.clone(),
                catalog_age: s
                    .good
                    .as_ref()
                    .map(|(_, at)| now.saturating_duration_since(*at)),
            })
            .collect()
    }
}

/// Adds every backend to `builder`: fresh (its ttl aged to `now`), stale, or missing.
fn fill(slots: &BTreeMap<String, Slot>, builder: &mut CatalogBuilder, now: Instant) {
    for (name, slot) in slots {
        match (&slot.standing, &slot.good) {
            (Standing::Up, Some((listing, at))) => {
                let mut listing = listing.clone();
                listing.freshness = listing.freshness.aged(now.saturating_duration_since(*at));
                builder.add(listing);
            }
            (Standing::Stale { .. }, Some((listing, _))) => builder.stale(listing.clone()),
            (standing, _) => builder.missing(name, standing.reason().unwrap_or("not listed")),
        }
    }
}

/// One line when a backend's standing changes (not once per build).
fn log_change(name: &str, before: &str, slot: &Slot) {
    let reason = slot.standing.reason().unwrap_or_default();
    match (before, &slot.standing) {
        (b, now) if b == now.label() => {}
        (_, Standing::Up) => tracing::info!(backend = %name, "backend listed: in the catalog"),
        (_, Standing::Stale { .. }) => tracing::warn!(
            backend = name,
            reason,
            "backend not listed in full: what it last listed is kept where this listing failed (stale), and it is listed again with backoff"
        ),
        (_, Standing::Down { .. }) => tracing::warn!(
            backend = name,
            reason,
            "backend left out of the catalog: its tools, prompts and resources are not listed"
        ),
    }
}

/// The wait before retry number `failures` (1-based): 250 ms, 500 ms, 1 s, … at most 30 s.
fn retry_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_FIRST.saturating_mul(1 << doublings).min(RETRY_MAX)
}

/// The `kind` list of `previous` (the last good listing) in `listing`, whose own read of it failed.
fn keep_list(listing: &mut BackendListing, previous: &BackendListing, kind: ListKind) {
    let (to, from) = match kind {
        ListKind::Tools => (&mut listing.tools, &previous.tools),
        ListKind::Prompts => (&mut listing.prompts, &previous.prompts),
        ListKind::Resources => (&mut listing.resources, &previous.resources),
        ListKind::ResourceTemplates => (
            &mut listing.resource_templates,
            &previous.resource_templates,
        ),
    };
    to.clone_from(from);
    let fresh = &mut listing.freshness;
    let was = &previous.freshness;
    match kind {
        ListKind::Tools => fresh.tools = was.tools,
        ListKind::Prompts => fresh.prompts = was.prompts,
        ListKind::Resources => fresh.resources = was.resources,
        ListKind::ResourceTemplates => fresh.resource_templates = was.resource_templates,
    }
}

#[cfg(test)]
mod tests;
