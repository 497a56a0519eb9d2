//! A plugin's stderr, kept as a bounded tail in host memory: an interpreter (CPython, a JS engine)
//! writes an uncaught exception's traceback there before the instance traps, and the host puts
//! that tail in the trap's error and its log. Nothing reaches the terminal or a file: the stream
//! is the plugin's only output, and the host decides what of it is shown (redacted, escaped).

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// The most of a call's stderr kept: its last bytes (a traceback ends with the exception).
pub(super) const TAIL_BYTES: usize = 4096;

#[derive(Debug, Default)]
struct Tail {
    /// The last bytes written in the call in progress, at most [`TAIL_BYTES`].
    kept: Vec<u8>,
    /// Everything written in the call in progress, in bytes.
    written: u64,
}

/// The stderr of one plugin instance: every stream the guest opens on it writes here.
#[derive(Debug, Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<Tail>>);

/// What a call wrote to stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Written {
    /// Its last bytes, as text (invalid UTF-8 replaced), at most [`TAIL_BYTES`].
    pub(super) tail: String,
    /// How many bytes were written before the tail (cut).
    pub(super) cut: u64,
}

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        tail.written += bytes.len() as u64;
        let bytes = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
        let over = (tail.kept.len() + bytes.len()).saturating_sub(TAIL_BYTES);
        tail.kept.drain(..over);
        tail.kept.extend_from_slice(bytes);
    }

    /// What was written since the last call to `take` (none: `None`), and starts afresh.
    pub(super) fn take(&self) -> Option<Written> {
        let mut tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.written == 0 {
            return None;
        }
        let kept = std::mem::take(&mut tail.kept);
        let cut = tail.written - kept.len() as u64;
        tail.written = 0;
        // A cut may fall inside a character: the lossy decoding shows that one as U+FFFD.
        Some(Written { tail: String::from_utf8_lossy(&kept).into_owned(), cut })
    }
}

impl IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrTail {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// As much as a guest may write at once; any amount is taken (only the tail is kept).
const PERMIT: usize = 64 * 1024;

impl OutputStream for StderrTail {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for StderrTail {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for StderrTail {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_bytes_of_a_call_are_kept_and_the_rest_is_counted() {
        let s = StderrTail::default();
        assert_eq!(s.take(), None, "nothing written");
        s.push(b"Traceback (most recent call last):\n");
        s.push(&vec![b'x'; TAIL_BYTES]);
        s.push(b"\nKeyError: 'missing key'\n");
        let w = s.take().expect("written");
        assert_eq!(w.tail.len(), TAIL_BYTES);
        assert!(w.tail.ends_with("KeyError: 'missing key'\n"), "{}", &w.tail[w.tail.len() - 40..]);
        assert_eq!(w.cut, 35 + 25, "the traceback's first line and as much of the x's were cut");
        assert_eq!(s.take(), None, "the next call starts afresh");
        s.push(&vec![b'y'; 3 * TAIL_BYTES]);
        assert_eq!(s.take().map(|w| w.cut), Some(2 * TAIL_BYTES as u64));
    }
}
