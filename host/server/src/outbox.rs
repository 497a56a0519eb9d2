//! What a connection writes: the one writer of its lines (bounded by what the client leaves
//! unread), answers and notifications, and the server's own requests waiting for the client's
//! answer.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use serde_json::Value;

use seshat_protocol::methods::Method;
use seshat_protocol::notifications::Notification;

use crate::error::RpcError;

/// The lines to write, in order, by the one writer — bounded: a client that leaves more than
/// [`Outbox`]'s limit unread is told so (as far as it still reads) and disconnected, and nothing
/// more is queued for it.
#[derive(Clone)]
pub struct Outbox {
    tx: Sink,
    /// Bytes queued and not yet written.
    queued: Arc<AtomicUsize>,
    /// Set once the limit was passed: nothing more is queued.
    overflowed: Arc<AtomicBool>,
    limit: usize,
    /// Ends the connection (run once, on a thread of its own).
    disconnect: Arc<dyn Fn() + Send + Sync>,
}

/// Where an [`Outbox`]'s lines go.
#[derive(Clone)]
enum Sink {
    /// To a writer thread ([`write_lines`]).
    Thread(mpsc::Sender<String>),
    /// To a network connection's socket task, which sends each line as a frame ([`Sent`]).
    Task(tokio::sync::mpsc::UnboundedSender<String>),
}

impl Sink {
    /// Queues `line`; once the other end is gone (the connection ended) it goes nowhere.
    fn send(&self, line: String) {
        match self {
            Sink::Thread(tx) => drop(tx.send(line)),
            Sink::Task(tx) => drop(tx.send(line)),
        }
    }
}

/// The writer's side of an [`Outbox`].
pub(crate) struct Lines {
    rx: mpsc::Receiver<String>,
    queued: Arc<AtomicUsize>,
}

/// The outbox's end of [`Outbox::task`]'s pair.
pub struct ToTask {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    queued: Arc<AtomicUsize>,
}

/// The socket task's side of an [`Outbox`]: the lines to send, and what it counts as sent.
pub struct Sent {
    /// The lines, in order; closed once every sender is gone.
    pub lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    queued: Arc<AtomicUsize>,
}

impl Sent {
    /// A line of `len` bytes left for the client: it no longer counts as unread.
    pub fn sent(&self, len: usize) {
        self.queued.fetch_sub(len + 1, Ordering::SeqCst);
    }
}

impl Outbox {
    /// An outbox holding at most `limit` unwritten bytes, written by a thread ([`write_lines`]);
    /// past the limit, `disconnect` runs.
    pub(crate) fn new(limit: usize, disconnect: Arc<dyn Fn() + Send + Sync>) -> (Self, Lines) {
        let (tx, rx) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        (Self::with(Sink::Thread(tx), queued.clone(), limit, disconnect), Lines { rx, queued })
    }

    /// An outbox as [`Outbox::new`]'s whose lines a socket task sends, with no thread between:
    /// `task` is one end of [`Outbox::task`]'s pair, the task holding the other.
    pub(crate) fn to_task(limit: usize, disconnect: Arc<dyn Fn() + Send + Sync>, task: ToTask) -> Self {
        Self::with(Sink::Task(task.tx), task.queued, limit, disconnect)
    }

    /// The two ends between a network connection's outbox and its socket task.
    pub fn task() -> (ToTask, Sent) {
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        (ToTask { tx, queued: queued.clone() }, Sent { lines, queued })
    }

    fn with(tx: Sink, queued: Arc<AtomicUsize>, limit: usize, disconnect: Arc<dyn Fn() + Send + Sync>) -> Self {
        Outbox { tx, queued, overflowed: Arc::new(AtomicBool::new(false)), limit, disconnect }
    }

    /// Whether the client was disconnected for leaving too much unread.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::SeqCst)
    }

    fn send(&self, message: serde_json::Map<String, Value>) {
        if self.overflowed() {
            return;
        }
        let line = Value::Object(message).to_string();
        let queued = self.queued.fetch_add(line.len() + 1, Ordering::SeqCst) + line.len() + 1;
        if queued <= self.limit {
            self.tx.send(line);
            return;
        }
        if self.overflowed.swap(true, Ordering::SeqCst) {
            return;
        }
        let why = format!(
            "the client left more than {} of answers unread: the connection is closed",
            seshat::input::describe_limit(self.limit)
        );
        // Never a panic if stderr is gone (eprintln! would panic and take this thread with it).
        let _ = writeln!(std::io::stderr(), "seshat serve: {why}");
        let m = Self::message([("id", Value::Null), ("error", RpcError::seshat("outbox_full", why).into_json())]);
        self.tx.send(Value::Object(m).to_string());
        let disconnect = self.disconnect.clone();
        std::thread::spawn(move || disconnect());
    }
    /// A message with `jsonrpc` and the given fields, in order.
    fn message(fields: [(&str, Value); 2]) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("jsonrpc".into(), "2.0".into());
        for (k, v) in fields {
            m.insert(k.into(), v);
        }
        m
    }
    pub(crate) fn result(&self, id: Value, result: Value) {
        self.send(Self::message([("id", id), ("result", result)]));
    }
    pub(crate) fn error(&self, id: Value, e: RpcError) {
        self.send(Self::message([("id", id), ("error", e.into_json())]));
    }
    /// Sends notification `N`.
    pub(crate) fn notice<N: Notification>(&self, params: &N::Params) {
        let params = serde_json::to_value(params).expect("a notification's params are plain data");
        self.send(Self::message([("method", N::NAME.into()), ("params", params)]));
    }
    /// Sends the server's own request `method` and returns where its answer arrives.
    pub(crate) fn request<M: Method>(&self, pending: &Pending, params: &M::Params) -> (String, mpsc::Receiver<Value>) {
        let params = serde_json::to_value(params).expect("a request's params are plain data");
        let (tx, rx) = mpsc::channel();
        let id = {
            let mut p = pending.lock().expect("the pending map is never poisoned");
            let id = format!("s{}", next_id());
            p.insert(id.clone(), tx);
            id
        };
        let mut m = Self::message([("id", id.clone().into()), ("method", M::NAME.into())]);
        m.insert("params".into(), params);
        self.send(m);
        (id, rx)
    }
}

/// The next id of a request the server sends: unique for the life of the process, so an answer
/// can only reach the request it answers (an id derived from how many are pending would be given
/// again while an older request with it still waits).
fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Forgets the server's request `id`, no longer waited for (a late answer is dropped).
pub(crate) fn abandon(pending: &Pending, id: &str) {
    if let Ok(mut p) = pending.lock() {
        p.remove(id);
    }
}

/// The server's requests waiting for the client: id → where the answer goes.
pub(crate) type Pending = Arc<Mutex<HashMap<String, mpsc::Sender<Value>>>>;

/// Hands the client's answer to the request waiting for it (an unknown id is dropped).
pub(crate) fn deliver(pending: &Pending, msg: &Value) {
    let Some(id) = msg["id"].as_str() else { return };
    if let Some(tx) = pending.lock().expect("the pending map is never poisoned").remove(id) {
        let _ = tx.send(msg.clone());
    }
}

/// Writes each line whole, flushed, to `out` until every sender is gone.
pub(crate) fn write_lines(lines: Lines, mut out: impl Write) {
    for line in lines.rx {
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break;
        }
        lines.queued.fetch_sub(line.len() + 1, Ordering::SeqCst);
    }
}

/// Method `M`'s answer.
pub(crate) fn answer<M: Method>(result: &M::Result) -> Result<Option<Value>, RpcError> {
    serde_json::to_value(result)
        .map(Some)
        .map_err(|e| RpcError::seshat("internal_error", format!("cannot write {}'s result: {e}", M::NAME)))
}

/// A notification as the line (or frame) that carries it, written outside any outbox.
pub fn notice_line<N: Notification>(params: &N::Params) -> Option<String> {
    let params = serde_json::to_value(params).ok()?;
    Some(serde_json::json!({"jsonrpc": "2.0", "method": N::NAME, "params": params}).to_string())
}
