//! Horizontal deployment (issue 14): sessions that live in their sealed ids survive a restart with the same
//! key ring, and are refused without it; three replicas behind nginx with Redis lose nothing to a kill, a
//! rolling restart or a Redis restart.

pub(crate) mod cluster;
mod limits;
mod restart;
mod shared;
pub(crate) mod three;
