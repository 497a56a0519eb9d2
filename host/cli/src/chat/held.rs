//! What the user types or pastes while an answer streams: held, not echoed into the answer, and
//! offered at the next prompt as one message — never fed to the line editor line by line (each
//! line its own request). During the turn the terminal reads without echo and without waiting for
//! lines, keeps Ctrl-C as a signal (so it is never stuck behind a paste), and marks pastes
//! (bracketed paste), whose markers are dropped.

use std::io::{Read, Write};

use rustix::termios::{LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr};

/// Bracketed paste on and off, and the markers around a paste.
const PASTE_ON: &str = "\x1b[?2004h";
const PASTE_OFF: &str = "\x1b[?2004l";
const PASTE_START: &str = "\x1b[200~";
const PASTE_END: &str = "\x1b[201~";

/// The terminal set up for a turn; [`Held::end`] gives it back and returns what was typed.
pub(super) struct Held {
    before: Option<Termios>,
}

impl Held {
    /// Holds the input from now on (nothing happens when stdin is not a terminal).
    pub(super) fn begin() -> Held {
        let Ok(before) = tcgetattr(std::io::stdin()) else { return Held { before: None } };
        let mut quiet = before.clone();
        quiet.local_modes.remove(LocalModes::ECHO | LocalModes::ICANON);
        quiet.local_modes.insert(LocalModes::ISIG);
        quiet.special_codes[SpecialCodeIndex::VMIN] = 0;
        quiet.special_codes[SpecialCodeIndex::VTIME] = 0;
        if tcsetattr(std::io::stdin(), OptionalActions::Now, &quiet).is_err() {
            return Held { before: None };
        }
        let mut out = std::io::stdout();
        let _ = out.write_all(PASTE_ON.as_bytes()).and_then(|()| out.flush());
        Held { before: Some(before) }
    }

    /// Gives the terminal back as it was and returns what arrived meanwhile, as one text (pastes'
    /// markers dropped, line ends kept); `None` when nothing did.
    pub(super) fn end(self) -> Option<String> {
        let before = self.before.as_ref()?;
        // Reads return at once now (no minimum, no wait): everything queued, then nothing.
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        let mut stdin = std::io::stdin().lock();
        while let Ok(n) = stdin.read(&mut buf) {
            if n == 0 || bytes.len() > MAX_HELD {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        drop(stdin);
        let mut out = std::io::stdout();
        let _ = out.write_all(PASTE_OFF.as_bytes()).and_then(|()| out.flush());
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, before);
        held_text(&bytes)
    }
}

/// The most input held (a larger paste is cut here; the rest stays queued for the editor).
const MAX_HELD: usize = 1 << 20;

/// What `bytes` typed or pasted say, as one text: paste markers dropped, carriage returns as line
/// ends, blank ends trimmed.
fn held_text(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes).replace(PASTE_START, "").replace(PASTE_END, "").replace("\r\n", "\n");
    let text = text.replace('\r', "\n");
    let text = text.trim_matches(|c: char| c == '\n' || c == ' ');
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::held_text;

    #[test]
    fn pastes_and_typed_lines_become_one_text() {
        assert_eq!(held_text(b""), None);
        assert_eq!(held_text(b"\r\n"), None);
        assert_eq!(held_text(b"\x1b[200~one\ntwo\x1b[201~\r").as_deref(), Some("one\ntwo"));
        assert_eq!(held_text(b"typed\rmore\r").as_deref(), Some("typed\nmore"));
    }
}
