//! Long-term memory's words on the wire: scopes and notes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a memory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// About the person: visible in every project.
    User,
    /// About one project: visible in its sessions.
    Project,
    /// General knowledge shared by every session of every project.
    Cross,
}

impl Scope {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Cross => "cross",
        }
    }

    /// The scope a stored (or typed) spelling names, if any.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => Scope::User,
            "project" => Scope::Project,
            "cross" => Scope::Cross,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A key/value note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// The key, e.g. `style`.
    pub key: String,
    /// The value.
    pub value: String,
    /// Where it lives.
    pub scope: Scope,
    /// Unix milliseconds.
    pub updated_at: i64,
}
