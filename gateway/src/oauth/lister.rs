//! The *lister* of a per-user backend: the gateway holds no token of its own there, so the backend's
//! connection — its probe, its lists, its control traffic — carries one connected principal's token, the
//! first to connect (and, when that one disconnects or its token can no longer be refreshed, another
//! principal's stored grant, else none: the backend goes down and lists only the connect tool). Calls never
//! use it: each carries its own principal's token. What the backend lists with it is shared, so a
//! per-user backend's resources are never listed (`notify::listing`); its tools, prompts and templates are.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::store::{Grant, now};
use super::{Authorizations, REFRESH_MARGIN};

/// How often the listers' tokens are looked at.
const EVERY: Duration = Duration::from_secs(30);

impl Authorizations {
    /// Makes `grant`'s principal the lister of its backend if it has none (or is it); whether the backend's
    /// connection now has a token it lacked.
    pub(super) fn adopt_lister(&self, grant: &Grant) -> bool {
        let Some(backend) = self.backends.get(&grant.backend) else {
            return false;
        };
        let mut listers = self.listers.lock().unwrap_or_else(PoisonError::into_inner);
        let current = listers.get(&grant.backend);
        if current.is_some_and(|p| *p != grant.principal) {
            return false;
        }
        let new = current.is_none();
        listers.insert(grant.backend.clone(), grant.principal.clone());
        drop(listers);
        if backend
            .listing
            .set(&format!("Bearer {}", grant.access))
            .is_err()
        {
            return false;
        }
        new
    }

    /// A refreshed grant: the backend's connection follows if it is its lister's.
    pub(super) fn listing_refreshed(&self, grant: &Grant) {
        let is_lister = self
            .listers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&grant.backend)
            .is_some_and(|p| *p == grant.principal);
        if is_lister && let Some(backend) = self.backends.get(&grant.backend) {
            let _ = backend.listing.set(&format!("Bearer {}", grant.access));
        }
    }

    /// `principal` no longer authorizes `backend`: if it was the lister, another connected principal
    /// takes its place, or none.
    pub(super) async fn lister_revoked(&self, principal: &str, backend: &str) {
        let was = {
            let mut listers = self.listers.lock().unwrap_or_else(PoisonError::into_inner);
            if listers.get(backend).is_some_and(|p| p == principal) {
                listers.remove(backend);
                true
            } else {
                false
            }
        };
        if !was {
            return;
        }
        if let Some(b) = self.backends.get(backend) {
            b.listing.clear();
        }
        if let Ok(all) = self.store.all().await
            && let Some(next) = all.iter().find(|g| g.backend == backend)
        {
            self.adopt_lister(next);
        }
    }

    /// Keeps the listers' tokens fresh, every 30 s for as long as the gateway runs: one about to expire, or
    /// one the backend refuses (`refused(backend)`: its connection is down on a 401 or 403 — the user
    /// revoked it at the service), is refreshed, else given up for another connected user's; `nudge(backend)`
    /// is called when a backend's connection got a token it lacked (it should connect now).
    pub async fn keep_listers(
        self: Arc<Self>,
        nudge: impl Fn(&str),
        refused: impl Fn(&str) -> bool,
    ) {
        let mut every = tokio::time::interval(EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let listers: Vec<(String, String)> = self
                .listers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(b, p)| (b.clone(), p.clone()))
                .collect();
            self.fill_vacancies(&nudge).await;
            for (backend, principal) in listers {
                let grant = match self.store.get(&principal, &backend).await {
                    Ok(g) => g,
                    Err(_) => continue,
                };
                let refused = refused(&backend);
                match grant {
                    Some(g) if !refused && !g.stale(now(), REFRESH_MARGIN * 2) => {}
                    Some(g) => match self.refresh(&g).await {
                        Ok(fresh) => {
                            if self.store.put(&fresh).await.is_ok() {
                                self.listing_refreshed(&fresh);
                                if refused {
                                    nudge(&backend);
                                }
                            }
                        }
                        Err(why) => {
                            tracing::info!(%backend, %why, "the token the backend is listed with could not be refreshed");
                            let _ = self.store.remove(&principal, &backend).await;
                            self.lister_revoked(&principal, &backend).await;
                            if self.lister_of(&backend).is_some() {
                                nudge(&backend);
                            }
                        }
                    },
                    None => {
                        self.lister_revoked(&principal, &backend).await;
                        if self.lister_of(&backend).is_some() {
                            nudge(&backend);
                        }
                    }
                }
            }
        }
    }

    /// Backends listed with no one's token take a stored grant's (one another replica stored, or one kept
    /// in Redis across a restart), and connect now.
    async fn fill_vacancies(&self, nudge: &impl Fn(&str)) {
        let vacant: Vec<&String> = self
            .backends
            .keys()
            .filter(|b| self.lister_of(b).is_none())
            .collect();
        if vacant.is_empty() {
            return;
        }
        let Ok(all) = self.store.all().await else {
            return;
        };
        for backend in vacant {
            if let Some(grant) = all.iter().find(|g| &g.backend == backend)
                && self.adopt_lister(grant)
            {
                nudge(backend);
            }
        }
    }

    /// `principal`, connected to `backend`, lists it if no one does (another replica ran its consent);
    /// whether the backend should connect now.
    pub async fn adopt(&self, principal: &str, backend: &str) -> bool {
        if self.lister_of(backend).is_some() {
            return false;
        }
        match self.store.get(principal, backend).await {
            Ok(Some(grant)) => self.adopt_lister(&grant),
            _ => false,
        }
    }

    /// The principal whose token `backend` is listed with.
    pub fn lister_of(&self, backend: &str) -> Option<String> {
        self.listers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(backend)
            .cloned()
    }
}
