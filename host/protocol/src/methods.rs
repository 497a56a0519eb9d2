//! `seshat serve`'s methods: one marker type per method, naming it and typing its params and its
//! result ([`Method`]). The server deserialises a request's params as [`Method::Params`] and writes
//! [`Method::Result`]; the schema is generated from the same types.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conversation::{NewMessage, Role};
use crate::knowledge::Found;
use crate::memory::{Deletion, EntityVersion, MemoryContext, Note, Proposal, Scope, Undone};
pub use crate::memory_tools::{
    AddObservationsParams, AddObservationsResult, CreateEntitiesParams, CreateEntitiesResult, CreateRelationsResult,
    DeleteEntitiesParams, DeleteObservationsParams, Deleted, GraphPage, OpenNodesParams, ReadGraphParams,
    RelationsParams, SearchNodesParams,
};
use crate::principals::{Access as Grants, Grant, NewToken, Removed, TokenInfo, UserInfo};
use crate::records::{Message, SessionInfo};
use crate::turn::Report;
use crate::view::View;

/// What a method touches and whether it changes it: declared with the method, the one place its
/// access rule lives. The server enforces it from here — a read-only token may call only reads —
/// and every method acts only on the caller's own objects or the team scopes granted to them
/// (a write to a team scope needs a read-write grant, checked in the write's own statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// The connection itself (its setup, the server's configuration): no stored object.
    Connection,
    /// Reads the caller's objects of this kind, and the team scopes granted to them.
    Read(Object),
    /// Changes the caller's objects of this kind, or a team scope granted to them read-write;
    /// refused to a read-only token.
    Write(Object),
}

impl Access {
    /// Whether the method changes anything (a read-only token may not call it).
    pub fn writes(self) -> bool {
        matches!(self, Access::Write(_))
    }
}

/// What kind of stored object a method touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Object {
    /// Sessions and their messages, owned by one user.
    Session,
    /// Memory (graph and notes): a user's own scopes, or a team's.
    Memory,
    /// Documents: a user's own, or a team's.
    Knowledge,
    /// Users, tokens and team grants: an admin's (a team's grants also its read-write members',
    /// and any user may make a team).
    Principals,
}

/// A method: its name on the wire, what it takes and what it answers.
pub trait Method {
    /// The method's name (`session/new`).
    const NAME: &'static str;
    /// What it may touch, and whether it changes it.
    const ACCESS: Access;
    /// Its params (an absent `params` reads as `{}`).
    type Params: Serialize + DeserializeOwned + JsonSchema;
    /// Its result.
    type Result: Serialize + DeserializeOwned + JsonSchema;
}

/// The protocol's one table: each method declared once — its marker type and doc, its name on
/// the wire, its params and result, its access rule. From it come the marker types, [`Request`]
/// (a request's params typed, by method), [`CLIENT_METHODS`] and the schema's list
/// ([`for_each_method`]); the server dispatches on [`Request`] with an exhaustive `match`.
macro_rules! methods {
    ($($(#[doc = $doc:literal])* $ty:ident = $name:literal ($params:ty) -> $result:ty, $access:expr;)*) => {
        $(
            $(#[doc = $doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $ty;
            impl Method for $ty {
                const NAME: &'static str = $name;
                const ACCESS: Access = $access;
                type Params = $params;
                type Result = $result;
            }
        )*

        /// A client's request with its params typed: one variant per method of the table, named
        /// as its marker type.
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)]
        pub enum Request {
            $(
                #[doc = concat!("`", $name, "`.")]
                $ty($params),
            )*
        }

        impl Request {
            /// The request for `method` with `params` (an absent `params` reads as `{}`): `None`
            /// when the table has no such method, an error naming the method and what does not fit
            /// when its params do not.
            pub fn parse(method: &str, params: &Value) -> Option<Result<Request, ParamsError>> {
                let value = || if params.is_null() { Value::Object(Map::new()) } else { params.clone() };
                match method {
                    $($name => Some(
                        serde_json::from_value(value())
                            .map(Request::$ty)
                            .map_err(|e| ParamsError { method: $name, message: e.to_string() }),
                    ),)*
                    _ => None,
                }
            }

            /// The method's name on the wire.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Request::$ty(_) => $name,)*
                }
            }

            /// The method's access rule.
            pub fn access(&self) -> Access {
                match self {
                    $(Request::$ty(_) => $access,)*
                }
            }
        }

        /// Every method of the table, with its access rule.
        pub const CLIENT_METHODS: &[(&str, Access)] = &[$(($name, $access),)*];

        /// Calls `each` with every method of the table: its name and its params' and result's
        /// schemas, as `generator` makes them (the schema document's list).
        pub fn for_each_method(
            generator: &mut schemars::SchemaGenerator,
            mut each: impl FnMut(&'static str, Value, Value),
        ) {
            $(
                let params = generator.subschema_for::<$params>().to_value();
                let result = generator.subschema_for::<$result>().to_value();
                each($name, params, result);
            )*
        }
    };
}

/// A request's params that do not fit its method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamsError {
    /// The method.
    pub method: &'static str,
    /// What does not fit, as the JSON reader says it.
    pub message: String,
}

impl std::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}'s params do not fit: {}", self.method, self.message)
    }
}

impl std::error::Error for ParamsError {}

methods! {
    /// Opens the connection: the client's settings for its sessions and its own tools.
    Initialize = "initialize" (InitializeParams) -> InitializeResult, Access::Connection;
    /// Creates a session in the server's project.
    SessionNew = "session/new" (SessionNewParams) -> SessionResult, Access::Write(Object::Session);
    /// Lists sessions, newest first.
    SessionList = "session/list" (SessionListParams) -> SessionListResult, Access::Read(Object::Session);
    /// One session, its live view and, with `full`, its whole history.
    SessionGet = "session/get" (SessionGetParams) -> SessionGetResult, Access::Read(Object::Session);
    /// Deletes a session (`session_busy` while a turn runs).
    SessionDelete = "session/delete" (SessionParams) -> SessionDeleteResult, Access::Write(Object::Session);
    /// Starts a turn; its progress arrives as notifications, ending with `turn/completed`.
    TurnStart = "turn/start" (TurnStartParams) -> TurnStartResult, Access::Write(Object::Session);
    /// Interrupts a session's turn, whichever connection started it.
    TurnInterrupt = "turn/interrupt" (SessionParams) -> TurnInterruptResult, Access::Write(Object::Session);
    /// Compacts a session now; answered when done.
    SessionCompact = "session/compact" (SessionCompactParams) -> SessionCompactResult, Access::Write(Object::Session);
    /// Forks a session at a message: a new session continuing from there, with the live view the
    /// parent had then.
    SessionFork = "session/fork" (SessionForkParams) -> SessionForkResult, Access::Write(Object::Session);
    /// Rewinds a session to before a message (the later ones leave the live view; nothing is
    /// deleted), or undoes the latest rewind.
    SessionRewind = "session/rewind" (SessionRewindParams) -> SessionRewindResult, Access::Write(Object::Session);
    /// Appends messages to a session as they are (`session_busy` while a turn runs in it).
    SessionAppend = "session/append" (SessionAppendParams) -> SessionAppendResult, Access::Write(Object::Session);
    /// A session's pinned messages.
    SessionPins = "session/pins" (SessionParams) -> SessionPinsResult, Access::Read(Object::Session);
    /// Pins a message (and the other side of its tool exchanges): kept verbatim in every live view
    /// (refused when the pins would take more than their share of the session's window).
    SessionPin = "session/pin" (SessionSeqParams) -> SessionPinResult, Access::Write(Object::Session);
    /// Unpins a message (and the other side of its tool exchanges).
    SessionUnpin = "session/unpin" (SessionSeqParams) -> SessionUnpinResult, Access::Write(Object::Session);
    /// A session's whole record as JSON Lines, byte for byte as `seshat sessions export` writes
    /// it (what `seshat sessions import` reads into another store).
    SessionExport = "session/export" (SessionParams) -> SessionExportResult, Access::Read(Object::Session);
    /// Imports a session from the JSON Lines `session/export` (or `seshat sessions export`)
    /// wrote, as the caller's: its messages, compactions, trims, pins and rewinds, validated whole
    /// (malformed input names its line and writes nothing).
    SessionImport = "session/import" (SessionImportParams) -> Imported, Access::Write(Object::Session);
    /// Brings in one session another agent (Claude Code, Codex) wrote, read on the client's
    /// machine, as the caller's: a new session, or only what it gained since it was last brought
    /// in (a fork when the session went on in Seshat meanwhile).
    SessionBringIn = "session/bring_in" (SessionBringInParams) -> BroughtIn, Access::Write(Object::Session);
    /// Searches what was said in the caller's sessions — the connection's project's, or all of
    /// them — in the original messages, whatever compaction did to the live views.
    HistorySearch = "history/search" (HistorySearchParams) -> HistorySearchResult, Access::Read(Object::Session);
    /// Sets a note (replacing the value of an existing key).
    NotesSet = "notes/set" (NotesSetParams) -> NoteResult, Access::Write(Object::Memory);
    /// A scope's notes, most recently set first.
    NotesList = "notes/list" (NotesListParams) -> NotesResult, Access::Read(Object::Memory);
    /// Notes whose key or value contains the query (ignoring case).
    NotesSearch = "notes/search" (NotesSearchParams) -> NotesResult, Access::Read(Object::Memory);
    /// The memory tools, as `seshat mcp` serves them (see [`crate::memory_tools`]): creates
    /// entities with their observations (one whose name exists in the scope gets them added).
    MemoryCreateEntities = "memory/create_entities" (CreateEntitiesParams) -> CreateEntitiesResult, Access::Write(Object::Memory);
    /// Creates relations between entities (one already stored is not stored twice).
    MemoryCreateRelations = "memory/create_relations" (RelationsParams) -> CreateRelationsResult, Access::Write(Object::Memory);
    /// Adds observations to entities that exist.
    MemoryAddObservations = "memory/add_observations" (AddObservationsParams) -> AddObservationsResult, Access::Write(Object::Memory);
    /// Deletes entities and the relations touching them (restorable).
    MemoryDeleteEntities = "memory/delete_entities" (DeleteEntitiesParams) -> Deleted, Access::Write(Object::Memory);
    /// Deletes observations from entities (restorable).
    MemoryDeleteObservations = "memory/delete_observations" (DeleteObservationsParams) -> Deleted, Access::Write(Object::Memory);
    /// Deletes relations (restorable).
    MemoryDeleteRelations = "memory/delete_relations" (RelationsParams) -> Deleted, Access::Write(Object::Memory);
    /// The graph, most recently updated entities first, a page at a time.
    MemoryReadGraph = "memory/read_graph" (ReadGraphParams) -> GraphPage, Access::Read(Object::Memory);
    /// Entities matching a query, best first, with the relations among them.
    MemorySearchNodes = "memory/search_nodes" (SearchNodesParams) -> GraphPage, Access::Read(Object::Memory);
    /// Entities by name, with the relations among them.
    MemoryOpenNodes = "memory/open_nodes" (OpenNodesParams) -> GraphPage, Access::Read(Object::Memory);
    /// The memory context a new session of the caller's in the connection's project is given.
    MemoryContextGet = "memory/context" (MemoryContextParams) -> MemoryContext, Access::Read(Object::Memory);
    /// The caller's deletions of memory that can be restored, newest first.
    MemoryDeletions = "memory/deletions" (Empty) -> MemoryDeletionsResult, Access::Read(Object::Memory);
    /// Undoes one of the caller's deletions of memory.
    MemoryRestore = "memory/restore" (MemoryRestoreParams) -> Deletion, Access::Write(Object::Memory);
    /// Removes everything in one scope (the server keeps a backup of it first); a team scope
    /// needs write access (`scope_denied`).
    MemoryClear = "memory/clear" (MemoryClearParams) -> MemoryClearResult, Access::Write(Object::Memory);
    /// Every version of one entity, oldest first: what each change made it, who made it.
    MemoryHistory = "memory/history" (MemoryHistoryParams) -> MemoryHistoryResult, Access::Read(Object::Memory);
    /// Brings an entity back to one of its versions (itself a new version).
    MemoryRevert = "memory/revert" (MemoryRevertParams) -> MemoryRevertResult, Access::Write(Object::Memory);
    /// Takes back everything one session's agent wrote to the caller's memory.
    MemoryUndo = "memory/undo" (MemoryUndoParams) -> Undone, Access::Write(Object::Memory);
    /// Proposals to the memory of teams that require review: those waiting for the caller (a
    /// reviewer's teams') and the caller's own.
    MemoryProposals = "memory/proposals" (MemoryProposalsParams) -> MemoryProposalsResult, Access::Read(Object::Memory);
    /// Approves a proposal: its write is applied, as its proposer's (a reviewer's act).
    MemoryApprove = "memory/approve" (MemoryDecideParams) -> Proposal, Access::Write(Object::Memory);
    /// Rejects a proposal: nothing of it is written (a reviewer's act).
    MemoryReject = "memory/reject" (MemoryDecideParams) -> Proposal, Access::Write(Object::Memory);
    /// Searches the documents `seshat knowledge add` indexed.
    KnowledgeSearch = "knowledge/search" (KnowledgeSearchParams) -> Found, Access::Read(Object::Knowledge);
    /// Reads one chunk a search returned, as `knowledge_read` does (16,000 bytes at a time).
    KnowledgeRead = "knowledge/read" (KnowledgeReadParams) -> KnowledgeChunk, Access::Read(Object::Knowledge);
    /// Indexes documents read on the client's machine, their text sent whole, as `seshat
    /// knowledge add` does: into the caller's scope, or a team's for its read-write members
    /// (`scope_denied` otherwise); a path already indexed with the same content is left as it is.
    KnowledgeAdd = "knowledge/add" (KnowledgeAddParams) -> KnowledgeAddResult, Access::Write(Object::Knowledge);
    /// The configuration the server runs with.
    ConfigGet = "config/get" (Empty) -> ConfigGetResult, Access::Connection;
    /// The users, with their role and state (an admin's).
    UsersList = "users/list" (Empty) -> UsersListResult, Access::Read(Object::Principals);
    /// Adds a user; a name taken in any mix of cases is refused (an admin's).
    UsersAdd = "users/add" (UsersAddParams) -> UserInfo, Access::Write(Object::Principals);
    /// Disables or enables a user, or makes them an admin or not (an admin's). A disabled user's
    /// tokens are refused and their open connections closed; the operator cannot be changed.
    UsersSet = "users/set" (UsersSetParams) -> ChangedResult, Access::Write(Object::Principals);
    /// Renames a user with everything they own; their tokens go on working (an admin's).
    UsersRename = "users/rename" (UsersRenameParams) -> Empty, Access::Write(Object::Principals);
    /// Removes a user with their tokens and grants; one who owns anything is refused unless
    /// `purge` deletes it too (an admin's).
    UsersRemove = "users/remove" (UsersRemoveParams) -> Removed, Access::Write(Object::Principals);
    /// The tokens, of one user or everyone, never their secrets (an admin's).
    TokensList = "tokens/list" (TokensListParams) -> TokensListResult, Access::Read(Object::Principals);
    /// Makes a token; the answer is the only place it is ever shown (an admin's).
    TokensCreate = "tokens/create" (TokensCreateParams) -> NewToken, Access::Write(Object::Principals);
    /// Revokes a token and makes one for the same user, access and expiry (an admin's).
    TokensRotate = "tokens/rotate" (TokenParams) -> NewToken, Access::Write(Object::Principals);
    /// Revokes a token: refused from now on, its open connections closed (an admin's).
    TokensRevoke = "tokens/revoke" (TokenParams) -> ChangedResult, Access::Write(Object::Principals);
    /// The grants of the team scopes the caller belongs to.
    ScopesList = "scopes/list" (Empty) -> ScopesListResult, Access::Read(Object::Principals);
    /// Makes a team scope; its maker may read and write it.
    ScopesCreate = "scopes/create" (ScopesCreateParams) -> Empty, Access::Write(Object::Principals);
    /// Grants a user access to a team scope, replacing what they had (the team's read-write
    /// members' and admins').
    ScopesGrant = "scopes/grant" (ScopesGrantParams) -> Empty, Access::Write(Object::Principals);
    /// Takes a user's access to a team scope away (the team's read-write members' and admins').
    ScopesRevoke = "scopes/revoke" (ScopesRevokeParams) -> ChangedResult, Access::Write(Object::Principals);
    /// Makes a team's memory writes proposals a reviewer decides, or direct again; makes a member
    /// a reviewer or not (a reviewer's or an admin's act).
    ScopesReview = "scopes/review" (ScopesReviewParams) -> Empty, Access::Write(Object::Principals);
}

/// The access rule of `method`; `None` for a method the server does not have.
pub fn access(method: &str) -> Option<Access> {
    CLIENT_METHODS.iter().find(|(name, _)| *name == method).map(|(_, access)| *access)
}

/// No params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Who the client is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientInfo {
    /// Its name.
    pub name: String,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A tool the client offers the model; the server calls it back with `tool/call`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDefinition {
    /// Its name, as the model calls it.
    pub name: String,
    /// What it does: the model chooses tools by it.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments (`{"type": "object"}` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

/// A hook the client runs; the server asks it with `hook/call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookRegistration {
    /// The event it runs at.
    pub event: crate::hooks::HookEvent,
    /// Its name, unique among the client's hooks: `hook/call` names it, and reports of its
    /// failures do (letters, digits, `-`, `_`, `.`; at most 64).
    pub name: String,
    /// For the tool events and `memory_write`: the tools it runs for, names separated by `|`, `*`
    /// matching any characters (every tool when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// How long the server waits for its answer, in milliseconds (60,000 when absent; at most
    /// 600,000); past it, the hook failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A hook that fails (no answer in time, an error, an answer that is no decision) blocks what
    /// it was told about instead of being reported and passed over.
    #[serde(default)]
    pub required: bool,
}

/// `initialize`'s params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitializeParams {
    /// The version the client speaks (the server answers with its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Who the client is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<ClientInfo>,
    /// Automatic compaction for the client's sessions (true when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact: Option<bool>,
    /// The model that writes summaries (the session's model when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_summary_model: Option<String>,
    /// The provider for new turns (the configuration's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model for new turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model's context window in tokens, when the client knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The client's own tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// The client's own lifecycle hooks: the server asks the client (`hook/call`) at each event
    /// of the sessions this connection opens, after the hooks the server runs itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRegistration>,
    /// For a network server (`--listen ws://…`): the client's project key — its normalised git
    /// remote, `.seshat/project` id, or path — under which its sessions, project memory and
    /// knowledge are filed (none: no project). A local server uses its own directory's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// For a network server: the client's project instructions (`AGENTS.md`, `CLAUDE.md`), read
    /// on the client's machine, for the system prompt; the server reads none of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<InstructionFile>,
}

/// A project instruction file a client read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InstructionFile {
    /// Its name (`AGENTS.md`).
    pub name: String,
    /// Its text.
    pub text: String,
}

/// The server's name and version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServerInfo {
    /// `seshat`.
    pub name: String,
    /// The binary's version.
    pub version: String,
}

/// What the server offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// Turns (`turn/start`, `turn/interrupt`).
    pub turns: bool,
    /// The client's own tools (`tool/call`).
    pub tools: bool,
    /// The client's own hooks (`hook/call`).
    #[serde(default)]
    pub hooks: bool,
    /// The memory methods.
    pub memory: bool,
    /// Document search.
    pub knowledge: bool,
    /// `session/compact`.
    pub compaction: bool,
}

/// `initialize`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    /// The server's protocol version ([`crate::PROTOCOL_VERSION`]).
    pub protocol_version: String,
    /// The server.
    pub server_info: ServerInfo,
    /// What it offers.
    pub capabilities: Capabilities,
}

/// `session/new`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionNewParams {
    /// A title (the first user message gives one otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The provider it records (the connection's or the server's at its first turn otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model it records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model's context window it records, in tokens (at least 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
}

/// One session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionResult {
    /// The session.
    pub session: SessionInfo,
}

/// `session/list`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionListParams {
    /// Every project's sessions, not only the server's project.
    #[serde(default)]
    pub all: bool,
    /// At most this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Also each listed session's rewound branches in force (`seshat sessions list --tree`).
    #[serde(default)]
    pub rewinds: bool,
}

/// `session/list`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionListResult {
    /// Newest first.
    pub sessions: Vec<SessionInfo>,
    /// With `rewinds`: each listed session's rewinds in force, by session id (none: absent).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub rewinds: std::collections::BTreeMap<String, Vec<crate::records::Rewind>>,
}

/// A session named by its id or a unique prefix of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionParams {
    /// The session's id, or a unique prefix.
    pub session: String,
}

/// `session/get`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionGetParams {
    /// The session's id, or a unique prefix.
    pub session: String,
    /// Include every message as written.
    #[serde(default)]
    pub full: bool,
}

/// `session/get`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionGetResult {
    /// The session.
    pub session: SessionInfo,
    /// The live view: what the next model request is built from.
    pub view: View,
    /// Every message as written (with `full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
}

/// `session/delete`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionDeleteResult {
    /// The deleted session's id.
    pub deleted: String,
}

/// `turn/start`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnStartParams {
    /// The session's id, or a unique prefix.
    pub session: String,
    /// The user's message.
    pub text: String,
    /// A key the client chose for this request (1 to 255 bytes, unique per request): sent again
    /// with the same key and text after a failure that left the client unsure whether the turn
    /// was stored, the request stores nothing twice — its stored outcome is replayed, or its
    /// unfinished turn goes on. The same key with other text is `turn_key_reused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// `turn/start`'s result, sent at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStartResult {
    /// The session's full id.
    pub session: String,
    /// The turn's number on this server, carried by its notifications.
    pub turn: u64,
}

/// `turn/interrupt`'s result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnInterruptResult {
    /// Whether a turn was running.
    pub interrupted: bool,
}

/// `session/compact`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCompactParams {
    /// The session's id, or a unique prefix.
    pub session: String,
    /// What the summary should keep or stress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Summarise everything before this message and keep it and what follows verbatim
    /// (refused, with the figures, when that would not fit the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<u64>,
    /// Say what would happen without changing anything or calling a model.
    #[serde(default)]
    pub dry_run: bool,
}

/// `session/compact`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCompactResult {
    /// What the compaction did.
    pub report: Report,
}

/// `session/fork`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionForkParams {
    /// The session's id, or a unique prefix.
    pub session: String,
    /// The last message the fork keeps (its seq); the session's last when absent. A seq inside
    /// a tool exchange moves to the exchange's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
    /// The fork's title (the parent's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// `session/fork`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionForkResult {
    /// The new session (`parent_id` and `fork_seq` name where it came from).
    pub session: SessionInfo,
    /// The parent's seq the fork's history ends at.
    pub at: u64,
    /// The seq asked for, when it fell inside a tool exchange and the fork moved to its start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<u64>,
}

/// `session/rewind`'s params: one of `to`, `last` or `undo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRewindParams {
    /// The session's id, or a unique prefix.
    pub session: String,
    /// The first message to take out of the live view (its seq).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u64>,
    /// Rewind to before the user's `last`-th-last request instead (1: the latest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<u64>,
    /// Undo the latest rewind (while no message was added after it).
    #[serde(default)]
    pub undo: bool,
}

/// `session/rewind`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionRewindResult {
    /// The first message taken out of (or, undone, given back to) the live view.
    pub from_seq: u64,
    /// The last.
    pub through_seq: u64,
    /// Compactions retracted because they summarised a rewound message (given back when undone).
    pub retracted_compactions: u64,
    /// The seq asked for, when it fell inside a tool exchange and the rewind moved to its start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<u64>,
    /// Whether this undid a rewind.
    pub undone: bool,
    /// The text of the rewound request (with `last`), for the user to edit and send again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

/// `notes/set`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesSetParams {
    /// The key (`style`).
    pub key: String,
    /// The value.
    pub value: String,
    /// Whose note (`user` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// How long it is kept, e.g. `30d` (default: the scope's, else forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// One note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoteResult {
    /// The note as stored.
    pub note: Note,
}

/// `notes/list`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesListParams {
    /// Whose notes (`user` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// `session/export`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionExportResult {
    /// The session's whole id.
    pub session: String,
    /// Its record, one JSON object a line.
    pub jsonl: String,
}

/// `session/append`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionAppendParams {
    /// The session's id, or a unique prefix.
    pub session: String,
    /// The messages, in order.
    pub messages: Vec<NewMessage>,
}

/// `session/append`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionAppendResult {
    /// The session's whole id.
    pub session: String,
    /// The seq each message was given, in order.
    pub seqs: Vec<u64>,
}

/// A message of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionSeqParams {
    /// The session's id, or a unique prefix.
    pub session: String,
    /// The message's seq.
    pub seq: u64,
}

/// `session/pins`' result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionPinsResult {
    /// The session's whole id.
    pub session: String,
    /// The pinned messages' seqs, in order.
    pub pins: Vec<u64>,
}

/// `session/pin`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionPinResult {
    /// The session's whole id.
    pub session: String,
    /// The messages this pin added (none: already pinned).
    pub pinned: Vec<u64>,
    /// Every pinned message now.
    pub pins: Vec<u64>,
}

/// `session/unpin`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionUnpinResult {
    /// The session's whole id.
    pub session: String,
    /// The messages unpinned (none: it was not pinned).
    pub unpinned: Vec<u64>,
}

/// `session/import`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionImportParams {
    /// The session's record, one JSON object a line.
    pub jsonl: String,
    /// Give the session a new id (needed when its id is already taken).
    #[serde(default)]
    pub new_id: bool,
    /// Import a session whose structure is broken instead of refusing it (see `sessions import
    /// --repair`).
    #[serde(default)]
    pub repair: bool,
}

/// What an import wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Imported {
    /// The imported session's id.
    pub id: String,
    /// Messages imported (synthetic results included).
    pub messages: u64,
    /// Tool results kept although they answer no earlier call (with `repair`).
    pub orphans: usize,
    /// Messages without parts kept (with `repair`).
    pub empty: usize,
    /// Unanswered calls given a synthetic result (with `repair`).
    pub synthetic: usize,
}

/// `session/bring_in`'s params: one session as read from another agent's files, in Seshat's terms.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionBringInParams {
    /// Whose it is: `claude-code` or `codex`.
    pub tool: String,
    /// The agent's id of the session (a subagent's: the parent's id, `/`, the agent's).
    pub source_id: String,
    /// The file it was read from, on the client's machine.
    pub file: String,
    /// The project key the session is filed under (the client's, for the agent's directory).
    pub project: String,
    /// A title, when the agent wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The provider, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model's window, when the agent recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Messages and the agent's compactions, in order.
    pub items: Vec<ForeignItem>,
    /// The agent versions that wrote the records.
    #[serde(default)]
    pub versions: Vec<String>,
    /// Records not brought in, counted by what they were.
    #[serde(default)]
    pub skipped: std::collections::BTreeMap<String, usize>,
}

/// One thing of another agent's session, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ForeignItem {
    /// A message, with when it was written (unix milliseconds).
    Message {
        /// The message.
        message: NewMessage,
        /// When (unix milliseconds).
        at: i64,
    },
    /// The agent compacted its context here: everything before is replaced by its summary.
    Compaction {
        /// The agent's summary.
        summary: String,
        /// Whether the user asked for it.
        trigger: crate::records::CompactionTrigger,
        /// The context's size before, when the agent recorded it.
        tokens_before: u64,
        /// When (unix milliseconds).
        created_at: i64,
    },
}

/// What bringing in another agent's session wrote (`seshat sessions import --from … --json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BroughtIn {
    /// Whose session: `claude-code` or `codex`.
    pub tool: String,
    /// The agent's id of it.
    pub source_id: String,
    /// The file read.
    pub file: String,
    /// The Seshat session.
    pub session: String,
    /// `imported` (new), `appended` (the file grew), `forked` (the file grew while the session
    /// went on in Seshat: what the file gained went into a fork where the two diverge) or
    /// `unchanged`.
    pub outcome: String,
    /// With `forked`: the session forked from and the last message both share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<(String, u64)>,
    /// Messages written now.
    pub messages: usize,
    /// Compaction records written now.
    pub compactions: usize,
    /// Tool results whose call is nowhere before them.
    pub orphans: usize,
    /// Calls never answered, given a synthetic error result.
    pub synthetic: usize,
    /// Records not brought in, by what they were.
    pub skipped: std::collections::BTreeMap<String, usize>,
    /// The agent versions that wrote the file.
    pub versions: Vec<String>,
}

/// `history/search`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistorySearchParams {
    /// Words to look for (case and accents ignored, word forms matched); an identifier such as
    /// `TF123-K45` is matched exactly and ranked first.
    pub query: String,
    /// Search every one of the caller's sessions, not only the connection's project's.
    #[serde(default)]
    pub all: bool,
    /// At most this many hits (20 when absent, at most 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// `history/search`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistorySearchResult {
    /// The messages found, best first.
    pub hits: Vec<HistoryHit>,
}

/// One message a history search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryHit {
    /// Its session's id.
    pub session: String,
    /// Its seq in the session.
    pub seq: u64,
    /// Who wrote it.
    pub role: Role,
    /// When it was written, in Unix milliseconds.
    pub created_at: i64,
    /// Text around the match, the matched words between `«` and `»`.
    pub snippet: String,
}

/// `notes/search`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesSearchParams {
    /// The words to look for.
    pub query: String,
    /// One scope (every scope the server's project reads when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// Notes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NotesResult {
    /// The notes, most recently set first.
    pub notes: Vec<Note>,
}

/// `memory/context`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryContextParams {
    /// The budget in tokens (the server's `[memory] context_tokens` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
}

/// `memory/deletions`' result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryDeletionsResult {
    /// The deletions that can be restored, newest first.
    pub deletions: Vec<Deletion>,
}

/// `memory/restore`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRestoreParams {
    /// The deletion's id, as `memory/deletions` lists it.
    pub id: i64,
}

/// `memory/clear`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryClearParams {
    /// The scope to clear (no default: a clear names what it removes).
    pub scope: Scope,
}

/// `memory/clear`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryClearResult {
    /// The scope cleared.
    pub scope: Scope,
    /// How many records (notes, entities, observations, relations) it held.
    pub records: u64,
}

/// `memory/history`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryHistoryParams {
    /// The entity's name (any case).
    pub name: String,
    /// Where it lives (looked up as the memory tools look names up when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// `memory/history`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryHistoryResult {
    /// The entity's name as stored.
    pub name: String,
    /// Where it lives.
    pub scope: Scope,
    /// Its versions, oldest first.
    pub versions: Vec<EntityVersion>,
}

/// `memory/revert`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRevertParams {
    /// The entity's name (any case).
    pub name: String,
    /// The version to bring back, as `memory/history` numbers them.
    pub to: u32,
    /// Where it lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// `memory/revert`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryRevertResult {
    /// The version the revert made.
    pub version: u32,
    /// The entity as it now is.
    pub entity: crate::memory::Entity,
}

/// `memory/undo`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryUndoParams {
    /// The session whose agent's writes are taken back.
    pub session: String,
}

/// `memory/proposals`' params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryProposalsParams {
    /// Only this team's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Decided ones too (default: the pending only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

/// `memory/proposals`' result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryProposalsResult {
    /// The proposals, oldest first.
    pub proposals: Vec<Proposal>,
}

/// `memory/approve`'s and `memory/reject`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryDecideParams {
    /// The proposal, as `memory/proposals` lists it.
    pub id: i64,
    /// Why (kept with a rejection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `scopes/review`'s params: what to change of a team's review (one or both).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopesReviewParams {
    /// The team.
    pub team: String,
    /// Whether members' writes to its memory become proposals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// A member to make a reviewer (with `reviewer`) …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// … or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<bool>,
}

/// `knowledge/search`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeSearchParams {
    /// What to look for.
    pub query: String,
    /// At most this many hits (10 when absent, at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// `knowledge/add`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeAddParams {
    /// Whose documents they are (`project` when absent: the connection's project's; `user`,
    /// `cross`, `team:NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The documents, each at most 4 MiB of UTF-8 text.
    pub documents: Vec<DocumentText>,
}

/// One document's text, as the client read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentText {
    /// Its path on the client's machine (what searches show; its extension says how it is cut).
    pub path: String,
    /// Its text.
    pub text: String,
}

/// `knowledge/add`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KnowledgeAddResult {
    /// Documents indexed (new, or their content changed).
    pub indexed: u64,
    /// Documents already indexed with this content.
    pub unchanged: u64,
    /// Chunks written.
    pub chunks: u64,
    /// Documents not indexed, each with why.
    pub skipped: Vec<SkippedDocument>,
}

/// A document `knowledge/add` did not index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkippedDocument {
    /// Its path.
    pub path: String,
    /// Why.
    pub why: String,
}

/// `knowledge/read`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeReadParams {
    /// The chunk's id, as a search returned it.
    pub id: i64,
    /// The byte to read on from (0 when absent): what a cut answer's note gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// `knowledge/read`'s result: a chunk, or as much of it as one answer holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KnowledgeChunk {
    /// The chunk's id.
    pub id: i64,
    /// The document's path.
    pub file: String,
    /// Its lines in the document, `start-end`.
    pub lines: String,
    /// The heading it sits under (empty when none).
    pub heading: String,
    /// Its text from `offset`.
    pub text: String,
    /// Where the text was cut and how to read on, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `config/get`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigGetResult {
    /// The server's project key.
    pub project: String,
    /// The database file.
    pub database: String,
    /// The configured provider.
    pub provider: Option<String>,
    /// The configured model.
    pub model: Option<String>,
    /// Whether automatic compaction is on.
    pub auto_compact: bool,
    /// The model that writes summaries, when not the session's.
    pub compact_summary_model: Option<String>,
    /// The configured embedder.
    pub embedder: Option<String>,
    /// The providers a client can name (`initialize`'s `provider`): those configured and the
    /// provider plugins installed.
    #[serde(default)]
    pub providers: Vec<String>,
}

/// The server's own request to the client: run one of the client's tools.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall;

impl Method for ToolCall {
    const NAME: &'static str = "tool/call";
    const ACCESS: Access = Access::Connection;
    type Params = ToolCallParams;
    type Result = ToolCallResult;
}

/// `tool/call`'s params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallParams {
    /// The session whose turn calls it.
    pub session: String,
    /// The tool.
    pub name: String,
    /// The model's arguments.
    pub arguments: Value,
}

/// The client's answer to `tool/call`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallResult {
    /// What the model reads.
    pub content: String,
    /// Whether the tool failed (the model reads `content` as its error).
    #[serde(default)]
    pub is_error: bool,
}

/// The server's own request to the client: run one of the client's hooks. The answer is a
/// [`crate::hooks::HookDecision`] (`{}` goes on).
#[derive(Debug, Clone, Copy)]
pub struct HookCall;

impl Method for HookCall {
    const NAME: &'static str = "hook/call";
    const ACCESS: Access = Access::Connection;
    type Params = HookCallParams;
    type Result = crate::hooks::HookDecision;
}

/// `hook/call`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookCallParams {
    /// The hook, by the name the client registered.
    pub name: String,
    /// What happened: the payload a command hook reads.
    pub payload: crate::hooks::HookPayload,
}

/// `users/list`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsersListResult {
    /// The users, by name.
    pub users: Vec<UserInfo>,
}

/// `users/add`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsersAddParams {
    /// Letters, digits, `-`, `_`, `.`; at most 64.
    pub name: String,
    /// An admin: manages users, tokens and team scopes.
    #[serde(default)]
    pub admin: bool,
}

/// `users/set`'s params: what to change (at least one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsersSetParams {
    /// The user.
    pub name: String,
    /// Disable (`true`) or enable (`false`) them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Make them an admin (`true`) or not (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<bool>,
}

/// `users/rename`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsersRenameParams {
    /// The user's name now.
    pub name: String,
    /// Their new name.
    pub new_name: String,
}

/// `users/remove`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsersRemoveParams {
    /// The user.
    pub name: String,
    /// Delete what they own with them (else a user who owns anything is refused).
    #[serde(default)]
    pub purge: bool,
}

/// Whether a change changed anything (`false`: it was so already).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangedResult {
    /// It changed something.
    pub changed: bool,
}

/// `tokens/list`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokensListParams {
    /// Only this user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// `tokens/list`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokensListResult {
    /// The tokens, oldest first.
    pub tokens: Vec<TokenInfo>,
}

/// `tokens/create`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokensCreateParams {
    /// The user it acts for.
    pub user: String,
    /// It may read but write nothing.
    #[serde(default)]
    pub read_only: bool,
    /// When it stops working (Unix milliseconds); never when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Allow a token for `local`, the store's operator (refused without it).
    #[serde(default)]
    pub operator: bool,
}

/// A token named by its id (the 16 hex digits after `seshat_`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenParams {
    /// The token's id.
    pub id: String,
}

/// `scopes/list`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ScopesListResult {
    /// The grants of the caller's teams, by team then user.
    pub grants: Vec<Grant>,
}

/// `scopes/create`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopesCreateParams {
    /// The team's name: letters, digits, `-`, `_`, `.`; at most 64.
    pub team: String,
}

/// `scopes/grant`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopesGrantParams {
    /// The team.
    pub team: String,
    /// The user.
    pub user: String,
    /// What they may do there.
    pub access: Grants,
}

/// `scopes/revoke`'s params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopesRevokeParams {
    /// The team.
    pub team: String,
    /// The user.
    pub user: String,
}
