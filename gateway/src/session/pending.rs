//! 2024-11-05 HTTP+SSE streams waiting for their session's `initialize`, each bound to the principal that
//! opened it (with `[auth]` on): another principal naming its id is answered as for an unknown one, and
//! cannot take it over.

use dashmap::DashMap;

use super::new_session_id;
use super::slots::Slots;

/// 2024-11-05 HTTP+SSE streams opened with `GET /sse` whose session has not sent `initialize` yet, by the id
/// their endpoint event named. Bounded exactly, as sessions are (a slot taken before a stream is inserted,
/// given back when it is taken out); streams whose client went away are swept out when it is full.
#[derive(Debug)]
pub struct PendingStreams {
    map: DashMap<String, Pending>,
    slots: Slots,
}

/// A stream and the principal binding of whoever opened it.
#[derive(Debug)]
struct Pending {
    tx: tokio::sync::mpsc::Sender<bytes::Bytes>,
    bound_to: Option<[u8; 16]>,
}

impl PendingStreams {
    /// Holds at most `max` streams.
    pub fn new(max: usize) -> PendingStreams {
        PendingStreams {
            map: DashMap::new(),
            slots: Slots::new(max),
        }
    }

    /// Registers a new stream opened by the principal of `bound_to` and returns its id; `None` when too
    /// many are open.
    pub fn open(
        &self,
        tx: tokio::sync::mpsc::Sender<bytes::Bytes>,
        bound_to: Option<[u8; 16]>,
    ) -> Option<String> {
        let slot = match self.slots.take() {
            Some(slot) => slot,
            None => {
                self.map.retain(|_, p| {
                    let open = !p.tx.is_closed();
                    if !open {
                        self.slots.give_back();
                    }
                    open
                });
                self.slots.take()?
            }
        };
        let id = new_session_id();
        self.map.insert(id.clone(), Pending { tx, bound_to });
        slot.keep();
        Some(id)
    }

    /// Takes the stream out (to become a session's, or to be put back) for the principal of `bound_to`;
    /// a stream another principal opened stays where it is and is not found.
    pub fn take(
        &self,
        id: &str,
        bound_to: Option<[u8; 16]>,
    ) -> Option<tokio::sync::mpsc::Sender<bytes::Bytes>> {
        let (_, p) = self.map.remove_if(id, |_, p| p.bound_to == bound_to)?;
        self.slots.give_back();
        Some(p.tx).filter(|tx| !tx.is_closed())
    }

    /// Puts a stream back after a message that did not start the session. When its slot went to another
    /// stream meanwhile, it is dropped instead (its client sees the stream end).
    pub fn put_back(
        &self,
        id: &str,
        tx: tokio::sync::mpsc::Sender<bytes::Bytes>,
        bound_to: Option<[u8; 16]>,
    ) {
        if tx.is_closed() {
            return;
        }
        let Some(slot) = self.slots.take() else {
            tracing::warn!("HTTP+SSE stream closed: too many open SSE connections to put it back");
            return;
        };
        if self
            .map
            .insert(id.to_owned(), Pending { tx, bound_to })
            .is_none()
        {
            slot.keep();
        }
    }

    /// Streams held.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No streams held.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
