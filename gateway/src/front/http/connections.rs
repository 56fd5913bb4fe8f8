//! The bound on open front-door connections, `[server] max_connections`, exact across workers.
//!
//! actix-web's own `HttpServer::max_connections` is per worker and only stops accepting: connections beyond
//! it wait in the listen backlog, their clients hanging. Here every connection is admitted in actix-web's
//! `on_connect` hook, which runs on the worker that accepted it before anything is read from it (after the
//! handshake, for TLS): one process-wide count, raised only below the bound (compare-and-swap), and an
//! [`Admitted`] guard in the connection's data that lowers it when the connection ends. A connection beyond
//! the bound is shut down there and then: its client reads end-of-file at once, and the worker drops it.

use std::any::Any;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix_rt::net::TcpStream;
use actix_tls::accept::rustls_0_23::TlsStream;
use actix_web::dev::Extensions;

/// Connections actix-web may hold per worker beyond the bound: the refused ones, for the moment between
/// their shutdown and their end. actix-web's per-worker limit is set above ours so that it never applies
/// first (it would leave connections waiting in the backlog).
const REFUSED_IN_FLIGHT: usize = 1024;

/// The process-wide count of open connections and its bound.
#[derive(Debug, Clone)]
pub struct ConnectionLimit {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// Held in a connection's data while it is open; lowers the count when the connection ends.
#[derive(Debug)]
pub struct Admitted(Arc<AtomicUsize>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnectionLimit {
    /// A bound of `max` connections open at once.
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit {
            open: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Counts one more connection, or `None` when `max` are open.
    pub fn admit(&self) -> Option<Admitted> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Admitted(self.open.clone()))
    }

    /// actix-web's per-worker limit (`HttpServer::max_connections`): above ours, never reached first.
    pub fn per_worker(&self) -> usize {
        self.max.saturating_add(REFUSED_IN_FLIGHT)
    }

    /// The `HttpServer::on_connect` hook: admits the connection or shuts it down.
    pub fn hook(&self) -> impl Fn(&dyn Any, &mut Extensions) + Send + Sync + 'static {
        let limit = self.clone();
        move |io, data| match limit.admit() {
            Some(admitted) => {
                data.insert(admitted);
            }
            None => refuse(io),
        }
    }
}

/// Shuts a refused connection down both ways: its client reads end-of-file, the worker's first read ends the
/// connection.
fn refuse(io: &dyn Any) {
    let Some(fd) = socket_of(io) else {
        tracing::warn!("a connection over server.max_connections is of an unknown kind: kept");
        return;
    };
    tracing::debug!("connection refused: server.max_connections are open");
    if let Err(e) = rustix::net::shutdown(fd, rustix::net::Shutdown::Both) {
        tracing::debug!(error = %e, "shutting a refused connection down");
    }
}

/// The socket under a connection as actix-web's `on_connect` gives it: plain TCP, or rustls over TCP.
fn socket_of(io: &dyn Any) -> Option<BorrowedFd<'_>> {
    if let Some(tcp) = io.downcast_ref::<TcpStream>() {
        return Some(tcp.as_fd());
    }
    io.downcast_ref::<TlsStream<TcpStream>>()
        .map(|tls| tls.get_ref().0.as_fd())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_never_passes_the_bound_under_concurrency() {
        let limit = ConnectionLimit::new(100);
        let held: Vec<Vec<Admitted>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..8)
                .map(|_| s.spawn(|| (0..50).filter_map(|_| limit.admit()).collect::<Vec<_>>()))
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(held.iter().map(Vec::len).sum::<usize>(), 100);
        assert_eq!(limit.open(), 100);
        assert!(limit.admit().is_none());
        drop(held);
        assert_eq!(limit.open(), 0);
        assert!(limit.admit().is_some());
    }
}
