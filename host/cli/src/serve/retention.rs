//! A service's retention: on PostgreSQL, what `[retention]` in force sets is purged for every
//! user in the background — at start, then every `[retention] every` (an hour by default) — each
//! session in a transaction of its own, so a stop between two loses nothing but the pause.

use std::sync::Arc;

use seshat::store::{LOCAL_USER, Location, Store};
use seshat_server::Settings;

/// Starts the purging thread when the store is a PostgreSQL database (a team's); it lives as
/// long as the process.
pub(super) fn start(db: &Location, settings: Arc<Settings>) {
    if !matches!(db, Location::Postgres(_)) {
        return;
    }
    let db = db.clone();
    let spawned = std::thread::Builder::new().name("retention".into()).spawn(move || {
        loop {
            let config = settings.config();
            // Memory whose time to live passed, whatever [retention] says.
            match Store::connect(&db).and_then(|mut s| s.purge_expired_memory(seshat::store::now_ms())) {
                Ok(p) if p.entities + p.notes > 0 => {
                    tracing::info!(target: "seshat::service", entities = p.entities, notes = p.notes, "retention: expired memory purged");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(target: "seshat::service", "retention: expired memory was left: {e}"),
            }
            match config.retention.retention() {
                Ok(retention) if retention.is_set() => {
                    if let Err(e) = purge_everyone(&db, &retention) {
                        tracing::warn!(target: "seshat::service", "retention: the purge stopped: {e}");
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(target: "seshat::service", "retention: [retention] {e}"),
            }
            std::thread::sleep(config.retention.every());
        }
    });
    if let Err(e) = spawned {
        tracing::warn!(target: "seshat::service", "retention: no thread to purge in: {e}");
    }
}

/// One pass: every user's sessions and own memory past their ages.
fn purge_everyone(db: &Location, retention: &seshat::config::Retention) -> Result<(), seshat::store::Error> {
    let mut users = Store::connect(db)?.users()?;
    if !users.iter().any(|u| u == LOCAL_USER) {
        users.insert(0, LOCAL_USER.to_string());
    }
    let now = seshat::store::now_ms();
    // Team scopes, by the operator (an admin).
    for (team, age) in &retention.teams {
        let purged = match Store::connect(db).and_then(|mut s| s.expire_team(team, *age, now, false)) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(target: "seshat::service", team = %team, "retention: the team's memory was left: {e}");
                continue;
            }
        };
        let gone = purged.entities + purged.relations + purged.notes;
        if gone > 0 {
            tracing::info!(target: "seshat::service", team = %team, entities = purged.entities, relations = purged.relations, notes = purged.notes, "retention: purged");
        }
    }
    for user in users {
        let purged = match Store::connect(db).and_then(|s| {
            s.acting_for(&user).expire(&|p| retention.sessions_for(p), &|p| retention.memory_for(p), now, false)
        }) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(target: "seshat::service", user = %user, "retention: the user's were left: {e}");
                continue;
            }
        };
        let gone = purged.sessions.len() as u64 + purged.entities + purged.relations + purged.notes;
        if gone > 0 {
            tracing::info!(
                target: "seshat::service",
                user = %user,
                sessions = purged.sessions.len(),
                entities = purged.entities,
                relations = purged.relations,
                notes = purged.notes,
                "retention: purged"
            );
        }
    }
    Ok(())
}
