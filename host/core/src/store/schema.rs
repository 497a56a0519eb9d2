//! A store's schema as an operator handles it: where it stands against this build, read without
//! changing anything, and the explicit upgrade. Opening a PostgreSQL store never migrates it
//! (only an empty database gets its schema); a SQLite file, one user's, is still upgraded when
//! opened.

use super::db::Db;
use super::migrations::{self, Migration, SchemaStatus};
use super::{Backend, Location, Result, Store, open};

impl Store {
    /// Where the schema of the store at `location` stands against this build, read without
    /// changing anything: a SQLite file that does not exist is reported empty, not created.
    pub fn schema_status(location: &Location) -> Result<SchemaStatus> {
        let read = || match location {
            Location::File(path) if !path.exists() => Ok(migrations::empty(Backend::Sqlite)),
            Location::File(path) => {
                let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
                let conn = rusqlite::Connection::open_with_flags(path, flags)?;
                open::check_application_id(&conn, path)?;
                migrations::status(&Db::Sqlite(conn))
            }
            Location::Postgres(server) => migrations::status(&open::connect_only(server)?),
        };
        read().map_err(|e| e.at(location, "read the schema of"))
    }

    /// Brings the store at `location` to this build's schema: the pending migrations in order,
    /// each in one transaction (a schema newer than this build's is refused untouched). Returns
    /// the migrations that were pending.
    pub fn migrate(location: &Location) -> Result<Vec<Migration>> {
        let before = Store::schema_status(location)?;
        match location {
            Location::File(path) => open::open(path),
            Location::Postgres(server) => open::migrate(server),
        }
        .map_err(|e| e.at(location, "migrate"))?;
        Ok(before.pending)
    }
}
