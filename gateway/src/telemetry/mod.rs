//! What the gateway tells its operator about itself while it runs: its logs (`logs`: text or JSON lines on
//! standard error, written by a background thread, the level reloadable). Process-wide, as the tracing
//! subscriber it installs is.
//!
//! It must not be on a request's path: nothing here takes a lock or does I/O on a worker thread; a log line
//! is handed to a bounded queue and dropped (counted) when the queue is full, never waited for.

pub mod logs;
