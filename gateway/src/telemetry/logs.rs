//! The gateway's logs: one line per event on standard error, as text or as one JSON object (timestamp,
//! level, target, the event's fields, and the fields of the span it happened in: session, request id,
//! method, backend, generation, principal). A line is handed to a bounded queue that a background thread
//! writes out: a worker never waits for standard error, and a line that does not fit is dropped and
//! counted ([`dropped_lines`]: `/readyz` and the metrics report it).
//!
//! The level comes from `RUST_LOG` when it is set, else `[server] log_level`, else the command's default;
//! a config reload applies a new `log_level` ([`set_level`]) unless `RUST_LOG` is set.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use tracing_appender::non_blocking::{ErrorCounter, NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

use crate::config::LogFormat;

/// Lines waiting for the writer thread at most; past it a line is dropped and counted.
pub const QUEUED_LINES: usize = 16_384;

/// The installed subscriber's level filter, for [`set_level`].
static LEVEL: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();
/// The writer's count of dropped lines, for [`dropped_lines`].
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// A layer the caller adds to the subscriber (the traces' exporter), filtered by the same level.
pub type ExtraLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Keeps the writer thread; dropping it writes out what is queued (keep it until the process ends).
#[derive(Debug)]
pub struct Logging {
    _guard: WorkerGuard,
}

/// A writer onto `out` that never blocks its caller: lines queue (at most `lines`) for a thread of its own,
/// and one that does not fit is dropped and counted by the returned counter.
pub fn bounded<W: Write + Send + 'static>(out: W, lines: usize) -> (NonBlocking, WorkerGuard) {
    NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(lines)
        .thread_name("mcpgw-log")
        .finish(out)
}

/// Installs the process's subscriber: `format` on standard error through a bounded queue, at `RUST_LOG`'s
/// level if set, else `level` (`[server] log_level`), else `default`. A second call (tests) changes nothing.
pub fn init(format: LogFormat, level: Option<&str>, default: &str) -> Logging {
    let (writer, guard) = bounded(std::io::stderr(), QUEUED_LINES);
    let _ = DROPPED.set(writer.error_counter());
    let filter = from_env().unwrap_or_else(|| {
        level
            .and_then(|l| EnvFilter::try_new(l).ok())
            .unwrap_or_else(|| EnvFilter::new(default))
    });
    let (filter, handle) = reload::Layer::new(filter);
    let formatted = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .with_target(true)
            .with_current_span(true)
            .with_span_list(false)
            .flatten_event(true)
            .boxed(),
    };
    if Registry::default()
        .with(filter)
        .with(formatted)
        .try_init()
        .is_ok()
    {
        let _ = LEVEL.set(handle);
    }
    Logging { _guard: guard }
}

fn from_env() -> Option<EnvFilter> {
    std::env::var_os(EnvFilter::DEFAULT_ENV)?;
    EnvFilter::try_from_default_env().ok()
}

/// Applies a new `[server] log_level` (a config reload): ignored while `RUST_LOG` is set (it wins), an error
/// when the directives do not parse (the current level stays).
pub fn set_level(level: &str) -> Result<(), String> {
    if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() {
        return Ok(());
    }
    let filter = EnvFilter::try_new(level).map_err(|e| format!("log_level {level:?}: {e}"))?;
    match LEVEL.get() {
        Some(handle) => handle.reload(filter).map_err(|e| format!("log_level: {e}")),
        None => Ok(()),
    }
}

/// Log lines dropped because the writer thread was behind (the queue held [`QUEUED_LINES`]).
pub fn dropped_lines() -> u64 {
    DROPPED
        .get()
        .map_or(0, |c| u64::try_from(c.dropped_lines()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A writer that blocks until the test lets it go.
    struct Stalled(mpsc::Receiver<()>);

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_standard_error_drops_and_counts_lines_and_never_blocks_the_writer() {
        let (release, stalled) = mpsc::channel();
        let (mut writer, guard) = bounded(Stalled(stalled), 4);
        // The writer thread takes one line and blocks on it; four more queue; every later one is dropped.
        // Were the queue unbounded or blocking, this loop would hang or drop nothing.
        for i in 0..100 {
            writer
                .write_all(format!("line {i}\n").as_bytes())
                .expect("a non-blocking write succeeds");
        }
        let dropped = writer.error_counter().dropped_lines();
        assert!(
            (95..=96).contains(&dropped),
            "4 queued and at most 1 taken: {dropped} dropped"
        );
        drop(release);
        drop(guard);
    }

    #[test]
    fn a_log_level_that_does_not_parse_is_refused_and_says_why() {
        if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() {
            return; // RUST_LOG wins: set_level is a no-op by design
        }
        let e = set_level("info,mcpgw=[").expect_err("bad directives");
        assert!(e.starts_with("log_level \"info,mcpgw=[\""), "{e}");
        set_level("info,mcpgw=debug").expect("good directives");
    }
}
