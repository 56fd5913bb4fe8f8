//! The bound on open front-door connections, `[server] max_connections`, exact across workers.
//!
//! actix-web's own `HttpServer::max_connections` is per worker and only stops accepting: connections beyond
//! it wait in the listen backlog, their clients hanging. Here every connection is admitted in actix-web's
//! `on_connect` hook, which runs on the worker that accepted it before anything is read from it (after the
//! handshake, for TLS): one process-wide count, raised only below the bound (compare-and-swap), and an
//! [`Connection`] guard in the connection's data that lowers it when the connection ends. A connection beyond
//! the bound is shut down there and then: its client reads end-of-file at once, and the worker drops it.
//!
//! The same guard lets a shutdown close idle keep-alive connections at once instead of waiting for them
//! (actix-web does not know the gateway is draining): it holds a duplicate of the connection's socket and
//! counts the responses in progress on it ([`Connection::begin`], held by `guard` until the response's body
//! has been sent). [`ConnectionLimit::close_idle`] shuts (its read side: actix-web then closes it) every
//! connection that served a request and has none in progress; one that finishes its last response after
//! that is shut as it finishes.
//!
//! The same count bounds an HTTP/2 connection's requests in progress at once
//! ([`ConnectionLimit::with_max_streams`], `[server] h2_max_concurrent_streams`): actix-web builds its h2
//! server with h2's defaults (no `SETTINGS_MAX_CONCURRENT_STREAMS`, so no limit) and exposes none of its
//! settings, so one client could hold any number of streams, each a request the gateway works on. A request
//! beyond the bound is answered 503 with `Retry-After` at once by `guard` ([`Connection::over_streams`]),
//! before anything reads its body or routes it.

use std::any::Any;
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use actix_rt::net::TcpStream;
use actix_tls::accept::rustls_0_23::TlsStream;
use actix_web::dev::Extensions;

/// Connections actix-web may hold per worker beyond the bound: the refused ones, for the moment between
/// their shutdown and their end. actix-web's per-worker limit is set above ours so that it never applies
/// first (it would leave connections waiting in the backlog).
const REFUSED_IN_FLIGHT: usize = 1024;

/// The process-wide count of open connections and its bound, and the open connections themselves.
#[derive(Debug, Clone)]
pub struct ConnectionLimit {
    open: Arc<AtomicUsize>,
    max: usize,
    live: Arc<Live>,
    max_streams: usize,
}

/// The open connections, for a shutdown to find the idle ones.
#[derive(Debug, Default)]
struct Live {
    next: AtomicU64,
    by_id: Mutex<HashMap<u64, Weak<Connection>>>,
    /// Set by [`ConnectionLimit::close_idle`]: a connection that becomes idle is shut at once.
    closing: AtomicBool,
}

/// Held in a connection's data while it is open (as `Arc<Connection>`): lowers the count and leaves the
/// live set when the connection ends.
#[derive(Debug)]
pub struct Connection {
    id: u64,
    open: Arc<AtomicUsize>,
    live: Arc<Live>,
    /// A duplicate of the socket (`None` when it could not be made): shutting it down ends the connection.
    socket: Option<OwnedFd>,
    /// Responses in progress on it.
    active: AtomicUsize,
    /// No request has reached the gateway on it yet: its first may be on the way (a shutdown leaves it to
    /// actix-web's own deadline for a first request, `client_request_timeout`).
    fresh: AtomicBool,
    /// Responses in progress at once beyond which an HTTP/2 request is refused.
    max_streams: usize,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
        self.live
            .by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

impl Connection {
    /// One response in progress on this connection until the returned guard drops.
    pub fn begin(self: &Arc<Self>) -> Active {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.fresh.store(false, Ordering::Release);
        Active(Arc::clone(self))
    }

    /// More responses in progress than the bound of HTTP/2 streams (call it after [`Connection::begin`]:
    /// the request asking is counted).
    pub fn over_streams(&self) -> bool {
        self.active.load(Ordering::Acquire) > self.max_streams
    }

    /// The bound of [`Connection::over_streams`].
    pub fn max_streams(&self) -> usize {
        self.max_streams
    }

    /// Idle: it served a request and has none in progress.
    fn idle(&self) -> bool {
        !self.fresh.load(Ordering::Acquire) && self.active.load(Ordering::Acquire) == 0
    }

    /// Shuts the socket's reading side: actix-web reads end-of-file and closes the connection once what
    /// it has to write is written (shutting the writing side too could lose the last response, which
    /// actix-web may still hold in its buffer when the body that counted it has ended).
    fn shut(&self) {
        if let Some(fd) = &self.socket {
            if let Err(e) = rustix::net::shutdown(fd, rustix::net::Shutdown::Read) {
                tracing::debug!(error = %e, "shutting an idle connection down");
            }
        }
    }
}

impl Connection {
    /// Ends the connection now, freeing what the kernel holds for it: the socket is shut both ways with
    /// a zero linger, so that its last close resets it instead of keeping unsent bytes (a client that
    /// stopped reading a stream). actix-web's next write fails and it drops the connection.
    pub fn abort(&self) {
        if let Some(fd) = &self.socket {
            if let Err(e) =
                rustix::net::sockopt::set_socket_linger(fd, Some(std::time::Duration::ZERO))
            {
                tracing::debug!(error = %e, "setting a zero linger on an aborted connection");
            }
            if let Err(e) = rustix::net::shutdown(fd, rustix::net::Shutdown::Both) {
                tracing::debug!(error = %e, "shutting an aborted connection down");
            }
        }
    }
}

/// A response in progress (see [`Connection::begin`]).
#[derive(Debug)]
pub struct Active(Arc<Connection>);

impl Drop for Active {
    fn drop(&mut self) {
        let idle = self.0.active.fetch_sub(1, Ordering::AcqRel) == 1;
        if idle && self.0.live.closing.load(Ordering::Acquire) {
            self.0.shut();
        }
    }
}

impl ConnectionLimit {
    /// A bound of `max` connections open at once.
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit {
            open: Arc::new(AtomicUsize::new(0)),
            max,
            live: Arc::default(),
            max_streams: usize::MAX,
        }
    }

    /// At most `max` requests in progress at once on one HTTP/2 connection (see [the module](self)).
    pub fn with_max_streams(mut self, max: usize) -> ConnectionLimit {
        self.max_streams = max;
        self
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Counts one more connection (keeping `socket`, a duplicate of its socket), or `None` when `max` are
    /// open.
    fn admit_socket(&self, socket: Option<OwnedFd>) -> Option<Arc<Connection>> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()?;
        let id = self.live.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Connection {
            id,
            open: self.open.clone(),
            live: self.live.clone(),
            socket,
            active: AtomicUsize::new(0),
            fresh: AtomicBool::new(true),
            max_streams: self.max_streams,
        });
        self.live
            .by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Arc::downgrade(&conn));
        Some(conn)
    }

    /// Counts one more connection, or `None` when `max` are open.
    #[cfg(any(test, feature = "internals"))]
    pub fn admit(&self) -> Option<Arc<Connection>> {
        self.admit_socket(None)
    }

    /// actix-web's per-worker limit (`HttpServer::max_connections`): above ours, never reached first.
    pub fn per_worker(&self) -> usize {
        self.max.saturating_add(REFUSED_IN_FLIGHT)
    }

    /// The `HttpServer::on_connect` hook: admits the connection or shuts it down.
    pub fn hook(&self) -> impl Fn(&dyn Any, &mut Extensions) + Send + Sync + 'static {
        let limit = self.clone();
        move |io, data| {
            let socket = socket_of(io).and_then(|fd| fd.try_clone_to_owned().ok());
            match limit.admit_socket(socket) {
                Some(conn) => {
                    data.insert(conn);
                }
                None => refuse(io),
            }
        }
    }

    /// Shuts every idle connection (one that served a request and has none in progress), now and as each
    /// becomes idle from now on (a shutdown: keep-alive connections are not waited for). Returns how many
    /// were shut now.
    pub fn close_idle(&self) -> usize {
        self.live.closing.store(true, Ordering::Release);
        let live: Vec<Arc<Connection>> = self
            .live
            .by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let mut shut = 0;
        for conn in live.iter().filter(|c| c.idle()) {
            conn.shut();
            shut += 1;
        }
        shut
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
        let held: Vec<Vec<Arc<Connection>>> = std::thread::scope(|s| {
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

    #[test]
    fn close_idle_shuts_idle_connections_now_and_busy_ones_when_they_finish() {
        use std::io::Read;
        use std::time::Duration;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let _clients: Vec<std::net::TcpStream> = (0..2)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let mut served: Vec<std::net::TcpStream> =
            (0..2).map(|_| listener.accept().unwrap().0).collect();
        let limit = ConnectionLimit::new(10);
        let conns: Vec<Arc<Connection>> = served
            .iter()
            .map(|s| {
                limit
                    .admit_socket(s.as_fd().try_clone_to_owned().ok())
                    .unwrap()
            })
            .collect();
        let fresh = limit.admit_socket(None).unwrap();
        drop(conns[0].begin());
        let busy = conns[1].begin();
        assert_eq!(
            limit.close_idle(),
            1,
            "only the idle one is shut now: not the busy one, nor one yet to get its first request"
        );
        assert!(fresh.fresh.load(Ordering::Acquire));
        // What actix-web would see: end-of-file on the idle connection at once...
        let mut buf = [0u8; 1];
        served[0]
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(served[0].read(&mut buf).unwrap(), 0, "end-of-file at once");
        // ...none on the busy one until its response is done.
        served[1]
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        assert!(served[1].read(&mut buf).is_err(), "the busy one stays open");
        drop(busy);
        served[1]
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(served[1].read(&mut buf).unwrap(), 0, "shut as it went idle");
    }
}
