//! The circuit breaker listens to its backend's handler: a stdio child that crashes and is restarted moves
//! its circuit to half-open at once (one probe), whatever `open_for` says. `open_for` is 30 s here, so a
//! circuit that waited it out would fail every test's bounded waits (10 s) clearly.

use std::time::Duration;

use handlers::{CircuitConfig, CircuitState};
use protocol::shape::Failure;

use crate::support::{call, kind, start, stdio_config};

/// The fixture exiting on its `crash_after + 1`th `tools/call`; its circuit opens on one transport
/// failure and stays open 30 s.
fn crashing(name: &str, crash_after: &str) -> handlers::BackendConfig {
    let mut config = stdio_config(
        name,
        &["--era", "modern", "--crash-after", crash_after],
        None,
    );
    config.circuit = CircuitConfig {
        failures: 1,
        open_for: Duration::from_secs(30),
        ..CircuitConfig::default()
    };
    config
}

/// What broke: a supervised backend restarted 0.2 s after a crash stayed behind its open circuit for
/// `open_ms`; its calls were refused as "circuit is open" for seconds though it was up.
#[actix_rt::test]
async fn a_backend_that_restarts_is_served_at_once_not_after_open_ms() {
    // Each process of it answers one call and crashes on the second.
    let (backend, mut events) = start(crashing("restarting", "1"));
    events.ready().await;
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    let crashed = backend.call(call("echo", "{}")).await;
    assert!(
        matches!(crashed, Err(Failure::Crashed { .. })),
        "{crashed:?}"
    );
    assert_eq!(backend.circuit(), CircuitState::Open, "one crash opens it");
    events.down().await;
    // Restarted (its backoff starts at 200 ms): the circuit lets a probe through at once.
    events.ready().await;
    assert_eq!(backend.circuit(), CircuitState::HalfOpen);
    let served = backend.call(call("echo", "{}")).await;
    assert_eq!(kind(&served), "ok", "{served:?}");
    assert_eq!(
        backend.circuit(),
        CircuitState::Closed,
        "the probe closed it"
    );
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "crashed");
    backend.shutdown();
}

/// A backend that crashes on every call is restarted again and again; each restart lets one probe through,
/// whose crash opens the circuit again, and the calls beside the probe are refused at once.
#[actix_rt::test]
async fn a_crash_looping_backend_stays_behind_its_circuit_one_probe_per_restart() {
    let (backend, mut events) = start(crashing("looping", "0"));
    events.ready().await;
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "crashed");
    assert_eq!(backend.circuit(), CircuitState::Open);
    for restart in 1..=2 {
        events.down().await;
        events.ready().await;
        assert_eq!(
            backend.circuit(),
            CircuitState::HalfOpen,
            "restart {restart}"
        );
        let (a, b) = tokio::join!(
            backend.call(call("echo", "{}")),
            backend.call(call("echo", "{}"))
        );
        let mut kinds = [kind(&a), kind(&b)];
        kinds.sort_unstable();
        assert_eq!(
            kinds,
            ["circuit_open", "crashed"],
            "restart {restart}: one probe, the other refused: {a:?} {b:?}"
        );
        assert_eq!(
            backend.circuit(),
            CircuitState::Open,
            "restart {restart}: the probe's crash opened it again"
        );
    }
    backend.shutdown();
}
