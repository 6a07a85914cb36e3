//! The process's logs: their format (`--log-format`, else `[log] format` of the config
//! file, else text), the access log's settings (`[log]`), and the subscriber that
//! writes them to stderr (stdout carries the machine-readable `listening` line and the
//! demo's URLs).
//!
//! - **text**: tracing's usual line (`2026-12-06T06:40:00.123456Z  INFO span{field=..}:
//!   message field=..`), colours only on a terminal;
//! - **json**: one object per line: `timestamp` (RFC 3339, UTC), `level`, `target`,
//!   `message`, the fields of the spans the event is in (root first: `stream`,
//!   `input`, `rung` ...), then the event's own fields.
//!
//! A line written while a request is answered carries its id (`request_id`,
//! [`server::http::request_id::current`]) in both formats.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::IsTerminal as _;

use serde::Deserialize;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for a log shipper.
    Json,
}

/// `[log]` of a node's or an MC's config file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// The line format; `--log-format` wins over it.
    #[serde(default)]
    pub format: Option<LogFormat>,
    /// Whether each answered request gets an access log line.
    #[serde(default)]
    pub access: bool,
    /// The share of requests the access log writes, 0.0 to 1.0.
    #[serde(default = "default_access_sample")]
    pub access_sample: f64,
    /// Whether every 5xx answer (shed answers included) is written whatever the sample.
    #[serde(default = "default_true")]
    pub access_errors: bool,
}

fn default_access_sample() -> f64 {
    1.0
}

fn default_true() -> bool {
    true
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: None,
            access: false,
            access_sample: default_access_sample(),
            access_errors: true,
        }
    }
}

impl LogConfig {
    /// The rules serde cannot express.
    ///
    /// # Errors
    /// `access_sample` outside 0.0 to 1.0.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(0.0..=1.0).contains(&self.access_sample) {
            anyhow::bail!(
                "[log] access_sample must be between 0.0 and 1.0, not {}",
                self.access_sample
            );
        }
        Ok(())
    }

    /// The access log's settings.
    pub fn access_settings(&self) -> server::http::access_log::AccessLogSettings {
        server::http::access_log::AccessLogSettings {
            enabled: self.access,
            sample: self.access_sample,
            errors: self.access_errors,
        }
    }
}

/// Starts logging in `flag`'s format, else `config`'s, else text, and sets the access
/// log from `config`. `RUST_LOG` filters as usual (default `info`).
pub fn init(flag: Option<LogFormat>, config: Option<&LogConfig>) {
    let format = flag
        .or_else(|| config.and_then(|c| c.format))
        .unwrap_or_default();
    if let Some(config) = config {
        server::http::access_log::configure(&config.access_settings());
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .event_format(TextFormat::default())
            .init(),
        LogFormat::Json => builder
            .with_ansi(false)
            .fmt_fields(JsonFields)
            .event_format(JsonFormat)
            .init(),
    }
}

/// Logs one outcome of a retried operation (`what`: "publishing the node's state to
/// the mesh") through `flap`: a warning when it starts failing, a reminder with the
/// repeat count while it keeps failing ([`flap_log`]), and how long it failed and how
/// often when it works again; every other failure at debug.
pub fn attempt<E: fmt::Display>(flap: &mut flap_log::FlapLog, what: &str, outcome: &Result<(), E>) {
    let now = std::time::Instant::now();
    match outcome {
        Ok(()) => {
            if let Some(recovery) = flap.recovered(now) {
                tracing::info!(
                    down_ms = recovery.down_for.as_millis() as u64,
                    failures = recovery.failures,
                    flaps = recovery.flaps,
                    "{what}: works again"
                );
            }
        }
        Err(error) => match flap.failed(now) {
            Some(flap_log::Failure::Down) => tracing::warn!(%error, "{what} failed"),
            Some(flap_log::Failure::StillDown {
                down_for, repeated, ..
            }) => tracing::warn!(
                %error,
                down_s = down_for.as_secs(),
                repeated,
                "{what} still failing"
            ),
            None => tracing::debug!(%error, "{what} failed"),
        },
    }
}

/// tracing's text line, with the current request's id after the level.
struct TextFormat {
    /// Lines outside a request.
    full: Format<Full>,
    /// The rest of a line inside a request, after its time, level and id.
    rest: Format<Full, ()>,
}

impl Default for TextFormat {
    fn default() -> Self {
        Self {
            full: Format::default().with_target(false),
            rest: Format::default()
                .with_target(false)
                .without_time()
                .with_level(false),
        }
    }
}

impl<S, N> FormatEvent<S, N> for TextFormat
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
        let Some(id) = server::http::request_id::current() else {
            return self.full.format_event(ctx, writer, event);
        };
        SystemTime.format_time(&mut writer)?;
        write!(
            writer,
            " {:>5} request_id={id} ",
            event.metadata().level().as_str()
        )?;
        self.rest.format_event(ctx, writer, event)
    }
}

/// One JSON object per line ([`JsonFields`] holds the spans' fields).
struct JsonFormat;

thread_local! {
    /// The timestamp's text, reused.
    static TIME: RefCell<String> = const { RefCell::new(String::new()) };
}

impl<S> FormatEvent<S, JsonFields> for JsonFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        writer.write_str("{\"timestamp\":")?;
        TIME.with(|time| {
            let mut time = time.borrow_mut();
            time.clear();
            SystemTime.format_time(&mut Writer::new(&mut *time))?;
            write_json_str(&mut writer, &time)
        })?;
        write!(writer, ",\"level\":\"{}\",\"target\":", metadata.level())?;
        write_json_str(&mut writer, metadata.target())?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<FormattedFields<JsonFields>>() {
                    writer.write_str(fields)?;
                }
            }
        }
        let mut visitor = JsonVisitor::new(&mut writer);
        event.record(&mut visitor);
        visitor.result?;
        if let Some(id) = server::http::request_id::current() {
            write!(writer, ",\"request_id\":\"{id}\"")?;
        }
        writer.write_str("}\n")
    }
}

/// Writes fields as `,"name":value` pairs: a span's, kept with the span, and an
/// event's.
struct JsonFields;

impl<'writer> FormatFields<'writer> for JsonFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut visitor = JsonVisitor::new(&mut writer);
        fields.record(&mut visitor);
        visitor.result
    }

    fn add_fields(
        &self,
        current: &'writer mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let mut visitor = JsonVisitor::new(&mut current.fields);
        fields.record(&mut visitor);
        visitor.result
    }
}

/// Records fields as `,"name":value` pairs.
struct JsonVisitor<'a> {
    out: &'a mut dyn fmt::Write,
    result: fmt::Result,
}

impl<'a> JsonVisitor<'a> {
    fn new(out: &'a mut dyn fmt::Write) -> Self {
        Self {
            out,
            result: Ok(()),
        }
    }

    fn pair(&mut self, field: &Field, value: impl FnOnce(&mut dyn fmt::Write) -> fmt::Result) {
        if self.result.is_err() {
            return;
        }
        self.result = (|| {
            self.out.write_char(',')?;
            write_json_str(self.out, field.name())?;
            self.out.write_char(':')?;
            value(self.out)
        })();
    }
}

impl Visit for JsonVisitor<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        if value.is_finite() {
            self.pair(field, |out| write!(out, "{value}"));
        } else {
            self.pair(field, |out| write!(out, "\"{value}\""));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.pair(field, |out| write!(out, "{value}"));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.pair(field, |out| write!(out, "{value}"));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.pair(field, |out| write!(out, "{value}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.pair(field, |out| write_json_str(out, value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.pair(field, |out| {
            out.write_char('"')?;
            write!(JsonEscaped(out), "{value}")?;
            out.write_char('"')
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.pair(field, |out| {
            out.write_char('"')?;
            write!(JsonEscaped(out), "{value:?}")?;
            out.write_char('"')
        });
    }
}

/// `text` as a JSON string, quotes included.
fn write_json_str(out: &mut dyn fmt::Write, text: &str) -> fmt::Result {
    out.write_char('"')?;
    JsonEscaped(out).write_str(text)?;
    out.write_char('"')
}

/// Escapes what is written through it for the inside of a JSON string.
struct JsonEscaped<'a>(&'a mut dyn fmt::Write);

impl fmt::Write for JsonEscaped<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut plain = 0;
        for (at, c) in text.char_indices() {
            let escaped = match c {
                '"' => "\\\"",
                '\\' => "\\\\",
                '\n' => "\\n",
                '\r' => "\\r",
                '\t' => "\\t",
                c if (c as u32) < 0x20 || c == '\u{7f}' => "",
                _ => continue,
            };
            self.0.write_str(&text[plain..at])?;
            if escaped.is_empty() {
                write!(self.0, "\\u{:04x}", c as u32)?;
            } else {
                self.0.write_str(escaped)?;
            }
            plain = at + c.len_utf8();
        }
        self.0.write_str(&text[plain..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str) -> String {
        let mut out = String::new();
        write_json_str(&mut out, text).expect("a string");
        out
    }

    #[test]
    fn json_strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(escaped("plain"), "\"plain\"");
        assert_eq!(
            escaped("a \"q\" \\ b\nc\u{1}d\u{7f}é"),
            "\"a \\\"q\\\" \\\\ b\\nc\\u0001d\\u007fé\""
        );
    }

    #[test]
    fn the_log_table_has_defaults_and_refuses_a_bad_sample() {
        #[derive(Deserialize)]
        struct File {
            #[serde(default)]
            log: LogConfig,
        }
        let empty: File = toml::from_str("").expect("no [log]");
        assert_eq!(empty.log, LogConfig::default());
        assert!(!empty.log.access_settings().enabled);
        let set: File = toml::from_str(
            "[log]\nformat = \"json\"\naccess = true\naccess_sample = 0.01\naccess_errors = false",
        )
        .expect("a [log]");
        assert_eq!(set.log.format, Some(LogFormat::Json));
        assert_eq!(
            set.log.access_settings(),
            server::http::access_log::AccessLogSettings {
                enabled: true,
                sample: 0.01,
                errors: false,
            }
        );
        let bad: File = toml::from_str("[log]\naccess_sample = 2.0").expect("parses");
        assert!(bad.log.validate().is_err());
        assert!(toml::from_str::<File>("[log]\nformat = \"xml\"").is_err());
        assert!(toml::from_str::<File>("[log]\nacces = true").is_err());
    }
}
