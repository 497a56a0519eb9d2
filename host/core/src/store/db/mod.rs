//! The store's connection to its database, whichever backend holds it: an embedded SQLite file or a
//! PostgreSQL server. Every store operation is written once against [`Db`]; the SQL is the subset
//! both engines speak, with SQLite's `?N` parameters (rewritten to `$N` for PostgreSQL), and the
//! few places where the engines differ (full-text search, the schema) ask [`Db::backend`].
//!
//! Writes run in a [`Tx`]: on SQLite a `BEGIN IMMEDIATE` transaction (one writer at a time, as
//! before); on PostgreSQL a transaction that first takes the store's write lock (a transaction-level
//! advisory lock), so writers are serialised the same way across every process and machine sharing
//! the database and a read-then-write inside a transaction never loses an update. Appends, the hot
//! path, take only their session's row lock ([`Db::row_locked_transaction`]): appends to different
//! sessions go side by side, and every write that depends on a session's message count reads it
//! under the same row lock.

mod postgres;
mod value;

use std::ops::Deref;

pub(crate) use postgres::{ConnectFailure, Postgres};
pub(crate) use value::{Column, Param, Value};

use super::{Error, Result};

/// Which engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// An embedded SQLite file (the default).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// A connection to the store's database.
pub(crate) enum Db {
    /// An embedded SQLite file.
    Sqlite(rusqlite::Connection),
    /// A PostgreSQL server.
    Postgres(Postgres),
}

/// Builds the parameter list of a statement: `params![a, b]`.
macro_rules! params {
    () => { &[] as &[&dyn $crate::store::db::Param] };
    ($($p:expr),+ $(,)?) => { &[$(&$p as &dyn $crate::store::db::Param),+] as &[&dyn $crate::store::db::Param] };
}
pub(crate) use params;

/// SQL for the ids listed in the JSON array bound at `?{n}` (`[1,2,3]`), as a subquery:
/// `WHERE id IN {ids_in(backend, 1)}`.
pub(crate) fn ids_in(backend: Backend, n: usize) -> String {
    match backend {
        Backend::Sqlite => format!("(SELECT value FROM json_each(?{n}))"),
        _ => format!("(SELECT CAST(value AS bigint) FROM json_array_elements_text(CAST(?{n} AS json)) AS j(value))"),
    }
}

/// One row of a result.
pub(crate) enum Row<'a> {
    /// A SQLite row.
    Sqlite(&'a rusqlite::Row<'a>),
    /// A PostgreSQL row.
    Postgres(&'a tokio_postgres::Row),
}

impl<'a> Row<'a> {
    /// Column `idx` (0-based) as it is held, borrowed from the row.
    pub(crate) fn value(&self, idx: usize) -> Result<Value<'a>> {
        let bad = |message: String| Error::Column { index: idx, message };
        match *self {
            Row::Sqlite(row) => Value::from_sqlite(row.get_ref(idx)?).map_err(bad),
            Row::Postgres(row) => row.try_get(idx).map_err(Error::Postgres),
        }
    }

    /// Column `idx` (0-based) as `T`.
    pub(crate) fn get<T: Column>(&self, idx: usize) -> Result<T> {
        let bad = |message: String| Error::Column { index: idx, message };
        match self {
            Row::Sqlite(row) => {
                let value = row.get_ref(idx)?;
                T::from_value(Value::from_sqlite(value).map_err(bad)?).map_err(bad)
            }
            Row::Postgres(row) => {
                let value: Value<'_> = row.try_get(idx).map_err(Error::Postgres)?;
                T::from_value(value).map_err(bad)
            }
        }
    }
}

impl Db {
    /// The engine.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs a statement, returning the number of rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: &[&dyn Param]) -> Result<usize> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let changed = stmt.execute(rusqlite::params_from_iter(params.iter().map(|p| p.value())));
                // A cached statement would otherwise keep the last row's bound copy alive.
                stmt.clear_bindings();
                Ok(changed?)
            }
            Db::Postgres(pg) => Ok(pg.execute(sql, params)? as usize),
        }
    }

    /// Runs statements without parameters, separated by semicolons.
    pub(crate) fn execute_batch(&self, sql: &str) -> Result<()> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Postgres(pg) => pg.batch(sql),
        }
    }

    /// Calls `f` on each row of a query, in order, until it returns `false`.
    pub(crate) fn for_each(
        &self,
        sql: &str,
        params: &[&dyn Param],
        mut f: impl FnMut(&Row<'_>) -> Result<bool>,
    ) -> Result<()> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter().map(|p| p.value())))?;
                while let Some(row) = rows.next()? {
                    if !f(&Row::Sqlite(row))? {
                        break;
                    }
                }
                Ok(())
            }
            Db::Postgres(pg) => {
                for row in pg.query(sql, params)? {
                    if !f(&Row::Postgres(&row))? {
                        break;
                    }
                }
                Ok(())
            }
        }
    }

    /// Every row of a query, each read by `f`.
    pub(crate) fn query_vec<T>(
        &self,
        sql: &str,
        params: &[&dyn Param],
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.for_each(sql, params, |row| {
            out.push(f(row)?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The first row of a query read by `f`, or `None` when it has none.
    pub(crate) fn query_opt<T>(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut f = Some(f);
        let mut out = None;
        self.for_each(sql, params, |row| {
            out = Some((f.take().expect("called once"))(row)?);
            Ok(false)
        })?;
        Ok(out)
    }

    /// The first row of a query read by `f`; a query returning no row is an error
    /// ([`Error::NoRow`]), as for an aggregate that always returns one.
    pub(crate) fn query_row<T>(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(sql, params, f)?.ok_or(Error::NoRow)
    }

    /// The single value of a query's first row (`SELECT count(*) …`).
    pub(crate) fn query_value<T: Column>(&self, sql: &str, params: &[&dyn Param]) -> Result<T> {
        self.query_row(sql, params, |r| r.get(0))
    }

    /// Begins a write transaction (see the module's docs), rolled back unless committed.
    pub(crate) fn transaction(&mut self) -> Result<Tx<'_>> {
        self.begin_write()?;
        Ok(Tx { db: self, open: true })
    }

    /// Begins a write transaction that serialises with other writers only through the rows it
    /// locks (`SELECT … FOR UPDATE`) on PostgreSQL, so appends to different sessions run side by
    /// side; on SQLite it is [`Db::transaction`].
    pub(crate) fn row_locked_transaction(&mut self) -> Result<Tx<'_>> {
        match self {
            Db::Sqlite(conn) => conn.execute_batch("BEGIN IMMEDIATE")?,
            Db::Postgres(pg) => pg.batch("BEGIN")?,
        }
        Ok(Tx { db: self, open: true })
    }

    /// Begins a read transaction: every query in it sees the database as it was at its first.
    pub(crate) fn snapshot(&self) -> Result<Tx<'_>> {
        self.begin_snapshot()?;
        Ok(Tx { db: self, open: true })
    }

    /// Begins a read transaction the caller ends with `COMMIT` itself: every query until then
    /// sees the database as it was at the first (SQLite: one read transaction; PostgreSQL:
    /// `REPEATABLE READ`).
    pub(crate) fn begin_snapshot(&self) -> Result<()> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch("BEGIN DEFERRED")?),
            Db::Postgres(pg) => pg.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        }
    }

    /// Begins a write transaction that the caller ends with `COMMIT` or `ROLLBACK` itself (for a
    /// body that reads through the store what it has written so far).
    pub(crate) fn begin_write(&self) -> Result<()> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch("BEGIN IMMEDIATE")?),
            Db::Postgres(pg) => pg.begin_write(),
        }
    }
}

/// A write transaction: everything [`Db`] does, inside it. Dropped without [`Tx::commit`], it
/// rolls back.
pub(crate) struct Tx<'a> {
    db: &'a Db,
    open: bool,
}

impl Tx<'_> {
    /// Commits.
    pub(crate) fn commit(mut self) -> Result<()> {
        self.open = false;
        self.db.execute_batch("COMMIT")
    }

    /// Commits, reaching the crash point `name` just before (the kill tests).
    pub(crate) fn commit_at(self, name: &str) -> Result<()> {
        crate::crash_point::reach(name);
        self.commit()
    }
}

impl Deref for Tx<'_> {
    type Target = Db;

    fn deref(&self) -> &Db {
        self.db
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.db.execute_batch("ROLLBACK");
        }
    }
}
