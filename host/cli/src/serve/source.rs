//! Where a service's configuration comes from — its own file (`--config FILE`), else the user's
//! and the project's `config.toml` — and what it says with the command line's flags over it: the
//! address, the TLS files, the store. Read at start and again on each reload.

use std::path::{Path, PathBuf};

use seshat::config::Config;

/// Where the configuration is read from, and the flags that win over it.
#[derive(Debug, Clone)]
pub(super) struct Source {
    /// `--config FILE`; `None`: the user's and the project's `config.toml`.
    file: Option<PathBuf>,
    /// The configuration directory and the project's directory (without a file).
    config_dir: PathBuf,
    project_dir: PathBuf,
    /// `--listen`, `--tls-cert`, `--tls-key`, `--insecure-listen`.
    listen: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    insecure_listen: bool,
}

/// The configuration read, and where to serve by it.
#[derive(Debug, Clone)]
pub(super) struct Read {
    pub(super) config: Config,
    /// The address (`--listen`, else `[serve] listen` of a service file).
    pub(super) listen: Option<String>,
    /// The TLS files, both or neither.
    pub(super) tls_cert: Option<PathBuf>,
    pub(super) tls_key: Option<PathBuf>,
    pub(super) insecure_listen: bool,
}

impl Source {
    /// The source `serve`'s arguments name, in `ctx`'s directories.
    pub(super) fn new(ctx: &crate::Context, args: &super::Args) -> Source {
        Source {
            file: args.config.clone(),
            config_dir: ctx.dirs.config.clone(),
            project_dir: ctx.project_dir.clone(),
            listen: args.listen.clone(),
            tls_cert: args.tls_cert.clone(),
            tls_key: args.tls_key.clone(),
            insecure_listen: args.insecure_listen,
        }
    }

    /// The service's own file, when it has one.
    pub(super) fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Reads the configuration now, the flags over it.
    pub(super) fn read(&self) -> anyhow::Result<Read> {
        let config = match &self.file {
            Some(file) => Config::load_service(file)?,
            None => Config::load(&self.config_dir, Some(&self.project_dir))?,
        };
        // The flags' TLS files go together, as the file's do: one of each pair is not mixed.
        let (tls_cert, tls_key) = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => (Some(cert.clone()), Some(key.clone())),
            _ => (config.serve.tls_cert.clone(), config.serve.tls_key.clone()),
        };
        if tls_cert.is_some() != tls_key.is_some() {
            anyhow::bail!(
                "{}: `tls_cert` and `tls_key` under [serve] go together: give both, or neither",
                self.file.as_deref().unwrap_or(Path::new("the configuration")).display()
            );
        }
        Ok(Read {
            listen: self.listen.clone().or_else(|| config.serve.listen.clone()),
            tls_cert,
            tls_key,
            insecure_listen: self.insecure_listen || config.serve.insecure_listen.unwrap_or(false),
            config,
        })
    }

    /// The flags alone, over an empty configuration (a local service whose files cannot be
    /// read now: its requests say why).
    pub(super) fn flags_only(&self) -> Read {
        Read {
            config: Config::default(),
            listen: self.listen.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            insecure_listen: self.insecure_listen,
        }
    }

    /// The store a service with a file of its own opens: `--db` or `SESHAT_DATABASE_URL` when
    /// given, else the file's `[store] url` (a SQLite path in it is the file's directory's), else
    /// the data directory's SQLite file. `None` without a file: the command's own store.
    pub(super) fn store(
        &self,
        config: &Config,
        ctx: &crate::Context,
    ) -> anyhow::Result<Option<seshat::store::Location>> {
        let Some(file) = &self.file else { return Ok(None) };
        let from_env = std::env::var(seshat::client::DATABASE_URL_ENV).is_ok_and(|u| !u.trim().is_empty());
        if ctx.db_given || from_env {
            return Ok(None);
        }
        let Some(url) = &config.store.url else { return Ok(Some(seshat::store::Location::File(ctx.dirs.db_path()))) };
        let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        seshat::store::Location::parse(url, dir)
            .map(Some)
            .map_err(|why| anyhow::anyhow!("{}: [store] url: {why}", file.display()))
    }
}
