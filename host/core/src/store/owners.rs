//! Who owns what: users, teams and the grants that share a team's scope with users.
//!
//! Every session, memory row and document belongs to a user (the store's caller when it was
//! written), or, in a team scope, to the team. Operations filter by the caller in their own SQL;
//! this file keeps the principals themselves.

use super::db::{Db, params};
use super::{Error, Result, Store, now_ms};
use seshat_protocol::memory::valid_team_name;

pub use seshat_protocol::principals::{Access, Grant, Removed, UserInfo};

/// Whether `name` can name a user: the same rule as team names (letters, digits, `-`, `_`, `.`;
/// at most 64 bytes), so names print safely everywhere.
fn check_name(kind: &str, name: &str) -> Result<()> {
    if valid_team_name(name) {
        Ok(())
    } else {
        Err(Error::Principal(format!(
            "`{}` cannot name a {kind}: use 1 to 64 ASCII letters, digits, `-`, `_` or `.`, starting with a letter \
             or digit",
            name.escape_debug()
        )))
    }
}

/// The caller's access to `team`, read in the transaction or statement that acts on it.
pub(crate) fn team_access(db: &Db, user: &str, team: &str) -> Result<Option<Access>> {
    Ok(db
        .query_opt("SELECT access FROM team_members WHERE team = ?1 AND user_name = ?2", params![team, user], |r| {
            r.get::<String>(0)
        })?
        .map(|a| Access::parse(&a)))
}

/// Refuses a write to `team`'s scope unless `user` holds read-write access to it.
pub(crate) fn check_team_write(db: &Db, user: &str, team: &str) -> Result<()> {
    match team_access(db, user, team)? {
        Some(Access::Write) => Ok(()),
        found => Err(Error::ScopeDenied {
            action: "write to",
            user: user.to_string(),
            team: team.to_string(),
            reason: if found.is_some() { "read-only access" } else { "not a member" },
        }),
    }
}

/// Refuses a read of `team`'s scope unless `user` holds a grant to it.
pub(crate) fn check_team_read(db: &Db, user: &str, team: &str) -> Result<()> {
    match team_access(db, user, team)? {
        Some(_) => Ok(()),
        None => Err(Error::ScopeDenied {
            action: "read",
            user: user.to_string(),
            team: team.to_string(),
            reason: "not a member",
        }),
    }
}

/// The teams `user` may read (with `Access::Read`) or write, by name.
pub(crate) fn teams_of(db: &Db, user: &str, at_least: Access) -> Result<Vec<String>> {
    let sql = match at_least {
        Access::Read => "SELECT team FROM team_members WHERE user_name = ?1 ORDER BY team",
        Access::Write => "SELECT team FROM team_members WHERE user_name = ?1 AND access = 'write' ORDER BY team",
    };
    db.query_vec(sql, params![user], |r| r.get(0))
}

/// The tables whose `owner` column names a user (or, in a team scope, a team), with the
/// condition that picks a user's own rows.
const OWNED: &[(&str, &str)] = &[
    ("sessions", "owner = ?1"),
    ("memory_deletions", "owner = ?1"),
    ("memory_entities", "owner = ?1 AND scope <> 'team'"),
    ("memory_relations", "owner = ?1 AND scope <> 'team'"),
    ("memory_notes", "owner = ?1 AND scope <> 'team'"),
    ("documents", "owner = ?1 AND scope <> 'team'"),
];

/// Whether `user` reviews `team`'s memory proposals (a member marked a reviewer).
pub(crate) fn is_reviewer(db: &Db, user: &str, team: &str) -> Result<bool> {
    db.query_value(
        "SELECT EXISTS (SELECT 1 FROM team_members WHERE team = ?1 AND user_name = ?2 AND reviewer = 1)",
        params![team, user],
    )
}

/// Whether a write by `user` to `team`'s memory must be proposed for review: the team requires
/// review and `user` neither reviews it nor is an admin.
pub(crate) fn needs_review(db: &Db, user: &str, team: &str) -> Result<bool> {
    db.query_value(
        "SELECT EXISTS (SELECT 1 FROM teams WHERE name = ?1 AND review = 1) \
         AND NOT EXISTS (SELECT 1 FROM team_members WHERE team = ?1 AND user_name = ?2 AND reviewer = 1) \
         AND NOT EXISTS (SELECT 1 FROM users WHERE name = ?2 AND admin = 1 AND disabled_at IS NULL)",
        params![team, user],
    )
}

/// Whether `user` is an admin (and not disabled).
pub(crate) fn is_admin(db: &Db, user: &str) -> Result<bool> {
    db.query_value(
        "SELECT EXISTS (SELECT 1 FROM users WHERE name = ?1 AND admin = 1 AND disabled_at IS NULL)",
        params![user],
    )
}

/// Refuses an admin's act unless `user` is an admin (and not disabled).
pub(crate) fn check_admin(db: &Db, user: &str, act: &str) -> Result<()> {
    if is_admin(db, user)? { Ok(()) } else { Err(Error::AdminOnly { user: user.to_string(), act: act.to_string() }) }
}

/// The user named `name` in any mix of cases, as stored.
fn user_named(tx: &Db, name: &str) -> Result<String> {
    tx.query_opt("SELECT name FROM users WHERE lower(name) = lower(?1) ORDER BY name", params![name], |r| r.get(0))?
        .ok_or_else(|| Error::Principal(format!("no user named `{}`; nothing was changed", name.escape_debug())))
}

/// The owner of a removed user's memory deletions: not a name a user can have.
const REMOVED_OWNER: &str = "(removed)";

/// Refuses a change to the local operator, who can never be locked out.
fn not_the_operator(name: &str, act: &str) -> Result<()> {
    if name.eq_ignore_ascii_case(super::LOCAL_USER) {
        return Err(Error::Principal(format!(
            "`{}` is the store's operator (whoever runs seshat on it): it cannot be {act}",
            super::LOCAL_USER
        )));
    }
    Ok(())
}

impl Store {
    /// Adds a user (see [`Store::acting_for`]). A name already taken, in any mix of cases, is
    /// refused. An admin's act.
    pub fn add_user(&mut self, name: &str) -> Result<()> {
        self.add_user_as(name, false)
    }

    /// [`Store::add_user`], the user an admin when `admin`.
    pub fn add_user_as(&mut self, name: &str, admin: bool) -> Result<()> {
        on_db!(self, "add a user", {
            check_name("user", name)?;
            let tx = self.db.transaction()?;
            check_admin(&tx, &self.user, "add users")?;
            let added = tx.execute(
                "INSERT INTO users (name, created_at, admin) SELECT ?1, ?2, ?3 \
                 WHERE NOT EXISTS (SELECT 1 FROM users WHERE lower(name) = lower(?1)) ON CONFLICT DO NOTHING",
                params![name, now_ms(), admin],
            )?;
            if added == 0 {
                let taken: String = tx
                    .query_opt("SELECT name FROM users WHERE lower(name) = lower(?1)", params![name], |r| r.get(0))?
                    .unwrap_or_else(|| name.to_string());
                return Err(Error::Principal(format!(
                    "a user named `{taken}` already exists (names are the same whatever their case)"
                )));
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// The users, by name.
    pub fn users(&self) -> Result<Vec<String>> {
        on_db!(self, "list users", {
            self.db.query_vec("SELECT name FROM users ORDER BY name", params![], |r| r.get(0))
        })
    }

    /// The users with their role and state, by name. An admin's.
    pub fn user_infos(&self) -> Result<Vec<UserInfo>> {
        on_db!(self, "list users", {
            check_admin(&self.db, &self.user, "list users")?;
            self.db.query_vec("SELECT name, admin, disabled_at, created_at FROM users ORDER BY name", params![], |r| {
                Ok(UserInfo { name: r.get(0)?, admin: r.get(1)?, disabled_at: r.get(2)?, created_at: r.get(3)? })
            })
        })
    }

    /// Disables `name` (`disabled`) or enables them again: a disabled user's tokens are refused,
    /// and their open connections are closed, until they are enabled; nothing of theirs is
    /// deleted. Returns whether it changed anything. An admin's act.
    pub fn disable_user(&mut self, name: &str, disabled: bool) -> Result<bool> {
        on_db!(self, "disable a user", {
            not_the_operator(name, "disabled")?;
            let tx = self.db.transaction()?;
            check_admin(&tx, &self.user, "disable or enable users")?;
            let name = user_named(&tx, name)?;
            let n = if disabled {
                tx.execute(
                    "UPDATE users SET disabled_at = ?2 WHERE name = ?1 AND disabled_at IS NULL",
                    params![name, now_ms()],
                )?
            } else {
                tx.execute(
                    "UPDATE users SET disabled_at = NULL WHERE name = ?1 AND disabled_at IS NOT NULL",
                    params![name],
                )?
            };
            tx.commit()?;
            Ok(n > 0)
        })
    }

    /// Makes `name` an admin (`admin`) or not. The operator stays one. An admin's act.
    pub fn set_admin(&mut self, name: &str, admin: bool) -> Result<bool> {
        on_db!(self, "change a user's role", {
            if !admin {
                not_the_operator(name, "made a non-admin")?;
            }
            let tx = self.db.transaction()?;
            check_admin(&tx, &self.user, "change who is an admin")?;
            let name = user_named(&tx, name)?;
            let n = tx.execute("UPDATE users SET admin = ?2 WHERE name = ?1 AND admin <> ?2", params![name, admin])?;
            tx.commit()?;
            Ok(n > 0)
        })
    }

    /// Removes `name`: their tokens and grants go at once (their open connections are closed).
    /// What they own — sessions, their own memory and documents — is deleted with them when
    /// `purge`; without it a user who owns anything is refused (disable them instead, or purge).
    /// An admin's act.
    pub fn remove_user(&mut self, name: &str, purge: bool) -> Result<Removed> {
        on_db!(self, "remove a user", {
            not_the_operator(name, "removed")?;
            let tx = self.db.transaction()?;
            check_admin(&tx, &self.user, "remove users")?;
            let name = user_named(&tx, name)?;
            let count = |table: &str, rule: &str| -> Result<u64> {
                tx.query_value(&format!("SELECT count(*) FROM {table} WHERE {rule}"), params![name])
            };
            let removed = Removed {
                sessions: count("sessions", "owner = ?1")?,
                memory: count("memory_entities", OWNED[2].1)?
                    + count("memory_relations", OWNED[3].1)?
                    + count("memory_notes", OWNED[4].1)?,
                documents: count("documents", OWNED[5].1)?,
                tokens: count("tokens", "user_name = ?1")?,
            };
            let owns = removed.sessions + removed.memory + removed.documents;
            if owns > 0 && !purge {
                return Err(Error::Principal(format!(
                    "{name} owns {} sessions, {} memory records and {} documents: removing them deletes those too, \
                     which needs purging them; disabling {name} keeps everything and refuses their tokens; nothing \
                     was changed",
                    removed.sessions, removed.memory, removed.documents
                )));
            }
            // Their deletions stay (team rows they deleted refer to them) under a name no user
            // can take, so nobody restores them as theirs.
            for (table, rule) in OWNED.iter().filter(|(t, _)| *t != "memory_deletions") {
                tx.execute(&format!("DELETE FROM {table} WHERE {rule}"), params![name])?;
            }
            tx.execute("UPDATE memory_deletions SET owner = ?2 WHERE owner = ?1", params![name, REMOVED_OWNER])?;
            // What they wrote stays marked as a removed user's: a later user of the name cannot
            // undo it as theirs.
            tx.execute("UPDATE memory_sources SET user_name = ?2 WHERE user_name = ?1", params![name, REMOVED_OWNER])?;
            tx.execute("DELETE FROM users WHERE name = ?1", params![name])?;
            tx.commit()?;
            Ok(removed)
        })
    }

    /// Renames `old` to `new`, with everything they own, their tokens and their grants (their
    /// tokens go on working). An admin's act.
    pub fn rename_user(&mut self, old: &str, new: &str) -> Result<()> {
        on_db!(self, "rename a user", {
            not_the_operator(old, "renamed")?;
            not_the_operator(new, "taken as a name")?;
            check_name("user", new)?;
            let tx = self.db.transaction()?;
            check_admin(&tx, &self.user, "rename users")?;
            let old = user_named(&tx, old)?;
            let taken: bool = tx.query_value(
                "SELECT EXISTS (SELECT 1 FROM users WHERE lower(name) = lower(?1) AND name <> ?2)",
                params![new, old],
            )?;
            if taken {
                return Err(Error::Principal(format!("a user named `{new}` already exists; nothing was changed")));
            }
            // The new row first, so the rows that refer to a user can move to it; the old last.
            tx.execute(
                "INSERT INTO users (name, created_at, admin, disabled_at) \
                 SELECT ?2, created_at, admin, disabled_at FROM users WHERE name = ?1",
                params![old, new],
            )?;
            for (table, rule) in OWNED {
                tx.execute(&format!("UPDATE {table} SET owner = ?2 WHERE {rule}"), params![old, new])?;
            }
            tx.execute("UPDATE tokens SET user_name = ?2 WHERE user_name = ?1", params![old, new])?;
            tx.execute("UPDATE team_members SET user_name = ?2 WHERE user_name = ?1", params![old, new])?;
            // What they wrote is still theirs (to see and to undo).
            tx.execute("UPDATE memory_sources SET user_name = ?2 WHERE user_name = ?1", params![old, new])?;
            tx.execute("DELETE FROM users WHERE name = ?1", params![old])?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Creates a team scope (`team:NAME`), granting the caller read-write access to it.
    pub fn create_team(&mut self, name: &str) -> Result<()> {
        on_db!(self, "create a team", {
            check_name("team", name)?;
            let now = now_ms();
            let tx = self.db.transaction()?;
            let added = tx.execute(
                "INSERT INTO teams (name, created_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                params![name, now],
            )?;
            if added == 0 {
                return Err(Error::Principal(format!("a team named `{name}` already exists")));
            }
            tx.execute(
                "INSERT INTO team_members (team, user_name, access, granted_at, reviewer) \
                 SELECT ?1, name, 'write', ?3, 1 FROM users WHERE name = ?2",
                params![name, self.user, now],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Grants `user` `access` to `team`'s scope (replacing an earlier grant). Only a user with
    /// read-write access to the team may grant; the check is the statement's own.
    pub fn grant(&mut self, team: &str, user: &str, access: Access) -> Result<()> {
        on_db!(self, "grant access to a team", {
            let tx = self.db.transaction()?;
            let admin = is_admin(&tx, &self.user)?;
            if !admin {
                check_team_write(&tx, &self.user, team)?;
            }
            let known_team: bool =
                tx.query_value("SELECT EXISTS (SELECT 1 FROM teams WHERE name = ?1)", params![team])?;
            if !known_team {
                return Err(Error::Principal(format!("no team named `{team}`: create it first")));
            }
            let known: bool = tx.query_value("SELECT EXISTS (SELECT 1 FROM users WHERE name = ?1)", params![user])?;
            if !known {
                return Err(Error::Principal(format!("no user named `{user}`: add the user first")));
            }
            tx.execute(
                "INSERT INTO team_members (team, user_name, access, granted_at) \
                 SELECT ?1, ?2, ?3, ?4 WHERE ?6 OR EXISTS (SELECT 1 FROM team_members \
                 WHERE team = ?1 AND user_name = ?5 AND access = 'write') \
                 ON CONFLICT (team, user_name) DO UPDATE SET access = excluded.access, granted_at = excluded.granted_at",
                params![team, user, access.as_str(), now_ms(), self.user, admin],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Changes `team`'s review: whether members' writes to its memory become proposals
    /// (`required`), and whether `user` (a member) reviews them (`reviewer`). A reviewer's or an
    /// admin's act.
    pub fn set_review(&mut self, team: &str, required: Option<bool>, reviewer: Option<(&str, bool)>) -> Result<()> {
        on_db!(self, "change a team's review", {
            let tx = self.db.transaction()?;
            let known: bool = tx.query_value("SELECT EXISTS (SELECT 1 FROM teams WHERE name = ?1)", params![team])?;
            if !known {
                return Err(Error::Principal(format!("no team named `{team}`: create it first")));
            }
            if !is_admin(&tx, &self.user)? {
                check_team_write(&tx, &self.user, team)?;
            }
            if !is_admin(&tx, &self.user)? && !is_reviewer(&tx, &self.user, team)? {
                return Err(Error::Principal(format!(
                    "only a reviewer of team:{team} (or an admin) changes its review; nothing was changed"
                )));
            }
            if let Some(required) = required {
                tx.execute("UPDATE teams SET review = ?2 WHERE name = ?1", params![team, required])?;
            }
            if let Some((user, on)) = reviewer {
                let n = tx.execute(
                    "UPDATE team_members SET reviewer = ?3 WHERE team = ?1 AND user_name = ?2",
                    params![team, user, on],
                )?;
                if n == 0 {
                    return Err(Error::Principal(format!(
                        "{user} is not a member of team:{team}: grant them access first; nothing was changed"
                    )));
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// Takes `user`'s access to `team` away (a read-write member's act). Returns whether there
    /// was a grant.
    pub fn revoke(&mut self, team: &str, user: &str) -> Result<bool> {
        on_db!(self, "revoke access to a team", {
            let tx = self.db.transaction()?;
            let admin = is_admin(&tx, &self.user)?;
            if !admin {
                check_team_write(&tx, &self.user, team)?;
            }
            let n = tx.execute(
                "DELETE FROM team_members WHERE team = ?1 AND user_name = ?2 AND (?4 OR EXISTS (SELECT 1 FROM \
                 team_members WHERE team = ?1 AND user_name = ?3 AND access = 'write'))",
                params![team, user, self.user, admin],
            )?;
            tx.commit()?;
            Ok(n > 0)
        })
    }

    /// The grants of the teams the caller belongs to, by team then user.
    pub fn grants(&self) -> Result<Vec<Grant>> {
        on_db!(self, "list team grants", {
            self.db.query_vec(
                "SELECT g.team, g.user_name, g.access FROM team_members g \
                 WHERE g.team IN (SELECT team FROM team_members WHERE user_name = ?1) ORDER BY g.team, g.user_name",
                params![self.user],
                |r| Ok(Grant { team: r.get(0)?, user: r.get(1)?, access: Access::parse(&r.get::<String>(2)?) }),
            )
        })
    }
}
