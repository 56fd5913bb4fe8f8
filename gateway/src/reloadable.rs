//! What a part of the running gateway must do to be reloaded ([`Reload`]: the front door's certificate, the
//! key ring, a JWK set file), and reloading a list of them in turn. A leaf: the parts live in low domains
//! (`tls`, `cluster`, `auth`), and the reload path that calls them (`reload`) sits above everything it
//! reloads.
//!
//! It must not block the arbiter: callers run [`reload_parts`] on a blocking thread (parts read files).

use std::sync::Arc;

/// A part of the running gateway that SIGHUP reloads.
pub trait Reload: Send + Sync + std::fmt::Debug {
    /// What it is, for the log ("tls certificate").
    fn part(&self) -> &'static str;
    /// Reads its configuration again and applies it; `Err` (why) keeps the current one.
    fn reload(&self) -> Result<(), String>;
}

/// Reloads every part once, in order; how many reloaded.
#[cfg(any(test, feature = "internals"))]
pub fn reload_all(parts: &[Arc<dyn Reload>]) -> usize {
    reload_parts(parts)
        .iter()
        .filter(|p| p.error.is_none())
        .count()
}

/// What reloading one part came to.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PartOutcome {
    /// The part ("tls certificate").
    pub part: &'static str,
    /// Why it kept what it had; `None`: reloaded.
    pub error: Option<String>,
}

/// Reloads every part once, in order, logging each; a failure keeps that part's current state and stops
/// none of the others.
pub fn reload_parts(parts: &[Arc<dyn Reload>]) -> Vec<PartOutcome> {
    parts
        .iter()
        .map(|part| {
            let error = match part.reload() {
                Ok(()) => {
                    tracing::info!(part = part.part(), "reloaded");
                    None
                }
                Err(why) => {
                    tracing::warn!(part = part.part(), %why, "reload failed: keeping the current one");
                    Some(why)
                }
            };
            PartOutcome {
                part: part.part(),
                error,
            }
        })
        .collect()
}
