//! The gateway's drain: the phases of a shutdown, which every part of the gateway watches, and the count of
//! requests in flight the shutdown waits for.
//!
//! On SIGTERM or SIGINT (`serve`): [`Phase::Draining`] at once (`/readyz` answers 503, every response says
//! `Connection: close`, the listener still accepts so a load balancer can move away), then after
//! `drain_grace_secs` [`Phase::Closing`] (the listener closed, open streams ended with an SSE `retry` hint,
//! idle keep-alive connections shut), and when requests are still running `drain_timeout_secs` after the
//! signal, [`Phase::CutOff`]: each is answered "gateway shutting down" (a tool error for `tools/call`) rather
//! than dropped with its connection.
//!
//! It knows nothing of HTTP or of the pipeline: they read it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Notify, watch};

/// Where a shutdown is; phases only move forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Serving normally.
    Serving,
    /// Stopping: not ready any more, still accepting and answering.
    Draining,
    /// The listener is closed; requests in flight finish, streams and idle connections are closed.
    Closing,
    /// The drain timeout passed: whatever still runs is answered "gateway shutting down".
    CutOff,
}

/// The shutdown's phase and the requests in flight, shared by the whole gateway.
#[derive(Debug)]
pub struct Drain {
    phase: watch::Sender<Phase>,
    in_flight: Arc<Counter>,
}

#[derive(Debug, Default)]
struct Counter {
    n: AtomicUsize,
    idle: Notify,
}

/// One request counted in flight until dropped.
#[derive(Debug)]
pub struct Running(Arc<Counter>);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.n.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Default for Drain {
    fn default() -> Drain {
        Drain {
            phase: watch::Sender::new(Phase::Serving),
            in_flight: Arc::default(),
        }
    }
}

impl Drain {
    /// The current phase.
    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Whether a shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.phase() >= Phase::Draining
    }

    /// Moves to `phase` (never back); `true` when that was a move.
    pub fn advance(&self, phase: Phase) -> bool {
        self.phase.send_if_modified(|current| {
            let moved = phase > *current;
            if moved {
                *current = phase;
            }
            moved
        })
    }

    /// A receiver of the phase, for what outlives a borrow of the gateway (a response body).
    pub fn watch(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Resolves once the shutdown has reached `phase` (at once if it has); never, if it never does.
    pub fn reached(&self, phase: Phase) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.phase.subscribe();
        async move {
            if rx.wait_for(|p| *p >= phase).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Counts a request in flight until the returned guard drops.
    pub fn track(&self) -> Running {
        self.in_flight.n.fetch_add(1, Ordering::AcqRel);
        Running(Arc::clone(&self.in_flight))
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.n.load(Ordering::Acquire)
    }

    /// Resolves when no request is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.in_flight.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn phases_only_move_forward() {
        let d = Drain::default();
        assert!(!d.is_draining());
        assert!(d.advance(Phase::Closing));
        assert!(!d.advance(Phase::Draining), "no way back");
        assert_eq!(d.phase(), Phase::Closing);
        assert!(d.is_draining());
    }

    #[tokio::test]
    async fn reached_resolves_at_the_phase_and_after() {
        let d = Drain::default();
        let waiting = tokio::spawn(d.reached(Phase::Closing));
        tokio::time::sleep(Duration::from_millis(20)).await;
        d.advance(Phase::Draining);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "draining is not closing");
        d.advance(Phase::CutOff);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("a later phase reaches it")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(1), d.reached(Phase::Draining))
            .await
            .expect("a phase already passed resolves at once");
    }

    #[tokio::test]
    async fn idle_waits_for_the_last_request() {
        let d = Arc::new(Drain::default());
        let (a, b) = (d.track(), d.track());
        assert_eq!(d.in_flight(), 2);
        let idle = tokio::spawn({
            let d = d.clone();
            async move { d.idle().await }
        });
        drop(a);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!idle.is_finished(), "one request is still in flight");
        drop(b);
        tokio::time::timeout(Duration::from_secs(1), idle)
            .await
            .expect("idle once the last one ends")
            .unwrap();
    }
}
