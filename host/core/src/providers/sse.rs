//! Server-sent events framing (the WHATWG `text/event-stream` rules): bytes in, `(event, data)`
//! out. The host frames; the provider plugin's decoder only ever sees whole events.

/// One framed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, empty when none.
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// An incremental framer: feed chunks as they arrive, collect whole events.
#[derive(Debug, Default)]
pub struct Framer {
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl Framer {
    /// Feeds bytes; returns the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, &mut out);
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
        out
    }

    /// The stream ended: an event left without its blank line is dispatched (servers that close
    /// right after the last `data:` line are common).
    pub fn finish(&mut self) -> Option<Event> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, &mut out);
        }
        self.line_done(b"", &mut out);
        out.pop()
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<Event>) {
        if line.is_empty() {
            if self.has_data {
                out.push(Event { event: std::mem::take(&mut self.event), data: std::mem::take(&mut self.data) });
            } else {
                self.event.clear();
            }
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return; // a comment (keep-alive)
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.event = value.into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            _ => {} // `id`, `retry` and unknown fields carry nothing a provider needs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_all(chunks: &[&[u8]]) -> Vec<Event> {
        let mut f = Framer::default();
        let mut out: Vec<Event> = chunks.iter().flat_map(|c| f.push(c)).collect();
        out.extend(f.finish());
        out
    }

    fn ev(event: &str, data: &str) -> Event {
        Event { event: event.into(), data: data.into() }
    }

    #[test]
    fn events_split_anywhere_frame_the_same() {
        let stream = b"event: a\ndata: {\"x\":1}\n\n: keep-alive\n\ndata: one\ndata:two\r\n\r\nevent: b\rdata: 3\r\r";
        let whole = frame_all(&[stream]);
        assert_eq!(whole, vec![ev("a", "{\"x\":1}"), ev("", "one\ntwo"), ev("b", "3")]);
        for cut in 0..stream.len() {
            assert_eq!(frame_all(&[&stream[..cut], &stream[cut..]]), whole, "cut at {cut}");
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(frame_all(&bytewise), whole);
    }

    #[test]
    fn an_unterminated_last_event_is_dispatched_at_the_end_and_an_event_without_data_is_not() {
        assert_eq!(frame_all(&[b"event: x\n\ndata: [DONE]"]), vec![ev("", "[DONE]")]);
        assert_eq!(frame_all(&[b"id: 4\nretry: 10\nevent: only\n\n"]), vec![]);
    }
}
