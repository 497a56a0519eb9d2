//! Peak memory of importing a session whose one message is a huge line.
//!
//! Each side runs in a child process of this benchmark (re-executed with `--child`), which reads
//! its own peak resident size (`VmHWM` in `/proc/self/status`) when done, so one run never
//! inherits another's peak:
//! * **Seshat**: `Store::import` of a `sessions export` file holding one message of `--mib` MiB
//!   of text (default 200), into a fresh database;
//! * **baseline**: the same file's lines read one at a time and each stored as it came, one row
//!   per line in one transaction (the least an import can do: read the line, hand it to SQLite).
//!
//! The bound (issue "Hardening"): Seshat's peak ≤ 3 × the largest line + 64 MiB.
//!
//! Run: `cargo bench -p seshat-cli --bench import` (`-- --mib N` for another size).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;

const SESSION_ID: &str = "01JFXAMP1E0000000000000009";

fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// Writes an export with one user message of `mib` MiB; returns the largest line's size.
fn write_export(path: &Path, mib: usize) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let session = serde_json::json!({
        "record": "session", "format_version": 2, "id": SESSION_ID, "title": "huge", "project": "/bench",
        "provider": null, "model": null, "context_window": null, "created_at": 1, "updated_at": 2,
        "message_count": 1, "totals": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
        "cache_creation_tokens": 0}, "context_tokens": null, "compaction_failures": 0,
        "auto_compact_disabled": false, "metadata": {}
    });
    writeln!(out, "{session}").unwrap();
    let head = r#"{"record":"message","seq":1,"role":"user","parts":[{"type":"text","text":""#;
    let tail = r#""}],"status":"complete","created_at":3}"#;
    out.write_all(head.as_bytes()).unwrap();
    let block = "log line 0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ KLMNOPQRST UVWXYZ .,;:!?\\n".repeat(64);
    let mut written = 0;
    while written < mib << 20 {
        out.write_all(block.as_bytes()).unwrap();
        written += block.len();
    }
    out.write_all(tail.as_bytes()).unwrap();
    out.write_all(b"\n").unwrap();
    out.flush().unwrap();
    (head.len() + written + tail.len() + 1) as u64
}

fn child(side: &str, file: &Path, db: &Path) {
    match side {
        "seshat" => {
            let mut store = seshat::store::Store::open(db).unwrap();
            let mut input = BufReader::new(std::fs::File::open(file).unwrap());
            let imported = store.import(&mut input, seshat::store::ImportOptions::default()).unwrap();
            let peak = peak_kib();
            assert_eq!(imported.messages, 1);
            // Checked after the peak was read: reading it back is not part of the import.
            let count: i64 = store
                .sqlite_connection()
                .unwrap()
                .query_row("SELECT length(parts) FROM messages WHERE session_id = ?1", [&imported.id], |r| r.get(0))
                .unwrap();
            assert!(count > 1 << 20, "the message was imported whole");
            println!("{peak}");
            return;
        }
        _ => {
            let mut conn = rusqlite::Connection::open(db).unwrap();
            conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE lines (text TEXT)")
                .unwrap();
            let tx = conn.transaction().unwrap();
            let mut input = BufReader::new(std::fs::File::open(file).unwrap());
            let mut line = String::new();
            while input.read_line(&mut line).unwrap() > 0 {
                tx.execute("INSERT INTO lines (text) VALUES (?1)", [&line]).unwrap();
                line.clear();
            }
            tx.commit().unwrap();
        }
    }
    println!("{}", peak_kib());
}

fn run(side: &str, file: &Path, db: &Path) -> u64 {
    let _ = std::fs::remove_file(db);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--child", side])
        .arg(file)
        .arg(db)
        .output()
        .expect("run the child");
    assert!(out.status.success(), "{side} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("the child's peak")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], Path::new(&args[i + 2]), Path::new(&args[i + 3]));
        return;
    }
    let mib: usize = args.iter().position(|a| a == "--mib").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.jsonl");
    let line = write_export(&file, mib);
    let base = run("baseline", &file, &dir.path().join("baseline.db"));
    let ours = run("seshat", &file, &dir.path().join("seshat.db"));
    let line_mib = line as f64 / f64::from(1 << 20);
    let (ours_mib, base_mib) = (ours as f64 / 1024.0, base as f64 / 1024.0);
    let bound = 3.0 * line_mib + 64.0;
    println!("| case | Seshat peak | baseline peak | ratio | peak / line | bound (3 × line + 64 MiB) |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| import, one {line_mib:.0} MiB line | {ours_mib:.0} MiB | {base_mib:.0} MiB | {:.2}× | {:.2}× | {bound:.0} MiB: {} |",
        ours_mib / base_mib,
        ours_mib / line_mib,
        if ours_mib <= bound { "met" } else { "MISSED" }
    );
}
