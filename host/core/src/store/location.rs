//! Where a store is: a SQLite file or a PostgreSQL database, read from a URL as libpq users
//! expect (`postgres://user:password@host:port/database?sslmode=…`, with `PGHOST`, `PGPORT`,
//! `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT` and the password file
//! `PGPASSFILE` / `~/.pgpass` filling what the URL leaves out).
//!
//! The password is kept for connecting only: a location displays (and debugs) as
//! `postgres://user@host:port/database`, never with it.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a store is.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(Server),
}

impl Location {
    /// Reads a store URL: `postgres://…` or `postgresql://…` for PostgreSQL, `sqlite:PATH` or a
    /// plain path for a SQLite file (a relative path is taken from `base`). The environment fills
    /// what a PostgreSQL URL leaves out (see the module's docs).
    pub fn parse(url: &str, base: &Path) -> Result<Self, String> {
        Self::parse_with(url, base, &|name| std::env::var(name).ok())
    }

    /// [`Location::parse`] with the environment given.
    pub fn parse_with(url: &str, base: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let url = url.trim();
        if url.is_empty() {
            return Err("the store URL is empty: give a postgres:// URL or a SQLite file's path".into());
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Server::from_url(url, env).map(Location::Postgres);
        }
        let path = match url.strip_prefix("sqlite://") {
            Some(rest) => rest,
            None => url.strip_prefix("sqlite:").unwrap_or(url),
        };
        if path.contains("://") {
            return Err(format!(
                "`{}` is not a store URL Seshat knows: use postgres://… for PostgreSQL or a SQLite file's path",
                redact(url)
            ));
        }
        Ok(Location::File(base.join(path)))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(server) => server.fmt(f),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// How a connection uses TLS, by libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsMode {
    /// `disable`: never.
    Disable,
    /// `prefer` (the default): TLS when the server offers it, the certificate not verified (as
    /// libpq does) unless a root certificate is given.
    Prefer,
    /// `require`: TLS or no connection, the certificate not verified unless a root certificate is
    /// given.
    Require,
    /// `verify-ca` and `verify-full`: TLS, the certificate verified against the root certificate
    /// (or the system's roots) and the host's name.
    Verify,
}

/// A PostgreSQL database to connect to (cheap to clone: errors carry it).
#[derive(Clone, PartialEq, Eq)]
pub struct Server(std::sync::Arc<Target>);

/// What a [`Server`] holds.
#[derive(PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    user: String,
    database: String,
    password: Option<String>,
    tls: TlsMode,
    root_cert: Option<PathBuf>,
    /// How long one statement may run on the server (`statement_timeout`), in milliseconds.
    statement_timeout_ms: u64,
    /// How long a statement may wait for a lock (`lock_timeout`), in milliseconds.
    lock_timeout_ms: u64,
}

/// The default `statement_timeout` of the store's connections: no statement of Seshat's runs
/// near it, and a frozen server fails a command in a minute instead of holding it for good.
pub const DEFAULT_STATEMENT_TIMEOUT_MS: u64 = 60_000;

/// The default `lock_timeout`: a writer waits this long for another's write lock.
pub const DEFAULT_LOCK_TIMEOUT_MS: u64 = 30_000;

impl Server {
    fn from_url(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let bad = |what: String| format!("the store URL {} is not valid: {what}", redact(text));
        // libpq reads `postgres://user@/db?host=/run/postgresql` (no host before the path: a Unix
        // socket or the environment's); the URL parser wants one, so a stand-in takes its place.
        const NO_HOST: &str = "no-host.invalid";
        let url = match url::Url::parse(text) {
            Err(url::ParseError::EmptyHost) => {
                let (scheme, rest) = text.split_once("://").unwrap_or((text, ""));
                let end = rest.find(['/', '?']).unwrap_or(rest.len());
                let (authority, tail) = rest.split_at(end);
                let (user, port) = match authority.rsplit_once('@') {
                    Some((user, host)) => (format!("{user}@"), host.to_string()),
                    None => (String::new(), authority.to_string()),
                };
                url::Url::parse(&format!("{scheme}://{user}{NO_HOST}{port}{tail}")).map_err(|e| bad(e.to_string()))?
            }
            parsed => parsed.map_err(|e| bad(e.to_string()))?,
        };
        let decode =
            |s: &str| percent_decode(s).ok_or_else(|| bad(format!("`{s}` is not valid percent-encoded UTF-8")));
        let mut host =
            url.host_str().filter(|h| *h != NO_HOST && !h.is_empty()).map(|h| h.trim_matches(['[', ']']).to_string());
        let mut port = url.port();
        let mut user = Some(decode(url.username())?).filter(|u| !u.is_empty());
        let mut password = url.password().map(decode).transpose()?;
        let mut database = Some(decode(url.path().trim_start_matches('/'))?).filter(|d| !d.is_empty());
        let (mut tls, mut root_cert) = (None, None);
        let (mut statement_timeout_ms, mut lock_timeout_ms) = (DEFAULT_STATEMENT_TIMEOUT_MS, DEFAULT_LOCK_TIMEOUT_MS);
        let millis = |key: &str, value: &str| {
            value.parse::<u64>().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                bad(format!("{key} `{value}` is not a number of milliseconds above 0 (as PostgreSQL's own setting)"))
            })
        };
        for (key, value) in url.query_pairs() {
            match &*key {
                "host" => host = Some(value.into_owned()),
                "port" => port = Some(value.parse().map_err(|_| bad(format!("port `{value}` is not a number")))?),
                "user" => user = Some(value.into_owned()),
                "password" => password = Some(value.into_owned()),
                "dbname" => database = Some(value.into_owned()),
                "sslmode" => tls = Some(tls_mode(&value).map_err(bad)?),
                "sslrootcert" => root_cert = Some(PathBuf::from(&*value)),
                "statement_timeout" => statement_timeout_ms = millis("statement_timeout", &value)?,
                "lock_timeout" => lock_timeout_ms = millis("lock_timeout", &value)?,
                "application_name" | "connect_timeout" => {}
                other => return Err(bad(format!("unknown parameter `{other}`"))),
            }
        }
        let host = host.or_else(|| env("PGHOST")).unwrap_or_else(|| "localhost".into());
        let port = match port {
            Some(port) => port,
            None => match env("PGPORT") {
                Some(p) => p.parse().map_err(|_| format!("PGPORT `{p}` is not a port number"))?,
                None => 5432,
            },
        };
        let user = user.or_else(|| env("PGUSER")).or_else(|| env("USER")).ok_or_else(|| {
            bad("it names no user, and neither PGUSER nor USER is set: add one (postgres://USER@HOST/DATABASE)".into())
        })?;
        let database = database.or_else(|| env("PGDATABASE")).unwrap_or_else(|| user.clone());
        let tls = match tls {
            Some(tls) => tls,
            None => env("PGSSLMODE").map(|m| tls_mode(&m)).transpose()?.unwrap_or(TlsMode::Prefer),
        };
        let root_cert = root_cert.or_else(|| env("PGSSLROOTCERT").map(PathBuf::from));
        let mut target =
            Target { host, port, user, database, password, tls, root_cert, statement_timeout_ms, lock_timeout_ms };
        if target.password.is_none() {
            target.password = env("PGPASSWORD").or_else(|| target.password_from_file(env));
        }
        Ok(Server(std::sync::Arc::new(target)))
    }
}

impl Target {
    /// The password for this server from the password file (`PGPASSFILE`, else `~/.pgpass`),
    /// which libpq ignores unless only its owner may read it.
    fn password_from_file(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        let file =
            env("PGPASSFILE").map(PathBuf::from).or_else(|| env("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if std::fs::metadata(&file).ok()?.permissions().mode() & 0o077 != 0 {
                tracing::warn!(file = %file.display(), "the password file is readable by others: ignored, as libpq does");
                return None;
            }
        }
        let text = std::fs::read_to_string(file).ok()?;
        let port = self.port.to_string();
        let host = if self.host.starts_with('/') { "localhost" } else { &self.host };
        text.lines().filter(|l| !l.trim_start().starts_with('#')).find_map(|line| {
            let fields = pgpass_fields(line);
            let [h, p, d, u, password] = fields.as_slice() else { return None };
            let matches = |field: &str, value: &str| field == "*" || field == value;
            (matches(h, host) && matches(p, &port) && matches(d, &self.database) && matches(u, &self.user))
                .then(|| password.clone())
        })
    }
}

impl Server {
    /// The host (a name, an address, or a Unix socket's directory).
    pub fn host(&self) -> &str {
        &self.0.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.0.port
    }

    /// The database's name.
    pub fn database(&self) -> &str {
        &self.0.database
    }

    /// The user connected as.
    pub fn user(&self) -> &str {
        &self.0.user
    }

    /// How TLS is used.
    pub fn tls(&self) -> TlsMode {
        self.0.tls
    }

    /// The root certificate the server's is verified against, if given.
    pub fn root_cert(&self) -> Option<&Path> {
        self.0.root_cert.as_deref()
    }

    /// How long the client waits for one statement's answer: the server's own timeouts, and a
    /// margin for the answer to arrive (a frozen server or network answers nothing).
    pub(crate) fn wait(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.0.statement_timeout_ms.max(self.0.lock_timeout_ms) + 5_000)
    }

    /// The client's configuration (the password included).
    pub(crate) fn config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host(&self.0.host)
            .port(self.0.port)
            .user(&self.0.user)
            .dbname(&self.0.database)
            .application_name("seshat")
            // Statements are prepared once and run many times with different words: a plan made
            // for no words in particular scans the whole index for a word most rows hold (26 ms
            // against 2 ms planned for the words at hand, at 100k messages).
            //
            // Every wait on the server is bounded: a statement, a lock, a transaction left idle
            // by a client that stopped (its locks are then given back).
            .options(format!(
                "-c plan_cache_mode=force_custom_plan -c statement_timeout={} -c lock_timeout={} \
                 -c idle_in_transaction_session_timeout={}",
                self.0.statement_timeout_ms,
                self.0.lock_timeout_ms,
                self.0.statement_timeout_ms.saturating_mul(2)
            ))
            .connect_timeout(std::time::Duration::from_secs(10));
        if let Some(password) = &self.0.password {
            config.password(password);
        }
        config.ssl_mode(match self.0.tls {
            // A Unix socket is never encrypted (libpq's rule: it does not leave the machine).
            _ if self.0.host.starts_with('/') => tokio_postgres::config::SslMode::Disable,
            TlsMode::Disable => tokio_postgres::config::SslMode::Disable,
            TlsMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            TlsMode::Require | TlsMode::Verify => tokio_postgres::config::SslMode::Require,
        });
        config
    }
}

impl fmt::Display for Server {
    /// The URL without its password; what it shows reads back as the same server (the TLS mode
    /// and root certificate included when they are not the defaults).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.0;
        let mut query = Vec::new();
        if t.host.starts_with('/') {
            write!(f, "postgres://{}@/{}", t.user, t.database)?;
            query.push(format!("host={}", t.host));
            query.push(format!("port={}", t.port));
        } else if t.host.contains(':') {
            write!(f, "postgres://{}@[{}]:{}/{}", t.user, t.host, t.port, t.database)?;
        } else {
            write!(f, "postgres://{}@{}:{}/{}", t.user, t.host, t.port, t.database)?;
        }
        match t.tls {
            TlsMode::Prefer => {}
            TlsMode::Disable => query.push("sslmode=disable".into()),
            TlsMode::Require => query.push("sslmode=require".into()),
            TlsMode::Verify => query.push("sslmode=verify-full".into()),
        }
        if let Some(cert) = &t.root_cert {
            query.push(format!("sslrootcert={}", cert.display()));
        }
        if t.statement_timeout_ms != DEFAULT_STATEMENT_TIMEOUT_MS {
            query.push(format!("statement_timeout={}", t.statement_timeout_ms));
        }
        if t.lock_timeout_ms != DEFAULT_LOCK_TIMEOUT_MS {
            query.push(format!("lock_timeout={}", t.lock_timeout_ms));
        }
        if !query.is_empty() {
            write!(f, "?{}", query.join("&"))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn tls_mode(text: &str) -> Result<TlsMode, String> {
    Ok(match text {
        "disable" => TlsMode::Disable,
        "allow" | "prefer" => TlsMode::Prefer,
        "require" => TlsMode::Require,
        "verify-ca" | "verify-full" => TlsMode::Verify,
        other => {
            return Err(format!(
                "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ));
        }
    })
}

/// A password-file line's fields (`host:port:database:user:password`, `\:` and `\\` escaped).
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().into_iter().for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

fn percent_decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text).decode_utf8().ok().map(|s| s.into_owned())
}

/// A URL as it may be shown: any password replaced by `***`.
pub(crate) fn redact(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut url) if url.password().is_some() => {
            let _ = url.set_password(Some("***"));
            url.to_string()
        }
        Ok(_) => text.to_string(),
        // Not a URL the parser reads: keep only up to the scheme, which cannot hold a password.
        Err(_) => text.split_once('@').map_or_else(|| text.to_string(), |(_, rest)| format!("***@{rest}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn a_postgres_url_shows_everything_but_its_password() {
        let at =
            Location::parse_with("postgres://ann:s%40cret@db.internal:6543/team", Path::new("/"), &env(&[])).unwrap();
        let Location::Postgres(server) = &at else { panic!("{at}") };
        assert_eq!(server.0.password.as_deref(), Some("s@cret"));
        assert_eq!(at.to_string(), "postgres://ann@db.internal:6543/team");
        assert_eq!(format!("{at:?}"), "postgres://ann@db.internal:6543/team");
        assert_eq!(server.tls(), TlsMode::Prefer);
    }

    #[test]
    fn the_environment_fills_what_the_url_leaves_out_as_libpq_does() {
        let vars = [
            ("PGHOST", "/run/pg"),
            ("PGPORT", "5433"),
            ("PGUSER", "bo"),
            ("PGPASSWORD", "pw"),
            ("PGSSLMODE", "require"),
        ];
        let Location::Postgres(server) = Location::parse_with("postgres://", Path::new("/"), &env(&vars)).unwrap()
        else {
            panic!()
        };
        assert_eq!((server.host(), server.port(), server.user(), server.database()), ("/run/pg", 5433, "bo", "bo"));
        assert_eq!(server.0.password.as_deref(), Some("pw"));
        assert_eq!(server.tls(), TlsMode::Require);
        assert_eq!(server.to_string(), "postgres://bo@/bo?host=/run/pg&port=5433&sslmode=require");
        // What it displays reads back the same (a Unix socket: no host before the path).
        let again = Location::parse_with(&server.to_string(), Path::new("/"), &env(&[])).unwrap();
        assert_eq!(again.to_string(), server.to_string());
    }

    #[test]
    fn the_password_file_is_read_only_when_private() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "# comment\nother:5432:*:ann:no\ndb:5432:team:ann:pa\\:ss\n").unwrap();
        let path = file.to_string_lossy().to_string();
        let vars = [("PGPASSFILE", path.as_str())];
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            let Location::Postgres(open) =
                Location::parse_with("postgres://ann@db/team", Path::new("/"), &env(&vars)).unwrap()
            else {
                panic!()
            };
            assert_eq!(open.0.password, None, "a file others may read is ignored");
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let Location::Postgres(server) =
            Location::parse_with("postgres://ann@db/team", Path::new("/"), &env(&vars)).unwrap()
        else {
            panic!()
        };
        assert_eq!(server.0.password.as_deref(), Some("pa:ss"));
    }

    #[test]
    fn a_path_or_sqlite_url_is_a_file_and_anything_else_is_refused_without_its_password() {
        let base = Path::new("/home/ann");
        assert_eq!(Location::parse("sqlite:data/s.db", base).unwrap(), Location::File("/home/ann/data/s.db".into()));
        assert_eq!(Location::parse("/tmp/s.db", base).unwrap(), Location::File("/tmp/s.db".into()));
        let err = Location::parse("mysql://ann:hunter2@db/x", base).unwrap_err();
        assert!(err.contains("postgres://") && !err.contains("hunter2"), "{err}");
        let err = Location::parse("postgres://ann:hunter2@db/x?sslmode=maybe", base).unwrap_err();
        assert!(err.contains("sslmode `maybe`") && !err.contains("hunter2"), "{err}");
    }
}
