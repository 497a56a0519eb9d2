//! Who may do what: users, their tokens and their grants to team scopes, as the store keeps them
//! and the service's admin methods (`users/*`, `tokens/*`, `scopes/*`) carry them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a grant lets a user do in a team's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
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

    /// The access a stored spelling names (anything but `write` reads as [`Access::Read`], the
    /// lesser one).
    pub fn parse(s: &str) -> Access {
        if s == "write" { Access::Write } else { Access::Read }
    }
}

/// A user's access to a team's scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Grant {
    /// The team (its scope is `team:<team>`).
    pub team: String,
    /// The user.
    pub user: String,
    /// What the user may do there.
    pub access: Access,
}

/// A user as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserInfo {
    /// The name.
    pub name: String,
    /// Whether the user manages users, tokens and team scopes.
    pub admin: bool,
    /// When the user was disabled (Unix milliseconds), if they are.
    pub disabled_at: Option<i64>,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// What removing a user took away with them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Removed {
    /// Sessions deleted.
    pub sessions: u64,
    /// Memory entities, relations and notes deleted.
    pub memory: u64,
    /// Documents deleted.
    pub documents: u64,
    /// Tokens deleted.
    pub tokens: u64,
}

/// A token as listed: everything but its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenInfo {
    /// Its id (what `tokens revoke` takes; part of the token itself).
    pub id: String,
    /// The user it acts for.
    pub user: String,
    /// Whether it may only read.
    pub read_only: bool,
    /// Unix milliseconds.
    pub created_at: i64,
    /// When it stops working (Unix milliseconds), if ever.
    pub expires_at: Option<i64>,
    /// When it was revoked (Unix milliseconds), if it was.
    pub revoked_at: Option<i64>,
    /// When a client last proved itself with it (Unix milliseconds, to the minute), if ever.
    pub last_used_at: Option<i64>,
}

/// A new token: its listing and the token itself, which nothing stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NewToken {
    /// What the token listing will show.
    pub info: TokenInfo,
    /// The token: `seshat_<id>_<secret>`. Shown once.
    pub token: String,
}
