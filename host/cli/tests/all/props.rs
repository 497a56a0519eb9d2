//! Property tests of the compaction core — the cut, pairing, view assembly — over random
//! histories with parallel tool calls, interrupts and repeated compactions.

use std::collections::HashSet;

use proptest::prelude::*;
use seshat::compaction::cut::{self, Item};
use seshat::compaction::pairing::{self, Msg};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};

/// One step of a conversation.
#[derive(Debug, Clone)]
enum Step {
    /// A user request of n tokens.
    User(u64),
    /// An assistant answer of n tokens.
    Answer(u64),
    /// Parallel tool calls; each result of n tokens, `None` for a call interrupted before its result.
    Tools(Vec<Option<u64>>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1u64..400).prop_map(Step::User),
        (1u64..400).prop_map(Step::Answer),
        prop::collection::vec(prop::option::weighted(0.85, 1u64..3_000), 1..4).prop_map(Step::Tools),
    ]
}

fn history() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(step(), 1..60)
}

/// The messages a history appends (results of one step in one tool message).
fn messages(steps: &[Step]) -> Vec<NewMessage> {
    messages_from(steps, &mut 0)
}

/// [`messages`] with call ids numbered on from `n` (unique across the chunks of one session, as a
/// provider's ids are).
fn messages_from(steps: &[Step], n: &mut usize) -> Vec<NewMessage> {
    let mut out = Vec::new();
    for s in steps {
        match s {
            Step::User(t) => out.push(NewMessage::text(Role::User, "u".repeat(*t as usize * 4))),
            Step::Answer(t) => out.push(NewMessage::text(Role::Assistant, "a".repeat(*t as usize * 4))),
            Step::Tools(results) => {
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        *n += 1;
                        format!("call{n}")
                    })
                    .collect();
                out.push(NewMessage {
                    role: Role::Assistant,
                    parts: ids
                        .iter()
                        .map(|id| Part::ToolCall { id: id.clone(), name: "run".into(), arguments: "{}".into() })
                        .collect(),
                    usage: None,
                    status: MessageStatus::Complete,
                });
                let parts: Vec<Part> = ids
                    .iter()
                    .zip(results)
                    .filter_map(|(id, r)| {
                        r.map(|t| Part::ToolResult {
                            call_id: id.clone(),
                            content: "r".repeat(t as usize * 4),
                            is_error: false,
                        })
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(NewMessage { role: Role::Tool, parts, usage: None, status: MessageStatus::Complete });
                }
            }
        }
    }
    out
}

fn items(msgs: &[NewMessage]) -> Vec<Item> {
    msgs.iter()
        .enumerate()
        .map(|(i, m)| Item {
            seq: i as u64 + 1,
            role: m.role,
            tokens: seshat::window::estimate_parts(&m.parts),
            calls: m.parts.iter().filter_map(|p| p.tool_call_id().map(str::to_string)).collect(),
            results: m.parts.iter().filter_map(|p| p.answered_call_id().map(str::to_string)).collect(),
            is_request: m.role == Role::User,
            pinned: false,
        })
        .collect()
}

fn config(cases: u32) -> ProptestConfig {
    crate::support::proptest_config(cases, "tests/all/props.proptest-regressions")
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn the_cut_keeps_every_result_with_its_call_and_pins_the_latest_request(steps in history(), budget in 0u64..20_000) {
        let msgs = messages(&steps);
        let items = items(&msgs);
        let decision = cut::choose(&items, budget);
        let kept = &items[decision.first_kept..];
        let kept_calls: HashSet<&String> = kept.iter().flat_map(|i| i.calls.iter()).collect();
        for i in kept {
            for r in &i.results {
                prop_assert!(kept_calls.contains(r), "kept result {r} lost its call");
            }
        }
        if let Some(first) = kept.first() {
            prop_assert!(first.role != Role::Tool, "the kept part starts with tool results");
        }
        let latest = items.iter().rposition(|i| i.is_request);
        match decision.pinned {
            Some(p) => prop_assert!(Some(p) == latest && p < decision.first_kept),
            None => prop_assert!(latest.is_none_or(|l| l >= decision.first_kept)),
        }
    }

    #[test]
    fn the_assembled_request_is_paired_before_repair_and_repair_adds_only_for_unanswered_calls(
        steps in history(),
        budget in 0u64..20_000,
    ) {
        let msgs = messages(&steps);
        let items = items(&msgs);
        let decision = cut::choose(&items, budget);
        let mut request: Vec<Msg> = decision
            .pinned
            .into_iter()
            .chain(decision.first_kept..msgs.len())
            .map(|i| Msg { seq: Some(i as u64 + 1), role: msgs[i].role, parts: msgs[i].parts.clone() })
            .collect();
        let answered_in_store: HashSet<String> = msgs
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter_map(|p| p.answered_call_id().map(str::to_string))
            .collect();
        let repair = pairing::repair(&mut request, &answered_in_store);
        prop_assert!(repair.dropped_orphans.is_empty(), "the cut produced orphans: {:?}", repair.dropped_orphans);
        for (id, _) in &repair.unanswered {
            prop_assert!(!answered_in_store.contains(id), "a synthetic result for {id}, which the store answers");
        }
        let expected_unanswered: HashSet<String> = request
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter_map(|p| p.tool_call_id().map(str::to_string))
            .filter(|id| !answered_in_store.contains(id))
            .collect();
        let got: HashSet<String> = repair.unanswered.iter().map(|(id, _)| id.clone()).collect();
        prop_assert_eq!(got, expected_unanswered);
        let synthetic: Vec<Part> = repair.unanswered.iter().map(|(id, name)| pairing::synthetic_result(id, name)).collect();
        if !synthetic.is_empty() {
            request.push(Msg { seq: None, role: Role::Tool, parts: synthetic });
        }
        prop_assert!(pairing::is_paired(&pairing::arrange(request)));
    }
}

/// Through the real store and plugins: few cases, each runs several compactions; at least 90%
/// of the compactions succeed, and every failure is one of the expected ones.
#[test]
fn repeated_compactions_keep_the_full_history_and_a_paired_view() {
    repeated_compactions(16, crate::support::Home::new);
}

/// [`repeated_compactions_keep_the_full_history_and_a_paired_view`] on PostgreSQL.
#[test]
fn repeated_compactions_keep_the_full_history_and_a_paired_view_on_postgresql() {
    repeated_compactions(8, crate::support::Home::postgres);
}

/// The property over `cases` random sessions, each in a home `home` makes.
fn repeated_compactions(cases: u32, home: fn() -> crate::support::Home) {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::compaction::{Scripted, plugins, settings};
    let (tried, compacted) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let mut runner = proptest::test_runner::TestRunner::new(config(cases));
    let result = runner.run(&prop::collection::vec(history(), 2..4), |chunks| {
        let home = home();
        let mut store = home.store();
        let id = store
            .create_session(seshat::store::NewSession {
                project: "/p".into(),
                context_window: Some(12_000),
                ..Default::default()
            })
            .unwrap()
            .id;
        let mut p = plugins("summariser-extractive");
        let model = Scripted::answering(&[]);
        let (mut appended, mut calls) = (Vec::new(), 0);
        for chunk in &chunks {
            let msgs = messages_from(chunk, &mut calls);
            store.append(&id, &msgs).unwrap();
            appended.extend(msgs);
            let mut c = p.compactor(model.clone());
            let frame = seshat::compaction::Frame::default();
            let s = settings(Some(12_000));
            tried.fetch_add(1, Ordering::Relaxed);
            match c.compact(&mut store, &id, &frame, &s, false) {
                Ok(_) => {
                    compacted.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => prop_assert!(e.code() == "compact_failed", "an unexpected failure: {e}"),
            }
            match c.before_call(&mut store, &id, &frame, &s) {
                Ok(prepared) => {
                    prop_assert!(pairing::is_paired(&prepared.messages));
                    // User and assistant alternate, as chat templates require.
                    prop_assert!(pairing::alternates(&prepared.messages), "{:?}", prepared.messages);
                }
                Err(e) => prop_assert!(e.code() == "compact_full" || e.code() == "compact_failed", "{e}"),
            }
            // The only rows the store may add are synthetic error results for calls appended
            // without one (checked, never copied blindly).
            let full = store.full_history(&id).unwrap();
            prop_assert!(full.len() >= appended.len(), "rows were lost");
            let answered: HashSet<&str> =
                appended.iter().flat_map(|m| &m.parts).filter_map(Part::answered_call_id).collect();
            let mut unanswered: Vec<&str> = appended
                .iter()
                .flat_map(|m| &m.parts)
                .filter_map(Part::tool_call_id)
                .filter(|id| !answered.contains(id))
                .collect();
            let mut synthetic: Vec<&str> = Vec::new();
            for m in &full[appended.len()..] {
                prop_assert!(m.role == Role::Tool && m.status == MessageStatus::Synthetic, "an extra row: {m:?}");
                for p in &m.parts {
                    match p {
                        Part::ToolResult { call_id, is_error: true, .. } => synthetic.push(call_id),
                        other => prop_assert!(false, "an extra part that is no synthetic error result: {other:?}"),
                    }
                }
            }
            unanswered.sort_unstable();
            synthetic.sort_unstable();
            // Only calls still in the request get one (a call compacted into the summary needs none;
            // a check that failed stored none), each at most once.
            let mut once = synthetic.clone();
            once.dedup();
            prop_assert_eq!(once.len(), synthetic.len(), "a call answered twice: {:?}", synthetic);
            for id in &synthetic {
                prop_assert!(unanswered.contains(id), "a synthetic result for `{}`, which had its own", id);
            }
            let extra: Vec<NewMessage> = full[appended.len()..]
                .iter()
                .map(|m| NewMessage { role: m.role, parts: m.parts.clone(), usage: m.usage, status: m.status })
                .collect();
            appended.extend(extra);
            let as_new: Vec<NewMessage> = full
                .iter()
                .map(|m| NewMessage { role: m.role, parts: m.parts.clone(), usage: m.usage, status: m.status })
                .collect();
            prop_assert_eq!(&as_new, &appended, "the full history is everything appended");
        }
        prop_assert_eq!(model.calls(), 0);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (tried, compacted) = (tried.into_inner(), compacted.into_inner());
    assert!(tried >= 2 * cases as usize, "{tried} compactions tried");
    assert!(compacted * 10 >= tried * 9, "only {compacted} of {tried} compactions succeeded");
}
