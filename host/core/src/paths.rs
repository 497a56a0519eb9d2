//! Where Seshat keeps its files, and which project a directory belongs to.
//!
//! Every other module asks this one; nothing else reads `SESHAT_HOME`, the XDG variables or
//! `GIT_CEILING_DIRECTORIES`, and nothing else decides what a "project" is.

use std::fs;
use std::path::{Path, PathBuf};

use etcetera::BaseStrategy;

/// The environment variable that, when set, holds everything Seshat reads or writes.
pub(crate) const HOME_ENV: &str = "SESHAT_HOME";

/// The environment variable that, when set, overrides only the cache directory (tests share one
/// compiled-plugin cache this way).
pub(crate) const CACHE_ENV: &str = "SESHAT_CACHE_DIR";

/// File name of the session database inside the data directory.
pub(crate) const DB_FILE: &str = "seshat.db";

/// Errors finding Seshat's directories.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Neither `SESHAT_HOME` nor a home directory could be found.
    #[error("cannot find a home directory: set SESHAT_HOME to the directory Seshat should use")]
    NoHome,
}

/// The directories Seshat uses, resolved once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// Holds the session database.
    pub data: PathBuf,
    /// Holds `config.toml` and user plugins.
    pub config: PathBuf,
    /// Holds the compiled-plugin cache; safe to delete.
    pub cache: PathBuf,
}

impl Dirs {
    /// Resolves the directories from the process environment: `SESHAT_HOME` when set (everything
    /// lives under it), otherwise the XDG data, config and cache directories; `SESHAT_CACHE_DIR`
    /// moves the cache alone.
    pub fn from_env() -> Result<Self, Error> {
        let mut dirs = match std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
            Some(home) => Self::under(Path::new(&home)),
            None => {
                let xdg = etcetera::choose_base_strategy().map_err(|_| Error::NoHome)?;
                Self {
                    data: xdg.data_dir().join("seshat"),
                    config: xdg.config_dir().join("seshat"),
                    cache: xdg.cache_dir().join("seshat"),
                }
            }
        };
        if let Some(cache) = std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty()) {
            dirs.cache = PathBuf::from(cache);
        }
        Ok(dirs)
    }

    /// The layout used when everything lives under one directory (`SESHAT_HOME`).
    pub fn under(home: &Path) -> Self {
        Self { data: home.to_path_buf(), config: home.to_path_buf(), cache: home.join("cache") }
    }

    /// The default database path.
    pub fn db_path(&self) -> PathBuf {
        self.data.join(DB_FILE)
    }
}

/// The project key of `dir`: the directory that holds git's common directory when `dir` is inside
/// a git work tree (so every worktree of one repository shares a key), else `dir` itself.
///
/// Git's files are read directly (`.git` as a directory, or a `gitdir:` file and its `commondir`),
/// so no git binary is needed. The result is canonical where the path exists.
pub fn project_key(dir: &Path) -> String {
    repository_key(dir).unwrap_or_else(|| canonical(dir).to_string_lossy().into_owned())
}

/// The project key of `dir` when it is inside a git work tree; `None` elsewhere. Memory uses this
/// to decide whether it is "inside a project".
///
/// As git does, the search upwards never moves into a directory listed in
/// `GIT_CEILING_DIRECTORIES` (`:`-separated absolute paths), so a repository above such a
/// directory is not this directory's project.
pub fn repository_key(dir: &Path) -> Option<String> {
    let ceilings: Vec<PathBuf> = std::env::var_os(CEILING_ENV)
        .map(|v| std::env::split_paths(&v).filter(|p| p.is_absolute()).map(|p| canonical(&p)).collect())
        .unwrap_or_default();
    let start = canonical(dir);
    start
        .ancestors()
        .enumerate()
        .take_while(|(i, a)| *i == 0 || !ceilings.iter().any(|c| c == a))
        .find_map(|(_, a)| git_project_root(a))
        .map(|k| k.to_string_lossy().into_owned())
}

/// Directories the search for a repository does not move up into (git's own variable).
pub(crate) const CEILING_ENV: &str = "GIT_CEILING_DIRECTORIES";

/// If `worktree` has a `.git` entry, the directory that identifies its repository.
fn git_project_root(worktree: &Path) -> Option<PathBuf> {
    let dot_git = worktree.join(".git");
    let meta = fs::metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else {
        let text = fs::read_to_string(&dot_git).ok()?;
        let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
        canonical(&worktree.join(target))
    };
    let common = match fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => canonical(&git_dir.join(rel.trim())),
        Err(_) => git_dir,
    };
    // A normal repository's common directory is `<root>/.git`: the project is `<root>`. Anything
    // else (a submodule's `.git/modules/x`, a bare layout) is identified by the work tree itself.
    if common.file_name().is_some_and(|n| n == ".git") {
        common.parent().map(Path::to_path_buf)
    } else {
        Some(worktree.to_path_buf())
    }
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_directory_is_its_own_project() {
        let tmp = tempfile::tempdir().unwrap();
        let sub = tmp.path().join("a/b");
        fs::create_dir_all(&sub).unwrap();
        assert_eq!(project_key(&sub), canonical(&sub).to_string_lossy());
    }

    #[test]
    fn subdirectory_of_repository_maps_to_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join("src/deep")).unwrap();
        assert_eq!(project_key(&root.join("src/deep")), canonical(&root).to_string_lossy());
    }

    #[test]
    fn worktrees_share_the_main_repository_key() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let wt_git = root.join(".git/worktrees/feature");
        fs::create_dir_all(&wt_git).unwrap();
        fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("feature-checkout");
        fs::create_dir_all(wt.join("src")).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        assert_eq!(project_key(&wt.join("src")), canonical(&root).to_string_lossy());
    }

    #[test]
    fn submodule_is_keyed_by_its_own_work_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let sup = tmp.path().join("super");
        fs::create_dir_all(sup.join(".git/modules/lib")).unwrap();
        let sub = sup.join("lib");
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join(".git"), "gitdir: ../.git/modules/lib\n").unwrap();
        assert_eq!(project_key(&sub), canonical(&sub).to_string_lossy());
    }

    #[test]
    fn seshat_home_holds_everything() {
        let d = Dirs::under(Path::new("/h"));
        assert!(d.data.starts_with("/h") && d.config.starts_with("/h") && d.cache.starts_with("/h"));
        assert_eq!(d.db_path(), Path::new("/h/seshat.db"));
    }
}
