//! What changes, and who hears of it: what backends announce on their own ([`changes`]: reconnections,
//! list changes, resource updates, log messages), the listing of backends into the catalog that follows
//! ([`listing`], also the first catalog at start), and the clients' `subscriptions/listen` streams
//! ([`streams`]). Who wants what is kept with the sessions (`session::subscriptions`).
//!
//! It must not know the pipeline or the transports: they call it.

pub mod changes;
pub mod listing;
pub mod streams;
