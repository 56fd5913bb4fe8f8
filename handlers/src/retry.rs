//! Retries of requests the backend never received, and only those: an HTTP request whose connection could
//! not be made (refused, unreachable: nothing was written) is sent once more after a short pause, if the
//! backend's retry budget allows. A request that may have reached the backend — a reset after writing, a
//! timeout, any answer — is never retried (a tool call is not idempotent).
//!
//! The budget keeps retries to a tenth of a backend's requests (plus a small reserve), so that a backend
//! that is down is not hit twice as hard: each request deposits one token, a retry costs ten, the purse
//! holds at most [`RESERVE`].

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Tokens a retry costs (each request deposits one).
const COST: u32 = 10;
/// Most tokens held: ten retries' worth, the budget a backend starts with.
pub(crate) const RESERVE: u32 = 10 * COST;
/// The pause before the retry.
const PAUSE: Duration = Duration::from_millis(50);

/// One backend's retry budget (see the module's text).
#[derive(Debug)]
pub(crate) struct RetryBudget {
    tokens: AtomicU32,
}

impl Default for RetryBudget {
    fn default() -> Self {
        RetryBudget {
            tokens: AtomicU32::new(RESERVE),
        }
    }
}

impl RetryBudget {
    fn deposit(&self) {
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                (t < RESERVE).then_some(t + 1)
            });
    }

    fn withdraw(&self) -> bool {
        self.tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(COST))
            .is_ok()
    }

    /// `attempt(first)`; when it fails with an error from which `unsent` takes back what was never sent
    /// (the backend cannot have received it), `attempt` once more with that, after a short pause, if the
    /// budget allows. Nothing is copied for the retry: only what came back unsent is sent again.
    pub(crate) async fn run<I, T, E, Fut>(
        &self,
        attempt: impl Fn(I) -> Fut,
        first: I,
        unsent: impl Fn(&mut E) -> Option<I>,
    ) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        self.deposit();
        match attempt(first).await {
            Err(mut e) => match unsent(&mut e) {
                Some(again) if self.withdraw() => {
                    tracing::debug!("the request never reached the backend: sending it once more");
                    tokio::time::sleep(PAUSE).await;
                    // Boxed: rare, and inline it would hold a second attempt's state in every call's future.
                    Box::pin(attempt(again)).await
                }
                _ => Err(e),
            },
            outcome => outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[derive(Debug, PartialEq)]
    enum Sent {
        Never,
        Maybe,
    }

    async fn attempts(budget: &RetryBudget, first: Sent) -> (Result<(), Sent>, usize) {
        let n = AtomicUsize::new(0);
        let attempt = |outcome: Result<(), Sent>| {
            let n = &n;
            async move {
                n.fetch_add(1, Ordering::SeqCst);
                outcome
            }
        };
        let outcome = budget
            .run(attempt, Err(first), |e: &mut Sent| {
                (*e == Sent::Never).then_some(Ok(()))
            })
            .await;
        (outcome, n.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_request_never_sent_is_retried_once_one_maybe_received_never() {
        let budget = RetryBudget::default();
        assert_eq!(attempts(&budget, Sent::Never).await, (Ok(()), 2));
        assert_eq!(
            attempts(&budget, Sent::Maybe).await,
            (Err(Sent::Maybe), 1),
            "a request the backend may have received is not sent again"
        );
    }

    #[tokio::test]
    async fn the_budget_runs_out_and_refills_with_requests() {
        let budget = RetryBudget {
            tokens: AtomicU32::new(COST),
        };
        // The first retry spends the budget (a request's deposit is not enough for a second).
        assert_eq!(attempts(&budget, Sent::Never).await.1, 2);
        assert_eq!(
            attempts(&budget, Sent::Never).await,
            (Err(Sent::Never), 1),
            "no budget left: not retried"
        );
        for _ in 0..COST {
            assert_eq!(attempts(&budget, Sent::Maybe).await.1, 1);
        }
        assert_eq!(attempts(&budget, Sent::Never).await.1, 2, "refilled");
    }
}
