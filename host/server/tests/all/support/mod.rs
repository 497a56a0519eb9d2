//! A connection in a fresh home (its own directories and SQLite store), fed lines and read back
//! line by line.

use std::io::Write;
use std::sync::{Arc, mpsc};

use serde_json::{Value, json};
use seshat_server::{Connection, Home, Output, Service};

/// A connection's output: each whole line it writes sent on a channel.
struct Lines {
    partial: Vec<u8>,
    tx: mpsc::Sender<Value>,
}

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            // (A line that is not JSON is sent as a string: the test that reads it fails.)
            let value =
                serde_json::from_slice(&line).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&line).into()));
            let _ = self.tx.send(value);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A server working in a temporary home: its directories, its SQLite store, one [`Service`].
#[derive(Clone)]
pub struct Place(Arc<Inner>);

struct Inner {
    home: Home,
    service: Service,
    db: seshat::store::Location,
    _dir: tempfile::TempDir,
}

impl Place {
    /// A home with `config` as its `config.toml`.
    pub fn new(config: &str) -> Place {
        let dir = tempfile::tempdir().unwrap();
        let dirs = seshat::paths::Dirs {
            data: dir.path().join("data"),
            config: dir.path().join("config"),
            cache: dir.path().join("cache"),
        };
        for d in [&dirs.data, &dirs.config, &dirs.cache] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(dirs.config.join("config.toml"), config).unwrap();
        let db = seshat::store::Location::File(dirs.data.join("sessions.db"));
        let project_dir = dir.path().join("project");
        std::fs::create_dir_all(&project_dir).unwrap();
        let home =
            Home::new(dirs, db.clone(), "github.com/acme/app".into(), project_dir, Some("github.com/acme/app".into()));
        Place(Arc::new(Inner { home, service: Service::new(2), db, _dir: dir }))
    }

    /// Adds user `name` to the store.
    pub fn add_user(&self, name: &str) {
        seshat::store::Store::connect(&self.0.db).unwrap().add_user(name).unwrap();
    }

    /// A connection acting for `user` (a network client's), or the local user.
    pub fn client(&self, user: Option<&str>) -> Client {
        // The caller as the network edge makes it: from a token the store made for the user.
        let caller = user.map(|u| {
            let mut store = seshat::store::Store::connect(&self.0.db).unwrap();
            let token = store.create_token(u, false, None).unwrap().token;
            store.authenticate(&token).unwrap().unwrap()
        });
        let (tx, answers) = mpsc::channel();
        let output = Output::Write(Box::new(Lines { partial: Vec::new(), tx }));
        let connection =
            Connection::open(&self.0.home, output, &self.0.service, Arc::new(|| {}), caller.as_ref(), None);
        Client { connection: Some(connection), answers, next: 0, _place: self.clone() }
    }
}

/// One connection of a server working in a temporary home.
pub struct Client {
    pub connection: Option<Connection>,
    pub answers: mpsc::Receiver<Value>,
    next: u64,
    _place: Place,
}

impl Client {
    /// A local connection (no network caller), with `config` as the home's `config.toml`.
    pub fn new(config: &str) -> Client {
        Place::new(config).client(None)
    }

    /// Feeds one raw line.
    pub fn feed(&mut self, line: &str) -> bool {
        self.connection.as_mut().expect("open").feed(line.as_bytes())
    }

    /// Sends a request; its id.
    pub fn send(&mut self, method: &str, params: &Value) -> u64 {
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        assert!(self.feed(&line.to_string()));
        self.next
    }

    /// The next line the connection wrote.
    pub fn next(&self) -> Value {
        self.answers.recv().expect("the connection writes an answer")
    }

    /// Sends a request and reads until its answer: the whole answer.
    #[allow(clippy::needless_pass_by_value, reason = "the tests write `json!` in place")]
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, &params);
        loop {
            let v = self.next();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// [`Client::call`]'s result, which must be one.
    #[allow(clippy::needless_pass_by_value, reason = "the tests write `json!` in place")]
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(c) = self.connection.take() {
            c.close();
        }
    }
}
