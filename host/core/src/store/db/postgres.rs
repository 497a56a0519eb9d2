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
    /// Session claims (session-level advisory locks) this connection holds.
    claims: Cell<u32>,
    /// The connection that held claims was lost (and its locks with it): every write is refused
    /// with [`Error::ClaimLost`] until the claims are given back, so a holder that lost its claim
    /// never writes beside the next holder.
    claim_lost: Cell<bool>,
    /// How long a statement may wait for the server before it fails with a timeout (a frozen
    /// server or network never holds a caller for good).
    wait: std::time::Duration,
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
    pub(crate) fn connect<T>(
        config: tokio_postgres::Config,
        tls: T,
        wait: std::time::Duration,
    ) -> Result<Self, ConnectFailure>
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
            claims: Cell::new(0),
            claim_lost: Cell::new(false),
            wait,
            open,
        })
    }

    /// A session claim was taken on this connection.
    pub(crate) fn claimed(&self) {
        self.claims.set(self.claims.get() + 1);
    }

    /// A session claim taken on this connection was given back (or lost with it): once none is
    /// held, writes are allowed again.
    pub(crate) fn unclaimed(&self) {
        self.claims.set(self.claims.get().saturating_sub(1));
        if self.claims.get() == 0 {
            self.claim_lost.set(false);
        }
    }

    /// The lost claim was taken again on the connection open now.
    pub(crate) fn reclaimed(&self) {
        self.claim_lost.set(false);
    }

    /// Whether the claims this connection held were lost with it: what the server sent is read
    /// first (no round trip), so a connection the server closed is seen at once.
    pub(crate) fn claim_lost(&self) -> bool {
        if self.claims.get() > 0 && !self.claim_lost.get() {
            drive(&mut self.connection.borrow_mut(), &mut Context::from_waker(std::task::Waker::noop()));
            if self.client.borrow().is_closed() {
                self.claim_lost.set(true);
            }
        }
        self.claim_lost.get()
    }

    /// Refuses a write once the claims this connection held were lost.
    fn fence(&self) -> Result<()> {
        if self.claim_lost() { Err(Error::ClaimLost) } else { Ok(()) }
    }

    /// Waits for `request`, driving the connection meanwhile on this thread, at most
    /// [`Postgres::wait`]: past it the connection is dropped (what it was doing is lost with it,
    /// a transaction rolled back by the server) and the statement fails with a timeout.
    ///
    /// The wait runs outside any tokio task's cooperative budget: called from inside a runtime's
    /// task (an MCP server's, an application's), a budget spent by earlier statements would
    /// otherwise make every socket read pending forever.
    fn run<T>(&self, request: impl Future<Output = Result<T, tokio_postgres::Error>>) -> Result<T> {
        let mut connection = self.connection.borrow_mut();
        let mut request = std::pin::pin!(request);
        let mut timer = crate::io::handle().ok().map(|io| {
            let _entered = io.enter();
            Box::pin(tokio::time::sleep(self.wait))
        });
        let outcome = block_on(tokio::task::coop::unconstrained(std::future::poll_fn(|cx| {
            drive(&mut connection, cx);
            if let std::task::Poll::Ready(r) = request.as_mut().poll(cx) {
                return std::task::Poll::Ready(Some(r));
            }
            let expired = timer.as_mut().is_some_and(|t| t.as_mut().poll(cx).is_ready());
            if expired { std::task::Poll::Ready(None) } else { std::task::Poll::Pending }
        })));
        match outcome {
            Some(r) => r.map_err(Error::Postgres),
            None => {
                // The connection is closed so nothing it was doing can finish later.
                *connection = None;
                Err(Error::Timeout(self.wait))
            }
        }
    }

    /// The client, opened again first when the server closed it (outside a transaction). What
    /// the server sent since the last statement is read first, so a closed connection is seen.
    fn client(&self) -> Result<std::cell::Ref<'_, Client>> {
        drive(&mut self.connection.borrow_mut(), &mut Context::from_waker(std::task::Waker::noop()));
        if self.client.borrow().is_closed() && !self.in_transaction.get() {
            if self.claims.get() > 0 {
                self.claim_lost.set(true);
            }
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
        let stmt = self.run(client.prepare(&dollar_parameters(sql)))?;
        let mut cache = self.statements.borrow_mut();
        if cache.len() >= STATEMENT_CACHE {
            cache.clear();
        }
        cache.insert(sql.to_string(), stmt.clone());
        Ok(stmt)
    }

    /// Runs a statement, returning the rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: &[&dyn Param]) -> Result<u64> {
        // The connection first: one opened again after a loss has lost the claims with it.
        drop(self.client()?);
        self.fence()?;
        let stmt = self.statement(sql)?;
        let values: Vec<_> = params.iter().map(|p| p.value()).collect();
        self.run(self.client()?.execute_raw(&stmt, values.iter()))
    }

    /// Every row of a query.
    pub(crate) fn query(&self, sql: &str, params: &[&dyn Param]) -> Result<Vec<tokio_postgres::Row>> {
        let stmt = self.statement(sql)?;
        let values: Vec<_> = params.iter().map(|p| p.value()).collect();
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            values.iter().map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
        self.run(self.client()?.query(&stmt, &refs))
    }

    /// Runs statements without parameters (the simple query protocol).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        let ending = sql.starts_with("COMMIT") || sql.starts_with("ROLLBACK");
        if sql.starts_with("BEGIN") {
            let client = self.client()?;
            // A write after a lost claim is refused before it begins; a read goes on.
            if !sql.contains("READ ONLY") {
                self.fence()?;
            }
            let result = self.run(client.batch_execute(sql));
            self.in_transaction.set(result.is_ok());
            return result;
        }
        if !ending && !self.in_transaction.get() {
            self.fence()?;
        }
        let result = self.run(self.client()?.batch_execute(sql));
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
