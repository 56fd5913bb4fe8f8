//! The store's bound on session actors: slots taken with a compare-and-swap below the maximum, so however
//! many `initialize`s race, no more actors than `max_sessions` exist at once.

use std::sync::atomic::{AtomicUsize, Ordering};

/// At most `max` slots taken at once.
#[derive(Debug)]
pub(super) struct Slots {
    taken: AtomicUsize,
    pub(super) max: usize,
}

impl Slots {
    pub(super) fn new(max: usize) -> Slots {
        Slots {
            taken: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes a slot if one is free; it is given back when the returned guard drops, unless kept.
    pub(super) fn take(&self) -> Option<Slot<'_>> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Some(self)))
    }

    pub(super) fn give_back(&self) {
        self.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A slot taken and not yet kept: given back on drop (a session that was not inserted after all).
pub(super) struct Slot<'a>(pub(super) Option<&'a Slots>);

impl Slot<'_> {
    /// The slot now belongs to an entry in the map; the entry's removal gives it back.
    pub(super) fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(slots) = self.0 {
            slots.give_back();
        }
    }
}
