//! Database failures as a user meets them: a damaged file, a read-only file or directory (with
//! and without its `-wal` and `-shm` files) and a full disk. Each error names the file, the
//! operation, SQLite's message once and what to do; reading still works where it can.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;

use seshat::conversation::{NewMessage, Role};

use crate::support::{Home, fixture};

const FIXTURE_ID: &str = "01JFXAMP1E0000000000000001";

fn imported() -> Home {
    let home = Home::new();
    home.ok(&["sessions", "import", fixture("session-export.jsonl").to_str().unwrap()]);
    home
}

/// Root ignores file modes: as root, the command runs as `nobody`, owning the home.
fn unprivileged(home: &Home, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut cmd = home.cmd();
    cmd.args(args);
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        chown_all(home.path(), 65_534);
        cmd.uid(65_534).gid(65_534);
    }
    match stdin {
        None => cmd.output().unwrap(),
        Some(input) => crate::support::output_with_stdin(&mut cmd, input),
    }
}

fn chown_all(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_all(&entry.unwrap().path(), uid);
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

const APPEND: &str = "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"more\"}]}\n";

fn reads_work(home: &Home) {
    for args in [vec!["sessions", "list", "--all"], vec!["sessions", "show", FIXTURE_ID], vec!["memory"]] {
        let out = unprivileged(home, &args, None);
        assert!(out.status.success(), "{args:?} failed: {}", text(&out.stderr));
    }
    let listed = unprivileged(home, &["sessions", "list", "--all"], None);
    assert!(text(&listed.stdout).contains("Find why uploads fail"), "{}", text(&listed.stdout));
}

#[test]
fn a_damaged_database_names_the_file_the_operation_and_what_to_do_once() {
    // Garbled pages past the schema: opening works, listing reads them.
    let home = imported();
    let db = home.db();
    {
        use std::io::{Seek, Write};
        let mut file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        file.seek(std::io::SeekFrom::Start(3 * 4096)).unwrap();
        file.write_all(&[0xff; 8192]).unwrap();
    }
    let err = home.fails(&["sessions", "list", "--all"]);
    assert!(err.contains(&format!("cannot list sessions ({})", db.display())), "{err}");
    assert_eq!(err.matches("malformed").count(), 1, "SQLite's message once: {err}");
    assert!(!err.contains("Error code"), "{err}");
    assert!(err.contains("restore it from a backup") && err.contains("seshat sessions import"), "{err}");
    // A truncated file fails as it is opened, saying the same.
    let home = imported();
    let size = std::fs::metadata(home.db()).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(home.db()).unwrap().set_len(size / 2).unwrap();
    let err = home.fails(&["sessions", "list", "--all"]);
    assert!(err.contains(&format!("cannot open the database ({})", home.db().display())), "{err}");
    assert_eq!(err.matches("malformed").count(), 1, "{err}");
    assert!(err.contains("restore it from a backup"), "{err}");
}

#[test]
fn a_read_only_directory_without_wal_files_still_reads_and_a_write_says_which() {
    let home = imported();
    let dir = home.db().parent().unwrap().to_path_buf();
    for suffix in ["-wal", "-shm"] {
        assert!(!dir.join(format!("seshat.db{suffix}")).exists(), "closed cleanly: no {suffix}");
    }
    chmod(&dir, 0o555);
    reads_work(&home);
    let out = unprivileged(&home, &["sessions", "append", FIXTURE_ID], Some(APPEND));
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("cannot append messages") && err.contains(&home.db().display().to_string()), "{err}");
    assert!(err.contains(&format!("Its directory {} is read-only (mode r-xr-xr-x)", dir.display())), "{err}");
    chmod(&dir, 0o755);
    assert_eq!(home.store().session(FIXTURE_ID).unwrap().message_count, 8, "nothing was written");
}

#[test]
fn a_read_only_directory_with_its_wal_files_still_reads() {
    let home = imported();
    let dir = home.db().parent().unwrap().to_path_buf();
    // An open connection keeps the -wal and -shm files in place.
    let held = home.store();
    held.session(FIXTURE_ID).unwrap();
    assert!(dir.join("seshat.db-wal").exists() && dir.join("seshat.db-shm").exists());
    chmod(&dir, 0o555);
    reads_work(&home);
    chmod(&dir, 0o755);
    drop(held);
}

#[test]
fn a_read_only_file_still_reads_and_a_write_names_its_mode() {
    let home = imported();
    chmod(&home.db(), 0o444);
    reads_work(&home);
    let out = unprivileged(&home, &["sessions", "append", FIXTURE_ID], Some(APPEND));
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("The database file is read-only (mode r--r--r--)") && err.contains("chmod u+w"), "{err}");
    let out =
        unprivileged(&home, &["memory", "--action", "set", "--scope", "user", "--key", "k", "--value", "v"], None);
    let err = text(&out.stderr);
    assert!(!out.status.success() && err.contains("cannot set a note") && err.contains("read-only"), "{err}");
    chmod(&home.db(), 0o644);
    assert_eq!(home.store().session(FIXTURE_ID).unwrap().message_count, 8);
}

#[test]
fn a_full_disk_says_so_and_writes_nothing() {
    let home = imported();
    let mut store = home.store();
    let pages: i64 = store.sqlite_connection().unwrap().query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
    store.sqlite_connection().unwrap().pragma_update(None, "max_page_count", pages + 2).unwrap();
    let big = NewMessage::text(Role::User, "x".repeat(64 * 1024));
    let err = store.append(FIXTURE_ID, &[big]).unwrap_err();
    assert_eq!(err.code(), "disk_full", "{err}");
    let message = err.to_string();
    assert!(message.contains(&format!("cannot append messages ({})", home.db().display())), "{message}");
    assert!(
        message.contains("The disk is full") && message.contains("nothing of this operation was written"),
        "{message}"
    );
    assert_eq!(store.session(FIXTURE_ID).unwrap().message_count, 8, "nothing was written");
    assert_eq!(store.full_history(FIXTURE_ID).unwrap().len(), 8);
    // Memory says the same.
    let mut memory = store.memory(None);
    let err = memory.set_note(seshat::memory::Scope::User, "k", &"v".repeat(64 * 1024)).unwrap_err();
    assert!(err.to_string().contains("The disk is full"), "{err}");
}
