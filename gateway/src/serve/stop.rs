//! Stopping `mcpgw serve` over HTTP: SIGTERM or SIGINT drives the gateway's drain (`crate::drain`) through
//! its phases — not ready at once, accepting through the grace, the listener closed with streams and idle
//! connections, requests in flight finished or answered at the timeout — and only then lets actix-web's
//! server stop (actix-web's own signal handling is off: it would close the listener at once). A second
//! signal skips to the answer of what still runs.
//!
//! The listener is closed by the drain itself, not by actix-web's stop: accepting is paused, then the
//! listening socket (a duplicate of it) is shut down, so new connections are refused by the kernel. The
//! server is told to stop only once no request is in flight and no client connection is open (or the
//! drain's bound has passed): actix-server's stop ends its accept thread before it tells the workers, and a
//! worker that sees its connection channel close first ends at once, dropping every connection it serves
//! (all of a worker's answers lost in about one shutdown in ten under CPU contention:
//! `every_worker_drains_under_load_every_time`).

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
    listener: Option<std::net::TcpListener>,
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
    if signalled == "SIGINT" {
        crate::telemetry::logs::announce(
            tracing::Level::INFO,
            &format!(
                "mcpgw: stopping: requests in flight get up to {} s to finish; press Ctrl-C again to stop now",
                timeout.as_secs()
            ),
            serde_json::json!({"signal": signalled}),
        );
    }
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

    // The listener closes: accepting paused, then the listening socket shut (new connections refused).
    server.pause().await;
    if let Some(listener) = listener {
        if let Err(e) = rustix::net::shutdown(&listener, rustix::net::Shutdown::Read) {
            tracing::warn!(error = %e, "closing the listener: it stays open (paused) until the server stops");
        }
    }
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
    // Every answer written: each connection closes after its response (`Connection: close`), idle ones
    // were shut. Only then the server stops (bounded: a client that never reads its answer).
    if tokio::time::timeout(CUT_OFF_WRITE, all_closed(&connections))
        .await
        .is_err()
    {
        tracing::warn!(
            connections = connections.open(),
            "draining: connections still open after their answers; stopping the server"
        );
    }
    tracing::info!(
        after_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "drained"
    );
    server.stop(true).await;
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
        all_closed(connections).await;
    };
    if tokio::time::timeout(bound, settled).await.is_err() {
        tracing::warn!(
            in_flight = gw.drain.in_flight(),
            connections = connections.open(),
            "exiting with requests or connections still open: the drain's bound passed"
        );
    }
}

/// Stops the admin view's server once the front door's has stopped: at once (its connections are not the
/// drain's; an operator's page reconnects elsewhere), within a bound.
pub(super) async fn admin(handle: Option<ServerHandle>) {
    if let Some(handle) = handle
        && tokio::time::timeout(CUT_OFF_WRITE, handle.stop(false))
            .await
            .is_err()
    {
        tracing::warn!("the admin view did not stop in time");
    }
}

/// Resolves when no client connection is open (looked at every 10 ms; callers bound it).
async fn all_closed(connections: &ConnectionLimit) {
    while connections.open() > 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
