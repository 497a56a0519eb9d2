//! Redaction's rules measured on a labelled corpus made here from fixed seeds, and on the
//! repository's own files: `cargo bench -p seshat-cli --bench redaction`.
//!
//! * **Recall**: credentials of every kind the rules cover, in the real formats their issuers use
//!   (made up here), each inside code, a log line, JSON and prose — found, with their whole
//!   secret covered?
//! * **False positives**: look-alikes that are not secrets (git SHAs, UUIDs, content hashes,
//!   `Cargo.lock` checksums, base64 image data, ULIDs, versions, environment references) and every
//!   text file the repository tracks (its sources, docs and fixtures; the rules, this generator
//!   and BENCHMARKS.md left out) — findings per 10,000 lines, each repository finding listed to be
//!   judged by eye.
//! * **Cost**: redacting a 10 MB tool output (a build log with a few credentials in it) against
//!   reading the same text once line by line (the least any pass over it costs), same run, and the
//!   memory it takes beyond the text (every allocation counted); then appending 100,000 messages
//!   of a coding agent's chat (one transaction each) to a store that redacts against one that
//!   does not, same run.

use std::path::Path;
use std::time::{Duration, Instant};

use seshat::conversation::{MessageStatus, NewMessage, Part, Role, Usage};
use seshat::redaction::{Policy, Redactor};
use seshat::store::{NewSession, Store};

mod common;

use common::Rng;

/// A figure of this process's memory from `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
fn memory(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).expect("the field");
    let kib: usize = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number");
    kib << 10
}

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LOWER_DIGITS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";
const BASE32_UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const URLSAFE: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// One credential of kind `kind`: (kind, the full text as pasted, the secret inside it that must
/// be covered).
fn credential(kind: usize, r: &mut Rng) -> (&'static str, String, String) {
    let plain = |name: &'static str, s: String| (name, s.clone(), s);
    match kind {
        0 => plain("AWS access key id", format!("AKIA{}", r.from(BASE32_UPPER, 16))),
        1 => plain("GitHub personal access token", format!("ghp_{}", r.from(ALNUM, 36))),
        2 => plain("GitHub fine-grained token", format!("github_pat_{}", r.from(ALNUM, 82))),
        3 => plain("GitHub OAuth token", format!("gho_{}", r.from(ALNUM, 36))),
        4 => plain("GitHub app token", format!("ghs_{}", r.from(ALNUM, 36))),
        5 => plain("GitLab token", format!("glpat-{}", r.from(URLSAFE, 20))),
        6 => plain("npm token", format!("npm_{}", r.from(LOWER_DIGITS, 36))),
        7 => plain("PyPI upload token", format!("pypi-AgEIcHlwaS5vcmc{}", r.from(URLSAFE, 70))),
        8 => plain(
            "Slack bot token",
            format!("xoxb-{}-{}-{}", r.from(b"0123456789", 12), r.from(b"0123456789", 13), r.from(ALNUM, 24)),
        ),
        9 => plain(
            "Slack webhook",
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                r.from(BASE32_UPPER, 10),
                r.from(BASE32_UPPER, 10),
                r.from(ALNUM, 24)
            ),
        ),
        10 => plain("Stripe secret key", format!("sk_live_{}", r.from(ALNUM, 24))),
        11 => plain("Anthropic API key", format!("sk-ant-api03-{}AA", r.from(URLSAFE, 93))),
        12 => plain(
            "OpenAI project key",
            format!("sk-proj-{}T3BlbkFJ{}{}", r.from(URLSAFE, 74), r.from(URLSAFE, 73), r.from(ALNUM, 1)),
        ),
        13 => plain("Google API key", format!("AIza{}", r.from(URLSAFE, 35))),
        14 => plain("SendGrid key", format!("SG.{}.{}", r.from(URLSAFE, 22), r.from(URLSAFE, 43))),
        15 => plain("Twilio API key", format!("SK{}", r.from(HEX, 32))),
        16 => plain("Hugging Face token", format!("hf_{}", r.from(LETTERS, 34))),
        17 => plain("DigitalOcean token", format!("dop_v1_{}", r.from(HEX, 64))),
        18 => plain("Shopify token", format!("shpat_{}", r.from(HEX, 32))),
        19 => plain(
            "JSON Web Token",
            format!("eyJ{}.eyJ{}.{}", r.from(ALNUM, 30), r.from(ALNUM, 60), r.from(URLSAFE, 43)),
        ),
        20 => {
            let body: Vec<String> = (0..6).map(|_| r.from(ALNUM, 64)).collect();
            plain(
                "PEM private key",
                format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", body.join("\n")),
            )
        }
        21 => {
            let body: Vec<String> = (0..5).map(|_| r.from(ALNUM, 70)).collect();
            plain(
                "OpenSSH private key",
                format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----", body.join("\n")),
            )
        }
        22 => {
            let password = format!("{}{}", r.from(ALNUM, 12), r.from(b"0123456789", 2));
            let scheme = ["postgres", "mysql", "redis", "https", "amqp"][(r.next() % 5) as usize];
            ("URL with a password", format!("{scheme}://deploy:{password}@db.internal:5432/app"), password)
        }
        _ => {
            let value =
                format!("{}{}{}", r.from(b"ABCDEFGHJKLMNPQRSTUVWXYZ", 4), r.from(ALNUM, 20), r.from(b"0123456789", 2));
            (".env line", format!("SERVICE_CREDENTIAL={value}"), value)
        }
    }
}

const KINDS: usize = 24;

/// `text` (a credential as pasted) in one of four surroundings; a `.env` line (`dotenv`) in a
/// file's: a shell script, `cat .env`'s output, a tool's JSON result holding the file, and prose.
fn in_context(context: usize, text: &str, dotenv: bool) -> String {
    match context {
        0 if dotenv => format!("#!/bin/sh\nset -e\nexport {text}\nexec ./server\n"),
        1 if dotenv => format!("$ cat .env\nAPP_ENV=production\n{text}\nPORT=8080\n"),
        2 if dotenv => format!("{{\"path\": \".env\", \"content\": \"APP_ENV=production\\n{text}\\nPORT=8080\\n\"}}\n"),
        0 => format!("fn connect() -> Client {{\n    let auth = \"{text}\";\n    Client::new(auth)\n}}\n"),
        1 => format!("2026-12-07T01:02:03.456Z DEBUG http: sending request with {text} to the upstream\n"),
        2 => format!("{{\"service\": \"billing\", \"credential\": \"{text}\", \"retries\": 3}}\n"),
        _ => format!("Here is what I have in my notes: {text} and it stopped working yesterday.\n"),
    }
}

/// Look-alikes: lines that hold no secret.
fn look_alikes(r: &mut Rng, lines: usize) -> String {
    let mut out = String::new();
    for i in 0..lines {
        let line = match i % 9 {
            0 => format!("commit {}", r.from(HEX, 40)),
            1 => format!(
                "request {}-{}-4{}-a{}-{} done",
                r.from(HEX, 8),
                r.from(HEX, 4),
                r.from(HEX, 3),
                r.from(HEX, 3),
                r.from(HEX, 12)
            ),
            2 => format!("checksum = \"{}\"", r.from(HEX, 64)),
            3 => format!("<img src=\"data:image/png;base64,iVBORw0KGgo{}==\">", r.from(ALNUM, 120)),
            4 => format!("session 01M{} resumed", r.from(BASE32_UPPER, 23)),
            5 => format!("version = \"{}.{}.{}\"", r.next() % 9, r.next() % 40, r.next() % 20),
            6 => "password = os.environ[\"DB_PASSWORD\"]  # read at start".to_string(),
            7 => format!("sha256:{}  target/release/seshat", r.from(HEX, 64)),
            _ => format!("url = \"postgres://app@db.internal:5432/{}\"", r.from(LOWER_DIGITS, 8)),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn main() {
    let redactor = Redactor::builtin().expect("the built-in rules load");
    let mut r = Rng(0x5e5_4a7);

    // Recall.
    let per = 25;
    let (mut total, mut found) = (0usize, 0usize);
    let mut missed: Vec<String> = Vec::new();
    for kind in 0..KINDS {
        let (mut k_total, mut k_found, mut name) = (0, 0, "");
        for sample in 0..per {
            let (label, pasted, secret) = credential(kind, &mut r);
            name = label;
            let text = in_context(sample % 4, &pasted, label == ".env line");
            let at = text.find(&secret).expect("the secret is in its text");
            let covered = redactor.find(&text).iter().any(|f| f.start <= at && at + secret.len() <= f.end);
            k_total += 1;
            if covered {
                k_found += 1;
            } else if missed.len() < 10 {
                missed.push(format!("{label}: {}", text.trim()));
            }
        }
        println!("| {name} | {k_found}/{k_total} |");
        total += k_total;
        found += k_found;
    }
    println!(
        "\nrecall: {found} of {total} ({:.2}%) over {KINDS} kinds in code, logs, JSON and prose",
        100.0 * found as f64 / total as f64
    );
    for m in &missed {
        println!("  missed: {m}");
    }

    // False positives: generated look-alikes, then the repository's files.
    let lines = 100_000;
    let alikes = look_alikes(&mut r, lines);
    let alike_hits = redactor.find(&alikes);
    println!(
        "\nlook-alikes: {} findings in {lines} lines ({:.2} per 10,000 lines)",
        alike_hits.len(),
        alike_hits.len() as f64 * 10_000.0 / lines as f64
    );
    for f in alike_hits.iter().take(10) {
        println!("  {}: {}", f.rule, &alikes[f.start..f.end.min(f.start + 60)]);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let listed = std::process::Command::new("git").arg("-C").arg(&root).arg("ls-files").output().expect("git ls-files");
    let (mut repo_lines, mut repo_hits) = (0usize, Vec::new());
    for file in String::from_utf8_lossy(&listed.stdout).lines() {
        // The rules, this generator of credentials, and the figures pasted from it.
        if file.starts_with("host/core/src/redaction/")
            || file == "host/cli/benches/redaction.rs"
            || file == "BENCHMARKS.md"
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        repo_lines += text.lines().count();
        for f in redactor.find(&text) {
            let line = text[..f.start].matches('\n').count() + 1;
            repo_hits.push(format!("{file}:{line} {} `{}`", f.rule, &text[f.start..f.end.min(f.start + 40)]));
        }
    }
    println!(
        "the repository: {} findings in {repo_lines} lines ({:.2} per 10,000 lines)",
        repo_hits.len(),
        repo_hits.len() as f64 * 10_000.0 / repo_lines.max(1) as f64
    );
    for h in &repo_hits {
        println!("  {h}");
    }

    // Cost: a 10 MB build log with a credential every 50,000 lines.
    let mut log = String::with_capacity(11 << 20);
    let mut n = 0;
    while log.len() < 10 << 20 {
        n += 1;
        if n % 50_000 == 0 {
            let (_, pasted, _) = credential(n / 50_000 % KINDS, &mut r);
            log.push_str(&format!("error: authentication failed for {pasted}\n"));
        } else {
            log.push_str(&format!(
                "   Compiling crate-{} v0.{}.{} (/work/target/{})\n",
                n,
                n % 13,
                n % 7,
                r.from(LOWER_DIGITS, 12)
            ));
        }
    }
    let began = Instant::now();
    let baseline: usize = log.lines().map(str::len).sum();
    let read_once = began.elapsed();
    // The peak resident size is reset (Linux: `5` to clear_refs) and read again afterwards.
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak resident size");
    let before = memory("VmRSS:");
    let began = Instant::now();
    let (redacted, hits) = redactor.redact(&log, b"bench key");
    let redacting = began.elapsed();
    let peak = memory("VmHWM:").saturating_sub(before);
    assert!(baseline > 0 && !redacted.is_empty());
    println!(
        "\n10 MB tool output ({} MiB, {} credentials found): redact {:.1} ms vs one pass over its lines {:.1} ms ({:.1}x)",
        log.len() >> 20,
        hits.len(),
        redacting.as_secs_f64() * 1000.0,
        read_once.as_secs_f64() * 1000.0,
        redacting.as_secs_f64() / read_once.as_secs_f64()
    );
    println!(
        "memory beyond the text while redacting it: {:.1} MiB at most ({:.2}x the text; the redacted copy is {:.1} MiB)",
        peak as f64 / f64::from(1 << 20),
        peak as f64 / log.len() as f64,
        redacted.len() as f64 / f64::from(1 << 20)
    );
    drop(redacted);

    appending(&mut r);
}

/// A tool result of a coding agent's session: build logs, JSON answers, source code, config
/// files — 300 B to 4 KB, made of words that wake the rules (key, token, secret, password, auth,
/// `=`) without being credentials.
fn tool_output(r: &mut Rng) -> String {
    let mut out = String::new();
    let target = 300 + r.below(3_700);
    while out.len() < target {
        let line = match r.below(8) {
            0 => format!(
                "2026-12-07T10:{:02}:{:02}Z INFO request_id={} token refreshed for user {} status=200\n",
                r.below(60),
                r.below(60),
                r.from(HEX, 16),
                r.below(9_999)
            ),
            1 => format!(
                "{{\"token_type\": \"bearer\", \"expires_in\": {}, \"id\": \"{}-{}\", \"sha\": \"{}\"}}\n",
                r.below(7_200),
                r.from(HEX, 8),
                r.from(HEX, 4),
                r.from(HEX, 40)
            ),
            2 => format!("    let api_key = std::env::var(\"{}_API_KEY\")?;\n", r.from(b"ABCDEFGH", 5)),
            3 => format!("    config.password = args.password.clone(); // line {}\n", r.below(900)),
            4 => format!(
                "AUTH_ISSUER=https://auth.internal/{}\nLOG_LEVEL=info\nPORT={}\n",
                r.from(LOWER_DIGITS, 6),
                8000 + r.below(999)
            ),
            5 => format!(
                "   Compiling secret-service v0.{}.{} (/work/crates/{})\n",
                r.below(20),
                r.below(9),
                r.from(LOWER_DIGITS, 8)
            ),
            6 => format!("test auth::tests::key_rotation_{} ... ok\n", r.from(LOWER_DIGITS, 6)),
            _ => format!(
                "error[E0{}]: mismatched types in `verify_token` at src/auth.rs:{}\n",
                300 + r.below(99),
                r.below(800)
            ),
        };
        out.push_str(&line);
    }
    out
}

/// The chat the append benchmark writes: requests, tool calls, their results (one in 1,000
/// holding a real credential) and answers with usage.
fn chat_messages(r: &mut Rng, n: usize) -> Vec<NewMessage> {
    (0..n)
        .map(|i| {
            let (role, parts) = match i % 4 {
                0 => (
                    Role::User,
                    vec![Part::Text {
                        text: format!("request {i}: the login test fails again, look at the token refresh"),
                    }],
                ),
                1 => (
                    Role::Assistant,
                    vec![Part::ToolCall {
                        id: format!("call_{i}"),
                        name: "bash".into(),
                        arguments: format!("{{\"command\":\"cargo test -p auth -- key_rotation_{}\"}}", i % 97),
                    }],
                ),
                2 => {
                    let mut content = tool_output(r);
                    if i % 1_000 == 2 {
                        let (_, pasted, _) = credential(i / 1_000 % KINDS, r);
                        content.push_str(&format!("error: authentication failed for {pasted}\n"));
                    }
                    (
                        Role::Tool,
                        vec![Part::ToolResult { call_id: format!("call_{}", i - 1), content, is_error: false }],
                    )
                }
                _ => (
                    Role::Assistant,
                    vec![Part::Text { text: format!("answer {i}: the refresh token expired; fixed the check") }],
                ),
            };
            let usage = (role == Role::Assistant).then_some(Usage {
                input_tokens: 100,
                output_tokens: 20,
                context_tokens: Some(1_000 + i as u64),
                ..Default::default()
            });
            NewMessage { role, parts, usage, status: MessageStatus::Complete }
        })
        .collect()
}

/// Appending a chat, one transaction a message, to a store that redacts and to one that does not
/// (alternating, best of two each).
fn appending(r: &mut Rng) {
    let n = 100_000;
    let messages = chat_messages(r, n);
    let bytes: usize = messages.iter().flat_map(|m| &m.parts).map(Part::text_bytes).sum();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (mut on, mut off) = (Duration::MAX, Duration::MAX);
    let mut placeholders = 0;
    for round in 0..2 {
        for redacting in [true, false] {
            let path = dir.path().join(format!("{round}-{redacting}.db"));
            let mut store = Store::open(&path).expect("a store");
            if !redacting {
                store.set_redaction(Policy::off());
            }
            let id = store.create_session(NewSession { project: "/bench".into(), ..Default::default() }).unwrap().id;
            let began = Instant::now();
            for m in &messages {
                store.append(&id, std::slice::from_ref(m)).expect("append");
            }
            let took = began.elapsed();
            if redacting {
                on = on.min(took);
                let stored = serde_json::to_string(&store.full_history(&id).unwrap()).unwrap();
                placeholders = stored.matches("[secret:").count();
            } else {
                off = off.min(took);
            }
        }
    }
    println!(
        "\n{n} messages ({:.1} MiB of text, {placeholders} placeholders stored)",
        bytes as f64 / f64::from(1 << 20)
    );
    println!("\n| benchmark | redaction on | off | ratio | target |\n|---|---|---|---|---|");
    common::report(
        &format!("append {n} messages of a coding chat, one transaction each (best of 2)"),
        on,
        off,
        "≤ 1.15×",
    );
}
