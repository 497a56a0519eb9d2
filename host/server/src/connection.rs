//! A client's connection: who it acts for, what it registered, and its lines fed one at a time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::error::RpcError;
use crate::home::Home;
use crate::outbox::{self as rpc, Outbox};
use crate::server::Server;
use crate::turns;

/// The longest project key a network client may name.
pub(crate) const MAX_PROJECT_KEY: usize = 1024;

/// The most instruction text a network client may send (each file is cut at 64 KiB anyway).
pub(crate) const MAX_INSTRUCTIONS: usize = 256 << 10;

/// Who a network connection acts for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Acting {
    /// The token's user (`None`: the local user, on stdio or a Unix socket).
    pub(crate) user: Option<String>,
    /// The token's id.
    pub(crate) token: Option<String>,
    /// The client's address.
    pub(crate) peer: Option<String>,
    /// The token allows reads only.
    pub(crate) read_only: bool,
    /// Turns the user may run at once.
    pub(crate) max_turns: usize,
    /// Sessions the user may keep open at once, and the server.
    pub(crate) max_sessions: usize,
    pub(crate) max_workers: usize,
}

impl Acting {
    /// Takes the per-user limits from `serve` (`[serve]`).
    pub(crate) fn limit(&mut self, serve: &seshat::config::ServeConfig) {
        self.max_turns = serve.max_turns_per_user();
        self.max_sessions = serve.max_sessions_per_user();
        self.max_workers = serve.max_workers();
    }
}

/// What a client registered at `initialize`, shared with the turns.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientSetup {
    /// Tools the client runs (`tool/call`): name, description, JSON Schema.
    pub(crate) tools: Vec<seshat::tool::ToolDef>,
    /// Hooks the client runs (`hook/call`), checked.
    pub(crate) hooks: Vec<seshat_protocol::methods::HookRegistration>,
    /// `auto_compact` (default true).
    pub(crate) auto_compact: Option<bool>,
    /// `compact_summary_model`.
    pub(crate) summary_model: Option<String>,
    /// `provider`.
    pub(crate) provider: Option<String>,
    /// `model`.
    pub(crate) model: Option<String>,
    /// `window`.
    pub(crate) window: Option<u64>,
}

/// One client's connection, fed its lines one at a time: by a reading thread (stdio, a Unix
/// socket) or by a network connection's task, which lends it to a thread of the runtime's pool for
/// each message — an idle network connection holds no thread.
pub struct Connection {
    server: Server,
    outbox: Outbox,
    pending: rpc::Pending,
    /// The longest line read.
    limit: usize,
    /// Lines read so far.
    number: u64,
    /// The thread writing the answers (stdio, a Unix socket).
    writing: Option<std::thread::JoinHandle<()>>,
}

impl Connection {
    /// A connection writing to `output`, acting for `caller` (a network client's) or the local
    /// user.
    pub fn open(
        home: &Home,
        output: Output,
        service: &crate::Service,
        disconnect: Arc<dyn Fn() + Send + Sync>,
        caller: Option<&seshat::store::Caller>,
        peer: Option<std::net::SocketAddr>,
    ) -> Connection {
        let ctx = match caller {
            Some(caller) => home.for_user(&caller.user),
            None => home.clone(),
        };
        // The connection's configuration, read once (defaults when it cannot be read) and again
        // after a reload.
        let generation = ctx.generation();
        let env = ctx.environment(Default::default()).ok();
        let config = env.as_ref().map(|e| e.config().clone()).unwrap_or_default();
        let mut acting = Acting {
            user: caller.map(|c| c.user.clone()),
            token: caller.map(|c| c.token.clone()),
            peer: peer.map(|p| p.to_string()),
            read_only: caller.is_some_and(|c| c.read_only),
            max_turns: 0,
            max_sessions: 0,
            max_workers: 0,
        };
        acting.limit(&config.serve);
        let limit = crate::home::record_limit(&config);
        let limit_unread = config.serve.max_unread_bytes();
        let (outbox, writing) = match output {
            Output::Write(writer) => {
                let (outbox, lines) = Outbox::new(limit_unread, disconnect);
                (outbox, Some(std::thread::spawn(move || rpc::write_lines(lines, writer))))
            }
            Output::Task(task) => (Outbox::to_task(limit_unread, disconnect, task), None),
        };
        let pending: rpc::Pending = Arc::new(Mutex::new(HashMap::new()));
        let server = Server {
            ctx,
            db: None,
            knowledge: None,
            recall: None,
            // What the connection's memory calls write is embedded by a thread of its own (when
            // memory or history is embedded), never delaying an answer.
            background: env.as_ref().and_then(seshat::client::Environment::background),
            env,
            outbox: outbox.clone(),
            pending: pending.clone(),
            setup: None,
            turns: turns::Turns::new(service.0.clone(), service.2.clone()),
            stores: service.1.clone(),
            metrics: service.2.clone(),
            acting,
            generation,
        };
        Connection { server, outbox, pending, limit, number: 0, writing }
    }

    /// The longest line the connection reads (`[store] max_record_mib`).
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Serves one line (its line break included or not); false when the connection should end.
    pub fn feed(&mut self, line: &[u8]) -> bool {
        if line.len() > self.limit {
            self.too_long();
            return false;
        }
        self.number += 1;
        if self.outbox.overflowed() {
            return false;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            let number = self.number;
            self.outbox
                .error(Value::Null, RpcError::parse(format!("line {number} is not valid UTF-8: send JSON in UTF-8")));
            return true;
        };
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            self.server.line(text);
        }
        // The store connection goes back to the server's pool between requests.
        if let Some(db) = self.server.db.take() {
            self.server.stores.give(db);
        }
        true
    }

    /// The line being read is longer than the connection reads: nothing of it is applied; the
    /// client is told, and the connection ends.
    pub fn too_long(&mut self) {
        self.number += 1;
        let number = self.number;
        self.outbox.error(
            Value::Null,
            RpcError::invalid_request(format!(
                "line {number} is longer than {}, the longest line the server reads (`max_record_mib` under [store] \
                 in config.toml): the connection is closed",
                seshat::input::describe_limit(self.limit)
            )),
        );
    }

    /// The client is gone: tool calls waiting for it fail, its turns in flight are interrupted
    /// and store what arrived, and what is queued for it is written.
    pub fn close(self) {
        let Connection { mut server, outbox, pending, writing, .. } = self;
        pending.lock().map(|mut p| p.clear()).ok();
        server.turns.interrupt_all();
        server.turns.join_all();
        drop(server);
        drop(outbox);
        if let Some(writing) = writing {
            let _ = writing.join();
        }
    }
}

/// Where a connection's answers go.
pub enum Output {
    /// Written line by line, by a thread of the connection's own.
    Write(Box<dyn std::io::Write + Send>),
    /// Sent as frames by the network connection's socket task (which holds the other end).
    Task(rpc::ToTask),
}
