//! A legacy session's requests in flight, by the client's request id, so that the client's
//! `notifications/cancelled` can stop one: the gateway drops the request's work, which abandons the backend
//! call (`notifications/cancelled` to the backend, or its stream closed). Bounded per session.

use std::collections::HashMap;
use std::sync::Mutex;

use protocol::RequestId;
use tokio_util::sync::CancellationToken;

/// Requests one session may have cancellable at once (more still run, only not cancellable).
pub const MAX_CANCELLABLE: usize = 1024;

/// The cancellable requests of one session.
#[derive(Debug, Default)]
pub struct InFlight {
    map: Mutex<HashMap<String, CancellationToken>>,
}

/// A registered request; dropping it unregisters.
#[derive(Debug)]
pub struct Registered<'a> {
    in_flight: &'a InFlight,
    key: String,
    token: CancellationToken,
}

impl Registered<'_> {
    /// Resolves when the client cancels the request.
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Ok(mut map) = self.in_flight.map.lock() {
            map.remove(&self.key);
        }
    }
}

impl InFlight {
    /// Registers a request by its id; `None` when too many are registered (the request is then not
    /// cancellable) or the id is already in flight.
    pub fn register(&self, id: &RequestId) -> Option<Registered<'_>> {
        let mut map = self.map.lock().ok()?;
        if map.len() >= MAX_CANCELLABLE || map.contains_key(id.raw()) {
            return None;
        }
        let token = CancellationToken::new();
        map.insert(id.raw().to_owned(), token.clone());
        Some(Registered {
            in_flight: self,
            key: id.raw().to_owned(),
            token,
        })
    }

    /// How many requests are registered now (at most [`MAX_CANCELLABLE`]).
    pub fn len(&self) -> usize {
        self.map.lock().map_or(0, |map| map.len())
    }

    /// Whether none is registered.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cancels the request with this raw id; `false` when none is in flight.
    pub fn cancel(&self, raw_id: &str) -> bool {
        let token = self
            .map
            .lock()
            .ok()
            .and_then(|map| map.get(raw_id).cloned());
        match token {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_registered_request_is_cancelled_by_its_id() {
        let in_flight = InFlight::default();
        let id = RequestId::number(5);
        let reg = in_flight.register(&id).unwrap();
        assert!(
            in_flight.register(&id).is_none(),
            "an id in flight is not registered twice"
        );
        assert!(!in_flight.cancel("6"));
        assert!(in_flight.cancel("5"));
        tokio::time::timeout(std::time::Duration::from_secs(1), reg.cancelled())
            .await
            .unwrap();
        drop(reg);
        assert!(!in_flight.cancel("5"), "unregistered when done");
    }
}
