//! A backend's circuit breaker. The data path's requests pass through it: while the backend keeps failing
//! at the transport — timeouts, refused or reset connections, crashes, malformed answers — the circuit
//! opens and calls are answered at once ([`Failure::CircuitOpen`]) instead of each waiting out its deadline
//! against a backend that is not answering. After `open_for` one request goes through as a probe
//! (half-open): its success closes the circuit, its failure opens it again.
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
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if self.probe {
            self.circuit.lock().probing = false;
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
            });
        }
        let mut inner = self.lock();
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
                })
            }
        }
    }

    /// Records the outcome of a request let through: `failed` when it was a transport failure.
    pub(crate) fn record(&self, mut pass: Pass<'_>, failed: bool, now: Instant) {
        let probe = std::mem::replace(&mut pass.probe, false);
        drop(pass);
        if self.config.failures == 0 {
            return;
        }
        let mut inner = self.lock();
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
mod tests {
    use super::*;

    fn circuit(failures: u32, window: u32) -> Circuit {
        Circuit::new(
            "m",
            CircuitConfig {
                failures,
                ratio: 0.5,
                window,
                open_for: Duration::from_secs(10),
            },
        )
    }

    fn run(c: &Circuit, failed: bool, now: Instant) -> bool {
        match c.pass(now) {
            Ok(pass) => {
                c.record(pass, failed, now);
                true
            }
            Err(_) => false,
        }
    }

    #[test]
    fn consecutive_failures_open_it_and_a_probe_closes_it() {
        let c = circuit(3, 64);
        let t = Instant::now();
        for _ in 0..2 {
            assert!(run(&c, true, t));
        }
        assert!(run(&c, false, t), "a success resets the count");
        for _ in 0..3 {
            assert!(run(&c, true, t));
        }
        assert_eq!(c.state(), CircuitState::Open);
        let refused = c.pass(t + Duration::from_secs(1)).unwrap_err();
        assert_eq!(
            refused,
            Failure::CircuitOpen {
                backend: "m".into(),
                retry_in_ms: 9000
            }
        );
        // After open_for: one probe, the others refused while it runs.
        let later = t + Duration::from_secs(11);
        let probe = c.pass(later).expect("the probe goes");
        assert_eq!(c.state(), CircuitState::HalfOpen);
        assert!(c.pass(later).is_err(), "only one probe at a time");
        c.record(probe, false, later);
        assert_eq!(c.state(), CircuitState::Closed);
        assert!(run(&c, false, later));
    }

    #[test]
    fn a_failed_probe_opens_it_again_and_an_abandoned_one_lets_the_next_probe() {
        let c = circuit(1, 64);
        let t = Instant::now();
        assert!(run(&c, true, t));
        let later = t + Duration::from_secs(11);
        drop(c.pass(later).unwrap());
        let probe = c.pass(later).expect("the abandoned probe's turn passed on");
        c.record(probe, true, later);
        assert_eq!(c.state(), CircuitState::Open);
        assert!(c.pass(later + Duration::from_secs(1)).is_err());
    }

    #[test]
    fn a_failure_ratio_opens_it_without_a_run_of_failures() {
        let c = circuit(100, 10);
        let t = Instant::now();
        // Alternating: never two failures in a row, half of them failing.
        for i in 0..10 {
            run(&c, i % 2 == 0, t);
        }
        assert_eq!(c.state(), CircuitState::Open);
    }

    #[test]
    fn answers_never_count_and_off_means_off() {
        let answered: Result<(), Failure> = Err(Failure::Backend {
            backend: "m".into(),
            error: protocol::error::Error::new(protocol::error::ErrorCode::InvalidParams, "no"),
        });
        assert!(!counts_against(&answered));
        assert!(!counts_against(&Ok::<(), Failure>(())));
        assert!(!counts_against(&Err::<(), _>(Failure::Overloaded {
            backend: "m".into()
        })));
        assert!(counts_against(&Err::<(), _>(Failure::Timeout {
            backend: "m".into(),
            after_ms: 1
        })));
        let off = circuit(0, 20);
        let t = Instant::now();
        for _ in 0..100 {
            assert!(run(&off, true, t));
        }
        assert_eq!(off.state(), CircuitState::Closed);
    }
}
