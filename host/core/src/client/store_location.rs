//! Which store every front end opens: the one named explicitly (`--db`, [`ClientOptions::store`],
//! [`Overrides::store`]), else `SESHAT_DATABASE_URL`, else `[store] url` in the user's
//! configuration, else the SQLite file under the data directory. Never from a project's
//! configuration (refused when it tries, [`crate::config::Config::load`]): a cloned repository
//! could otherwise send the user's history to a server it names.
//!
//! [`ClientOptions::store`]: super::ClientOptions::store
//! [`Overrides::store`]: super::Overrides::store

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::paths::Dirs;
use crate::store::Location;

/// The environment variable naming the store (a `postgres://` URL, a `sqlite:` URL or a path).
pub const DATABASE_URL_ENV: &str = "SESHAT_DATABASE_URL";

/// The store to open, `explicit` first (see the module's docs).
pub fn store_location(explicit: Option<&Location>, dirs: &Dirs) -> super::Result<Location> {
    store_location_with(explicit, dirs, &|name| std::env::var(name).ok())
}

/// [`store_location`] with the environment given.
pub fn store_location_with(
    explicit: Option<&Location>,
    dirs: &Dirs,
    env: &dyn Fn(&str) -> Option<String>,
) -> super::Result<Location> {
    if let Some(location) = explicit {
        return Ok(location.clone());
    }
    let bad = |path: PathBuf| move |message: String| crate::config::Error { path, message };
    if let Some(url) = env(DATABASE_URL_ENV).filter(|u| !u.trim().is_empty()) {
        let cwd = std::env::current_dir().unwrap_or_default();
        return Ok(Location::parse_with(&url, &cwd, env).map_err(bad(PathBuf::from(DATABASE_URL_ENV)))?);
    }
    let user = Config::load(&dirs.config, None)?;
    if let Some(url) = &user.store.url {
        let file = dirs.config.join(crate::config::FILE);
        return Ok(Location::parse_with(url, &dirs.config, env).map_err(bad(file))?);
    }
    Ok(Location::File(dirs.db_path()))
}

/// A store location from what a person typed on a command line: a URL or a path (relative to
/// `cwd`).
pub fn location_from_argument(text: &str, cwd: &Path) -> super::Result<Location> {
    Ok(Location::parse(text, cwd).map_err(|message| crate::config::Error { path: PathBuf::from(text), message })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(root: &Path) -> Dirs {
        Dirs { data: root.join("data"), config: root.join("config"), cache: root.join("cache") }
    }

    #[test]
    fn explicit_then_the_environment_then_the_user_config_then_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dirs(dir.path());
        let none = |_: &str| None;
        assert_eq!(store_location_with(None, &d, &none).unwrap(), Location::File(d.db_path()));
        std::fs::create_dir_all(&d.config).unwrap();
        std::fs::write(d.config.join("config.toml"), "[store]\nurl = \"postgres://ann@db.internal/team\"\n").unwrap();
        let from_config = store_location_with(None, &d, &none).unwrap();
        assert_eq!(from_config.to_string(), "postgres://ann@db.internal:5432/team");
        let env = |name: &str| (name == DATABASE_URL_ENV).then(|| "sqlite:/elsewhere/s.db".to_string());
        assert_eq!(store_location_with(None, &d, &env).unwrap(), Location::File("/elsewhere/s.db".into()));
        let explicit = Location::File("/given.db".into());
        assert_eq!(store_location_with(Some(&explicit), &d, &env).unwrap(), explicit);
        let bad = |name: &str| (name == DATABASE_URL_ENV).then(|| "mysql://ann:pw@db/x".to_string());
        let err = store_location_with(None, &d, &bad).unwrap_err().to_string();
        assert!(err.contains(DATABASE_URL_ENV) && !err.contains("pw@"), "{err}");
    }
}
