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

/// The project key of `dir`, the same on every machine that has the project: the id in the
/// project's `.seshat/project` file when there is one, else its git repository's `origin` remote
/// (normalised: `git@github.com:o/r.git` and `https://github.com/o/r` are both
/// `github.com/o/r`), else the project's directory ([`project_dir`]) as a path.
pub fn project_key(dir: &Path) -> String {
    let root = project_dir(dir);
    travelling_key(&root).unwrap_or_else(|| root.to_string_lossy().into_owned())
}

/// The key a project had before keys travelled (its directory's path), which rows written then
/// are stored under: [`project_key`] when the project has no id and no remote.
pub fn path_key(dir: &Path) -> String {
    project_dir(dir).to_string_lossy().into_owned()
}

/// The project's directory: the directory that holds git's common directory when `dir` is
/// inside a git work tree (so every worktree of one repository shares it), else `dir` itself.
/// Its `.seshat/config.toml`, `.seshat/plugins` and `AGENTS.md` are the project's.
///
/// Git's files are read directly (`.git` as a directory, or a `gitdir:` file and its `commondir`),
/// so no git binary is needed. The result is canonical where the path exists.
pub fn project_dir(dir: &Path) -> PathBuf {
    repository_root(dir).unwrap_or_else(|| canonical(dir))
}

/// The project key of `dir` when it is inside a git work tree or has a `.seshat/project` id;
/// `None` elsewhere. Memory uses this to decide whether it is "inside a project".
///
/// As git does, the search upwards never moves into a directory listed in
/// `GIT_CEILING_DIRECTORIES` (`:`-separated absolute paths), so a repository above such a
/// directory is not this directory's project.
pub fn repository_key(dir: &Path) -> Option<String> {
    match repository_root(dir) {
        Some(root) => Some(travelling_key(&root).unwrap_or_else(|| root.to_string_lossy().into_owned())),
        None => project_id(&canonical(dir)),
    }
}

/// The root of the git work tree `dir` is in (see [`project_dir`]).
fn repository_root(dir: &Path) -> Option<PathBuf> {
    let ceilings: Vec<PathBuf> = std::env::var_os(CEILING_ENV)
        .map(|v| std::env::split_paths(&v).filter(|p| p.is_absolute()).map(|p| canonical(&p)).collect())
        .unwrap_or_default();
    let start = canonical(dir);
    start
        .ancestors()
        .enumerate()
        .take_while(|(i, a)| *i == 0 || !ceilings.iter().any(|c| c == a))
        .find_map(|(_, a)| git_project_root(a))
}

/// The file naming a project's id, under its directory.
pub const PROJECT_ID_FILE: &str = ".seshat/project";

/// The key that follows the project at `root` to other machines: its id, else its remote.
fn travelling_key(root: &Path) -> Option<String> {
    project_id(root).or_else(|| origin_remote(root).and_then(|url| normalise_remote(&url)))
}

/// The id in `root/.seshat/project`: its first line, trimmed, when it is 1 to 200 printable
/// characters.
fn project_id(root: &Path) -> Option<String> {
    let text = fs::read_to_string(root.join(PROJECT_ID_FILE)).ok()?;
    let id = text.lines().next()?.trim();
    (!id.is_empty() && id.chars().count() <= 200 && !id.chars().any(char::is_control)).then(|| id.to_string())
}

/// The URL of the repository's `origin` remote (else its first remote), read from git's config.
fn origin_remote(root: &Path) -> Option<String> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = fs::read_to_string(&dot_git).ok()?;
        canonical(&root.join(text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim()))
    };
    let common = match fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => canonical(&git_dir.join(rel.trim())),
        Err(_) => git_dir,
    };
    let config = fs::read_to_string(common.join("config")).ok()?;
    let (mut section, mut first, mut origin) = (String::new(), None, None);
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if key.trim() != "url" || !section.starts_with("[remote ") {
            continue;
        }
        let url = value.trim().trim_matches('"').to_string();
        if section == "[remote \"origin\"]" {
            origin = Some(url);
        } else if first.is_none() {
            first = Some(url);
        }
    }
    origin.or(first)
}

/// A remote URL as a key the same for every way of writing it: host (lower-case) and path, no
/// scheme, user, port, `.git` suffix or trailing slash. `None` for a local path remote (it names
/// nothing on another machine).
pub fn normalise_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((_, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        (host.split(':').next()?.to_string(), path.to_string())
    } else if let Some((authority, path)) = url.split_once(':') {
        // scp-like: [user@]host:path (a path with a slash before the colon is a local path, and
        // so is a drive letter's).
        if authority.contains('/') || authority.len() < 2 {
            return None;
        }
        (authority.rsplit('@').next()?.to_string(), path.to_string())
    } else {
        return None;
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_end_matches('/');
    if host.is_empty() || path.is_empty() || url.starts_with("file://") {
        return None;
    }
    Some(format!("{}/{}", host.to_ascii_lowercase(), path))
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
    fn remotes_normalise_to_one_key_however_they_are_written() {
        for url in [
            "git@github.com:Acme/Widget.git",
            "https://github.com/Acme/Widget",
            "https://user:secret@GitHub.com/Acme/Widget.git/",
            "ssh://git@github.com:22/Acme/Widget.git",
            "git://github.com/Acme/Widget",
        ] {
            assert_eq!(normalise_remote(url).as_deref(), Some("github.com/Acme/Widget"), "{url}");
        }
        for local in ["/srv/git/widget.git", "../widget", "file:///srv/git/widget.git", "C:/repos/x"] {
            assert_eq!(normalise_remote(local), None, "{local}");
        }
    }

    #[test]
    fn a_repository_is_keyed_by_its_origin_and_an_id_file_wins_over_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("checkout");
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        let path = canonical(&root).to_string_lossy().into_owned();
        assert_eq!(project_key(&root.join("src")), path, "no remote: the path");
        fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://example.org/u/w\n\
             [remote \"origin\"]\n\turl = git@github.com:acme/widget.git\n\tfetch = +refs/heads/*\n",
        )
        .unwrap();
        assert_eq!(project_key(&root.join("src")), "github.com/acme/widget");
        assert_eq!(repository_key(&root.join("src")).as_deref(), Some("github.com/acme/widget"));
        assert_eq!((project_dir(&root.join("src")), path_key(&root.join("src"))), (canonical(&root), path));
        fs::create_dir_all(root.join(".seshat")).unwrap();
        fs::write(root.join(PROJECT_ID_FILE), "widget-team-42\n").unwrap();
        assert_eq!(project_key(&root), "widget-team-42");
        // Outside git, an id file still makes a project.
        let plain = tmp.path().join("plain");
        fs::create_dir_all(plain.join(".seshat")).unwrap();
        assert_eq!(repository_key(&plain), None);
        fs::write(plain.join(PROJECT_ID_FILE), "notes\n").unwrap();
        assert_eq!((project_key(&plain), repository_key(&plain)), ("notes".to_string(), Some("notes".to_string())));
    }

    #[test]
    fn seshat_home_holds_everything() {
        let d = Dirs::under(Path::new("/h"));
        assert!(d.data.starts_with("/h") && d.config.starts_with("/h") && d.cache.starts_with("/h"));
        assert_eq!(d.db_path(), Path::new("/h/seshat.db"));
    }
}
