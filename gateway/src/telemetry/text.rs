//! The text log line, written without tracing-subscriber's styling machinery: the same bytes its `Full`
//! format writes with ANSI off and targets hidden (`2026-12-07T00:01:37.356071Z  INFO span{a=1}: message
//! key="value"`), at a fraction of the cost. Every request opens a span and every answered request writes
//! an access line, so this runs on every call (issue 34: the fmt layer's styles, its `Debug` escaping of
//! every string and its calendar arithmetic per line were a tenth of a forwarded call's instructions).
//!
//! What it keeps of the original: the time in UTC to the microsecond, the level right-aligned in five
//! columns, the spans from the root with their fields, the message sanitized against terminal escapes
//! (ESC, BEL, BS, FF, DEL and the C1 controls shown escaped), strings quoted and escaped as `Debug` does,
//! other values as their `Debug` (a `%` field: its `Display`), `log.*` fields of bridged `log` records
//! left out. A test holds it to the original byte for byte.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::field::{MakeVisitor, VisitFmt, VisitOutput};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event format: time, level, span scope, fields.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TextLine;

/// The field format (events' and spans' fields alike).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TextFields;

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write_time(&mut writer, SystemTime::now())?;
        writer.write_str(level(event.metadata().level()))?;
        if let Some(scope) = ctx.event_scope() {
            let mut seen = false;
            for span in scope.from_root() {
                writer.write_str(span.metadata().name())?;
                seen = true;
                let extensions = span.extensions();
                if let Some(fields) = extensions.get::<FormattedFields<N>>()
                    && !fields.is_empty()
                {
                    writer.write_char('{')?;
                    writer.write_str(fields)?;
                    writer.write_char('}')?;
                }
                writer.write_char(':')?;
            }
            if seen {
                writer.write_char(' ')?;
            }
        }
        ctx.format_fields(writer.by_ref(), event)?;
        writer.write_char('\n')
    }
}

/// The level as the original writes it: right-aligned in five columns, then a space.
fn level(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "TRACE ",
        Level::DEBUG => "DEBUG ",
        Level::INFO => " INFO ",
        Level::WARN => " WARN ",
        Level::ERROR => "ERROR ",
    }
}

thread_local! {
    /// The last whole second this thread wrote and its text up to the seconds (`2026-12-07T00:01:37.`): a
    /// line in the same second formats only its microseconds.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// `2026-12-07T00:01:37.356071Z ` (UTC, microseconds, a space after).
fn write_time(writer: &mut impl fmt::Write, now: SystemTime) -> fmt::Result {
    let Ok(since) = now.duration_since(UNIX_EPOCH) else {
        return writer.write_str("<unknown time> ");
    };
    let secs = since.as_secs();
    SECOND.with_borrow_mut(|(second, text)| {
        if *second != secs {
            *second = secs;
            text.clear();
            let (year, month, day) = civil(secs / 86_400);
            let of_day = secs % 86_400;
            let _ = write!(
                text,
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.",
                of_day / 3600,
                of_day / 60 % 60,
                of_day % 60
            );
        }
        writer.write_str(text)
    })?;
    let micros = since.subsec_micros();
    let mut digits = [b'0'; 6];
    let mut rest = micros;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    // Six ASCII digits.
    writer.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)?;
    writer.write_str("Z ")
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`).
pub(crate) fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

impl<'a> MakeVisitor<Writer<'a>> for TextFields {
    type Visitor = FieldVisitor<'a>;

    fn make_visitor(&self, target: Writer<'a>) -> FieldVisitor<'a> {
        FieldVisitor {
            writer: target,
            first: true,
            result: Ok(()),
        }
    }
}

/// Writes `message key=value key="string"`, fields separated by one space.
pub(super) struct FieldVisitor<'a> {
    writer: Writer<'a>,
    first: bool,
    result: fmt::Result,
}

impl FieldVisitor<'_> {
    /// Writes the separator and `name=`; false (write nothing) for bridged `log` metadata or after an error.
    fn key(&mut self, name: &str) -> bool {
        if self.result.is_err() || name.starts_with("log.") {
            return false;
        }
        if !std::mem::take(&mut self.first) {
            self.result = self.writer.write_char(' ');
        }
        if name != "message" {
            let name = name.strip_prefix("r#").unwrap_or(name);
            self.result = self
                .result
                .and_then(|()| self.writer.write_str(name))
                .and_then(|()| self.writer.write_char('='));
        }
        self.result.is_ok()
    }
}

impl Visit for FieldVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if !self.key(field.name()) {
            return;
        }
        self.result = if field.name() == "message" {
            write_sanitized(&mut self.writer, value)
        } else {
            write_quoted(&mut self.writer, value)
        };
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.key(field.name()) {
            self.result = write!(self.writer, "{value}");
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.key(field.name()) {
            self.result = write!(self.writer, "{value}");
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.key(field.name()) {
            self.result = self.writer.write_str(if value { "true" } else { "false" });
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if !self.key(field.name()) {
            return;
        }
        // `error sources=[cause, its cause]`, each part sanitized.
        let writer = &mut self.writer;
        self.result = (|| {
            write!(Sanitizing(&mut *writer), "{value}")?;
            if let Some(source) = value.source() {
                write!(writer, " {}.sources=[", field.name())?;
                let mut next = Some(source);
                let mut first = true;
                while let Some(error) = next {
                    if !std::mem::take(&mut first) {
                        writer.write_str(", ")?;
                    }
                    write!(Sanitizing(&mut *writer), "{error}")?;
                    next = error.source();
                }
                writer.write_char(']')?;
            }
            Ok(())
        })();
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if !self.key(field.name()) {
            return;
        }
        self.result = if field.name() == "message" {
            // Sanitized as it is formatted: no copy of the message per line.
            write!(Sanitizing(&mut self.writer), "{value:?}")
        } else {
            write!(self.writer, "{value:?}")
        };
    }
}

impl VisitOutput<fmt::Result> for FieldVisitor<'_> {
    fn finish(self) -> fmt::Result {
        self.result
    }
}

impl VisitFmt for FieldVisitor<'_> {
    fn writer(&mut self) -> &mut dyn fmt::Write {
        &mut self.writer
    }
}

/// A string as `Debug` writes it (`"..."` with escapes), without the formatter when nothing needs one.
fn write_quoted(writer: &mut impl fmt::Write, value: &str) -> fmt::Result {
    if value
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        writer.write_char('"')?;
        writer.write_str(value)?;
        writer.write_char('"')
    } else {
        write!(writer, "{value:?}")
    }
}

/// A message with terminal escapes shown escaped (ESC, BEL, BS, FF, DEL, C1 controls), as the original
/// sanitizes it.
fn write_sanitized(writer: &mut impl fmt::Write, value: &str) -> fmt::Result {
    if !value.chars().any(needs_escape) {
        return writer.write_str(value);
    }
    for ch in value.chars() {
        match ch {
            '\x1b' => writer.write_str("\\x1b")?,
            '\x07' => writer.write_str("\\x07")?,
            '\x08' => writer.write_str("\\x08")?,
            '\x0c' => writer.write_str("\\x0c")?,
            '\x7f' => writer.write_str("\\x7f")?,
            ch if needs_escape(ch) => write!(writer, "\\u{{{:x}}}", ch as u32)?,
            ch => writer.write_char(ch)?,
        }
    }
    Ok(())
}

/// A writer that sanitizes what is formatted into it (`write_sanitized` on each piece).
struct Sanitizing<W>(W);

impl<W: fmt::Write> fmt::Write for Sanitizing<W> {
    fn write_str(&mut self, piece: &str) -> fmt::Result {
        write_sanitized(&mut self.0, piece)
    }
}

fn needs_escape(ch: char) -> bool {
    matches!(ch, '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f') || ('\u{80}'..='\u{9f}').contains(&ch)
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
