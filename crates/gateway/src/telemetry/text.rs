//! The text log line, written lean (issue 34): the layout of tracing-subscriber's default
//! text format without colors —
//! `2026-12-05T01:02:03.456789Z  INFO request{request_id="…" method=POST}:turn{…}: target: message k=v …`
//! — written straight into the line's buffer: the timestamp from a per-thread cache of its
//! second (formatted by `chrono` once a second), strings quoted without the formatting machinery when they need no escape,
//! integers with `itoa`. The default format paints every piece through `nu_ansi_term` even
//! with colors off, which made each line cost ~20,000 instructions (two or three lines and two
//! spans per request: a third of a tool request's instructions). Spans' fields are formatted
//! by the same [`LeanFields`] when the span is made. On a terminal the default, colored
//! format is kept (`telemetry::log`).

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event format: see the module's text.
#[derive(Debug, Clone, Copy, Default)]
pub struct LeanText;

/// The field format of events and spans: `message` first as it is, then ` name=value`
/// (strings quoted and escaped as `{:?}` writes them, `%` values as they display).
#[derive(Debug, Clone, Copy, Default)]
pub struct LeanFields;

impl<S, N> FormatEvent<S, N> for LeanText
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        write_now(&mut writer)?;
        writer.write_str(match *meta.level() {
            tracing::Level::ERROR => " ERROR ",
            tracing::Level::WARN => "  WARN ",
            tracing::Level::INFO => "  INFO ",
            tracing::Level::DEBUG => " DEBUG ",
            tracing::Level::TRACE => " TRACE ",
        })?;
        if let Some(scope) = ctx.event_scope() {
            let mut any = false;
            for span in scope.from_root() {
                writer.write_str(span.name())?;
                let ext = span.extensions();
                if let Some(fields) = ext.get::<FormattedFields<N>>().filter(|f| !f.fields.is_empty()) {
                    writer.write_char('{')?;
                    writer.write_str(&fields.fields)?;
                    writer.write_char('}')?;
                }
                writer.write_char(':')?;
                any = true;
            }
            if any {
                writer.write_char(' ')?;
            }
        }
        writer.write_str(meta.target())?;
        writer.write_str(": ")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writer.write_char('\n')
    }
}

impl<'writer> FormatFields<'writer> for LeanFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut v = Visitor { writer, first: true, result: Ok(()) };
        fields.record(&mut v);
        v.result
    }
}

struct Visitor<'w> {
    writer: Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl Visitor<'_> {
    /// ` name=` (or `name=` first); the message alone, unnamed.
    fn name(&mut self, field: &Field) -> fmt::Result {
        if field.name() == "message" {
            if !self.first {
                self.writer.write_char(' ')?;
            }
            self.first = false;
            return Ok(());
        }
        if !self.first {
            self.writer.write_char(' ')?;
        }
        self.first = false;
        // `r#type` and the like are written without their raw prefix.
        let name = field.name();
        self.writer.write_str(name.strip_prefix("r#").unwrap_or(name))?;
        self.writer.write_char('=')
    }

    fn put(&mut self, f: impl FnOnce(&mut Self) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = f(self);
        }
    }
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(|v| {
            v.name(field)?;
            if field.name() == "message" {
                return v.writer.write_str(value);
            }
            if value.chars().all(|c| c != '"' && c != '\\' && !c.is_control()) {
                v.writer.write_char('"')?;
                v.writer.write_str(value)?;
                v.writer.write_char('"')
            } else {
                write!(v.writer, "{value:?}")
            }
        });
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(|v| {
            v.name(field)?;
            v.writer.write_str(itoa::Buffer::new().format(value))
        });
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(|v| {
            v.name(field)?;
            v.writer.write_str(itoa::Buffer::new().format(value))
        });
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(|v| {
            v.name(field)?;
            v.writer.write_str(if value { "true" } else { "false" })
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(|v| {
            v.name(field)?;
            write!(v.writer, "{value:?}")
        });
    }
}

thread_local! {
    /// The last second written and its text, `YYYY-MM-DDTHH:MM:SS.`.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// The current time as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, microseconds).
fn write_now(w: &mut Writer<'_>) -> fmt::Result {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs();
    SECOND.with(|cell| {
        let mut cache = cell.borrow_mut();
        if cache.0 != secs {
            cache.1.clear();
            let _ = write_second(&mut cache.1, secs);
            cache.0 = secs;
        }
        w.write_str(&cache.1)
    })?;
    let micros = now.subsec_micros();
    let mut digits = itoa::Buffer::new();
    let text = digits.format(micros);
    for _ in text.len()..6 {
        w.write_char('0')?;
    }
    w.write_str(text)?;
    w.write_char('Z')
}

/// `YYYY-MM-DDTHH:MM:SS.` of `secs` since the Unix epoch (UTC), by `chrono`.
fn write_second(out: &mut String, secs: u64) -> fmt::Result {
    let when = i64::try_from(secs).ok().and_then(|s| chrono::DateTime::from_timestamp(s, 0)).unwrap_or_default();
    write!(out, "{}", when.format("%Y-%m-%dT%H:%M:%S."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_as_utc_dates() {
        let text = |secs| {
            let mut s = String::new();
            write_second(&mut s, secs).unwrap();
            s
        };
        assert_eq!(text(0), "1970-01-01T00:00:00.");
        assert_eq!(text(951_782_400), "2000-02-29T00:00:00.");
        assert_eq!(text(1_764_896_523), "2025-12-05T01:02:03.");
        assert_eq!(text(4_102_444_799), "2099-12-31T23:59:59.");
    }

    /// A line through a real subscriber: the default format's layout, fields as it writes them.
    #[test]
    fn a_line_has_the_default_layout() {
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::layer::SubscriberExt;
        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let out = buf.clone();
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .event_format(LeanText)
            .fmt_fields(LeanFields)
            .with_writer(move || out.clone());
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", request_id = "r-1", method = %"POST", status = tracing::field::Empty);
            span.record("status", 200u64);
            let _in = span.enter();
            tracing::info!(target: "t::x", id = %"resp_1", n = 3u64, ok = true, ms = 1.5, q = "a \"b\"", "turn");
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let line = text.lines().next().unwrap();
        assert_eq!(line.as_bytes()[26], b'Z', "{line}");
        assert_eq!(
            &line[27..],
            r#"  INFO request{request_id="r-1" method=POST status=200}: t::x: turn id=resp_1 n=3 ok=true ms=1.5 q="a \"b\"""#
        );
    }
}
