//! Era bridging that outlives one dispatch: a legacy client asked the questions a 2026-07-28 backend needs
//! ([`input`]), a legacy backend's request held open for a 2026-07-28 client's answer ([`parked`]), and the
//! sealed `requestState` that carries a bridged request across retries ([`sealed_state`]), and the routes of
//! URL elicitations relayed to legacy clients, for their completion notifications ([`url`]).
//!
//! It must not know the pipeline or HTTP: the dispatch drives it.

pub mod input;
pub mod parked;
pub mod sealed_state;
pub mod url;
