//! A blocking connection to PostgreSQL for the store, whose operations are synchronous.
//!
//! The `tokio-postgres` connection is made on the library's I/O runtime ([`crate::io`], whose
//! reactor then serves its socket); each statement is sent through the client and waited for,
//! with the connection driven beside it, on the caller's own thread by a plain executor, which
//! needs no runtime — so the store works the same called from inside the agent's tokio runtime
//! (where the blocking `postgres` crate would panic) as from a plain thread, and rows reach the
//! caller without crossing threads.
//!
//! A connection the server closed (a restart, a failover) is opened again by the next statement
//! outside a transaction; inside one, the statement fails (the transaction is lost with the
//! connection, and the caller sees it fail, never half of it applied).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::Context;

use futures_executor::block_on;
use tokio_postgres::{Client, Statement};

use super::Param;
use crate::store::{Error, Result};

/// The key of the transaction-level advisory lock every write transaction takes first ("SESHAT"
/// in ASCII): writers are serialised across processes as SQLite's `BEGIN IMMEDIATE` does.
pub(crate) const WRITE_LOCK: i64 = 0x5345_5348_4154;

/// Statements kept prepared per connection; past this the cache starts again.
const STATEMENT_CACHE: usize = 512;

/// A connection's socket: what moves the client's requests and the server's answers.
type Connection = Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + Send>>;

/// Opens a new client and its connection.
type Open = Box<dyn Fn() -> Result<(Client, Connection), ConnectFailure> + Send>;

/// An open connection.
pub(crate) struct Postgres {
    client: RefCell<Client>,
    /// `None` once it ended (the server closed it): the client is then closed too.
    connection: RefCell<Option<Connection>>,
    statements: RefCell<HashMap<String, Statement>>,
    /// Inside `BEGIN` … `COMMIT`/`ROLLBACK`: a lost connection is not opened again meanwhile.
    in_transaction: Cell<bool>,
    open: Open,
}

/// Why a connection could not be made.
#[derive(Debug)]
pub(crate) enum ConnectFailure {
    /// The server refused or could not be reached.
    Postgres(tokio_postgres::Error),
    /// The thread driving the connection could not start.
    Io(std::io::Error),
}

impl Postgres {
    /// Connects with `config` over `tls`; the connection is driven by the I/O runtime until the
    /// client is dropped or the server goes away.
    pub(crate) fn connect<T>(config: tokio_postgres::Config, tls: T) -> Result<Self, ConnectFailure>
    where
        T: tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket> + Clone + Send + 'static,
        T::Stream: Send,
        T::TlsConnect: Send,
        <T::TlsConnect as tokio_postgres::tls::TlsConnect<tokio_postgres::Socket>>::Future: Send,
    {
        let open: Open = Box::new(move || {
            let io = crate::io::handle().map_err(|e| ConnectFailure::Io(std::io::Error::other(e)))?;
            let (config, tls) = (config.clone(), tls.clone());
            let connecting = io.spawn(async move {
                let (client, connection) = config.connect(tls).await?;
                Ok((client, Box::pin(connection) as Connection))
            });
            block_on(connecting)
                .map_err(|e| ConnectFailure::Io(std::io::Error::other(e)))?
                .map_err(ConnectFailure::Postgres)
        });
        let (client, connection) = open()?;
        Ok(Postgres {
            client: RefCell::new(client),
            connection: RefCell::new(Some(connection)),
            statements: RefCell::new(HashMap::new()),
            in_transaction: Cell::new(false),
            open,
        })
    }

    /// Waits for `request`, driving the connection meanwhile on this thread.
    fn run<T>(&self, request: impl Future<Output = T>) -> T {
        let mut connection = self.connection.borrow_mut();
        let mut request = std::pin::pin!(request);
        block_on(std::future::poll_fn(|cx| {
            drive(&mut connection, cx);
            request.as_mut().poll(cx)
        }))
    }

    /// The client, opened again first when the server closed it (outside a transaction). What
    /// the server sent since the last statement is read first, so a closed connection is seen.
    fn client(&self) -> Result<std::cell::Ref<'_, Client>> {
        drive(&mut self.connection.borrow_mut(), &mut Context::from_waker(std::task::Waker::noop()));
        if self.client.borrow().is_closed() && !self.in_transaction.get() {
            let (client, connection) = (self.open)().map_err(|e| match e {
                ConnectFailure::Postgres(e) => Error::Postgres(e),
                ConnectFailure::Io(e) => Error::Unreachable(e.to_string()),
            })?;
            *self.client.borrow_mut() = client;
            *self.connection.borrow_mut() = Some(connection);
            self.statements.borrow_mut().clear();
        }
        Ok(self.client.borrow())
    }

    /// The prepared statement for `sql` (SQLite's `?N` parameters rewritten to `$N`).
    fn statement(&self, sql: &str) -> Result<Statement> {
        // First the client: a connection opened again has none of the statements kept.
        let client = self.client()?;
        if let Some(stmt) = self.statements.borrow().get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = self.run(client.prepare(&dollar_parameters(sql))).map_err(Error::Postgres)?;
        let mut cache = self.statements.borrow_mut();
        if cache.len() >= STATEMENT_CACHE {
            cache.clear();
        }
        cache.insert(sql.to_string(), stmt.clone());
        Ok(stmt)
    }

    /// Runs a statement, returning the rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: &[&dyn Param]) -> Result<u64> {
        let stmt = self.statement(sql)?;
        let values: Vec<_> = params.iter().map(|p| p.value()).collect();
        self.run(self.client()?.execute_raw(&stmt, values.iter())).map_err(Error::Postgres)
    }

    /// Every row of a query.
    pub(crate) fn query(&self, sql: &str, params: &[&dyn Param]) -> Result<Vec<tokio_postgres::Row>> {
        let stmt = self.statement(sql)?;
        let values: Vec<_> = params.iter().map(|p| p.value()).collect();
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            values.iter().map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
        self.run(self.client()?.query(&stmt, &refs)).map_err(Error::Postgres)
    }

    /// Runs statements without parameters (the simple query protocol).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        let ending = sql.starts_with("COMMIT") || sql.starts_with("ROLLBACK");
        if sql.starts_with("BEGIN") {
            let result = self.run(self.client()?.batch_execute(sql)).map_err(Error::Postgres);
            self.in_transaction.set(result.is_ok());
            return result;
        }
        let result = self.run(self.client()?.batch_execute(sql)).map_err(Error::Postgres);
        if ending {
            self.in_transaction.set(false);
        }
        result
    }

    /// Begins a write transaction holding the store's write lock.
    pub(crate) fn begin_write(&self) -> Result<()> {
        self.batch(&format!("BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK})"))
    }
}

/// Polls the connection once: it sends what the client queued and hands out what arrived; once it
/// ends (the server closed it, or it failed) it is dropped, which closes the client.
fn drive(connection: &mut Option<Connection>, cx: &mut Context<'_>) {
    if let Some(c) = connection.as_mut()
        && c.as_mut().poll(cx).is_ready()
    {
        *connection = None;
    }
}

/// Rewrites SQLite's numbered parameters (`?1`) as PostgreSQL's (`$1`), leaving quoted text and
/// identifiers alone.
pub(crate) fn dollar_parameters(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '?') if chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push('$');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::dollar_parameters;

    #[test]
    fn numbered_parameters_become_dollars_outside_quotes() {
        assert_eq!(
            dollar_parameters("SELECT '?1', \"a?2\" FROM t WHERE a = ?1 AND b IN (?2, ?13)"),
            "SELECT '?1', \"a?2\" FROM t WHERE a = $1 AND b IN ($2, $13)"
        );
    }
}
