//! Pins and undo: messages kept verbatim through compaction (a tool pair never split, within a
//! share of the target), undoing the latest compaction or trim pass as a record, both through the
//! library and the CLI, exported and imported, and upgraded from a version 5 database.

use seshat::compaction::{Frame, Settings};
use seshat::conversation::{Part, Role};
use seshat::store::{NewSession, Origin, Retracted, Store};

use crate::compaction::{Scripted, plugins, settings, text, tool_pair as exchange};
use crate::on_both_backends;
use crate::support::{Home, fixture};

fn session(store: &mut Store, window: u64) -> String {
    store
        .create_session(NewSession { project: "/p".into(), context_window: Some(window), ..Default::default() })
        .unwrap()
        .id
}

fn frame() -> Frame {
    Frame { system: "You are a helpful agent.".into(), tools: String::new(), specs: Vec::new() }
}

/// A session of `turns` exchanges whose third message is a tool call with a long result.
fn long_session(store: &mut Store, window: u64, turns: usize) -> String {
    let id = session(store, window);
    store.append(&id, &[text(Role::User, "run the build")]).unwrap();
    store
        .append(&id, &exchange("c0", &format!("BUILD FAILED: E0425 in src/lib.rs:7\n{}", "log line\n".repeat(600))))
        .unwrap();
    for t in 0..turns {
        store
            .append(&id, &[text(Role::User, format!("request {t}")), text(Role::Assistant, "w ".repeat(600))])
            .unwrap();
    }
    id
}

on_both_backends! {
fn a_pinned_exchange_stays_verbatim_after_the_summary_and_out_of_it(home) {
    let mut store = home.store();
    let id = long_session(&mut store, 20_000, 40);
    // Pinning the result pins its call: the pair is never split.
    let added = seshat::compaction::pin(&mut store, &id, 3, 20_000).unwrap();
    assert_eq!(added, [2, 3]);
    assert_eq!(store.pins(&id).unwrap(), [2, 3]);
    assert_eq!(seshat::compaction::pin(&mut store, &id, 2, 20_000).unwrap(), Vec::<u64>::new(), "already pinned");

    let model = Scripted::answering(&[Ok("Forty requests, answered.")]);
    let mut p = plugins("summariser");
    let prepared = p.compactor(model.clone()).before_call(&mut store, &id, &frame(), &settings(Some(20_000))).unwrap();
    let report = prepared.compaction.unwrap();
    assert!(report.summarised, "{report:?}");
    let view = store.live_view(&id).unwrap();
    let origins: Vec<(Origin, Option<u64>)> = view.entries.iter().take(3).map(|e| (e.origin, e.seq)).collect();
    assert_eq!(origins, [(Origin::Summary, None), (Origin::UserPin, Some(2)), (Origin::UserPin, Some(3))]);
    let Part::ToolResult { content, .. } = &view.entries[2].parts[0] else { panic!("the result") };
    assert!(content.starts_with("BUILD FAILED: E0425") && content.len() > 2_000, "verbatim, untrimmed");
    assert!(view.entries[2].trims.is_empty());
    // The summariser was not given the pinned messages.
    let (_, request) = &model.requests.lock().unwrap()[0];
    let sent = format!("{:?}", request.messages);
    assert!(!sent.contains("BUILD FAILED"), "pinned messages are kept, not summarised");
    assert!(sent.contains("request 0"), "{sent}");
    // And the request still fits the target with the pinned tokens counted.
    assert!(prepared.tokens <= seshat::window::Marks::new(20_000).target + 2_000, "{}", prepared.tokens);

    // Unpinning the call unpins the pair; the next compaction may drop them.
    assert_eq!(store.unpin(&id, 2).unwrap(), [2, 3]);
    assert!(store.pins(&id).unwrap().is_empty());
    let view = store.live_view(&id).unwrap();
    assert!(view.entries.iter().all(|e| e.origin != Origin::UserPin));
}
}

on_both_backends! {
fn a_pin_past_a_quarter_of_the_target_is_refused_saying_how_much_is_pinned(home) {
    let mut store = home.store();
    let id = long_session(&mut store, 8_192, 2);
    seshat::compaction::pin(&mut store, &id, 1, 8_192).unwrap();
    let err = seshat::compaction::pin(&mut store, &id, 3, 8_192).unwrap_err();
    assert_eq!(err.code(), "refused");
    let text = err.to_string();
    assert!(text.contains("would pin 3 messages of ~"), "{text}");
    assert!(text.contains("over the 774 tokens pins may take (25% of the 3096-token target"), "{text}");
    assert!(text.contains("nothing was pinned"), "{text}");
    assert_eq!(store.pins(&id).unwrap(), [1], "the earlier pin stays, nothing added");
    let err = seshat::compaction::pin(&mut store, &id, 99, 8_192).unwrap_err();
    assert_eq!(err.code(), "no_such_message", "{err}");
}
}

on_both_backends! {
fn undo_retracts_the_latest_pass_first_and_refuses_what_would_not_fit(home) {
    let mut store = home.store();
    let id = session(&mut store, 40_000);
    store.append(&id, &[text(Role::User, "build it")]).unwrap();
    for k in 0..6 {
        store.append(&id, &exchange(&format!("c{k}"), &"compiler output line\n".repeat(1_200))).unwrap();
    }
    store.append(&id, &[text(Role::User, "thanks"), text(Role::Assistant, "ok")]).unwrap();
    store.append(&id, &[text(Role::User, "and now?"), text(Role::Assistant, "done")]).unwrap();
    let untouched = store.live_view(&id).unwrap().entries;
    let mut p = plugins("summariser");
    let s = settings(Some(40_000));
    let report = p.compactor(Scripted::answering(&[])).before_call(&mut store, &id, &frame(), &s).unwrap();
    let trimmed = report.compaction.unwrap().trimmed;
    assert!(trimmed > 0);
    let after_trims = store.live_view(&id).unwrap().entries;
    assert_ne!(after_trims, untouched);

    // With a window the untrimmed view does not fit, the undo is refused and nothing changes.
    let small = Settings { context_window: Some(12_000), ..s.clone() };
    let err = seshat::compaction::undo(&mut store, &id, &frame(), &small).unwrap_err();
    assert_eq!(err.code(), "refused");
    assert!(err.to_string().contains("over the 11000 that fit (12000-token window less 1000 for the answer)"), "{err}");
    assert_eq!(store.live_view(&id).unwrap().entries, after_trims);
    assert!(store.retractions(&id).unwrap().is_empty());

    // Where it fits, the trims are undone and the view is the untouched one again.
    let undone = seshat::compaction::undo(&mut store, &id, &frame(), &s).unwrap();
    assert_eq!(undone, Retracted::Trims { first: 1, last: trimmed as u64 });
    assert_eq!(store.live_view(&id).unwrap().entries, untouched);
    assert_eq!(store.trims(&id).unwrap().len(), trimmed, "the trim records stay");
    let err = seshat::compaction::undo(&mut store, &id, &frame(), &s).unwrap_err();
    assert_eq!(err.code(), "nothing_to_undo", "{err}");
}
}

#[test]
fn a_version_5_database_upgrades_and_undoes_its_compaction_and_trim() {
    let home = Home::new();
    let db = home.path().join("v5.db");
    std::fs::copy(fixture("store-v5.sqlite"), &db).unwrap();
    let before: u32 =
        rusqlite::Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(before, 5, "the fixture must stay at version 5");
    let mut store = Store::open(&db).unwrap();
    let s1 = "01JFV1AAAA0000000000000001";
    let view = store.live_view(s1).unwrap();
    assert!(view.compaction.is_some() && !view.entries.iter().flat_map(|e| &e.trims).collect::<Vec<_>>().is_empty());
    // The trim (written after the compaction) goes first, then the compaction.
    assert_eq!(store.retract_latest(s1, |_| Ok(())).unwrap(), Retracted::Trims { first: 1, last: 1 });
    assert_eq!(store.retract_latest(s1, |_| Ok(())).unwrap(), Retracted::Compaction { number: 1 });
    let view = store.live_view(s1).unwrap();
    assert!(view.compaction.is_none(), "the failed compaction of another session changes nothing");
    assert_eq!(view.entries.len(), 4, "the whole history, as written");
    assert_eq!(store.retract_latest(s1, |_| Ok(())).unwrap_err().code(), "nothing_to_undo");
    // Pins: the tool call (seq 2) brings its result (seq 3).
    assert_eq!(seshat::compaction::pin(&mut store, s1, 2, 200_000).unwrap(), [2, 3]);
}

on_both_backends! {
fn the_cli_pins_unpins_undoes_and_carries_both_through_export_and_import(home) {
    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    let id = {
        let mut store = home.store();
        long_session(&mut store, 20_000, 30)
    };
    let short = &id[..12];
    assert_eq!(
        home.ok(&["sessions", "pin", short, "2"]),
        "Pinned messages 2, 3: kept verbatim in every view, never trimmed.\n"
    );
    assert_eq!(home.ok(&["sessions", "pin", short]), format!("Pinned in session {id}: 2, 3\n"));
    let listed: serde_json::Value = serde_json::from_str(&home.ok(&["sessions", "pin", short, "--json"])).unwrap();
    assert_eq!(listed["pins"], serde_json::json!([2, 3]));
    let err = home.fails(&["sessions", "pin", short, "999"]);
    assert!(err.contains("has no message 999"), "{err}");

    let compacted = home.ok(&["compact", short]);
    assert!(compacted.starts_with(&format!("Compacted session {id}")), "{compacted}");
    let shown = home.ok(&["sessions", "show", short]);
    assert!(shown.contains("assistant #2 (pinned)") && shown.contains("tool #3 (pinned)"), "{shown}");

    // Export, import as a new session: pins and the compaction come along.
    let exported = home.ok(&["sessions", "export", short]);
    assert!(exported.lines().next().unwrap().contains("\"format_version\":3"), "{}", exported.lines().next().unwrap());
    assert!(exported.contains(r#"{"record":"pin","seq":2,"#), "{exported}");

    let undone = home.ok(&["compact", short, "--undo"]);
    assert_eq!(
        undone,
        format!(
            "Undid compaction 1 of session {id}: the live view is as it was before it (the originals were never changed).\n"
        )
    );
    assert!(home.store().live_view(&id).unwrap().compaction.is_none());
    let with_retraction = home.ok(&["sessions", "export", short]);
    assert!(
        with_retraction.contains(r#"{"record":"retraction","undone":{"compaction":{"number":1}},"#),
        "{with_retraction}"
    );
    let file = home.path().join("export.jsonl");
    std::fs::write(&file, &with_retraction).unwrap();
    let imported = home.ok(&["sessions", "import", "--new-id", file.to_str().unwrap()]);
    let new_id = imported.split_whitespace().nth(2).unwrap().trim_end_matches(['.', ':']).to_string();
    let store = home.store();
    assert_eq!(store.pins(&new_id).unwrap(), [2, 3]);
    assert_eq!(store.retractions(&new_id).unwrap().len(), 1);
    assert!(store.live_view(&new_id).unwrap().compaction.is_none(), "the undo applies in the copy too");
    drop(store);
    assert_eq!(home.ok(&["sessions", "unpin", short, "3"]), "Unpinned messages 2, 3.\n");
    assert_eq!(home.ok(&["sessions", "unpin", short, "3"]), format!("Message 3 of session {id} was not pinned.\n"));

    // The previous format (2: no lineage, no rewinds) still imports, with its pins and undos.
    let previous = with_retraction.replacen("\"format_version\":3", "\"format_version\":2", 1);
    std::fs::write(&file, &previous).unwrap();
    let imported = home.ok(&["sessions", "import", "--new-id", file.to_str().unwrap()]);
    let old_id = imported.split_whitespace().nth(2).unwrap().trim_end_matches(['.', ':']).to_string();
    assert_eq!(home.store().pins(&old_id).unwrap(), [2, 3]);
    assert_eq!(home.store().retractions(&old_id).unwrap().len(), 1);

    // A newer export format is refused, naming the field.
    let newer = with_retraction.replacen("\"format_version\":3", "\"format_version\":9", 1);
    std::fs::write(&file, newer).unwrap();
    let err = home.fails(&["sessions", "import", "--new-id", file.to_str().unwrap()]);
    assert!(err.contains("line 1: field `format_version`: 9 is newer than the 3 this seshat reads"), "{err}");
}
}
