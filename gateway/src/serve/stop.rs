//! Stopping `mcpgw serve` over HTTP: SIGTERM or SIGINT drives the gateway's drain (`crate::drain`) through
//! its phases — not ready at once, accepting through the grace, the listener closed with streams and idle
//! connections, requests in flight finished or answered at the timeout — and only then lets actix-web's
//! server stop (actix-web's own signal handling is off: it would close the listener at once). A second
//! signal skips to the answer of what still runs.

use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use crate::drain::Phase;
use crate::front::http::connections::ConnectionLimit;
use crate::state::Gateway;

/// How long the requests answered at the cut-off get to be written before the server stops.
const CUT_OFF_WRITE: Duration = Duration::from_secs(2);

/// How long actix-web's graceful stop may wait for connections, from the listener's close: past the drain
/// timeout and the cut-off's answers, so that it never drops a request the drain still answers.
pub(super) fn shutdown_timeout(gw: &Gateway) -> u64 {
    let s = &gw.config.server;
    s.drain_timeout_secs
        .saturating_sub(s.drain_grace_secs)
        .saturating_add(CUT_OFF_WRITE.as_secs() + 1)
}

/// Waits for SIGTERM or SIGINT, then drains the gateway and stops `server`. Returns once the server has
/// been told to stop; its own future ends when its workers have.
pub(super) async fn on_signal(
    gw: Arc<Gateway>,
    server: ServerHandle,
    connections: ConnectionLimit,
) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let signalled = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    let started = Instant::now();
    let grace = Duration::from_secs(gw.config.server.drain_grace_secs);
    let timeout = Duration::from_secs(gw.config.server.drain_timeout_secs);
    gw.drain.advance(Phase::Draining);
    tracing::info!(
        signal = signalled,
        grace_secs = grace.as_secs(),
        timeout_secs = timeout.as_secs(),
        in_flight = gw.drain.in_flight(),
        "draining: /readyz answers 503; still accepting through the grace"
    );
    let again = async {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    };
    tokio::pin!(again);
    let mut hurried = tokio::select! {
        () = tokio::time::sleep_until(started + grace) => false,
        () = &mut again => true,
    };

    // The listener closes; actix-web's workers wait for their connections (at most `shutdown_timeout`).
    let stopped = server.stop(true);
    gw.drain.advance(Phase::Closing);
    let idle = connections.close_idle();
    tracing::info!(
        in_flight = gw.drain.in_flight(),
        idle_connections_closed = idle,
        "draining: the listener is closed, streams ended; waiting for the requests in flight"
    );
    if !hurried {
        tokio::select! {
            () = gw.drain.idle() => {}
            () = tokio::time::sleep_until(started + timeout) => {}
            () = &mut again => hurried = true,
        }
    }
    let left = gw.drain.in_flight();
    gw.drain.advance(Phase::CutOff);
    if left > 0 {
        tracing::warn!(
            requests = left,
            hurried,
            "draining: answering the requests still running with \"gateway shutting down\""
        );
        let _ = tokio::time::timeout(CUT_OFF_WRITE, gw.drain.idle()).await;
    }
    tracing::info!(
        after_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "drained"
    );
    stopped.await;
    Ok(())
}

/// After the server has stopped, during a drain: waits (bounded by the drain timeout and the cut-off's
/// writes) until no request is in flight and every client connection has closed, so that the process never
/// exits with an answer still unwritten, whatever actix-web's stop did first.
pub(super) async fn linger(gw: &Gateway, connections: &ConnectionLimit) {
    if !gw.drain.is_draining() {
        return;
    }
    let bound = Duration::from_secs(gw.config.server.drain_timeout_secs) + CUT_OFF_WRITE;
    let settled = async {
        gw.drain.idle().await;
        while connections.open() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    if tokio::time::timeout(bound, settled).await.is_err() {
        tracing::warn!(
            in_flight = gw.drain.in_flight(),
            connections = connections.open(),
            "exiting with requests or connections still open: the drain's bound passed"
        );
    }
}
