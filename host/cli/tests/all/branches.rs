//! Forks and rewinds in the store: a fork at any seq has exactly the live view the parent had
//! then, a rewind then its undo changes nothing, a fork of a fork keeps both lineages — over
//! random sessions with compactions, trims, pins, undos and rewinds.

use std::collections::HashMap;

use proptest::prelude::*;
use seshat::conversation::{NewMessage, Part, Role};
use seshat::store::{Compaction, CompactionStatus, CompactionTrigger, NewSession, Store, ViewEntry};

use crate::on_both_backends;
use crate::support::Home;

/// One thing done to a session.
#[derive(Debug, Clone)]
enum Op {
    /// A user message.
    User,
    /// An assistant answer.
    Answer,
    /// A tool call, then (a second append) its result.
    Tool,
    /// A compaction keeping from the message this far back (a fraction of the session).
    Compact(u8),
    /// A trim of a tool result (the n-th, modulo their number).
    Trim(u8),
    /// A pin of a message (by a fraction of the session).
    Pin(u8),
    /// An unpin of a pinned message (the n-th).
    Unpin(u8),
    /// An undo of the latest compaction or trim pass.
    Undo,
    /// A rewind to a message (by a fraction of the session).
    Rewind(u8),
    /// An undo of the latest rewind.
    UndoRewind,
}

/// A successful compaction of messages `1..first_kept` made when `through` was the last.
fn compaction(through: u64, first_kept: u64, summary: &str) -> Compaction {
    Compaction {
        trigger: CompactionTrigger::Manual,
        tokens_before: 1000,
        tokens_after: Some(100),
        through_seq: through,
        first_kept_seq: Some(first_kept),
        pinned_seq: None,
        summary: Some(summary.into()),
        model: None,
        status: CompactionStatus::Ok,
        error: None,
        created_at: 1,
        instructions: None,
        plugin: None,
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::User),
        3 => Just(Op::Answer),
        3 => Just(Op::Tool),
        1 => any::<u8>().prop_map(Op::Compact),
        1 => any::<u8>().prop_map(Op::Trim),
        1 => any::<u8>().prop_map(Op::Pin),
        1 => any::<u8>().prop_map(Op::Unpin),
        1 => Just(Op::Undo),
        1 => any::<u8>().prop_map(Op::Rewind),
        1 => Just(Op::UndoRewind),
    ]
}

/// What a live view shows, without the session's own fields (a fork is another session).
type Shown = (Option<Compaction>, Vec<ViewEntry>);

fn shown(store: &Store, session: &str) -> Shown {
    let view = store.live_view(session).unwrap();
    (view.compaction, view.entries)
}

/// A seq picked by `f` (0–255) among `1..=count`.
fn pick(f: u8, count: u64) -> u64 {
    1 + (f as u64 * count) / 256
}

/// Applies `op` to `session`; returns nothing, ignoring the refusals a random op may meet
/// (nothing to undo, nothing to rewind): each is checked by its own tests.
fn apply(store: &mut Store, session: &str, op: &Op, calls: &mut u64, results: &mut Vec<u64>) {
    let count = store.session(session).unwrap().message_count;
    match op {
        Op::User => {
            store.append(session, &[NewMessage::text(Role::User, format!("question {count}"))]).unwrap();
        }
        Op::Answer => {
            store.append(session, &[NewMessage::text(Role::Assistant, format!("answer {count}"))]).unwrap();
        }
        Op::Tool => {
            *calls += 1;
            let id = format!("call{calls}");
            let call = NewMessage {
                role: Role::Assistant,
                parts: vec![Part::ToolCall { id: id.clone(), name: "run".into(), arguments: "{}".into() }],
                usage: None,
                status: seshat::conversation::MessageStatus::Complete,
            };
            store.append(session, &[call]).unwrap();
            let result = NewMessage {
                role: Role::User,
                parts: vec![Part::ToolResult {
                    call_id: id,
                    content: format!("output {count} ").repeat(20),
                    is_error: false,
                }],
                usage: None,
                status: seshat::conversation::MessageStatus::Complete,
            };
            results.extend(store.append(session, &[result]).unwrap());
        }
        Op::Compact(f) if count >= 2 => {
            let first_kept = pick(*f, count).max(2);
            let c = compaction(count, first_kept, &format!("summary of 1 to {}", first_kept - 1));
            store.record_compaction(session, &c).unwrap();
        }
        Op::Trim(n) if !results.is_empty() => {
            let seq = results[*n as usize % results.len()];
            store.record_trims(session, &[(seq, 0, format!("[trimmed at {count}]"))]).unwrap();
        }
        Op::Pin(f) if count >= 1 => {
            store.pin(session, pick(*f, count), |_, _| Ok(())).unwrap();
        }
        Op::Unpin(n) => {
            let pins = store.pins(session).unwrap();
            if !pins.is_empty() {
                store.unpin(session, pins[*n as usize % pins.len()]).unwrap();
            }
        }
        Op::Undo => {
            let _ = store.retract_latest(session, |_| Ok(()));
        }
        Op::Rewind(f) if count >= 1 => {
            let _ = store.rewind(session, pick(*f, count), |_| Ok(()));
        }
        Op::UndoRewind => {
            let _ = store.undo_rewind(session);
        }
        _ => {}
    }
}

fn config(cases: u32) -> ProptestConfig {
    crate::support::proptest_config(cases, "tests/all/branches.proptest-regressions")
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn a_fork_at_any_seq_has_the_view_the_parent_had_then(ops in prop::collection::vec(op(), 1..60)) {
        forks_keep_their_views(&Home::new(), &ops)?;
    }
}

/// [`a_fork_at_any_seq_has_the_view_the_parent_had_then`] on PostgreSQL (fewer cases: each
/// makes a database).
#[test]
fn a_fork_at_any_seq_has_the_view_the_parent_had_then_on_postgresql() {
    let mut runner = proptest::test_runner::TestRunner::new(config(12));
    let result = runner.run(&prop::collection::vec(op(), 1..60), |ops| forks_keep_their_views(&Home::postgres(), &ops));
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The fork properties over `ops` applied to a session in `home`.
fn forks_keep_their_views(home: &Home, ops: &[Op]) -> Result<(), TestCaseError> {
    {
        let mut store = home.store();
        let s = store.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
        // The view after the last step at each message count.
        let mut at: HashMap<u64, Shown> = HashMap::new();
        at.insert(0, shown(&store, &s));
        let (mut calls, mut results) = (0, Vec::new());
        for op in ops {
            apply(&mut store, &s, op, &mut calls, &mut results);
            let count = store.session(&s).unwrap().message_count;
            // A fork at the last message a rewind in force hides continues from the rewound
            // branch (the rewind is not the fork's): the views after that rewind at this count
            // are not what a fork there shows.
            let rewound_here = store.live_rewinds(&s).unwrap().iter().any(|r| r.through_seq == count);
            if rewound_here {
                at.remove(&count);
            } else {
                at.insert(count, shown(&store, &s));
            }
        }
        let last = store.session(&s).unwrap().message_count;
        let now = shown(&store, &s);
        for seq in 1..=last {
            let fork = store.fork(&s, Some(seq), None).unwrap();
            let Some(then) = at.get(&fork.at) else { continue };
            prop_assert_eq!(&shown(&store, &fork.session.id), then, "fork at {} (asked {})", fork.at, seq);
            prop_assert_eq!(
                store.full_history(&fork.session.id).unwrap(),
                store.history_range(&s, 1, fork.at).unwrap(),
                "the fork's history is the parent's up to its seq"
            );
        }
        // Rewind then undo is the identity.
        if last >= 1 {
            let before = shown(&store, &s);
            let to = 1 + (ops.len() as u64 * 7) % last;
            if store.rewind(&s, to, |_| Ok(())).is_ok() {
                store.undo_rewind(&s).unwrap();
                prop_assert_eq!(shown(&store, &s), before);
            }
        }
        // A fork of a fork at any seq: inside the first fork's inherited part, the grandparent's
        // view as it was; after it, the first fork's as it was.
        if last >= 1 {
            let a = 1 + (ops.len() as u64 * 3) % last;
            let f1 = store.fork(&s, Some(a), None).unwrap();
            let mut at1: HashMap<u64, Shown> = HashMap::new();
            let (mut calls1, mut results1) = (calls, results.iter().copied().filter(|&r| r <= f1.at).collect());
            for op in ops.iter().rev().take(12) {
                apply(&mut store, &f1.session.id, op, &mut calls1, &mut results1);
                let count = store.session(&f1.session.id).unwrap().message_count;
                if store.live_rewinds(&f1.session.id).unwrap().iter().any(|r| r.through_seq == count) {
                    at1.remove(&count);
                } else {
                    at1.insert(count, shown(&store, &f1.session.id));
                }
            }
            let f1_last = store.session(&f1.session.id).unwrap().message_count;
            for seq in 1..=f1_last {
                let f2 = store.fork(&f1.session.id, Some(seq), None).unwrap();
                let then = if f2.at < f1.at { at.get(&f2.at) } else { at1.get(&f2.at) };
                let Some(then) = then else { continue };
                prop_assert_eq!(&shown(&store, &f2.session.id), then, "fork of a fork at {}", f2.at);
                prop_assert_eq!(
                    store.full_history(&f2.session.id).unwrap(),
                    store.history_range(&f1.session.id, 1, f2.at).unwrap()
                );
            }
        }
        // A fork of a fork: its view is its parent's as it was, the first fork's messages after
        // the grandparent's.
        let f1 = store.fork(&s, None, None).unwrap().session.id;
        let (mut calls2, mut results2) = (calls, results.clone());
        for op in ops.iter().take(8) {
            apply(&mut store, &f1, op, &mut calls2, &mut results2);
        }
        let f1_view = shown(&store, &f1);
        let f2 = store.fork(&f1, None, None).unwrap();
        prop_assert_eq!(shown(&store, &f2.session.id), f1_view);
        prop_assert_eq!(store.full_history(&f2.session.id).unwrap(), store.full_history(&f1).unwrap());
        prop_assert_eq!(shown(&store, &s), now, "the parent is untouched by its forks");
    }
    Ok(())
}

/// A session of `n` messages, user and assistant in turn, message `i` saying `word{i}`.
fn talk(home: &Home, n: u64, size: usize) -> String {
    let mut store = home.store();
    let id = store.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
    let msgs: Vec<NewMessage> = (1..=n)
        .map(|i| {
            let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
            NewMessage::text(role, format!("word{i} {}", "x".repeat(size)))
        })
        .collect();
    store.append(&id, &msgs).unwrap();
    id
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn view_seqs(home: &Home, id: &str) -> Vec<u64> {
    home.store().live_view(id).unwrap().entries.iter().filter_map(|e| e.seq).collect()
}

on_both_backends! {
fn the_cli_forks_at_a_message_and_the_fork_lives_on_when_its_parent_is_deleted(home) {
    let parent = talk(&home, 6, 10);
    let out = json(&home.ok(&["sessions", "fork", &parent[..10], "--at", "4", "--title", "other way", "--json"]));
    let fork = out["session"]["id"].as_str().unwrap().to_string();
    assert_eq!((out["at"].as_u64(), out["parent"].as_str()), (Some(4), Some(parent.as_str())));
    assert_eq!(out["session"]["parent_id"].as_str(), Some(parent.as_str()));
    assert_eq!((out["session"]["fork_seq"].as_u64(), out["session"]["message_count"].as_u64()), (Some(4), Some(4)));
    assert_eq!(view_seqs(&home, &fork), [1, 2, 3, 4]);
    // The fork continues on its own; the parent is untouched.
    home.store().append(&fork, &[NewMessage::text(Role::User, "word-fork-own")]).unwrap();
    assert_eq!(view_seqs(&home, &fork), [1, 2, 3, 4, 5]);
    assert_eq!(view_seqs(&home, &parent), [1, 2, 3, 4, 5, 6]);

    // Lineage in the listing and in show.
    let tree = json(&home.ok(&["sessions", "list", "--all", "--tree", "--json"]));
    let rows: Vec<(&str, u64)> =
        tree.as_array().unwrap().iter().map(|r| (r["id"].as_str().unwrap(), r["depth"].as_u64().unwrap())).collect();
    assert_eq!(rows, [(parent.as_str(), 0), (fork.as_str(), 1)]);
    let text = home.ok(&["sessions", "list", "--all", "--tree"]);
    assert!(text.contains(&format!("└ other way (fork of {} after 4)", &parent[..8])), "{text}");
    let shown = home.ok(&["sessions", "show", &parent]);
    assert!(shown.contains(&format!("fork {fork} continues after message 4")), "{shown}");
    let shown = home.ok(&["sessions", "show", &fork]);
    assert!(shown.contains(&format!("forked from {parent} after message 4")), "{shown}");

    // A message is found once, in the session that wrote it; the fork's search sees its
    // inherited history.
    let hits = json(&home.ok(&["sessions", "search", "word2", "--all", "--json"]));
    let found: Vec<&str> = hits.as_array().unwrap().iter().map(|h| h["session_id"].as_str().unwrap()).collect();
    assert_eq!(found, [parent.as_str()], "{hits}");
    let own = home.store().search_history(seshat::store::HistoryScope::Session(&fork), "word2", 5).unwrap();
    assert_eq!(own.iter().map(|h| h.seq).collect::<Vec<_>>(), [2]);
    let beyond = home.store().search_history(seshat::store::HistoryScope::Session(&fork), "word6", 5).unwrap();
    assert!(beyond.is_empty(), "the parent's message after the fork point is not the fork's history");

    // Deleting the parent keeps the fork whole, and its messages findable once.
    home.ok(&["sessions", "delete", &parent, "--yes"]);
    let history = home.store().full_history(&fork).unwrap();
    let texts: Vec<String> =
        history.iter().map(|m| crate::support::text_of(m).split(' ').next().unwrap().to_string()).collect();
    assert_eq!(texts, ["word1", "word2", "word3", "word4", "word-fork-own"]);
    assert_eq!(view_seqs(&home, &fork), [1, 2, 3, 4, 5]);
    assert_eq!(home.store().session(&fork).unwrap().parent_id, None);
    let hits = json(&home.ok(&["sessions", "search", "word2", "--all", "--json"]));
    let found: Vec<&str> = hits.as_array().unwrap().iter().map(|h| h["session_id"].as_str().unwrap()).collect();
    assert_eq!(found, [fork.as_str()]);
}
}

on_both_backends! {
fn a_fork_or_rewind_point_out_of_range_or_of_an_unknown_session_is_refused_and_writes_nothing(home) {
    let id = talk(&home, 6, 10);
    let sessions = || home.store().list_sessions(&Default::default()).unwrap().len();
    let err = home.fails(&["sessions", "fork", &id, "--at", "9"]);
    assert!(err.contains("has messages 1 to 6: there is no message 9"), "{err}");
    assert_eq!(sessions(), 1);
    let err = home.fails(&["sessions", "fork", "01XXXXXXXXXXXXXXXXXXXXXXXX"]);
    assert!(err.contains("01XXXXXXXXXXXXXXXXXXXXXXXX"), "{err}");
    assert_eq!(sessions(), 1);
    for to in ["0", "7"] {
        let err = home.fails(&["sessions", "rewind", &id, "--to", to]);
        assert!(err.contains(&format!("there is no message {to}")), "{err}");
    }
    let err = home.fails(&["sessions", "rewind", &id, "--undo"]);
    assert!(err.contains("nothing to rewind"), "{err}");
    assert!(home.store().live_rewinds(&id).unwrap().is_empty());
    assert_eq!(view_seqs(&home, &id), [1, 2, 3, 4, 5, 6]);
}
}

on_both_backends! {
fn a_point_inside_a_tool_exchange_moves_to_its_start_and_says_so(home) {
    let mut store = home.store();
    let id = store.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
    let call = NewMessage {
        role: Role::Assistant,
        parts: vec![Part::ToolCall { id: "c1".into(), name: "run".into(), arguments: "{}".into() }],
        usage: None,
        status: seshat::conversation::MessageStatus::Complete,
    };
    let result = NewMessage {
        role: Role::User,
        parts: vec![Part::ToolResult { call_id: "c1".into(), content: "ok".into(), is_error: false }],
        usage: None,
        status: seshat::conversation::MessageStatus::Complete,
    };
    store
        .append(&id, &[NewMessage::text(Role::User, "run it"), call, result, NewMessage::text(Role::Assistant, "done")])
        .unwrap();
    drop(store);
    // Forking after the call would leave it without its result.
    let out = home.ok(&["sessions", "fork", &id, "--at", "2"]);
    assert!(
        out.contains("Message 2 is inside a tool exchange: the fork starts before the exchange, after message 1."),
        "{out}"
    );
    let forked = json(&home.ok(&["sessions", "fork", &id, "--at", "2", "--json"]));
    assert_eq!((forked["at"].as_u64(), forked["moved_from"].as_u64()), (Some(1), Some(2)));
    // Rewinding to the result would leave the call without it.
    let out = json(&home.ok(&["sessions", "rewind", &id, "--to", "3", "--json"]));
    assert_eq!((out["rewound"]["from_seq"].as_u64(), out["rewound"]["moved_from"].as_u64()), (Some(2), Some(3)));
    assert_eq!(view_seqs(&home, &id), [1]);
}
}

#[test]
fn a_rewind_hides_the_later_messages_new_ones_follow_them_and_undo_brings_them_back_until_then() {
    let home = Home::new();
    let id = talk(&home, 6, 10);
    // The size the provider last reported for the whole conversation.
    rusqlite::Connection::open(home.db())
        .unwrap()
        .execute("UPDATE sessions SET context_tokens = 5000 WHERE id = ?1", [&id])
        .unwrap();
    let out = home.ok(&["sessions", "rewind", &id, "--to", "3"]);
    assert!(out.contains("messages 3 to 6 left the live view") && out.contains("nothing was deleted"), "{out}");
    assert_eq!(view_seqs(&home, &id), [1, 2]);
    assert_eq!(home.store().full_history(&id).unwrap().len(), 6, "nothing deleted");
    assert_eq!(home.store().session(&id).unwrap().context_tokens, None, "the last reported size is not the view's");
    // Undo while nothing was added: the identity.
    let out = home.ok(&["sessions", "rewind", &id, "--undo"]);
    assert!(out.contains("messages 3 to 6 are back in the live view"), "{out}");
    assert_eq!(view_seqs(&home, &id), [1, 2, 3, 4, 5, 6]);
    // Rewind again, then talk on: new messages follow the rewound ones.
    home.ok(&["sessions", "rewind", &id, "--to", "3"]);
    let seqs = home.store().append(&id, &[NewMessage::text(Role::User, "another way")]).unwrap();
    assert_eq!(seqs, [7]);
    assert_eq!(view_seqs(&home, &id), [1, 2, 7]);
    let err = home.fails(&["sessions", "rewind", &id, "--undo"]);
    assert!(err.contains("messages were added after it") && err.contains("fork at 6"), "{err}");
    // The rewound messages are a branch in the tree and in the full history, and a fork brings
    // them back.
    let tree = home.ok(&["sessions", "list", "--all", "--tree"]);
    assert!(tree.contains("┄ rewound 3–6 (a branch: `seshat sessions fork"), "{tree}");
    let rows = json(&home.ok(&["sessions", "list", "--all", "--tree", "--json"]));
    assert_eq!(rows[0]["rewinds"][0]["from_seq"], 3, "{rows}");
    let full = home.ok(&["sessions", "show", &id, "--full"]);
    assert!(
        full.contains("messages 3 to 6 are a branch out of the live view")
            && full.contains("end of the rewound branch"),
        "{full}"
    );
    let fork = json(&home.ok(&["sessions", "fork", &id, "--at", "6", "--json"]));
    assert_eq!(view_seqs(&home, fork["session"]["id"].as_str().unwrap()), [1, 2, 3, 4, 5, 6]);
}

on_both_backends! {
fn a_rewind_past_a_compaction_restores_the_view_before_it_or_is_refused_with_the_figures(home) {
    // Ten messages of ~750 tokens each, compacted keeping from 9.
    let id = talk(&home, 10, 3000);
    home.store().record_compaction(&id, &compaction(10, 9, "earlier talk")).unwrap();
    assert_eq!(view_seqs(&home, &id), [9, 10]);
    // Rewinding to 8 hides a message the summary covers: the compaction goes with it, and the
    // view it restores (messages 1 to 7, ~5,000 tokens) does not fit a 4,096-token window.
    let err = home.fails(&["sessions", "rewind", &id, "--to", "8", "--window", "4096"]);
    assert!(err.contains("rewinding would make the request ~") && err.contains("nothing was rewound"), "{err}");
    assert!(home.store().live_rewinds(&id).unwrap().is_empty());
    assert_eq!(view_seqs(&home, &id), [9, 10], "nothing changed");
    // With room, the pre-compaction view comes back.
    let out = json(&home.ok(&["sessions", "rewind", &id, "--to", "8", "--window", "200000", "--json"]));
    assert_eq!(out["rewound"]["retracted_compactions"].as_u64(), Some(1));
    assert_eq!(view_seqs(&home, &id), [1, 2, 3, 4, 5, 6, 7]);
    // Undone, the compaction is back in force.
    home.ok(&["sessions", "rewind", &id, "--undo"]);
    assert_eq!(view_seqs(&home, &id), [9, 10]);
}
}

#[test]
fn chat_fork_continues_in_a_new_branch_and_leaves_the_original_as_it_was() {
    use crate::support::server::{Reply, Server, anthropic};
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["First."]) },
        Reply::Stream { pieces: anthropic::text_answer(&["In the branch."]) },
    ]);
    let home = crate::chat::home_for("anthropic", &server, "");
    let first = crate::chat::json_of(&crate::chat::chat(&home, &["-p", "start", "--json"], &[]));
    let original = first["session"].as_str().unwrap().to_string();
    let out = crate::chat::chat(&home, &["--fork", &original[..10], "-p", "another way", "--json"], &[]);
    let branch = crate::chat::json_of(&out);
    let fork = branch["session"].as_str().unwrap();
    assert_ne!(fork, original);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("Forked session {original} after message 2 into {fork}")), "{stderr}");
    let store = home.store();
    assert_eq!(store.session(fork).unwrap().parent_id.as_deref(), Some(original.as_str()));
    assert_eq!(store.full_history(&original).unwrap().len(), 2, "the original is as it was");
    let texts: Vec<String> =
        store.full_history(fork).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect();
    assert_eq!(texts, ["start", "First.", "another way", "In the branch."]);
    let err = home.fails(&["chat", "--fork", &original, "--resume", &original, "-p", "x"]);
    assert!(err.contains("cannot be used with"), "{err}");
}

on_both_backends! {
fn an_exported_fork_carries_its_lineage_and_rewinds_and_imports_whole(home) {
    let parent = talk(&home, 6, 10);
    let fork = home.store().fork(&parent, Some(4), None).unwrap().session.id;
    home.store()
        .append(&fork, &[NewMessage::text(Role::User, "own 5"), NewMessage::text(Role::Assistant, "own 6")])
        .unwrap();
    home.store().rewind(&fork, 6, |_| Ok(())).unwrap();
    let export = home.ok(&["sessions", "export", &fork]);
    let first: serde_json::Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    assert_eq!(first["format_version"], 3);
    assert_eq!((first["parent_id"].as_str(), first["fork_seq"].as_u64()), (Some(parent.as_str()), Some(4)));
    assert!(export.lines().any(|l| l.contains(r#""record":"rewind""#)), "{export}");

    let elsewhere = Home::new();
    let path = elsewhere.path().join("fork.jsonl");
    std::fs::write(&path, &export).unwrap();
    elsewhere.ok(&["sessions", "import", path.to_str().unwrap()]);
    let store = elsewhere.store();
    let imported = store.session(&fork).unwrap();
    assert_eq!(imported.parent_id, None, "imported whole: its parent is not here");
    assert_eq!(imported.metadata["forked_from"], serde_json::json!({"session": parent, "at": 4}));
    assert_eq!(store.full_history(&fork).unwrap(), home.store().full_history(&fork).unwrap());
    assert_eq!(shown(&store, &fork), shown(&home.store(), &fork), "the same live view, the rewind in force");
    assert_eq!(view_seqs(&elsewhere, &fork), [1, 2, 3, 4, 5]);
    drop(store);
    let shown = elsewhere.ok(&["sessions", "show", &fork]);
    assert!(shown.contains(&format!("forked from {parent} after message 4 (imported whole")), "{shown}");
}
}

on_both_backends! {
fn compact_until_summarises_everything_before_a_message_whatever_the_target_or_refuses_with_the_figures(home) {
    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    // Ten messages of ~750 tokens: far under the target of a 200k window.
    let id = talk(&home, 10, 3000);
    let out = json(&home.ok(&["compact", &id, "--until", "7", "--window", "200000", "--json"]));
    assert_eq!((out["dropped"].as_u64(), out["summarised"].as_bool()), (Some(6), Some(true)), "{out}");
    let compaction = home.store().compactions(&id).unwrap().pop().unwrap();
    assert_eq!(compaction.first_kept_seq, Some(7));
    assert_eq!(view_seqs(&home, &id), [7, 8, 9, 10], "after the summary, 7 on verbatim");

    // Kept verbatim from 2, the rest cannot fit a 4,096-token window: refused with the figures.
    let other = talk(&home, 10, 3000);
    let err = home.fails(&["compact", &other, "--until", "2", "--window", "4096"]);
    assert!(err.contains("compact_full: the request needs ~") && err.contains("kept verbatim from message 2"), "{err}");
    assert!(home.store().compactions(&other).unwrap().is_empty(), "nothing recorded");
    let err = home.fails(&["compact", &other, "--until", "11", "--window", "200000"]);
    assert!(err.contains("there is no message 11"), "{err}");
    assert!(home.store().compactions(&other).unwrap().is_empty(), "nothing recorded");
}
}

on_both_backends! {
fn a_fork_of_a_fork_inside_its_inherited_part_reads_the_grandparent_and_outlives_its_parent(home) {
    let grand = talk(&home, 8, 10);
    let mut store = home.store();
    let parent = store.fork(&grand, Some(6), None).unwrap().session.id;
    store.append(&parent, &[NewMessage::text(Role::User, "parent's own 7")]).unwrap();
    let child = store.fork(&parent, Some(3), None).unwrap().session.id;
    store.append(&child, &[NewMessage::text(Role::User, "child's own 4")]).unwrap();
    let texts = |store: &Store, id: &str| -> Vec<String> {
        store.full_history(id).unwrap().iter().map(|m| crate::support::text_of(m)[..5].to_string()).collect()
    };
    assert_eq!(texts(&store, &child), ["word1", "word2", "word3", "child"]);
    assert_eq!(shown(&store, &child).1.len(), 4);
    store.delete_session(&parent).unwrap();
    assert_eq!(texts(&store, &child), ["word1", "word2", "word3", "child"], "whole after its parent went");
    let info = store.session(&child).unwrap();
    assert_eq!((info.parent_id.as_deref(), info.fork_seq), (Some(grand.as_str()), Some(3)));
    store.delete_session(&grand).unwrap();
    assert_eq!(texts(&store, &child), ["word1", "word2", "word3", "child"], "and after its grandparent");
    assert_eq!(store.session(&child).unwrap().parent_id, None);
}
}
