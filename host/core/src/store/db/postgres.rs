//! A blocking connection to PostgreSQL for the store, whose operations are synchronous.
//!
//! The `tokio-postgres` connection (the socket) runs on the library's I/O runtime ([`crate::io`]);
//! statements are sent through the client from the caller's thread and waited for with a plain
//! executor, which needs no runtime — so the store works the same when it is called from inside
//! the agent's tokio runtime (where the blocking `postgres` crate would panic) as from a plain
//! thread.
//!
//! A connection the server closed (a restart, a failover) is opened again by the next statement
//! outside a transaction; inside one, the statement fails (the transaction is lost with the
//! connection, and the caller sees it fail, never half of it applied).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use futures_executor::block_on;
use tokio_postgres::{Client, Statement};

use super::Param;
use crate::store::{Error, Result};

/// The key of the transaction-level advisory lock every write transaction takes first ("SESHAT"
/// in ASCII): writers are serialised across processes as SQLite's `BEGIN IMMEDIATE` does.
pub(crate) const WRITE_LOCK: i64 = 0x5345_5348_4154;

/// Statements kept prepared per connection; past this the cache starts again.
const STATEMENT_CACHE: usize = 512;

/// Opens a new client.
type Open = Box<dyn Fn() -> Result<Client, ConnectFailure> + Send>;

/// An open connection.
pub(crate) struct Postgres {
    client: RefCell<Client>,
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
                tokio::spawn(connection);
                Ok(client)
            });
            block_on(connecting)
                .map_err(|e| ConnectFailure::Io(std::io::Error::other(e)))?
                .map_err(ConnectFailure::Postgres)
        });
        let client = open()?;
        Ok(Postgres {
            client: RefCell::new(client),
            statements: RefCell::new(HashMap::new()),
            in_transaction: Cell::new(false),
            open,
        })
    }

    /// The client, opened again first when the server closed it (outside a transaction).
    fn client(&self) -> Result<std::cell::Ref<'_, Client>> {
        if self.client.borrow().is_closed() && !self.in_transaction.get() {
            let client = (self.open)().map_err(|e| match e {
                ConnectFailure::Postgres(e) => Error::Postgres(e),
                ConnectFailure::Io(e) => Error::Unreachable(e.to_string()),
            })?;
            *self.client.borrow_mut() = client;
            self.statements.borrow_mut().clear();
        }
        Ok(self.client.borrow())
    }

    /// The prepared statement for `sql` (SQLite's `?N` parameters rewritten to `$N`).
    fn statement(&self, sql: &str) -> Result<Statement> {
        if let Some(stmt) = self.statements.borrow().get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = block_on(self.client()?.prepare(&dollar_parameters(sql))).map_err(Error::Postgres)?;
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
        block_on(self.client()?.execute_raw(&stmt, values.iter())).map_err(Error::Postgres)
    }

    /// Every row of a query.
    pub(crate) fn query(&self, sql: &str, params: &[&dyn Param]) -> Result<Vec<tokio_postgres::Row>> {
        let stmt = self.statement(sql)?;
        let values: Vec<_> = params.iter().map(|p| p.value()).collect();
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            values.iter().map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
        block_on(self.client()?.query(&stmt, &refs)).map_err(Error::Postgres)
    }

    /// Runs statements without parameters (the simple query protocol).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        let ending = sql.starts_with("COMMIT") || sql.starts_with("ROLLBACK");
        if sql.starts_with("BEGIN") {
            let result = block_on(self.client()?.batch_execute(sql)).map_err(Error::Postgres);
            self.in_transaction.set(result.is_ok());
            return result;
        }
        let result = block_on(self.client()?.batch_execute(sql)).map_err(Error::Postgres);
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
