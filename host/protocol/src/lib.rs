//! The words Seshat's library, `seshat serve` and its clients share.
//!
//! * [`conversation`], [`records`], [`view`], [`turn`], [`memory`], [`knowledge`] — the records
//!   themselves: the library defines its messages, sessions, compactions, reports and outcomes
//!   here and re-exports them, so what crosses the wire is what the library holds, never a copy
//!   kept by hand.
//! * [`memory_tools`] — the memory tools' arguments and results, the same for `seshat serve`'s
//!   `memory/<tool>` methods, `seshat mcp`'s tools and the chat loop's.
//! * [`hooks`] — the lifecycle hooks' events, what a hook is told and what it may answer.
//! * [`principals`] — users, tokens and team grants, as the admin methods carry them.
//! * [`methods`] and [`notifications`] — `seshat serve`'s JSON-RPC protocol: one typed params and
//!   result per method, one typed params per notification, and [`wire`]'s envelope and errors.
//! * [`schema`] — the protocol's JSON Schema, generated from these types (the committed
//!   `host/protocol/protocol.schema.json` is checked against it by a test).
//!
//! **One casing rule**: every field name and every enumerated value is `snake_case`, the same as
//! `sessions export` files and `--json` output; method names are `area/action` with the action in
//! `snake_case` (`turn/compaction_started`). The one exception is what belongs to someone else's
//! format: a `memory/<tool>` call's arguments and results are the MCP memory tools' own
//! (`entityType`, `relationType`), exactly as `seshat mcp` serves them.

pub mod conversation;
pub mod hooks;
pub mod knowledge;
pub mod memory;
pub mod memory_tools;
pub mod methods;
pub mod notifications;
pub mod principals;
pub mod records;
pub mod schema;
pub mod turn;
pub mod view;
pub mod wire;

/// The protocol's version, returned by `initialize`. Bumped when a method, a field or a casing
/// changes in a way an existing client would notice.
pub const PROTOCOL_VERSION: &str = "2026-12-08";

/// Which side of a connection a version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// The client (the server compares what `initialize` sends).
    Client,
    /// The server (the client compares what `initialize` answers).
    Server,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Client => "client",
            Peer::Server => "server",
        }
    }

    fn other(self) -> Peer {
        match self {
            Peer::Client => Peer::Server,
            Peer::Server => Peer::Client,
        }
    }
}

/// Whether `peer`, speaking protocol `theirs`, can talk to this side, speaking
/// [`PROTOCOL_VERSION`]: both sides compare in `initialize`. The error names both versions and
/// which side to upgrade (versions are dates: the older one is behind).
pub fn check_version(theirs: &str, peer: Peer) -> Result<(), String> {
    if theirs == PROTOCOL_VERSION {
        return Ok(());
    }
    let (us, them) = (peer.other().name(), peer.name());
    let behind = if theirs < PROTOCOL_VERSION { format!("the {them}") } else { format!("this {us}") };
    Err(format!(
        "the {them} speaks protocol {theirs} and this {us} speaks {PROTOCOL_VERSION}: upgrade {behind} \
         (host/protocol/protocol.md lists what changed)"
    ))
}

#[cfg(test)]
mod tests {
    use super::{PROTOCOL_VERSION, Peer, check_version};

    /// The same version passes; another names both and the side that is behind.
    #[test]
    fn versions_are_compared_naming_both_and_whom_to_upgrade() {
        assert_eq!(check_version(PROTOCOL_VERSION, Peer::Client), Ok(()));
        let old = check_version("2026-12-03", Peer::Client).unwrap_err();
        assert!(old.contains("the client speaks protocol 2026-12-03"), "{old}");
        assert!(old.contains(PROTOCOL_VERSION) && old.contains("upgrade the client"), "{old}");
        let new = check_version("2099-01-01", Peer::Server).unwrap_err();
        assert!(new.contains("the server speaks protocol 2099-01-01") && new.contains("upgrade this client"), "{new}");
    }
}
