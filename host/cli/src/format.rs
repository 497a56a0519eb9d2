//! Rendering helpers shared by the commands' human-readable output.

use std::io::Write;

use serde::Serialize;

/// The local time zone, looked up once per process.
static LOCAL: std::sync::LazyLock<jiff::tz::TimeZone> = std::sync::LazyLock::new(jiff::tz::TimeZone::system);

/// A unix-milliseconds time in the local time zone, to the minute.
pub fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_zoned_datetime(LOCAL.clone()).strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// Buffered stdout: commands write through this and flush once at the end. What is written as
/// text shows control characters visibly (see [`Visible`]); [`json`] writes exactly.
pub fn stdout() -> Out {
    Visible::new(std::io::BufWriter::new(std::io::stdout().lock()))
}

/// The commands' stdout.
pub type Out = Visible<std::io::BufWriter<std::io::StdoutLock<'static>>>;

pub use seshat::conversation::{is_hidden, visible};

/// A writer that shows control characters visibly ([`visible`]) in everything written through it,
/// including a character split across writes (streamed text).
pub struct Visible<W: Write> {
    inner: W,
    /// The start of a UTF-8 sequence whose end has not been written yet.
    pending: Vec<u8>,
}

impl<W: Write> Visible<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Visible { inner, pending: Vec::new() }
    }

    /// The writer underneath, for output that must stay exact (JSON).
    pub fn raw(&mut self) -> &mut W {
        &mut self.inner
    }
}

impl<W: Write> Write for Visible<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let joined;
        let bytes = if self.pending.is_empty() {
            buf
        } else {
            self.pending.extend_from_slice(buf);
            joined = std::mem::take(&mut self.pending);
            &joined[..]
        };
        let mut rest = bytes;
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.inner.write_all(visible(text).as_bytes())?;
                    rest = &[];
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    self.inner.write_all(visible(std::str::from_utf8(good).unwrap_or_default()).as_bytes())?;
                    match e.error_len() {
                        // Cut short: wait for the rest of the character.
                        None => {
                            self.pending = bad.to_vec();
                            rest = &[];
                        }
                        Some(n) => {
                            for b in &bad[..n] {
                                write!(self.inner, "\\x{b:02x}")?;
                            }
                            rest = &bad[n..];
                        }
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A token count the way status lines show it, rounded to the nearest: `950`, `9500`, `12k`,
/// `1.2M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..10_000 => n.to_string(),
        10_000..999_500 => format!("{}k", (n + 500) / 1_000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// A token count in full, its thousands grouped: `18,536`. Reports use it, so that what a
/// notice says is the figure `--json` gives.
pub fn exact(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// Context use: `63% 124k/198k`, or `-` when the window or the use is unknown.
pub fn context_use(used: Option<u64>, window: Option<u64>) -> String {
    match (used, window) {
        (Some(used), Some(window)) if window > 0 => {
            format!("{}% {}/{}", used * 100 / window, tokens(used), tokens(window))
        }
        (Some(used), _) => tokens(used),
        _ => "-".to_string(),
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut, on one line and safe for a terminal
/// (see [`plain`]).
pub fn clip(text: &str, max: usize) -> String {
    let text = plain(text);
    if text.chars().count() <= max {
        return text;
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// Stored text made safe to print on one terminal line: line breaks and tabs become spaces, and
/// every other control character (escape sequences a message could carry) is shown as `\u{…}`.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if is_hidden(c) || c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// Writes `value` as pretty JSON followed by a newline, exactly (strings keep every character;
/// JSON escapes the C0 controls itself).
pub fn json<W: Write>(out: &mut Visible<W>, value: &impl Serialize) -> anyhow::Result<()> {
    let out = out.raw();
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

/// How full the window is, as the status line shows it: `ctx 63% · 124k/198k`.
pub fn context_line(c: &seshat::client::ContextUse) -> String {
    let pct = (c.used * 100).checked_div(c.window).unwrap_or(0);
    format!("ctx {pct}% · {}/{}", tokens(c.used), tokens(c.window))
}

/// How tokens are counted where precision decides, in words (`/context`).
pub fn counting(c: &seshat::providers::Counting) -> String {
    use seshat::providers::Counting;
    match c {
        Counting::Server { counter } => format!("tokens counted by the server ({})", visible(counter)),
        Counting::Local { tokenizer } => format!("tokens counted here ({tokenizer})"),
        Counting::Estimate { server_has_none: true } => {
            "tokens estimated: the server has no token counter Seshat can use; calibrated by the counts it reports"
                .to_string()
        }
        _ => "tokens estimated (the server is asked to count them near the threshold)".to_string(),
    }
}

/// `n` and its noun, singular or plural (`1 compaction`, `3 compactions`); `plural` is the
/// plural form.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// A time a flag names (`flag` in its messages): a span from now — ahead when `ahead`, else back
/// (`30d`, `12h`, `90m`) — or a time (`2027-01-31T12:00:00Z`), as Unix milliseconds.
pub fn when(flag: &str, text: &str, ahead: bool) -> anyhow::Result<i64> {
    use anyhow::Context as _;
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t.as_millisecond());
    }
    let span: jiff::Span = text.parse().with_context(|| {
        format!("`{flag} {text}` is neither a span (`30d`, `12h`, `90m`) nor a time (`2027-01-31T12:00:00Z`)")
    })?;
    // A day is 24 hours here; weeks and longer are counted in days too.
    let length = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .with_context(|| format!("`{flag} {text}`: give days, hours or minutes (months vary in length)"))?;
    anyhow::ensure!(length.is_positive(), "`{flag} {text}` is not a positive span");
    let now = jiff::Timestamp::now();
    let at = if ahead { now.checked_add(length) } else { now.checked_sub(length) };
    Ok(at.with_context(|| format!("`{flag} {text}` is too far away"))?.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_figures_round_to_the_nearest_and_reports_give_them_whole() {
        let short: Vec<String> = [950, 9_999, 10_499, 10_500, 7_790_000, 999_499].map(tokens).to_vec();
        assert_eq!(short, ["950", "9999", "10k", "11k", "7.8M", "999k"]);
        let whole: Vec<String> = [0, 999, 1_000, 18_536, 1_234_567].map(exact).to_vec();
        assert_eq!(whole, ["0", "999", "1,000", "18,536", "1,234,567"]);
    }

    #[test]
    fn counts_take_the_plural_except_for_one() {
        assert_eq!([0, 1, 2].map(|n| count(n, "message", "messages")), ["0 messages", "1 message", "2 messages"]);
    }
}
