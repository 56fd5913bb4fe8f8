//! The gateway's logs: one line per event on standard error, as text or as one JSON object (timestamp,
//! level, target, the event's fields, and the fields of the span it happened in: session, request id,
//! method, backend, generation, principal). A line goes into its thread's bounded buffer, which a background
//! thread writes out about a millisecond later (`batched`): a worker never waits for standard error nor wakes
//! another thread per line, and a line that does not fit is dropped and counted ([`dropped_lines`]:
//! `/readyz` and the metrics report it).
//!
//! The level comes from `RUST_LOG` when it is set, else `[server] log_level`, else the command's default;
//! a config reload applies a new `log_level` ([`set_level`]) unless `RUST_LOG` is set. The web framework's
//! own start and stop lines are at warn unless the directives name `actix_server`. The few lines a person
//! reads at start and stop ([`announce`]) are JSON too under the JSON format.

use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

use super::batched::{self, Batched, Guard};
use super::text::{TextFields, TextLine};
use crate::config::LogFormat;

/// Bytes of lines a thread holds for the writer thread at most; past it a line is dropped and counted.
pub const BUFFERED_BYTES: usize = 4 * 1024 * 1024;

/// The installed subscriber's level filter, for [`set_level`].
static LEVEL: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();
/// The writer's count of dropped lines, for [`dropped_lines`].
static WRITER: OnceLock<Batched> = OnceLock::new();

/// A layer the caller adds to the subscriber (the traces' exporter), filtered by the same level.
#[cfg(any(test, feature = "internals"))]
pub type ExtraLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Keeps the writer thread; dropping it writes out what is queued (keep it until the process ends).
#[derive(Debug)]
pub struct Logging {
    _guard: Guard,
}

/// Installs the process's subscriber: `format` on standard error through a bounded queue, at `RUST_LOG`'s
/// level if set, else `level` (`[server] log_level`), else `default`. A second call (tests) changes nothing.
pub fn init(format: LogFormat, level: Option<&str>, default: &str) -> Logging {
    let (writer, guard) = batched::batched(std::io::stderr(), BUFFERED_BYTES);
    let _ = WRITER.set(writer.clone());
    let _ = FORMAT.set(format);
    let filter = from_env().unwrap_or_else(|| {
        level
            .and_then(|l| EnvFilter::try_new(quiet_framework(l)).ok())
            .unwrap_or_else(|| EnvFilter::new(quiet_framework(default)))
    });
    let (filter, handle) = reload::Layer::new(filter);
    let formatted = match format {
        // tracing-subscriber's `Full` line without its styling machinery (`text`): the same bytes, uncoloured.
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .event_format(TextLine)
            .fmt_fields(TextFields)
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
    let directives = std::env::var(EnvFilter::DEFAULT_ENV).ok()?;
    EnvFilter::try_new(quiet_framework(&directives)).ok()
}

/// Applies a new `[server] log_level` (a config reload): ignored while `RUST_LOG` is set (it wins), an error
/// when the directives do not parse (the current level stays).
pub fn set_level(level: &str) -> Result<(), String> {
    if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() {
        return Ok(());
    }
    let filter = EnvFilter::try_new(quiet_framework(level))
        .map_err(|e| format!("log_level {level:?}: {e}"))?;
    match LEVEL.get() {
        Some(handle) => handle.reload(filter).map_err(|e| format!("log_level: {e}")),
        None => Ok(()),
    }
}

/// Log lines dropped because the writer thread was behind (their thread held [`BUFFERED_BYTES`]).
pub fn dropped_lines() -> u64 {
    WRITER.get().map_or(0, Batched::dropped_lines)
}

/// Writes out every log line so far: call it before writing to standard error directly, so that what
/// was logged before comes before (lines otherwise wait for the writer thread about a millisecond).
pub fn flush() {
    if let Some(writer) = WRITER.get() {
        writer.flush();
    }
}

/// The log format of the process, once [`init`] has run (text before).
static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// One line a person reads at start or stop (where to point a client, which config is served), written on
/// standard error after every log line so far: the text itself, or under `log_format = "json"` a JSON object
/// like the log lines (`timestamp`, `level`, `message`, `target` `"mcpgw"`, and `fields`), so that every line
/// of standard error parses.
pub fn announce(level: tracing::Level, message: &str, fields: serde_json::Value) {
    flush();
    eprintln!(
        "{}",
        announcement(FORMAT.get().copied(), level, message, fields)
    );
}

fn announcement(
    format: Option<LogFormat>,
    level: tracing::Level,
    message: &str,
    fields: serde_json::Value,
) -> String {
    if format != Some(LogFormat::Json) {
        return message.to_owned();
    }
    let mut timestamp = String::new();
    let _ = tracing_subscriber::fmt::time::FormatTime::format_time(
        &tracing_subscriber::fmt::time::SystemTime,
        &mut tracing_subscriber::fmt::format::Writer::new(&mut timestamp),
    );
    let mut line = serde_json::json!({
        "timestamp": timestamp,
        "level": level.as_str(),
        "message": message,
    });
    if let (Some(line), serde_json::Value::Object(fields)) = (line.as_object_mut(), fields) {
        line.extend(fields);
        line.insert("target".to_owned(), "mcpgw".into());
    }
    line.to_string()
}

/// `directives` with the web framework's own start and stop lines (`actix_server`: workers starting, idle
/// workers shutting down) at warn, unless the directives name it: they say nothing an operator acts on.
fn quiet_framework(directives: &str) -> String {
    if directives.contains("actix_server") {
        directives.to_owned()
    } else {
        format!("{directives},actix_server=warn")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_are_json_lines_under_the_json_format() {
        use tracing::Level as L;
        const INFO: L = L::INFO;
        let fields = serde_json::json!({"url": "http://127.0.0.1:7800/mcp"});
        assert_eq!(
            announcement(
                Some(LogFormat::Text),
                INFO,
                "mcpgw listening on x",
                fields.clone()
            ),
            "mcpgw listening on x"
        );
        assert_eq!(announcement(None, INFO, "m", fields.clone()), "m");
        let line: serde_json::Value = serde_json::from_str(&announcement(
            Some(LogFormat::Json),
            INFO,
            "mcpgw listening on x",
            fields,
        ))
        .unwrap();
        assert_eq!(line["message"], "mcpgw listening on x");
        assert_eq!(line["url"], "http://127.0.0.1:7800/mcp");
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["target"], "mcpgw");
        assert!(
            line["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
    }

    #[test]
    fn the_frameworks_lines_are_quiet_unless_named() {
        // (directives, what the filter is made of)
        let table = [
            ("info", "info,actix_server=warn"),
            (
                "debug,mcpgw::access=warn",
                "debug,mcpgw::access=warn,actix_server=warn",
            ),
            ("info,actix_server=info", "info,actix_server=info"),
        ];
        for (given, used) in table {
            assert_eq!(quiet_framework(given), used);
        }
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
