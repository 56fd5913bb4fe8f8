//! What changes, and who hears of it: what backends announce on their own ([`changes`]: reconnections,
//! list changes, resource updates, log messages), the listing of backends into the catalog that follows
//! ([`listing`], also the first catalog at start), and the clients' `subscriptions/listen` streams
//! ([`streams`]), and where a URL elicitation's completion goes ([`completion`]). Who wants what is kept with the sessions (`session::subscriptions`); who may hear it is
//! decided by the reader's view ([`readers`], [`fanout`]).
//!
//! It must not know the pipeline or the transports: they call it.

pub mod changes;
pub mod completion;
pub mod fanout;
pub mod listing;
pub mod readers;
pub mod streams;
