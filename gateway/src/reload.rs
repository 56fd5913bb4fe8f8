//! The gateway's one reload entry point: SIGHUP. Every part that can be reloaded while serving (today the
//! front door's TLS certificate; later the key ring and the whole config) implements [`Reload`] and is
//! registered once at start; each SIGHUP reloads every part in turn, each on its own, logging what it did.
//! A part that fails to reload keeps what it had.
//!
//! It must not block the arbiter: reloads run on a blocking thread (they read files).

use std::sync::Arc;

/// A part of the running gateway that SIGHUP reloads.
pub trait Reload: Send + Sync + std::fmt::Debug {
    /// What it is, for the log ("tls certificate").
    fn part(&self) -> &'static str;
    /// Reads its configuration again and applies it; `Err` (why) keeps the current one.
    fn reload(&self) -> Result<(), String>;
}

/// Reloads every part once, in order; how many reloaded.
pub fn reload_all(parts: &[Arc<dyn Reload>]) -> usize {
    let mut reloaded = 0;
    for part in parts {
        match part.reload() {
            Ok(()) => {
                reloaded += 1;
                tracing::info!(part = part.part(), "reloaded");
            }
            Err(why) => {
                tracing::warn!(part = part.part(), %why, "reload failed: keeping the current one");
            }
        }
    }
    reloaded
}

/// Reloads `parts` on every SIGHUP for as long as the runtime runs (spawned on the current one). Nothing is
/// started when there is nothing to reload.
pub fn on_sighup(parts: Vec<Arc<dyn Reload>>) -> std::io::Result<()> {
    if parts.is_empty() {
        return Ok(());
    }
    let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let parts: Arc<[Arc<dyn Reload>]> = parts.into();
    actix_rt::spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading");
            let parts = Arc::clone(&parts);
            if let Err(e) = tokio::task::spawn_blocking(move || reload_all(&parts)).await {
                tracing::warn!(error = %e, "the reload did not finish");
            }
        }
    });
    Ok(())
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
