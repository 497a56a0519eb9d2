//! Who owns what: users, teams and the grants that share a team's scope with users.
//!
//! Every session, memory row and document belongs to a user (the store's caller when it was
//! written), or, in a team scope, to the team. Operations filter by the caller in their own SQL;
//! this file keeps the principals themselves.

use super::db::{Db, params};
use super::{Error, Result, Store, now_ms};
use seshat_protocol::memory::valid_team_name;

/// What a grant lets a user do in a team's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Access {
    /// Read the team's memory and knowledge.
    Read,
    /// Read and write them.
    Write,
}

impl Access {
    /// The stored spelling: `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }

    fn parse(s: &str) -> Access {
        if s == "write" { Access::Write } else { Access::Read }
    }
}

/// A user's access to a team's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Grant {
    /// The team.
    pub team: String,
    /// The user.
    pub user: String,
    /// What the user may do there.
    pub access: Access,
}

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

impl Store {
    /// Adds a user (see [`Store::acting_for`]). An existing name is refused.
    pub fn add_user(&mut self, name: &str) -> Result<()> {
        on_db!(self, "add a user", {
            check_name("user", name)?;
            let tx = self.db.transaction()?;
            let added = tx.execute(
                "INSERT INTO users (name, created_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                params![name, now_ms()],
            )?;
            if added == 0 {
                return Err(Error::Principal(format!("a user named `{name}` already exists")));
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
                "INSERT INTO team_members (team, user_name, access, granted_at) \
                 SELECT ?1, name, 'write', ?3 FROM users WHERE name = ?2",
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
            check_team_write(&tx, &self.user, team)?;
            let known: bool = tx.query_value("SELECT EXISTS (SELECT 1 FROM users WHERE name = ?1)", params![user])?;
            if !known {
                return Err(Error::Principal(format!("no user named `{user}`: add the user first")));
            }
            tx.execute(
                "INSERT INTO team_members (team, user_name, access, granted_at) \
                 SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM team_members \
                 WHERE team = ?1 AND user_name = ?5 AND access = 'write') \
                 ON CONFLICT (team, user_name) DO UPDATE SET access = excluded.access, granted_at = excluded.granted_at",
                params![team, user, access.as_str(), now_ms(), self.user],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Takes `user`'s access to `team` away (a read-write member's act). Returns whether there
    /// was a grant.
    pub fn revoke(&mut self, team: &str, user: &str) -> Result<bool> {
        on_db!(self, "revoke access to a team", {
            let tx = self.db.transaction()?;
            check_team_write(&tx, &self.user, team)?;
            let n = tx.execute(
                "DELETE FROM team_members WHERE team = ?1 AND user_name = ?2 AND EXISTS (SELECT 1 FROM team_members \
                 WHERE team = ?1 AND user_name = ?3 AND access = 'write')",
                params![team, user, self.user],
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
