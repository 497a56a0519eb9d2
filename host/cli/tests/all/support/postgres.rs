//! A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary directory, the server
//! started on a Unix socket there (no port to collide on, nothing reachable from elsewhere), and
//! stopped when the test binary exits — its watchdog shell stops it when the pipe this process
//! holds closes, whichever way the process ends. A fresh database per test.
//!
//! The binaries are found with `pg_config --bindir` or under `/usr/lib/postgresql/*/bin` (Debian
//! keeps them off PATH). PostgreSQL refuses to run as root: as root, the cluster runs as the
//! `postgres` user. Where no server can be started, the tests fail saying how to install one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The command that installs a server on these machines.
pub const INSTALL: &str = "apt-get install -y postgresql (Debian's PostgreSQL server; .ci/setup does it)";

/// A running cluster.
pub struct Cluster {
    /// Where the data and the socket live.
    dir: PathBuf,
    /// Whether it runs as the postgres user (the tests run as root).
    root: bool,
    /// The server's binaries.
    pub bindir: PathBuf,
    /// The port (names the socket file).
    pub port: u16,
    /// The watchdog; its stdin is the pipe whose closing stops the server.
    _watchdog: std::sync::Mutex<Child>,
}

/// The superuser the cluster was made with.
pub const SUPERUSER: &str = "seshat";

impl Cluster {
    /// A cluster of its own (for a test that stops or restarts its server), stopped when the
    /// test binary exits.
    pub fn private() -> Cluster {
        start(None).unwrap_or_else(|e| {
            panic!("cannot start a PostgreSQL server for the tests: {e}\ninstall one with: {INSTALL}")
        })
    }

    /// A cluster of its own that also listens on a loopback port with TLS, its certificate
    /// (for `localhost` and 127.0.0.1) signed by a certificate authority made for it; there,
    /// every user logs in with a password and only over TLS.
    pub fn with_tls() -> (Cluster, Tls) {
        let tls = Tls::new();
        let cluster = start(Some(&tls)).unwrap_or_else(|e| {
            panic!("cannot start a PostgreSQL server for the tests: {e}\ninstall one with: {INSTALL}")
        });
        (cluster, tls)
    }

    /// The directory holding the server's files (its certificate authority's `ca.pem` among
    /// them, when it has TLS).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Restarts the server (a fast shutdown: connections are closed) and waits until it accepts
    /// connections again.
    pub fn restart(&self) {
        let status = owner_command(self.root, &self.bindir.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-w", "-m", "fast", "-l"])
            .arg(self.dir.join("server.log"))
            .arg("restart")
            .stdout(Stdio::null())
            .status()
            .expect("run pg_ctl");
        assert!(status.success(), "pg_ctl restart failed");
    }

    /// The socket's directory.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.join("socket")
    }

    /// A store URL for `database` as `user`.
    pub fn url(&self, database: &str, user: &str) -> String {
        format!("postgres://{user}@/{database}?host={}&port={}&sslmode=disable", self.socket_dir().display(), self.port)
    }

    /// Runs SQL as the superuser in `database` with `psql`, returning its output; panics with
    /// psql's message when it fails.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let out = Command::new(self.bindir.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", SUPERUSER, "-d", database, "-c", sql])
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql -c {sql:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

/// The cluster, started on first use.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(|| start(None)) {
        Ok(cluster) => cluster,
        Err(e) => panic!("cannot start a PostgreSQL server for the tests: {e}\ninstall one with: {INSTALL}"),
    }
}

/// A new empty database on the cluster: its name and its store URL.
pub fn database() -> (String, String) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let cluster = cluster();
    let name = format!("t{}", NEXT.fetch_add(1, Ordering::SeqCst));
    cluster.psql("postgres", &format!("CREATE DATABASE {name}"));
    let url = cluster.url(&name, SUPERUSER);
    (name, url)
}

/// The directory holding `initdb`, `pg_ctl`, `postgres` and `psql`.
fn bindir() -> Result<PathBuf, String> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_server(&dir) {
            return Ok(dir);
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no /usr/lib/postgresql and no pg_config naming a server's binaries".to_string())?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| has_server(d))
        .collect();
    found.sort();
    found.pop().ok_or_else(|| "no server binaries under /usr/lib/postgresql/*/bin".into())
}

/// A certificate authority and the server certificate it signed, as PEM, and the loopback port
/// the server listens on with them.
pub struct Tls {
    pub ca: String,
    cert: String,
    key: String,
    pub port: u16,
}

impl Tls {
    fn new() -> Tls {
        let made = super::tls::Authority::new();
        // A port nothing listens on now (the kernel's pick, given back for the server to take).
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Tls { ca: made.ca, cert: made.cert, key: made.key, port }
    }
}

fn start(tls: Option<&Tls>) -> Result<Cluster, String> {
    let bindir = bindir()?;
    let dir = tempfile::Builder::new().prefix("seshat-pg-").tempdir().map_err(|e| e.to_string())?.keep();
    let socket = dir.join("socket");
    std::fs::create_dir_all(&socket).map_err(|e| e.to_string())?;
    let root = rustix::process::geteuid().is_root();
    if root {
        let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(&dir).status();
        if !status.is_ok_and(|s| s.success()) {
            return Err(format!("cannot give {} to the postgres user (is there one?)", dir.display()));
        }
    }
    let as_owner = |program: &Path| owner_command(root, program);
    let data = dir.join("data");
    let out = as_owner(&bindir.join("initdb"))
        .args(["-D"])
        .arg(&data)
        .args(["-A", "trust", "-U", SUPERUSER, "--no-sync", "-E", "UTF8", "--locale", "C"])
        .output()
        .map_err(|e| format!("cannot run initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    // The tests' superuser is trusted; every other user logs in with a password (the tests of
    // refused logins make such users).
    let mut hba = format!("local all {SUPERUSER} trust\nlocal all all scram-sha-256\n");
    if tls.is_some() {
        hba.push_str("hostssl all all 127.0.0.1/32 scram-sha-256\nhostnossl all all 127.0.0.1/32 reject\n");
    }
    let hba_file = data.join("pg_hba.conf");
    let written = if root {
        // The data directory is the postgres user's, with no access for others.
        Command::new("runuser")
            .args(["-u", "postgres", "--", "sh", "-c", "cat > \"$1\"", "sh"])
            .arg(&hba_file)
            .stdin(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().expect("piped").write_all(hba.as_bytes())?;
                c.wait()
            })
            .map(|s| s.success())
            .unwrap_or(false)
    } else {
        std::fs::write(&hba_file, &hba).is_ok()
    };
    if !written {
        return Err(format!("cannot write {}", hba_file.display()));
    }
    // Without TLS a port only names the socket file: listen_addresses is empty, so nothing
    // listens on TCP.
    static STARTED: AtomicU32 = AtomicU32::new(0);
    let mut port = 40000 + ((std::process::id() * 7 + STARTED.fetch_add(1, Ordering::SeqCst)) % 20000) as u16;
    let mut listen = "-c listen_addresses=''".to_string();
    if let Some(tls) = tls {
        for (name, pem) in [("ca.pem", &tls.ca), ("server.crt", &tls.cert), ("server.key", &tls.key)] {
            let path = dir.join(name);
            std::fs::write(&path, pem).map_err(|e| e.to_string())?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
            if root {
                Command::new("chown").arg("postgres:postgres").arg(&path).status().map_err(|e| e.to_string())?;
            }
        }
        port = tls.port;
        listen = format!(
            "-c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            dir.join("server.crt").display(),
            dir.join("server.key").display()
        );
    }
    let options = format!(
        "-k {} -p {port} {listen} -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
         -c max_connections=400",
        socket.display()
    );
    // Started and waited for by pg_ctl (-w), then `ready` on stdout; stopped when stdin closes.
    let script = r#"pg_ctl -D "$1" -w -l "$1/../server.log" -o "$2" start >/dev/null || exit 1
echo ready
read _ignored
pg_ctl -D "$1" -m fast stop >/dev/null
rm -rf "$(dirname "$1")""#;
    let mut watchdog = as_owner(Path::new("/bin/sh"))
        .env("PATH", format!("{}:{}", bindir.display(), std::env::var("PATH").unwrap_or_default()))
        .args(["-c", script, "sh"])
        .arg(&data)
        .arg(&options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start pg_ctl: {e}"))?;
    let mut line = String::new();
    BufReader::new(watchdog.stdout.take().expect("piped")).read_line(&mut line).map_err(|e| e.to_string())?;
    if line.trim() != "ready" {
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        return Err(format!("the server did not start:\n{log}"));
    }
    Ok(Cluster { dir, root, bindir, port, _watchdog: std::sync::Mutex::new(watchdog) })
}

/// `program` as the cluster's owner: the postgres user when the tests run as root.
fn owner_command(root: bool, program: &Path) -> Command {
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs the SQL file `file` (a dump) on the database a store URL names, with `psql`, stopping at
/// the first error; panics with psql's message when it fails.
pub fn psql_file(url: &str, file: &Path) {
    let out = Command::new(cluster().bindir.join("psql"))
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f"])
        .arg(file)
        .output()
        .expect("run psql");
    assert!(out.status.success(), "psql -f {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
}

/// Runs SQL on the database a store URL names, with `psql`: its output, or psql's message.
pub fn psql_url(url: &str, sql: &str) -> Result<String, String> {
    let out = Command::new(cluster().bindir.join("psql"))
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .expect("run psql");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}
