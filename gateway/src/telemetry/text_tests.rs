use std::io;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;

use super::*;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

#[derive(Debug)]
struct Outer(Inner);
#[derive(Debug)]
struct Inner;
impl fmt::Display for Outer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("could not connect\x1b[31m")
    }
}
impl fmt::Display for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection refused")
    }
}
impl std::error::Error for Outer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}
impl std::error::Error for Inner {}

/// Every kind of field and span the gateway logs, and the awkward ones (escapes, terminal controls, raw
/// names, errors with sources, a field recorded after the span opened).
fn events() {
    let id = 388;
    tracing::info!("listening");
    tracing::warn!(
        backend = "mock",
        attempts = 3_u64,
        delta = -2_i64,
        ok = true,
        ratio = 0.5,
        "backend slow"
    );
    let span = tracing::info_span!(
        "request",
        session = tracing::field::display("4f2a…"),
        id = %id,
        method = %"tools/call",
        backend = tracing::field::Empty,
        principal = Option::<&str>::None,
    );
    let _entered = span.enter();
    span.record("backend", "mock");
    tracing::info!(target: "mcpgw::access", method = %"tools/call", backend = "mock", outcome = "ok", code = Option::<i64>::None, duration_us = 8845_u64, principal = "-", "access");
    tracing::error!(
        quoted = "a \"b\" \\ c\n\t",
        unicode = "naïve ✓",
        control = "x\x1by\u{85}",
        "message with \x1b[2J and \u{9b} and \x07"
    );
    tracing::debug!(r#type = "raw", "debug {} {:?}", 1, "two");
    let inner = tracing::info_span!("inner");
    let _inner = inner.enter();
    let error = Outer(Inner);
    tracing::error!(
        error = &error as &(dyn std::error::Error + 'static),
        "failed"
    );
    tracing::trace!(empty = "", "");
}

fn render(ours: bool) -> String {
    let buffer = Buffer::default();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(buffer.clone())
        .with_ansi(false)
        .with_target(false);
    let registry = tracing_subscriber::registry();
    if ours {
        let subscriber = registry.with(layer.event_format(TextLine).fmt_fields(TextFields));
        tracing::subscriber::with_default(
            subscriber.with(tracing_subscriber::filter::LevelFilter::TRACE),
            events,
        );
    } else {
        tracing::subscriber::with_default(
            registry
                .with(layer)
                .with(tracing_subscriber::filter::LevelFilter::TRACE),
            events,
        );
    }
    let bytes = buffer.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn a_line_is_byte_for_byte_what_tracing_subscribers_full_format_writes() {
    let (ours, theirs) = (render(true), render(false));
    let ours: Vec<&str> = ours.lines().collect();
    let theirs: Vec<&str> = theirs.lines().collect();
    assert_eq!(ours.len(), 7, "{ours:#?}");
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        // The time differs between the two runs; its shape is the same.
        assert!(a.len() > 28 && b.len() > 28, "{a}\n{b}");
        assert_eq!(a.as_bytes()[26], b'Z', "{a}");
        assert_eq!(&a[27..], &b[27..], "\nours:   {a}\ntheirs: {b}");
    }
}

#[test]
fn times_are_utc_to_the_microsecond_across_days_years_and_leap_days() {
    let cases = [
        (0_u64, 0_u32, "1970-01-01T00:00:00.000000Z "),
        (951_782_400, 7, "2000-02-29T00:00:00.000007Z "),
        (951_868_799, 999_999, "2000-02-29T23:59:59.999999Z "),
        (1_796_601_697, 356_071, "2026-12-07T00:01:37.356071Z "),
        (4_102_444_799, 120_000, "2099-12-31T23:59:59.120000Z "),
        (4_107_542_400, 1, "2100-03-01T00:00:00.000001Z "),
    ];
    for (secs, micros, want) in cases {
        let at = UNIX_EPOCH + std::time::Duration::new(secs, micros * 1000);
        let mut got = String::new();
        write_time(&mut got, at).unwrap();
        assert_eq!(got, want, "{secs}");
        // The same second again takes the cached prefix.
        let mut again = String::new();
        write_time(&mut again, at).unwrap();
        assert_eq!(again, want);
    }
}
