//! Short ids: unique, at least 8 characters, and as short as uniqueness allows.

use std::collections::HashSet;

use seshat::store::{Error, NewSession};

use crate::support::Home;

#[test]
fn thousand_sessions_in_a_tight_loop_get_distinct_short_ids() {
    let home = Home::new();
    let mut store = home.store();
    let ids: Vec<String> = (0..1_000)
        .map(|_| store.create_session(NewSession { project: "/ids".into(), ..Default::default() }).unwrap().id)
        .collect();

    let out = home.ok(&["sessions", "list", "--all", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), 1_000);
    let shorts: HashSet<&str> = rows.iter().map(|r| r["short_id"].as_str().unwrap()).collect();
    assert_eq!(shorts.len(), 1_000, "short ids collide");
    let listed: HashSet<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(listed, ids.iter().map(String::as_str).collect());

    // A short list finds the same prefixes by probing neighbours instead of reading every id.
    let limited: Vec<serde_json::Value> =
        serde_json::from_str(&home.ok(&["sessions", "list", "--all", "--limit", "100", "--json"])).unwrap();
    assert_eq!(limited.len(), 100);
    for (short, full) in limited.iter().zip(&rows) {
        assert_eq!(short["id"], full["id"]);
        assert_eq!(short["short_id"], full["short_id"], "the two ways disagree");
    }

    for row in &rows {
        let (id, short) = (row["id"].as_str().unwrap(), row["short_id"].as_str().unwrap());
        assert!(short.len() >= 8 && id.starts_with(short), "{short} is not a prefix of {id}");
        assert_eq!(store.resolve(short).unwrap(), id, "{short} does not resolve to its session");
        assert_eq!(store.resolve(&short.to_lowercase()).unwrap(), id, "prefixes are case-insensitive");
        if short.len() > 8 {
            // One character shorter must be ambiguous, or the prefix was not the shortest.
            let shorter = &short[..short.len() - 1];
            assert!(
                matches!(store.resolve(shorter), Err(Error::AmbiguousSession { .. })),
                "{short} is longer than needed"
            );
        }
    }
}
