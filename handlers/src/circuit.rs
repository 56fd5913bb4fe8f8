//! A backend's circuit breaker. The data path's requests pass through it: while the backend keeps failing
//! at the transport — timeouts, refused or reset connections, crashes, malformed answers — the circuit
//! opens and calls are answered at once ([`Failure::CircuitOpen`]) instead of each waiting out its deadline
//! against a backend that is not answering. After `open_for` one request goes through as a probe
//! (half-open): its success closes the circuit, its failure opens it again.
//!
//! It listens to its handler: when the backend becomes ready again — a stdio child restarted, an HTTP
//! backend reconnected, a legacy session renewed ([`Circuit::reconnected`], called as the handle's state
//! turns `Ready`) — an open circuit turns half-open at once, whatever is left of `open_for`: the next
//! request probes the new connection. A recovered backend is served as soon as it is up; a crash-looping
//! one gets one probe per restart (its restarts are spaced by the actor's backoff), whose failure opens
//! the circuit again. A probe sent on the connection before the reconnect neither closes nor opens it (its
//! outcome is of the old connection) and does not hold back the new connection's probe.
//!
//! What counts: only transport failures ([`counts_against`]). A result — `isError` or not — and the
//! backend's own JSON-RPC errors are answers: they close nothing and open nothing. The gateway's own
//! refusals (overloaded, over a caller's share, shutting down) are not the backend's doing and are not
//! counted either.
//!
//! It opens on `failures` consecutive transport failures, or when at least half the `window` last requests
//! (`ratio`, once the window holds `window / 2` requests) failed. One mutex per backend, held for a few
//! instructions and never across an `.await`; `state` is also kept in an atomic for `/readyz`.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use protocol::shape::Failure;
use tokio::time::Instant;

/// When a backend's circuit opens, and for how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CircuitConfig {
    /// Consecutive transport failures that open it; 0 turns the breaker off.
    pub failures: u32,
    /// The share of the last `window` requests failing that opens it (in (0, 1]).
    pub ratio: f64,
    /// How many of the last requests the ratio looks at (2 to 64).
    pub window: u32,
    /// How long it stays open before a probe.
    pub open_for: Duration,
}

impl Default for CircuitConfig {
    fn default() -> Self {
        CircuitConfig {
            failures: 5,
            ratio: 0.5,
            window: 20,
            open_for: Duration::from_secs(10),
        }
    }
}

/// The circuit's state, as `/readyz` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Requests go through.
    Closed,
    /// Requests are refused at once.
    Open,
    /// One probe is (or may be) in flight; other requests are refused.
    HalfOpen,
}

impl CircuitState {
    /// `"closed"`, `"open"` or `"half_open"`.
    pub fn label(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }
}

/// Whether a request's outcome is a transport failure, which the circuit counts.
pub fn counts_against(outcome: &Result<impl Sized, Failure>) -> bool {
    matches!(
        outcome,
        Err(Failure::Timeout { .. } | Failure::Unavailable { .. } | Failure::Crashed { .. })
    )
}

#[derive(Debug)]
struct Inner {
    state: CircuitState,
    /// Consecutive transport failures.
    consecutive: u32,
    /// The last requests' outcomes, newest in bit 0 (1: failed), `seen` of them valid.
    recent: u64,
    seen: u32,
    /// While open: when a probe may go.
    until: Option<Instant>,
    /// Half-open: a probe is in flight.
    probing: bool,
    /// How many times the backend became ready again: a pass remembers it, so an outcome of the
    /// connection before the latest reconnect is told apart.
    connection: u64,
}

/// One backend's circuit (see the module's text).
#[derive(Debug)]
pub(crate) struct Circuit {
    backend: String,
    config: CircuitConfig,
    inner: Mutex<Inner>,
    state: AtomicU8,
}

/// A request let through; [`Circuit::record`] it, or dropping it records nothing (a request abandoned by
/// its client says nothing of the backend; a probe's turn passes to the next request).
#[derive(Debug)]
pub(crate) struct Pass<'a> {
    circuit: &'a Circuit,
    probe: bool,
    connection: u64,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if self.probe {
            let mut inner = self.circuit.lock();
            if inner.connection == self.connection {
                inner.probing = false;
            }
        }
    }
}

impl Circuit {
    pub(crate) fn new(backend: &str, config: CircuitConfig) -> Circuit {
        let window = config.window.clamp(2, 64);
        Circuit {
            backend: backend.to_owned(),
            config: CircuitConfig { window, ..config },
            inner: Mutex::new(Inner {
                state: CircuitState::Closed,
                consecutive: 0,
                recent: 0,
                seen: 0,
                until: None,
                probing: false,
                connection: 0,
            }),
            state: AtomicU8::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state now (without taking the lock).
    pub(crate) fn state(&self) -> CircuitState {
        match self.state.load(Ordering::Acquire) {
            1 => CircuitState::Open,
            2 => CircuitState::HalfOpen,
            _ => CircuitState::Closed,
        }
    }

    fn set(&self, inner: &mut Inner, state: CircuitState) {
        inner.state = state;
        self.state.store(
            match state {
                CircuitState::Closed => 0,
                CircuitState::Open => 1,
                CircuitState::HalfOpen => 2,
            },
            Ordering::Release,
        );
    }

    /// Lets a request through, or refuses it while the circuit is open (and, half-open, while the probe
    /// is in flight).
    pub(crate) fn pass(&self, now: Instant) -> Result<Pass<'_>, Failure> {
        if self.config.failures == 0 {
            return Ok(Pass {
                circuit: self,
                probe: false,
                connection: 0,
            });
        }
        let mut inner = self.lock();
        let connection = inner.connection;
        let refused = |until: Option<Instant>| Failure::CircuitOpen {
            backend: self.backend.clone(),
            retry_in_ms: until.map_or(0, |u| {
                u64::try_from(u.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
            }),
        };
        match inner.state {
            CircuitState::Closed => Ok(Pass {
                circuit: self,
                probe: false,
                connection,
            }),
            CircuitState::Open if inner.until.is_some_and(|u| now < u) => Err(refused(inner.until)),
            CircuitState::Open | CircuitState::HalfOpen => {
                if inner.probing {
                    return Err(refused(None));
                }
                if inner.state == CircuitState::Open {
                    self.set(&mut inner, CircuitState::HalfOpen);
                    tracing::info!(backend = %self.backend, "circuit half-open: one request probes the backend");
                }
                inner.probing = true;
                Ok(Pass {
                    circuit: self,
                    probe: true,
                    connection,
                })
            }
        }
    }

    /// Records the outcome of a request let through: `failed` when it was a transport failure.
    pub(crate) fn record(&self, mut pass: Pass<'_>, failed: bool, now: Instant) {
        let probe = std::mem::replace(&mut pass.probe, false);
        let connection = pass.connection;
        drop(pass);
        if self.config.failures == 0 {
            return;
        }
        let mut inner = self.lock();
        // A probe of the connection before the latest reconnect judges nothing: the new one has its own.
        let probe = probe && connection == inner.connection;
        if probe {
            inner.probing = false;
        }
        inner.recent = (inner.recent << 1) | u64::from(failed);
        inner.seen = (inner.seen + 1).min(self.config.window);
        inner.consecutive = if failed { inner.consecutive + 1 } else { 0 };
        match (inner.state, failed) {
            (CircuitState::HalfOpen, false) if probe => {
                self.set(&mut inner, CircuitState::Closed);
                inner.recent = 0;
                inner.seen = 0;
                inner.until = None;
                tracing::info!(backend = %self.backend, "circuit closed: the probe succeeded");
            }
            (CircuitState::HalfOpen, true) if probe => {
                self.open(&mut inner, now, "the probe failed");
            }
            (CircuitState::Closed, true) => {
                let mask = if self.config.window >= 64 {
                    u64::MAX
                } else {
                    (1u64 << self.config.window) - 1
                };
                let failing = (inner.recent & mask).count_ones();
                let by_ratio = inner.seen >= self.config.window / 2
                    && f64::from(failing) >= self.config.ratio * f64::from(inner.seen);
                if inner.consecutive >= self.config.failures {
                    let why = format!("{} consecutive transport failures", inner.consecutive);
                    self.open(&mut inner, now, &why);
                } else if by_ratio {
                    let why = format!("{failing} of the last {} requests failed", inner.seen);
                    self.open(&mut inner, now, &why);
                }
            }
            _ => {}
        }
    }

    /// The backend became ready again (restarted, reconnected, its session renewed): an open circuit turns
    /// half-open at once, so the next request probes the new connection; a closed one stays closed. A
    /// probe in flight on the old connection no longer holds the probe's turn.
    pub(crate) fn reconnected(&self) {
        if self.config.failures == 0 {
            return;
        }
        let mut inner = self.lock();
        inner.connection += 1;
        if inner.state == CircuitState::Closed {
            return;
        }
        inner.probing = false;
        inner.until = None;
        if inner.state == CircuitState::Open {
            self.set(&mut inner, CircuitState::HalfOpen);
            tracing::info!(backend = %self.backend,
                "circuit half-open: the backend reconnected, one request probes it");
        }
    }

    fn open(&self, inner: &mut Inner, now: Instant, why: &str) {
        self.set(inner, CircuitState::Open);
        inner.until = Some(now + self.config.open_for);
        tracing::warn!(
            backend = %self.backend,
            reason = why,
            open_ms = u64::try_from(self.config.open_for.as_millis()).unwrap_or(u64::MAX),
            "circuit open: the backend's calls are refused at once until a probe succeeds"
        );
    }
}

#[cfg(test)]
mod tests;
