//! Forks and rewinds in the store: a fork at any seq has exactly the live view the parent had
//! then, a rewind then its undo changes nothing, a fork of a fork keeps both lineages — over
//! random sessions with compactions, trims, pins, undos and rewinds.

use std::collections::HashMap;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use seshat::conversation::{NewMessage, Part, Role};
use seshat::store::{Compaction, CompactionStatus, CompactionTrigger, NewSession, Store, ViewEntry};

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
            let c = Compaction {
                trigger: CompactionTrigger::Manual,
                tokens_before: 1000,
                tokens_after: Some(100),
                through_seq: count,
                first_kept_seq: Some(first_kept),
                pinned_seq: None,
                summary: Some(format!("summary of 1 to {}", first_kept - 1)),
                model: None,
                status: CompactionStatus::Ok,
                error: None,
                created_at: 1,
                instructions: None,
                plugin: None,
            };
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
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("tests/all/branches.proptest-regressions"))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn a_fork_at_any_seq_has_the_view_the_parent_had_then(ops in prop::collection::vec(op(), 1..60)) {
        let home = Home::new();
        let mut store = home.store();
        let s = store.create_session(NewSession { project: "/p".into(), ..NewSession::default() }).unwrap().id;
        // The view after the last step at each message count.
        let mut at: HashMap<u64, Shown> = HashMap::new();
        at.insert(0, shown(&store, &s));
        let (mut calls, mut results) = (0, Vec::new());
        for op in &ops {
            apply(&mut store, &s, op, &mut calls, &mut results);
            let count = store.session(&s).unwrap().message_count;
            at.insert(count, shown(&store, &s));
        }
        let last = store.session(&s).unwrap().message_count;
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
        prop_assert_eq!(shown(&store, &s), at[&last].clone(), "the parent is untouched by its forks");
    }
}
