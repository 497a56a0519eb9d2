//! The network service's audit trail: one row per event — a write (naming what it wrote), a
//! write refused, a read denied, a login refused, access revoked on an open connection, a plugin
//! that crashed — queried by user and time. Kept [`AUDIT_DAYS`] days.

use super::db::params;
use super::{Result, Store, now_ms};

/// How long events are kept, in days.
pub const AUDIT_DAYS: i64 = 90;

/// One audited event.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct AuditEvent {
    /// Unix milliseconds (set when recorded).
    pub at: i64,
    /// What happened: `write`, `refused_write`, `denied_read`, `refused_login`, `revoked`,
    /// `plugin_crash`.
    pub event: String,
    /// Who, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The token's id, when known (never the token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The client's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// The protocol method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// What it touched: a session's id, a scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The stable code of a refusal or failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// A short word more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl AuditEvent {
    /// An event of kind `event`, the rest to fill in.
    pub fn new(event: &str) -> Self {
        AuditEvent { event: event.to_string(), ..AuditEvent::default() }
    }
}

/// Which events [`Store::audit_events`] lists.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AuditFilter {
    /// Only this user's.
    pub user: Option<String>,
    /// Only those at or after this time (Unix milliseconds).
    pub since: Option<i64>,
    /// At most this many, the newest (default 1,000).
    pub limit: Option<u64>,
}

impl Store {
    /// Records `event` now.
    pub fn record_audit(&self, event: &AuditEvent) -> Result<()> {
        on_db!(self, "record an audit event", {
            let e = event;
            self.db.execute(
                "INSERT INTO audit_events (at, event, user_name, token, peer, method, target, code, detail) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![now_ms(), e.event, e.user, e.token, e.peer, e.method, e.target, e.code, e.detail],
            )?;
            Ok(())
        })
    }

    /// The events `filter` picks, oldest first. An admin's read.
    pub fn audit_events(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
        on_db!(self, "read the audit trail", {
            super::owners::check_admin(&self.db, &self.user, "read the audit trail")?;
            let limit = i64::try_from(filter.limit.unwrap_or(1_000)).unwrap_or(i64::MAX);
            let mut events = self.db.query_vec(
                "SELECT at, event, user_name, token, peer, method, target, code, detail FROM audit_events \
                 WHERE (CAST(?1 AS TEXT) IS NULL OR lower(user_name) = lower(?1)) AND at >= ?2 \
                 ORDER BY at DESC, id DESC LIMIT ?3",
                params![filter.user, filter.since.unwrap_or(0), limit],
                |r| {
                    Ok(AuditEvent {
                        at: r.get(0)?,
                        event: r.get(1)?,
                        user: r.get(2)?,
                        token: r.get(3)?,
                        peer: r.get(4)?,
                        method: r.get(5)?,
                        target: r.get(6)?,
                        code: r.get(7)?,
                        detail: r.get(8)?,
                    })
                },
            )?;
            events.reverse();
            Ok(events)
        })
    }

    /// Removes the events older than [`AUDIT_DAYS`]; how many.
    pub fn prune_audit(&self) -> Result<u64> {
        on_db!(self, "prune the audit trail", {
            let before = now_ms() - AUDIT_DAYS * 24 * 3_600_000;
            Ok(self.db.execute("DELETE FROM audit_events WHERE at < ?1", params![before])? as u64)
        })
    }
}
