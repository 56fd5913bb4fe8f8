//! `[backend.circuit]`: when a backend's circuit breaker opens, and for how long.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A backend's circuit breaker, as configured; every field has a default.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CircuitEntry {
    /// Consecutive transport failures (timeouts, refused or reset connections, crashes, malformed
    /// answers) that open it; 0 turns the breaker off.
    pub failures: u32,
    /// The share of the last `window` calls failing that opens it, in (0, 1].
    pub ratio: f64,
    /// How many of the last calls the ratio looks at (2 to 64).
    pub window: u32,
    /// How long it stays open before one call probes the backend, in milliseconds.
    pub open_ms: u64,
}

impl Default for CircuitEntry {
    fn default() -> Self {
        let d = handlers::CircuitConfig::default();
        CircuitEntry {
            failures: d.failures,
            ratio: d.ratio,
            window: d.window,
            open_ms: u64::try_from(d.open_for.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl CircuitEntry {
    /// Why the entry is invalid (the field and the rule), if it is.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if !(self.ratio > 0.0 && self.ratio <= 1.0) {
            return Err(("circuit.ratio", "must be above 0 and at most 1"));
        }
        if !(2..=64).contains(&self.window) {
            return Err(("circuit.window", "must be between 2 and 64"));
        }
        if self.open_ms == 0 {
            return Err(("circuit.open_ms", "must be above 0"));
        }
        Ok(())
    }

    /// The breaker's configuration for the backend's actor.
    pub fn to_config(self) -> handlers::CircuitConfig {
        handlers::CircuitConfig {
            failures: self.failures,
            ratio: self.ratio,
            window: self.window,
            open_for: Duration::from_millis(self.open_ms),
        }
    }
}
