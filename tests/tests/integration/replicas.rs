//! Horizontal deployment (issue 14): sessions that live in their sealed ids survive a restart with the same
//! key ring, and are refused without it.

mod restart;
