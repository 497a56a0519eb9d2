//! Re-importing another agent's session, as a user who runs the import after every session (by
//! habit, or from cron) does: any sequence of imports, messages added in Seshat, file growth and
//! imports that find nothing new, in both formats. The file's lines never follow Seshat's own in
//! any session, and the session that follows the file holds every file line, in order.

use std::path::Path;

use proptest::prelude::*;
use seshat::conversation::{NewMessage, Role};
use seshat::foreign::Tool;
use seshat::store::{ListFilter, Store};

/// One thing the user does.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The agent's file grows by this many exchanges (a user line and an answer each).
    Grow(usize),
    /// The user goes on in Seshat in the session that follows the file (one exchange).
    Seshat,
    /// `seshat sessions import --from …` (whether the file changed or not).
    Import,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![(1usize..3).prop_map(Step::Grow), Just(Step::Seshat), Just(Step::Import), Just(Step::Import)]
}

/// The agent's file with `exchanges` exchanges, their texts `file 0`, `file 1`, … in order.
fn write_file(tool: Tool, path: &Path, exchanges: usize) {
    let mut lines = Vec::new();
    match tool {
        Tool::Codex => {
            lines.push(serde_json::json!({"timestamp": "2025-11-20T10:00:00.000Z", "type": "session_meta",
                "payload": {"id": "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001", "timestamp": "2025-11-20T10:00:00.000Z",
                "cwd": "/work/p", "originator": "codex_cli_rs", "cli_version": "0.63.0", "source": "cli"}}));
            for i in 0..exchanges {
                for (role, kind, n) in [("user", "input_text", 2 * i), ("assistant", "output_text", 2 * i + 1)] {
                    lines.push(serde_json::json!({"timestamp": "2025-11-20T10:01:00.000Z", "type": "response_item",
                        "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": format!("file {n}")}]}}));
                }
            }
        }
        _ => {
            let mut parent: Option<String> = None;
            for i in 0..exchanges {
                for (kind, n) in [("user", 2 * i), ("assistant", 2 * i + 1)] {
                    let uuid = format!("00000000-0000-4000-8000-{n:012}");
                    let message = if kind == "user" {
                        serde_json::json!({"role": "user", "content": format!("file {n}")})
                    } else {
                        serde_json::json!({"role": "assistant", "model": "claude-sonnet-4-5", "id": format!("msg_{n}"),
                            "content": [{"type": "text", "text": format!("file {n}")}]})
                    };
                    lines.push(serde_json::json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
                        "cwd": "/work/p", "sessionId": "11111111-2222-4333-8444-000000000001", "version": "2.0.14",
                        "type": kind, "uuid": uuid, "timestamp": "2025-11-21T10:00:00.000Z", "message": message}));
                    parent = Some(uuid);
                }
            }
        }
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The texts of a session's messages, in order.
fn texts(store: &Store, session: &str) -> Vec<String> {
    store.full_history(session).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect()
}

/// Runs `steps` against `tool`'s file; checks the promises after every import.
fn run(tool: Tool, steps: &[Step]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let mut store = Store::open(&dir.path().join("seshat.db")).unwrap();
    let (mut exchanges, mut own, mut followed): (usize, usize, Option<String>) = (1, 0, None);
    write_file(tool, &path, exchanges);
    for step in std::iter::once(&Step::Import).chain(steps) {
        match *step {
            Step::Grow(n) => {
                exchanges += n;
                write_file(tool, &path, exchanges);
            }
            Step::Seshat => {
                let Some(session) = &followed else { continue };
                let pair = [
                    NewMessage::text(Role::User, format!("seshat {own}")),
                    NewMessage::text(Role::Assistant, format!("seshat {}", own + 1)),
                ];
                own += 2;
                store.append(session, &pair).unwrap();
            }
            Step::Import => {
                let found = seshat::foreign::read(tool, &path, 1 << 20).unwrap();
                prop_assert_eq!(found.sessions.len(), 1);
                let report = seshat::foreign::bring_in(&mut store, &found.sessions[0], |cwd| cwd.to_string()).unwrap();
                followed = Some(report.session.clone());
                for info in store.list_sessions(&ListFilter::default()).unwrap() {
                    let t = texts(&store, &info.id);
                    if let Some(first_own) = t.iter().position(|x| x.starts_with("seshat")) {
                        let after = t[first_own..].iter().find(|x| x.starts_with("file"));
                        prop_assert!(
                            after.is_none(),
                            "{tool:?} {steps:?}: in {}, file line {:?} follows Seshat's own: {t:?}",
                            info.id,
                            after
                        );
                    }
                }
                let file_lines: Vec<String> = t_file(&texts(&store, &report.session));
                let expected: Vec<String> = (0..2 * exchanges).map(|n| format!("file {n}")).collect();
                prop_assert_eq!(
                    file_lines,
                    expected,
                    "{:?} {:?}: the followed session holds every file line in order ({})",
                    tool,
                    steps,
                    report.outcome
                );
            }
        }
    }
    Ok(())
}

/// The file's lines among a session's texts.
fn t_file(texts: &[String]) -> Vec<String> {
    texts.iter().filter(|t| t.starts_with("file")).cloned().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn file_lines_never_follow_seshats_own_in_claude_code_sessions(steps in prop::collection::vec(step(), 1..12)) {
        run(Tool::ClaudeCode, &steps)?;
    }

    #[test]
    fn file_lines_never_follow_seshats_own_in_codex_sessions(steps in prop::collection::vec(step(), 1..12)) {
        run(Tool::Codex, &steps)?;
    }
}

/// The sequence the fault campaign found: import, go on in Seshat, import with nothing new, the
/// file grows, import — the file's new lines go into a fork, not after Seshat's own.
#[test]
fn an_unchanged_import_between_does_not_let_the_file_follow_seshats_own() {
    for tool in [Tool::ClaudeCode, Tool::Codex] {
        let steps = [Step::Seshat, Step::Import, Step::Grow(1), Step::Import];
        run(tool, &steps).unwrap_or_else(|e| panic!("{tool:?}: {e}"));
    }
}
