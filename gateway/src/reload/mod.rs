//! The gateway's one reload path ([`Reloader`]), taken by SIGHUP, `POST /admin/reload` and `--watch`: the
//! config file first (`config`: backends, prefixes, policy, rate limits, middleware tables, log level,
//! applied whole or not at all), then every other part that can be reloaded while serving (the front door's
//! TLS certificate, the key ring, a JWK set file), each implementing [`Reload`], registered once at start,
//! reloaded in turn, each on its own. A part that fails to reload keeps what it had.
//!
//! It must not block the arbiter: files are read on a blocking thread.

pub mod config;

use std::sync::Arc;

pub use crate::reloadable::{PartOutcome, Reload, reload_parts};
#[cfg(any(test, feature = "internals"))]
pub use crate::reloadable::reload_all;

/// What one reload came to: the config's outcome (when the gateway has a config file) and each part's.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The config file's reload: what it changed, or why nothing changed.
    pub config: Option<ConfigOutcome>,
    /// The other parts'.
    pub parts: Vec<PartOutcome>,
}

/// The config file's reload, as reported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConfigOutcome {
    /// What changed, when it was applied.
    pub applied: Option<config::Applied>,
    /// Why it was refused (the current config stays).
    pub error: Option<String>,
}

impl Report {
    /// Whether everything reloaded.
    #[cfg(any(test, feature = "internals"))]
    pub fn ok(&self) -> bool {
        self.config.as_ref().is_none_or(|c| c.error.is_none())
            && self.parts.iter().all(|p| p.error.is_none())
    }
}

/// The gateway's one reload path, shared by SIGHUP, `POST /admin/reload` and `--watch`: the config file
/// (when there is one), then every registered part (certificates, the key ring, a JWK set file).
#[derive(Debug, Clone)]
pub struct Reloader {
    config: Option<Arc<config::ConfigReload>>,
    parts: Arc<[Arc<dyn Reload>]>,
}

impl Reloader {
    /// A reloader of the config (if any) and `parts`.
    pub fn new(config: Option<config::ConfigReload>, parts: Vec<Arc<dyn Reload>>) -> Reloader {
        Reloader {
            config: config.map(Arc::new),
            parts: parts.into(),
        }
    }

    /// Reloads everything once (the parts on a blocking thread: they read files).
    pub async fn reload(&self) -> Report {
        let config = match &self.config {
            Some(c) => Some(match c.reload().await {
                Ok(applied) => ConfigOutcome {
                    applied: Some(applied),
                    error: None,
                },
                Err(why) => {
                    tracing::warn!(%why, "config reload refused: the current config stays");
                    ConfigOutcome {
                        applied: None,
                        error: Some(why),
                    }
                }
            }),
            None => None,
        };
        let parts = Arc::clone(&self.parts);
        let parts = tokio::task::spawn_blocking(move || reload_parts(&parts))
            .await
            .unwrap_or_else(|e| {
                vec![PartOutcome {
                    part: "parts",
                    error: Some(format!("the reload did not finish: {e}")),
                }]
            });
        Report { config, parts }
    }

    /// Reloads on every SIGHUP for as long as the runtime runs (spawned on the current one).
    pub fn on_sighup(&self) -> std::io::Result<()> {
        let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        let reloader = self.clone();
        actix_rt::spawn(async move {
            while hangups.recv().await.is_some() {
                tracing::info!("SIGHUP: reloading");
                reloader.reload().await;
            }
        });
        Ok(())
    }

    /// Reloads whenever the config file changes (`--watch`): its modification time and size looked at every
    /// `every`; a change is reloaded once it has held still for one more look (an editor's save in several
    /// writes is one reload).
    pub fn watch(&self, every: std::time::Duration) {
        let Some(path) = self.config.as_ref().map(|c| c.source().path().to_owned()) else {
            return;
        };
        let reloader = self.clone();
        actix_rt::spawn(async move {
            let stamp = |p: &std::path::Path| {
                std::fs::metadata(p)
                    .ok()
                    .map(|m| (m.modified().ok(), m.len()))
            };
            let mut seen = stamp(&path);
            let mut changed_to = None;
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let now = stamp(&path);
                if now == seen {
                    changed_to = None;
                    continue;
                }
                if changed_to.as_ref() != Some(&now) {
                    changed_to = Some(now);
                    continue;
                }
                tracing::info!(path = %path.display(), "the config file changed: reloading");
                seen = now;
                changed_to = None;
                reloader.reload().await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, Default)]
    struct Counted {
        fail: bool,
        calls: AtomicUsize,
    }

    impl Reload for Counted {
        fn part(&self) -> &'static str {
            "counted"
        }
        fn reload(&self) -> Result<(), String> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if self.fail { Err("no".into()) } else { Ok(()) }
        }
    }

    #[test]
    fn every_part_is_reloaded_and_a_failure_stops_none_of_the_others() {
        let failing = Arc::new(Counted {
            fail: true,
            ..Counted::default()
        });
        let fine = Arc::new(Counted::default());
        let parts: Vec<Arc<dyn Reload>> = vec![failing.clone(), fine.clone()];
        assert_eq!(reload_all(&parts), 1);
        assert_eq!(failing.calls.load(Ordering::Relaxed), 1);
        assert_eq!(fine.calls.load(Ordering::Relaxed), 1);
    }
}
