//! The store's library API: append-only history, the live view, compaction and trim records,
//! export/import.

use seshat::conversation::{MessageStatus, NewMessage, Part, Role, Usage};
use seshat::store::{
    COMPACTION_MARKER, Compaction, CompactionStatus, CompactionTrigger, Error, ImportOptions, ListFilter, NewSession,
    Origin, Store,
};

use crate::on_both_backends;
use crate::support::{Home, fixture, text_of};

fn tool_call(id: &str) -> NewMessage {
    NewMessage {
        role: Role::Assistant,
        parts: vec![Part::ToolCall { id: id.into(), name: "read".into(), arguments: "{}".into() }],
        usage: Some(Usage { input_tokens: 10, output_tokens: 5, context_tokens: Some(100), ..Default::default() }),
        status: MessageStatus::Complete,
    }
}

fn tool_result(id: &str, content: &str) -> NewMessage {
    NewMessage {
        role: Role::Tool,
        parts: vec![Part::ToolResult { call_id: id.into(), content: content.into(), is_error: false }],
        usage: None,
        status: MessageStatus::Complete,
    }
}

/// A session of 10 messages: user, call, result, … with two user requests.
fn ten_messages(store: &mut Store) -> String {
    let id = store.create_session(NewSession { project: "/p".into(), ..Default::default() }).unwrap().id;
    let msgs = vec![
        NewMessage::text(Role::User, "first request\nwith detail"),
        tool_call("a"),
        tool_result("a", &"x".repeat(1000)),
        NewMessage::text(Role::Assistant, "done a"),
        NewMessage::text(Role::User, "second request"),
        tool_call("b"),
        tool_result("b", &"y".repeat(2000)),
        tool_call("c"),
        tool_result("c", &"z".repeat(3000)),
        NewMessage::text(Role::Assistant, "done c"),
    ];
    assert_eq!(store.append(&id, &msgs).unwrap(), (1..=10).collect::<Vec<u64>>());
    id
}

on_both_backends! {
fn append_sets_title_totals_and_context(home) {
    let mut store = home.store();
    let id = ten_messages(&mut store);
    let s = store.session(&id).unwrap();
    assert_eq!(s.title.as_deref(), Some("first request"), "title is the first line of the first user message");
    assert_eq!(s.message_count, 10);
    assert_eq!((s.totals.input_tokens, s.totals.output_tokens), (30, 15));
    assert_eq!(s.context_tokens, Some(100));

    // Every usage field adds up, over one append of several messages and over appends.
    let cached = store.create_session(NewSession::default()).unwrap().id;
    let reply = |read, written| NewMessage {
        usage: Some(Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: read,
            cache_creation_tokens: written,
            context_tokens: Some(read + written + 10),
        }),
        ..NewMessage::text(Role::Assistant, "ok")
    };
    store.append(&cached, &[reply(700, 300), reply(1_000, 0)]).unwrap();
    store.append(&cached, &[reply(1_300, 20)]).unwrap();
    let t = store.session(&cached).unwrap().totals;
    assert_eq!((t.input_tokens, t.output_tokens, t.cache_read_tokens, t.cache_creation_tokens), (30, 15, 3_000, 320));
    assert_eq!(store.session(&cached).unwrap().context_tokens, Some(1_330), "the latest report");

    let long = store.create_session(NewSession::default()).unwrap().id;
    store
        .append(&long, &[NewMessage::text(Role::Assistant, "hello"), NewMessage::text(Role::User, "é".repeat(200))])
        .unwrap();
    let title = store.session(&long).unwrap().title.unwrap();
    assert_eq!(title.chars().count(), 81, "80 characters and an ellipsis");
    assert!(title.ends_with('…'));
    // Exactly 80 characters fit whole.
    let exact = store.create_session(NewSession::default()).unwrap().id;
    store.append(&exact, &[NewMessage::text(Role::User, "é".repeat(80))]).unwrap();
    assert_eq!(store.session(&exact).unwrap().title.unwrap(), "é".repeat(80), "no ellipsis at exactly 80");
}
}

on_both_backends! {
/// Another program writing the database straight is refused by the database itself.
fn originals_cannot_be_rewritten_or_deleted(home) {
    let mut store = home.store();
    let id = ten_messages(&mut store);
    let update = "UPDATE messages SET parts = '[]' WHERE seq = 1";
    let err = home.sql(update, update).unwrap_err();
    assert!(err.contains("append-only"), "{err}");
    let delete = "DELETE FROM messages WHERE seq = 1";
    let err = home.sql(delete, delete).unwrap_err();
    assert!(err.contains("append-only"), "{err}");
    assert_eq!(store.full_history(&id).unwrap().len(), 10);
}
}

on_both_backends! {
fn append_to_a_missing_session_is_an_error_and_writes_nothing(home) {
    let mut store = home.store();
    let err = store.append("01JFNOPE000000000000000000", &[NewMessage::text(Role::User, "x")]).unwrap_err();
    assert_eq!(err.code(), "session_not_found");
    let count = "SELECT count(*) FROM messages";
    assert_eq!(home.sql_value(count, count), 0);
}
}

on_both_backends! {
fn live_view_applies_summary_pin_and_trims_while_full_history_keeps_originals(home) {
    let mut store = home.store();
    let id = ten_messages(&mut store);

    // Without a compaction the view is every message.
    let view = store.live_view(&id).unwrap();
    assert_eq!(view.entries.len(), 10);
    assert!(view.entries.iter().all(|e| e.origin == Origin::Kept));

    let trims = store.record_trims(&id, &[(3, 0, "[x trimmed]".into()), (9, 0, "[z trimmed]".into())]).unwrap();
    assert_eq!((trims[0].original_size, trims[0].new_size), (1000, 11), "sizes are the content's bytes");

    let compaction = Compaction {
        trigger: CompactionTrigger::Auto,
        tokens_before: 5000,
        tokens_after: Some(2000),
        through_seq: 10,
        first_kept_seq: Some(6),
        pinned_seq: Some(5),
        summary: Some("The user asked for a and got it.".into()),
        model: Some("m".into()),
        status: CompactionStatus::Ok,
        error: None,
        created_at: 1,
        instructions: None,
        plugin: None,
    };
    assert_eq!(store.record_compaction(&id, &compaction).unwrap(), 0);

    let view = store.live_view(&id).unwrap();
    let shape: Vec<(Origin, Option<u64>)> = view.entries.iter().map(|e| (e.origin, e.seq)).collect();
    assert_eq!(
        shape,
        vec![
            (Origin::Summary, None),
            (Origin::Pinned, Some(5)),
            (Origin::Kept, Some(6)),
            (Origin::Kept, Some(7)),
            (Origin::Kept, Some(8)),
            (Origin::Kept, Some(9)),
            (Origin::Kept, Some(10)),
        ]
    );
    let summary = match &view.entries[0].parts[0] {
        Part::Text { text } => text.clone(),
        other => panic!("summary is {other:?}"),
    };
    assert!(summary.contains("The user asked for a and got it.") && summary.ends_with(COMPACTION_MARKER));
    assert_eq!(view.entries[0].role, Role::User);
    assert!(matches!(&view.entries[5].parts[0], Part::ToolResult { content, .. } if content == "[z trimmed]"));
    assert!(matches!(&view.entries[3].parts[0], Part::ToolResult { content, .. } if content.len() == 2000));

    // The originals are all still there, untrimmed.
    let full = store.full_history(&id).unwrap();
    assert_eq!(full.len(), 10);
    assert!(matches!(&full[2].parts[0], Part::ToolResult { content, .. } if content.len() == 1000));
    assert!(matches!(&full[8].parts[0], Part::ToolResult { content, .. } if content.len() == 3000));
    assert_eq!(text_of(&full[0]), "first request\nwith detail");
}
}

on_both_backends! {
fn invalid_trims_are_rejected_whole(home) {
    let mut store = home.store();
    let id = ten_messages(&mut store);
    for (bad, why) in [
        ((1, 0, "x".to_string()), "only tool results"),
        ((3, 0, "x".repeat(5000)), "not shorter"),
        ((3, 4, "x".to_string()), "no such part"),
        ((42, 0, "x".to_string()), "no such message"),
    ] {
        let err = store.record_trims(&id, &[(9, 0, "ok".into()), bad]).unwrap_err();
        assert_eq!(err.code(), "invalid_trim");
        assert!(err.to_string().contains(why), "{err}");
    }
    assert!(store.trims(&id).unwrap().is_empty(), "a rejected batch wrote a trim");
}
}

on_both_backends! {
fn compaction_is_refused_when_the_history_moved_on_and_failures_are_counted(home) {
    let mut store = home.store();
    let id = ten_messages(&mut store);
    let failed = Compaction {
        trigger: CompactionTrigger::Auto,
        tokens_before: 5000,
        tokens_after: None,
        through_seq: 10,
        first_kept_seq: None,
        pinned_seq: None,
        summary: None,
        model: Some("m".into()),
        status: CompactionStatus::Failed,
        error: Some("HTTP 500".into()),
        created_at: 1,
        instructions: None,
        plugin: None,
    };
    assert_eq!(store.record_compaction(&id, &failed).unwrap(), 1);
    assert_eq!(store.record_compaction(&id, &failed).unwrap(), 2);
    // Another process appends: a compaction based on the old history must not land.
    let mut other = Store::connect(store.location()).unwrap();
    other.append(&id, &[NewMessage::text(Role::User, "meanwhile")]).unwrap();
    let err = store.record_compaction(&id, &failed).unwrap_err();
    assert!(matches!(err, Error::Conflict { expected: 10, found: 11, .. }), "{err}");
    assert_eq!(store.compactions(&id).unwrap().len(), 2);
    // The counter survives reopening: the store opened anew in this process, and in another one.
    drop(store);
    drop(other);
    let mut store = home.store();
    assert_eq!(store.session(&id).unwrap().compaction_failures, 2, "the counter survives reopening");
    let listed = home.ok(&["sessions", "list", "--all", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    let row = rows.iter().find(|r| r["id"] == id.as_str()).expect("the session is listed");
    assert_eq!(row["compaction_failures"], 2, "another process reads the same counter: {row}");

    let ok = Compaction {
        status: CompactionStatus::Ok,
        through_seq: 11,
        first_kept_seq: Some(11),
        summary: Some("s".into()),
        error: None,
        ..failed
    };
    assert_eq!(store.record_compaction(&id, &ok).unwrap(), 0, "a success resets the counter");
    store.set_compaction_state(&id, 3, true).unwrap();
    let s = Store::connect(store.location()).unwrap().session(&id).unwrap();
    assert_eq!((s.compaction_failures, s.auto_compact_disabled), (3, true));
}
}

on_both_backends! {
fn list_latest_and_delete(home) {
    let mut store = home.store();
    let a = ten_messages(&mut store);
    let b = store.create_session(NewSession { project: "/q".into(), ..Default::default() }).unwrap();
    // Sessions are ordered by their millisecond timestamps: the next one is made once the clock
    // has moved past this one's.
    while seshat::store::now_ms() <= b.updated_at {
        std::hint::spin_loop();
    }
    let b = b.id;
    let c = store.create_session(NewSession { project: "/p".into(), ..Default::default() }).unwrap().id;

    let p: Vec<String> = store
        .list_sessions(&ListFilter { project: Some("/p".into()), limit: None })
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(p, vec![c.clone(), a.clone()], "newest first, this project only");
    assert_eq!(store.latest_session("/p").unwrap().unwrap().id, c);
    assert_eq!(store.latest_session("/q").unwrap().unwrap().id, b);
    assert!(store.latest_session("/nowhere").unwrap().is_none());
    assert_eq!(store.list_sessions(&ListFilter { project: None, limit: Some(2) }).unwrap().len(), 2);

    store.record_trims(&a, &[(3, 0, "t".into())]).unwrap();
    store.delete_session(&a).unwrap();
    assert_eq!(store.session(&a).unwrap_err().code(), "session_not_found");
    for table in ["messages", "trims", "compactions"] {
        let count = format!("SELECT count(*) FROM {table}");
        assert_eq!(home.sql_value(&count, &count), 0, "{table} rows of a deleted session remain");
    }
    assert_eq!(store.delete_session(&a).unwrap_err().code(), "session_not_found");
    assert_eq!(store.list_sessions(&Default::default()).unwrap().len(), 2);
}
}

on_both_backends! {
fn export_import_export_is_byte_identical(home) {
    let original = std::fs::read(fixture("session-export.jsonl")).unwrap();
    let mut store = home.store();
    let id = store.import(&mut original.as_slice(), ImportOptions::default()).unwrap().id;
    let mut again = Vec::new();
    store.export(&id, &mut again).unwrap();
    // The fixture is format 1 (no version field): the export is the same but for the version.
    let expected = String::from_utf8(original.clone()).unwrap().replacen(
        r#"{"record":"session","#,
        r#"{"record":"session","format_version":3,"#,
        1,
    );
    assert_eq!(String::from_utf8(again).unwrap(), expected);

    // A session built through the API survives the round trip too, with its pins and undos.
    let built = ten_messages(&mut store);
    store.record_trims(&built, &[(3, 0, "t".into())]).unwrap();
    store.pin(&built, 2, |_, _| Ok(())).unwrap();
    store.retract_latest(&built, |_| Ok(())).unwrap();
    let mut first = Vec::new();
    store.export(&built, &mut first).unwrap();
    let other = home.sibling();
    let mut other_store = other.store();
    other_store.import(&mut first.as_slice(), ImportOptions::default()).unwrap();
    let mut second = Vec::new();
    other_store.export(&built, &mut second).unwrap();
    assert_eq!(String::from_utf8(first.clone()).unwrap(), String::from_utf8(second).unwrap());
    let text = String::from_utf8(first).unwrap();
    assert!(
        text.contains(r#"{"record":"pin","seq":2,"#) && text.contains(r#""undone":{"trims":{"first":1,"last":1}}"#)
    );

    // Importing an id that exists is refused; --new-id gives a fresh one with the same content.
    assert_eq!(store.import(&mut original.as_slice(), ImportOptions::default()).unwrap_err().code(), "session_exists");
    let copy =
        store.import(&mut original.as_slice(), ImportOptions { new_id: true, ..ImportOptions::default() }).unwrap().id;
    assert_ne!(copy, id);
    assert_eq!(store.full_history(&copy).unwrap(), store.full_history(&id).unwrap());
    assert_eq!(store.live_view(&copy).unwrap().entries, store.live_view(&id).unwrap().entries);
}
}

on_both_backends! {
fn malformed_imports_name_the_line_and_field_and_import_nothing(home) {
    let good = std::fs::read_to_string(fixture("session-export.jsonl")).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let with = |n: usize, replacement: &str| {
        let mut l = lines.clone();
        l[n] = replacement;
        l.join("\n")
    };
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "line 1: expected a `session` record"),
        (lines[1..].join("\n"), "line 1: expected a `session` record first"),
        ("not json".into(), "line 1:"),
        (
            with(2, &lines[2].replace("\"role\":\"assistant\"", "\"role\":\"robot\"")),
            "line 3: field `role`: unknown variant `robot`",
        ),
        (with(1, &lines[1].replace("\"text\":\"Find why uploads fail\"", "\"txt\":\"x\"")), "line 2: field `parts[0]`"),
        (with(3, &lines[3].replace("\"seq\":3", "\"seq\":9")), "line 4: field `seq`: expected 3, found 9"),
        (
            with(0, &lines[0].replace("\"message_count\":8", "\"message_count\":7")),
            "line 1: field `message_count` is 7",
        ),
        (with(0, &lines[0].replace("01JFXAMP1E0000000000000001", "not-an-id")), "line 1: field `id`"),
        (with(9, &lines[9].replace("\"through_seq\":7", "\"through_seq\":70")), "line 10: field `through_seq`"),
        (with(10, &lines[10].replace("\"seq\":3", "\"seq\":1")), "line 11: fields `seq`/`part`"),
        (
            with(11, &lines[11].replace("\"original_size\":1165", "\"original_size\":2")),
            "line 12: field `original_size`",
        ),
        (format!("{good}{}\n", lines[0]), "line 13: a second `session` record"),
        (with(1, &lines[1].replace("\"created_at\"", "\"surprise\":1,\"created_at\"")), "line 2: field `surprise`"),
        (
            with(3, &lines[3].replace("\"call_id\":\"c1\"", "\"call_id\":\"toolu_99\"")),
            "line 4: field `parts[0].call_id`: `toolu_99` answers no earlier tool_call",
        ),
        (
            with(
                4,
                &lines[4]
                    .replace(r#"[{"type":"text","text":"The log shows every chunk timing out after 5 s."}]"#, "[]"),
            ),
            "line 5: field `parts`: a message needs at least one part",
        ),
    ];
    let mut store = home.store();
    for (input, expected) in cases {
        let err = store.import(&mut input.as_bytes(), ImportOptions::default()).unwrap_err();
        assert_eq!(err.code(), "invalid_import", "{err}");
        let text = err.to_string();
        assert!(text.contains(expected), "expected `{expected}` in `{text}`");
        assert!(text.ends_with("nothing was imported"), "{text}");
        assert!(store.list_sessions(&Default::default()).unwrap().is_empty(), "a failed import wrote a session");
        let count = "SELECT count(*) FROM messages";
        assert_eq!(home.sql_value(count, count), 0);
    }
}
}

on_both_backends! {
fn a_refreshed_live_view_equals_a_fresh_one_through_appends_trims_and_compactions(home) {
    let mut store = home.store();
    let id = ten_messages(&mut store);
    let mut view = store.live_view(&id).unwrap();
    let check = |store: &Store, view: &mut seshat::store::LiveView, what: &str| {
        store.refresh_live_view(view).unwrap();
        assert_eq!(*view, store.live_view(&id).unwrap(), "after {what}");
    };
    check(&store, &mut view, "nothing");
    store.append(&id, &[tool_call("c9"), tool_result("c9", &"w".repeat(800))]).unwrap();
    check(&store, &mut view, "appends");
    assert_eq!(view.entries.len(), 12);
    store.record_trims(&id, &[(12, 0, "[w trimmed]".into())]).unwrap();
    check(&store, &mut view, "a trim of a message the view already had");
    let compaction = Compaction {
        trigger: CompactionTrigger::Manual,
        tokens_before: 5000,
        tokens_after: Some(2000),
        through_seq: 12,
        first_kept_seq: Some(11),
        pinned_seq: Some(9),
        summary: Some("earlier".into()),
        model: None,
        status: CompactionStatus::Ok,
        error: None,
        created_at: 2,
        instructions: None,
        plugin: None,
    };
    store.record_compaction(&id, &compaction).unwrap();
    check(&store, &mut view, "a compaction");
    assert_eq!(view.entries[0].origin, Origin::Summary);
    store.append(&id, &[NewMessage::text(Role::User, "more")]).unwrap();
    check(&store, &mut view, "an append after the compaction");
    // Another process's view of the same session stays right too.
    let other = home.store();
    other.refresh_live_view(&mut view).unwrap();
    assert_eq!(view.entries.last().unwrap().parts, vec![Part::Text { text: "more".into() }]);
}
}

on_both_backends! {
fn a_huge_message_round_trips_and_the_parts_check_stays_on_for_everything_else(home) {
    let mut store = home.store();
    let id = store.create_session(NewSession { project: "/p".into(), ..Default::default() }).unwrap().id;
    let huge = format!("{}\"quoted\" and \\ escaped\n", "0123456789abcdef".repeat(200_000));
    store.append(&id, &[NewMessage::text(Role::User, huge.clone())]).unwrap();
    let mut export = Vec::new();
    store.export(&id, &mut export).unwrap();
    let other = home.sibling();
    let mut copy = other.store();
    let imported = copy.import(&mut export.as_slice(), ImportOptions::default()).unwrap();
    for s in [&store, &copy] {
        let history = s.full_history(&imported.id).unwrap();
        assert_eq!(text_of(&history[0]), huge);
    }
    // The CHECK that parts are a JSON array still guards every other write.
    for h in [&home, &other] {
        let insert = format!(
            "INSERT INTO messages (session_id, seq, role, parts, status, created_at) \
             VALUES ('{id}', 2, 'user', '{{\"not\": \"an array\"}}', 'complete', 0)"
        );
        let err = h.sql(&insert, &insert).unwrap_err();
        assert!(err.contains("CHECK constraint failed") || err.contains("violates check constraint"), "{err}");
    }
}
}

#[test]
fn the_database_is_in_wal_mode_with_synchronous_normal_on_every_connection() {
    // What the README's durability promise rests on: an append that returned survives a killed
    // process (WAL, NORMAL), checked on a fresh file and on the same file reopened.
    let home = Home::new();
    for round in 0..2 {
        let store = home.store();
        let mode: String =
            store.sqlite_connection().unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        let sync: i64 = store.sqlite_connection().unwrap().query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
        assert_eq!((mode.as_str(), sync), ("wal", 1), "round {round}: synchronous 1 is NORMAL");
    }
    // Another process's view of the file: WAL is recorded in the file itself.
    let other = rusqlite::Connection::open(home.db()).unwrap();
    let mode: String = other.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

on_both_backends! {
/// An answer's draft is taken back only while no message was stored after the one the answer
/// began after, once; another user's session gets none and loses none.
fn a_draft_is_taken_back_only_while_its_answer_was_never_stored(home) {
    let mut store = home.store();
    let id = store.create_session(NewSession { project: "/p".into(), ..Default::default() }).unwrap().id;
    store.append(&id, &[NewMessage::text(Role::User, "hi")]).unwrap();
    store.save_draft(&id, 1, "Partial").unwrap();
    store.save_draft(&id, 1, "Partial answer").unwrap();
    assert_eq!(store.take_draft(&id).unwrap().as_deref(), Some("Partial answer"), "the last one kept");
    assert_eq!(store.take_draft(&id).unwrap(), None, "taken once");
    store.save_draft(&id, 1, "Stale").unwrap();
    store.clear_draft(&id).unwrap();
    assert_eq!(store.take_draft(&id).unwrap(), None, "cleared");
    store.save_draft(&id, 1, "Stale").unwrap();
    store.append(&id, &[NewMessage::text(Role::Assistant, "the whole answer")]).unwrap();
    assert_eq!(store.take_draft(&id).unwrap(), None, "its answer was stored after all");

    store.add_user("mallory").unwrap();
    let mallory = home.store().acting_for("mallory");
    mallory.save_draft(&id, 2, "forged").unwrap();
    assert_eq!(store.take_draft(&id).unwrap(), None, "another user writes no draft in the session");
    store.save_draft(&id, 2, "mine").unwrap();
    assert_eq!(mallory.take_draft(&id).unwrap(), None);
    mallory.clear_draft(&id).unwrap();
    assert_eq!(store.take_draft(&id).unwrap().as_deref(), Some("mine"), "nor takes or clears one");
}
}

on_both_backends! {
/// A message row written by something other than Seshat is an error naming its session, its seq
/// and its column, with a stable code; the session's other messages and other sessions still read.
fn a_corrupt_message_names_its_session_seq_and_column(home) {
    let id = home.session("/p");
    let other = home.session("/p");
    let mut store = home.store();
    store.append(&id, &[NewMessage::text(Role::User, "fine"), NewMessage::text(Role::Assistant, "also fine")]).unwrap();
    store.append(&other, &[NewMessage::text(Role::User, "elsewhere")]).unwrap();
    let bad = format!(
        "INSERT INTO messages (session_id, seq, role, parts, status, created_at) \
         VALUES ('{id}', 3, 'user', '[{{\"type\": \"hologram\"}}]', 'complete', 0)"
    );
    home.sql(&bad, &bad).unwrap();
    let err = store.full_history(&id).unwrap_err();
    assert_eq!(err.code(), "corrupt_row", "{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("message 3 of session {id}")) && text.contains("`parts`"), "{text}");
    assert_eq!(text_of(&store.message(&id, 2).unwrap().unwrap()), "also fine");
    assert_eq!(text_of(&store.full_history(&other).unwrap()[0]), "elsewhere");
}
}
