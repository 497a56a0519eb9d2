//! `config.toml`: the user's settings, overridable per project by `<project>/.seshat/config.toml`.
//!
//! Swapping a policy is one line here, e.g. `trimmer = "my-trimmer"` under `[plugins]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The kinds of plugin, one WIT world each (what `[plugins]` selects and limits; the plugin
/// runtime loads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginKind {
    /// Micro-compaction policy.
    Trimmer,
    /// Summary policy.
    Summariser,
    /// LLM provider adapter.
    Provider,
    /// Embeddings API adapter (0.2.0).
    Embedder,
    /// Lifecycle hook (0.4.0): told a moment of a session's life, answers go on or block (chosen
    /// per event by `[[hooks.<event>]] plugin`, not by `[plugins]`).
    Hook,
    /// Memory extractor (0.4.0): reads a session's new messages and proposes what long-term
    /// memory should keep (chosen by `[memory] extract`, not by `[plugins]`).
    Extractor,
}

impl PluginKind {
    /// All kinds.
    pub const ALL: [PluginKind; 6] = [
        PluginKind::Trimmer,
        PluginKind::Summariser,
        PluginKind::Provider,
        PluginKind::Embedder,
        PluginKind::Hook,
        PluginKind::Extractor,
    ];

    /// The kind's name (also its WIT world).
    pub fn as_str(self) -> &'static str {
        match self {
            PluginKind::Trimmer => "trimmer",
            PluginKind::Summariser => "summariser",
            PluginKind::Provider => "provider",
            PluginKind::Embedder => "embedder",
            PluginKind::Hook => "hook",
            PluginKind::Extractor => "extractor",
        }
    }
}

impl std::fmt::Display for PluginKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Limits requested by a manifest or configured by the user; unset fields fall through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRequest {
    /// Linear memory cap in MiB.
    pub memory_mib: Option<u64>,
    /// Guest time per call in milliseconds (time inside host functions does not count).
    pub time_ms: Option<u64>,
    /// Summarisers: model calls per compaction.
    pub complete_calls: Option<u32>,
    /// Summarisers: the largest `max-tokens` a model call may ask for.
    pub complete_max_tokens: Option<u32>,
}

/// The compiled-plugin cache's default size cap: the built-in plugins' entries take about 15 MB;
/// a Python or JavaScript plugin's about 40 MB.
pub const PLUGIN_CACHE_BYTES: u64 = 512 << 20;

/// File name of the configuration.
pub const FILE: &str = "config.toml";

/// An invalid configuration file.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration {}: {message}", path.display())]
pub struct Error {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// The merged configuration.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Plugin selection and limits.
    #[serde(default)]
    pub plugins: PluginsConfig,
    /// Long-term memory.
    #[serde(default)]
    pub memory: MemoryConfig,
    /// `seshat chat`'s defaults.
    #[serde(default)]
    pub chat: ChatConfig,
    /// How summaries are written.
    #[serde(default)]
    pub compaction: CompactionConfig,
    /// Documents, embeddings and retrieval.
    #[serde(default)]
    pub knowledge: KnowledgeConfig,
    /// Provider settings by name: `[providers.anthropic]`, `[providers.ollama]` (with
    /// `plugin = "openai"`), …
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// What the store reads from outside.
    #[serde(default)]
    pub store: StoreConfig,
    /// `seshat serve`'s limits.
    #[serde(default)]
    pub serve: ServeConfig,
    /// What is redacted before it is stored.
    #[serde(default)]
    pub redaction: RedactionConfig,
    /// How long sessions and memory are kept.
    #[serde(default)]
    pub retention: RetentionConfig,
    /// Commands run at moments of a session's life, per event: `[[hooks.pre_tool]]`. The user's
    /// file's here; a project's file's are kept apart ([`Config::project_hooks`]): they run only
    /// once the user trusts that file.
    #[serde(default)]
    pub hooks: BTreeMap<HookEvent, Vec<HookConfig>>,
    /// The hooks a project's `.seshat/config.toml` declares, with the file and its digest.
    #[serde(skip)]
    pub project_hooks: Option<ProjectHooks>,
}

pub use seshat_protocol::hooks::HookEvent;

/// `[[hooks.<event>]]`: a command or a hook plugin run at an event of a session's life. A command
/// reads the event's payload as JSON on its standard input and answers with a JSON decision on its
/// standard output, or by its exit status (0 goes on, 2 blocks with its standard error as the
/// reason); a plugin is told the same payload and returns the same decision.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// The command, run by `sh -c` in the project's directory (or `plugin`).
    pub command: Option<String>,
    /// The id of an installed hook plugin (or `command`); its time and memory are its limits
    /// (`[plugins.limits.hook]`), not `timeout`.
    pub plugin: Option<String>,
    /// For the tool events and `memory_write`: the tools it runs for, names separated by `|`, `*`
    /// matching any characters (`"bash|edit_*"`; default: every tool).
    pub matcher: Option<String>,
    /// How long it may run (`"10s"`, `"500ms"`, `"2m"`; default 60 s): past it, it is killed.
    pub timeout: Option<String>,
    /// A hook that fails (times out, crashes, answers garbage) blocks what it was told about,
    /// instead of being reported and passed over.
    #[serde(default)]
    pub required: bool,
}

/// The hooks of a project's configuration file, which run only once the user trusts the file as
/// it is (`seshat hooks trust`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectHooks {
    /// The file.
    pub path: PathBuf,
    /// Its contents' SHA-256, in hex: a changed file must be trusted again.
    pub digest: String,
    /// Its hooks, per event.
    pub hooks: BTreeMap<HookEvent, Vec<HookConfig>>,
}

/// The SHA-256 of `bytes`, in hex.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `[retention]`: how long what is stored is kept (ages such as `"90d"`, `"12h"`, `"2w"`; unset:
/// forever). The user's configuration only (or a service's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionConfig {
    /// Sessions not written to for longer are purged.
    pub sessions: Option<String>,
    /// The caller's own memory (user, cross and project scopes) not changed for longer is purged.
    pub memory: Option<String>,
    /// How often a service purges (default `"1h"`).
    pub every: Option<String>,
    /// Per project key, overriding the two above: `[retention.projects."github.com/acme/app"]`.
    #[serde(default)]
    pub projects: BTreeMap<String, RetentionRule>,
    /// A team scope's memory: `[retention.teams.infra] memory = "180d"`.
    #[serde(default)]
    pub teams: BTreeMap<String, TeamRetention>,
}

/// `[retention.teams.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamRetention {
    /// The team's memory not changed for longer is purged.
    pub memory: Option<String>,
}

/// `[retention.projects.KEY]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionRule {
    /// Sessions of the project.
    pub sessions: Option<String>,
    /// Project-scope memory of the project.
    pub memory: Option<String>,
}

/// An age such as `90d`, `12h`, `30m`, `45s`, `500ms` or `2w`, in milliseconds; what is wrong
/// otherwise.
pub fn parse_age(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_ms: i64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return Err(format!("`{text}` is not an age: write a number and a unit (ms, s, m, h, d, w), like 90d")),
    };
    let n: i64 = number
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{text}` is not an age: the number must be a whole number above 0, like 90d"))?;
    n.checked_mul(unit_ms).ok_or_else(|| format!("`{text}` is too long an age"))
}

/// `[retention]` read: ages in milliseconds (`None`: kept forever).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// Sessions, unless their project says otherwise.
    pub sessions: Option<i64>,
    /// The caller's own memory, unless its project says otherwise.
    pub memory: Option<i64>,
    /// Per project key: (sessions, memory), each falling back to the above.
    pub projects: BTreeMap<String, (Option<i64>, Option<i64>)>,
    /// Per team: how long its memory is kept.
    pub teams: BTreeMap<String, i64>,
}

impl Retention {
    /// How long `project`'s sessions are kept.
    pub fn sessions_for(&self, project: &str) -> Option<i64> {
        self.projects.get(project).and_then(|p| p.0).or(self.sessions)
    }

    /// How long memory filed under `project` (empty: the user and cross scopes) is kept.
    pub fn memory_for(&self, project: &str) -> Option<i64> {
        self.projects.get(project).and_then(|p| p.1).or(self.memory)
    }

    /// Whether anything is ever purged.
    pub fn is_set(&self) -> bool {
        self.sessions.is_some()
            || self.memory.is_some()
            || self.projects.values().any(|p| p.0.or(p.1).is_some())
            || !self.teams.is_empty()
    }
}

impl RetentionConfig {
    /// The ages, in milliseconds.
    pub fn retention(&self) -> Result<Retention, String> {
        let age = |key: &str, v: &Option<String>| -> Result<Option<i64>, String> {
            v.as_deref().map(|t| parse_age(t).map_err(|e| format!("{key}: {e}"))).transpose()
        };
        let mut out = Retention {
            sessions: age("sessions", &self.sessions)?,
            memory: age("memory", &self.memory)?,
            ..Retention::default()
        };
        for (key, rule) in &self.projects {
            let at = format!("projects.\"{key}\"");
            let ages = (age(&format!("{at}.sessions"), &rule.sessions)?, age(&format!("{at}.memory"), &rule.memory)?);
            out.projects.insert(key.clone(), ages);
        }
        for (team, rule) in &self.teams {
            if let Some(age) = age(&format!("teams.{team}.memory"), &rule.memory)? {
                out.teams.insert(team.clone(), age);
            }
        }
        Ok(out)
    }

    /// How often a service purges.
    pub fn every(&self) -> std::time::Duration {
        let ms = self.every.as_deref().and_then(|e| parse_age(e).ok()).unwrap_or(3_600_000);
        std::time::Duration::from_millis(ms.unsigned_abs())
    }
}

/// `[redaction]`: credentials replaced by placeholders before anything is stored, indexed,
/// embedded or sent to a summary model (on unless turned off).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    /// Redact at all (default true). `[redaction]` is the user's configuration's only.
    pub enabled: Option<bool>,
    /// Credentials of the user's own kinds: `[[redaction.patterns]] id = "…", regex = "…"` (the
    /// first group, when there is one, is the secret; the id lower-case letters, digits and `-`).
    #[serde(default)]
    pub patterns: Vec<PatternConfig>,
    /// Regular expressions for what is found but is no secret (a documented example key), left
    /// as it is. The user's configuration only.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Project keys whose sessions, memory and documents are stored unredacted. The user's
    /// configuration only.
    #[serde(default)]
    pub off_projects: Vec<String>,
}

/// `[[redaction.patterns]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternConfig {
    /// The rule's id, shown in placeholders.
    pub id: String,
    /// The regular expression.
    pub regex: String,
}

impl RedactionConfig {
    /// What the settings describe.
    pub fn spec(&self) -> crate::redaction::Spec {
        let mut spec = crate::redaction::Spec::on();
        spec.enabled = self.enabled.unwrap_or(true);
        spec.patterns = self
            .patterns
            .iter()
            .map(|p| crate::redaction::Pattern { id: p.id.clone(), regex: p.regex.clone() })
            .collect();
        spec.allow.clone_from(&self.allow);
        spec.off_projects.clone_from(&self.off_projects);
        spec
    }

    /// The policy the settings describe (checked when the file was read).
    pub fn policy(&self) -> Result<crate::redaction::Policy, crate::redaction::Error> {
        crate::redaction::Policy::new(&self.spec())
    }
}

/// `[serve]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// How much a client may leave unread (answers and events queued for it) before it is
    /// disconnected, in MiB (default 64).
    pub max_unread_mib: Option<u64>,
    /// `--listen ws://…`: the largest message a client may send, in MiB (default 16); a longer
    /// one is refused whole and its connection closed.
    pub max_message_mib: Option<u64>,
    /// `--listen ws://…`: the most clients connected at once (default 256); one more is refused
    /// (HTTP 503) before its upgrade.
    pub max_connections: Option<u32>,
    /// `--listen ws://…`: the most turns one user runs at once, over all their connections
    /// (default 4); one more is refused with `too_many_turns`.
    pub max_turns_per_user: Option<u32>,
    /// The most sessions one network user keeps open at once — each with a worker and a
    /// database connection — over all their connections (default 32); a turn in one more is
    /// refused with `too_many_sessions` (a connection first closes its own idle one).
    pub max_sessions_per_user: Option<u32>,
    /// The most sessions the server keeps open at once, for every client (default 512).
    pub max_workers: Option<u32>,
    /// The most turns and compactions running at once, for every client (default 64): each runs
    /// on a thread of a pool this bounds, and one more waits for a thread to be free.
    pub turn_workers: Option<u32>,
    /// `--listen ws://…`: the most connections one user holds at once (default 16); one more is
    /// refused (HTTP 503, `too_many_connections`) while other users go on.
    pub max_connections_per_user: Option<u32>,
    /// `--listen ws://…`: the most connections from one address still in their handshake
    /// (default 16): past it a new one from that address is closed at once, so slow or silent
    /// sockets never take the slots of users who prove who they are.
    pub max_handshakes_per_address: Option<u32>,
    /// `--listen ws://…`: the most connections still in their handshake, from every address
    /// (default 256): past it the oldest is dropped to make room, so a real client, whose
    /// handshake takes milliseconds, gets in while slow sockets are dropped.
    pub max_handshakes: Option<u32>,
    /// `--listen ws://…`: seconds a client has from connecting to finishing its TLS and WebSocket
    /// handshakes (default 10).
    pub handshake_timeout_secs: Option<u64>,
    /// `--listen ws://…`: seconds a connected client may stay silent — not even answering the
    /// server's pings — before it is dropped (default 90).
    pub idle_timeout_secs: Option<u64>,
    /// `--listen ws://…`: seconds between the server's pings (default 30).
    pub keepalive_secs: Option<u64>,
    /// `--listen ws://…`: seconds a stop signal (SIGTERM) lets running turns finish before they
    /// are stored as interrupted (default 30).
    pub grace_secs: Option<u64>,
    /// `--listen ws://…`: an address (`HOST:PORT`) of its own for `/metrics` (with `/healthz` and
    /// `/readyz`), plain HTTP, so it can be kept off the clients' network; `/metrics` is then no
    /// longer answered on the clients' listener. Unset: all three on the clients' listener.
    pub metrics_listen: Option<String>,
    /// A service file only (`seshat serve --config FILE`): where to serve, as `--listen` takes it
    /// (`wss://HOST:PORT`, `ws://HOST:PORT`); `--listen` wins over it.
    pub listen: Option<String>,
    /// A service file only: the TLS certificate chain (PEM) for a `wss://` address, relative to
    /// the file; read again on SIGHUP.
    pub tls_cert: Option<PathBuf>,
    /// A service file only: the TLS private key (PEM) for a `wss://` address, relative to the
    /// file; read again on SIGHUP.
    pub tls_key: Option<PathBuf>,
    /// A service file only: allow a plain `ws://` address beyond loopback (behind a proxy that
    /// encrypts).
    pub insecure_listen: Option<bool>,
}

impl ServeConfig {
    /// The unread limit in bytes.
    pub fn max_unread_bytes(&self) -> usize {
        usize::try_from(self.max_unread_mib.unwrap_or(64).saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }

    /// The largest message a network client may send, in bytes.
    pub fn max_message_bytes(&self) -> usize {
        usize::try_from(self.max_message_mib.unwrap_or(16).saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }

    /// [`ServeConfig::max_connections`] or its default.
    pub fn max_connections(&self) -> usize {
        self.max_connections.unwrap_or(256) as usize
    }

    /// [`ServeConfig::max_turns_per_user`] or its default.
    pub fn max_turns_per_user(&self) -> usize {
        self.max_turns_per_user.unwrap_or(4) as usize
    }

    /// [`ServeConfig::max_sessions_per_user`] or its default.
    pub fn max_sessions_per_user(&self) -> usize {
        self.max_sessions_per_user.unwrap_or(32) as usize
    }

    /// [`ServeConfig::max_workers`] or its default.
    pub fn max_workers(&self) -> usize {
        self.max_workers.unwrap_or(512) as usize
    }

    /// [`ServeConfig::turn_workers`] or its default.
    pub fn turn_workers(&self) -> usize {
        self.turn_workers.unwrap_or(64).max(1) as usize
    }

    /// [`ServeConfig::max_connections_per_user`] or its default.
    pub fn max_connections_per_user(&self) -> usize {
        self.max_connections_per_user.unwrap_or(16) as usize
    }

    /// [`ServeConfig::max_handshakes_per_address`] or its default.
    pub fn max_handshakes_per_address(&self) -> usize {
        self.max_handshakes_per_address.unwrap_or(16) as usize
    }

    /// [`ServeConfig::max_handshakes`] or its default.
    pub fn max_handshakes(&self) -> usize {
        self.max_handshakes.unwrap_or(256) as usize
    }

    /// [`ServeConfig::handshake_timeout_secs`] or its default.
    pub fn handshake_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.handshake_timeout_secs.unwrap_or(10))
    }

    /// [`ServeConfig::idle_timeout_secs`] or its default.
    pub fn idle_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.idle_timeout_secs.unwrap_or(90))
    }

    /// [`ServeConfig::keepalive_secs`] or its default.
    pub fn keepalive(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.keepalive_secs.unwrap_or(30).max(1))
    }

    /// [`ServeConfig::grace_secs`] or its default.
    pub fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.grace_secs.unwrap_or(30))
    }
}

/// `[store]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Where the store is: a `postgres://` URL for a shared PostgreSQL database, a `sqlite:` URL
    /// or a path for a SQLite file (default: `seshat.db` in the data directory). Read from the
    /// user's configuration only; a project's configuration may not set it.
    pub url: Option<String>,
    /// The largest record (one line of an export or of another agent's session file) an import
    /// reads, in MiB (default 256).
    pub max_record_mib: Option<u64>,
}

impl StoreConfig {
    /// The record limit in bytes, when the user set one (the reader's default otherwise).
    pub fn max_record_bytes(&self) -> Option<usize> {
        self.max_record_mib.map(|m| usize::try_from(m.saturating_mul(1 << 20)).unwrap_or(usize::MAX))
    }
}

/// `[chat]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatConfig {
    /// The model (default: the provider's first known model).
    pub model: Option<String>,
    /// Compact automatically (default true in the CLI).
    pub auto_compact: Option<bool>,
    /// The model that writes summaries (default: the session's model).
    pub summary_model: Option<String>,
    /// Most model calls in one turn of the agent loop (default 25).
    pub max_iterations: Option<u32>,
    /// Largest answer in tokens (default: the model's maximum, at most 16,384).
    pub max_output_tokens: Option<u32>,
    /// A file replacing Seshat's own system prompt.
    pub system_prompt_file: Option<PathBuf>,
    /// Read the project's `AGENTS.md` and `CLAUDE.md` into the system prompt (default true).
    pub project_instructions: Option<bool>,
    /// Which tools the model is offered: `false` for none, or a list of names (then kept even on
    /// small windows). Default: every tool, the least essential left out first when the window is
    /// too small for them all.
    pub tools: Option<ToolChoice>,
}

/// `[compaction]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// What every compaction is told to keep or stress, beside the summary prompt.
    pub instructions: Option<String>,
    /// A file whose text replaces the summariser's prompt (the instructions still apply).
    pub prompt_file: Option<PathBuf>,
    /// How a summary is asked of the session's own model: `shared_prefix` (the default: the
    /// conversation as the chat sends it, the instruction after it, so the provider's prompt cache
    /// serves it) or `separate` (a transcript of what it replaces on its own, as for another
    /// summary model).
    pub summary_request: Option<seshat_protocol::turn::SummaryRequestKind>,
    /// Write summaries in the background (default true): past the early mark the summary is
    /// written while the session goes on and swapped in between model calls; a turn waits for it
    /// only when its request would not fit the window.
    pub background: Option<bool>,
    /// The early mark, in percent of the threshold (default 85; from 1 to 100).
    pub early_mark_percent: Option<u64>,
    /// After this many seconds idle, an interactive session past the idle mark is compacted in
    /// the background, while the provider's prompt cache still holds its prefix (default 240,
    /// under the five minutes a cache lives; 0 turns it off).
    pub idle_after_secs: Option<u64>,
    /// The idle mark, in percent of the threshold (default 70; from 1 to 100, at most the early
    /// mark).
    pub idle_above_percent: Option<u64>,
    /// After a summary written in the background is swapped in between turns, fill the provider's
    /// prompt cache with the compacted conversation (a request for one token), so the next turn
    /// does not read it cold: `local` (the default: only a server on this machine or its network,
    /// whose cache costs nothing), `always` (a hosted provider too: its cache write is billed) or
    /// `off`.
    pub warm_cache: Option<WarmCache>,
}

/// When the prompt cache is filled after a summary is swapped in between turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WarmCache {
    /// Only for a server on this machine or its own network.
    #[default]
    Local,
    /// For every provider.
    Always,
    /// Never.
    Off,
}

impl CompactionConfig {
    /// The early mark in percent of the threshold.
    pub fn early_mark_percent(&self) -> u64 {
        self.early_mark_percent.unwrap_or(DEFAULT_EARLY_MARK_PERCENT)
    }

    /// The idle mark in percent of the threshold.
    pub fn idle_above_percent(&self) -> u64 {
        self.idle_above_percent.unwrap_or(DEFAULT_IDLE_ABOVE_PERCENT)
    }

    /// How long a session is idle before it is compacted, when it is.
    pub fn idle_after(&self) -> Option<std::time::Duration> {
        Some(self.idle_after_secs.unwrap_or(DEFAULT_IDLE_AFTER_SECS))
            .filter(|&s| s > 0)
            .map(std::time::Duration::from_secs)
    }
}

/// The early mark by default, in percent of the threshold.
const DEFAULT_EARLY_MARK_PERCENT: u64 = 85;

/// The idle mark by default, in percent of the threshold.
const DEFAULT_IDLE_ABOVE_PERCENT: u64 = 70;

/// Seconds idle before an interactive session is compacted: under the five minutes Anthropic's
/// and OpenAI's prompt caches live by default.
const DEFAULT_IDLE_AFTER_SECS: u64 = 240;

/// `[chat] tools`: `false` (no tools), `true` (the default set) or a list of tool names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `true`: every tool; `false`: none.
    All(bool),
    /// Exactly these (by the name the model sees, e.g. `memory_search_nodes`).
    Only(Vec<String>),
}

/// `[providers.<name>]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The provider plugin's id (default: the section's name).
    pub plugin: Option<String>,
    /// The API's base URL (default: the plugin's, or `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`).
    pub base_url: Option<String>,
    /// The environment variable holding the key (default: the plugin's convention).
    pub api_key_env: Option<String>,
    /// Seconds to wait for a connection (default 10).
    pub connect_timeout_secs: Option<u64>,
    /// Seconds to wait for the first byte of an answer (default 300: thinking models are slow).
    pub first_byte_timeout_secs: Option<u64>,
    /// Seconds a stream may stay silent between chunks (default 120).
    pub idle_timeout_secs: Option<u64>,
    /// Retries on 429, 5xx and connection errors, before the first streamed byte (default 3).
    pub max_retries: Option<u32>,
    /// Largest response accepted, in MiB (default 32).
    pub max_response_mib: Option<u64>,
    /// Seconds to wait for the server's list of its models when no model is named (default 60:
    /// a local server busy with another client answers late).
    pub models_timeout_secs: Option<u64>,
    /// Models to add or override: `[providers.ollama.models."qwen3:8b"]`.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
}

/// `[providers.<name>.models.<id>]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// Largest output in tokens.
    pub max_output_tokens: Option<u64>,
    /// What the model costs, to say what a compaction's summary cost:
    /// `price = { input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }`.
    pub price: Option<Price>,
}

pub use seshat_protocol::conversation::Price;

impl ModelConfig {
    /// Whether it sizes the model (a window or an answer's room), beside pricing it.
    pub fn sizes(&self) -> bool {
        self.context_window.is_some() || self.max_output_tokens.is_some()
    }
}

impl Config {
    /// The configured price of `model`, under any provider (the first found), when every figure of
    /// it is a finite number, 0 or more.
    pub fn price_of(&self, model: &str) -> Option<Price> {
        let valid = |p: &Price| {
            [Some(p.input), Some(p.output), p.cache_read, p.cache_write]
                .into_iter()
                .flatten()
                .all(|x| x.is_finite() && x >= 0.0)
        };
        self.providers.values().filter_map(|p| p.models.get(model)).find_map(|m| m.price).filter(valid)
    }
}

/// `[memory]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Token budget of the memory context given to a session at its start (default 2,000).
    pub context_tokens: Option<usize>,
    /// How long memory written in a scope is kept when the write names no time:
    /// `[memory.ttl] project = "90d"`, `"team:infra" = "30d"` (unset: until deleted).
    #[serde(default)]
    pub ttl: BTreeMap<String, String>,
    /// The extractor plugin that reads each session and writes what the user stated as lasting
    /// (`"extractor"`, rule-based; `"extractor-model"`, the session's model under the same rules;
    /// or an installed one). Unset: nothing is written unless the agent calls a memory tool.
    pub extract: Option<String>,
    /// When the extractor reads: after every turn (`"turn"`, the default) or when the session's
    /// agent closes (`"session_end"`: one call for everything not read yet).
    pub extract_at: Option<ExtractAt>,
}

/// When `[memory] extract` reads a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtractAt {
    /// After every turn.
    #[default]
    Turn,
    /// When the session's agent closes.
    SessionEnd,
}

/// `[knowledge]`: the embedder's model and server, what is embedded, and how rankings are fused.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeConfig {
    /// The embedding model (default: the embedder plugin's first).
    pub model: Option<String>,
    /// The embeddings API's base URL (default: the plugin's), e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    /// The environment variable holding the key (default: the plugin's convention).
    pub api_key_env: Option<String>,
    /// The vector length to ask for, for models that can shorten theirs (and to expect).
    pub dimensions: Option<u32>,
    /// The longest input the model takes, in tokens, for a model the plugin does not know.
    pub max_input_tokens: Option<u32>,
    /// Seconds to wait for an answer (default 120).
    pub timeout_secs: Option<u64>,
    /// Retries on 429, 5xx and connection errors (default 3).
    pub max_retries: Option<u32>,
    /// Embed every stored message too, so history search is hybrid (default false: it sends
    /// every message's text to the embedder).
    pub embed_history: Option<bool>,
    /// Embed memory entities too, so memory search is hybrid (default false).
    pub embed_memory: Option<bool>,
    /// Reciprocal rank fusion's `k` (default 60).
    pub rrf_k: Option<f64>,
    /// The weight of the lexical (bm25) ranking in the fusion (default 1).
    pub lexical_weight: Option<f64>,
    /// The weight of the vector ranking in the fusion (default 1).
    pub vector_weight: Option<f64>,
}

/// `[plugins]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// The trimmer's id (default `trimmer`).
    pub trimmer: Option<String>,
    /// The summariser's id (default `summariser`).
    pub summariser: Option<String>,
    /// The provider's id.
    pub provider: Option<String>,
    /// The embedder's id (default: none, and search is lexical), e.g. `embedder-openai`.
    pub embedder: Option<String>,
    /// Limit overrides per kind: `[plugins.limits.trimmer]`.
    #[serde(default)]
    pub limits: BTreeMap<PluginKind, LimitRequest>,
    /// Options handed to the selected plugin of a kind as a JSON object: `[plugins.options.trimmer]`.
    #[serde(default)]
    pub options: BTreeMap<PluginKind, toml::Table>,
    /// The compiled-plugin cache's size cap in MiB (default 512); the least recently used entries
    /// go first.
    pub cache_mib: Option<u64>,
}

impl Config {
    /// Reads the user's file (in `config_dir`) and the project's, the project's values winning.
    /// Missing files are empty configurations.
    pub fn load(config_dir: &Path, project: Option<&Path>) -> Result<Self, Error> {
        let file = config_dir.join(FILE);
        let mut config = read(&file)?;
        service_only(&config, &file)?;
        if let Some(project) = project {
            let path = project.join(".seshat").join(FILE);
            let (local, read_digest) = read_with_digest(&path)?;
            service_only(&local, &path)?;
            if local.store.url.is_some() {
                return Err(Error {
                    path,
                    message: "[store] url cannot be set in a project's configuration: a cloned repository could send \
                              your history to a server of its choosing. Set it in your user configuration or in \
                              SESHAT_DATABASE_URL"
                        .into(),
                });
            }
            if local.retention != RetentionConfig::default() {
                return Err(Error {
                    path,
                    message: "[retention] cannot be set in a project's configuration: a cloned repository could \
                              have your history deleted. Set it in your user configuration"
                        .into(),
                });
            }
            if local.redaction != RedactionConfig::default() {
                return Err(Error {
                    path,
                    message: "[redaction] cannot be set in a project's configuration: a cloned repository could have \
                              your credentials stored, or (with a pattern matching everything) every text you keep \
                              replaced. Set it in your user configuration"
                        .into(),
                });
            }
            let mut local = local;
            if !local.hooks.is_empty() {
                // Trust is given to this project's own file: one that lives elsewhere (a symbolic
                // link, or a linked `.seshat`) could be another project's, trusted there.
                let real = std::fs::canonicalize(&path).ok();
                let own = std::fs::canonicalize(project).ok().map(|p| p.join(".seshat").join(FILE));
                if real.is_none() || real != own {
                    return Err(Error {
                        path,
                        message: "a project's configuration that declares [hooks] must be a file of the project's \
                                  own `.seshat` directory, not a symbolic link: replace the link with the file"
                            .into(),
                    });
                }
                config.project_hooks = Some(ProjectHooks {
                    // The digest of the very bytes parsed.
                    digest: read_digest.unwrap_or_default(),
                    path: real.unwrap_or(path),
                    hooks: std::mem::take(&mut local.hooks),
                });
            }
            config.merge(local);
        }
        Ok(config)
    }

    /// Reads a service's configuration file (`seshat serve --config FILE`): the whole
    /// configuration, in `config.toml`'s form, with the listening address and TLS files under
    /// `[serve]`; no other file is merged in. Relative paths in it (TLS files, prompt files, a
    /// SQLite store) are the file's directory's. A missing file is an error.
    pub fn load_service(path: &Path) -> Result<Self, Error> {
        if !path.is_file() {
            return Err(Error {
                path: path.to_path_buf(),
                message: "no such file: give the path of a service configuration (config.toml's form)".into(),
            });
        }
        let mut config = read(path)?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let within = |p: &mut Option<PathBuf>| {
            if let Some(p) = p.as_mut().filter(|p| p.is_relative()) {
                *p = dir.join(&*p);
            }
        };
        within(&mut config.serve.tls_cert);
        within(&mut config.serve.tls_key);
        within(&mut config.chat.system_prompt_file);
        within(&mut config.compaction.prompt_file);
        if !config.hooks.is_empty() {
            return Err(Error {
                path: path.to_path_buf(),
                message: "[hooks] cannot be set in a service's configuration: its commands would be told every \
                          user's sessions (a service runs no command hook)"
                    .into(),
            });
        }
        Ok(config)
    }

    fn merge(&mut self, over: Config) {
        self.memory.context_tokens = over.memory.context_tokens.or(self.memory.context_tokens);
        self.memory.ttl.extend(over.memory.ttl);
        self.store.max_record_mib = over.store.max_record_mib.or(self.store.max_record_mib);
        self.serve.max_unread_mib = over.serve.max_unread_mib.or(self.serve.max_unread_mib);
        let c = over.chat;
        let mine = &mut self.chat;
        mine.model = c.model.or(mine.model.take());
        mine.auto_compact = c.auto_compact.or(mine.auto_compact);
        mine.summary_model = c.summary_model.or(mine.summary_model.take());
        mine.max_iterations = c.max_iterations.or(mine.max_iterations);
        mine.max_output_tokens = c.max_output_tokens.or(mine.max_output_tokens);
        mine.system_prompt_file = c.system_prompt_file.or(mine.system_prompt_file.take());
        mine.project_instructions = c.project_instructions.or(mine.project_instructions);
        mine.tools = c.tools.or(mine.tools.take());
        let c = over.compaction;
        self.compaction.instructions = c.instructions.or(self.compaction.instructions.take());
        self.compaction.prompt_file = c.prompt_file.or(self.compaction.prompt_file.take());
        self.compaction.summary_request = c.summary_request.or(self.compaction.summary_request);
        self.compaction.background = c.background.or(self.compaction.background);
        self.compaction.early_mark_percent = c.early_mark_percent.or(self.compaction.early_mark_percent);
        self.compaction.idle_after_secs = c.idle_after_secs.or(self.compaction.idle_after_secs);
        self.compaction.idle_above_percent = c.idle_above_percent.or(self.compaction.idle_above_percent);
        self.compaction.warm_cache = c.warm_cache.or(self.compaction.warm_cache);
        for (name, p) in over.providers {
            let base = self.providers.entry(name).or_default();
            base.plugin = p.plugin.or(base.plugin.take());
            base.base_url = p.base_url.or(base.base_url.take());
            base.api_key_env = p.api_key_env.or(base.api_key_env.take());
            base.connect_timeout_secs = p.connect_timeout_secs.or(base.connect_timeout_secs);
            base.first_byte_timeout_secs = p.first_byte_timeout_secs.or(base.first_byte_timeout_secs);
            base.idle_timeout_secs = p.idle_timeout_secs.or(base.idle_timeout_secs);
            base.max_retries = p.max_retries.or(base.max_retries);
            base.max_response_mib = p.max_response_mib.or(base.max_response_mib);
            base.models.extend(p.models);
        }
        let k = over.knowledge;
        let mine = &mut self.knowledge;
        mine.model = k.model.or(mine.model.take());
        mine.base_url = k.base_url.or(mine.base_url.take());
        mine.api_key_env = k.api_key_env.or(mine.api_key_env.take());
        mine.dimensions = k.dimensions.or(mine.dimensions);
        mine.max_input_tokens = k.max_input_tokens.or(mine.max_input_tokens);
        mine.timeout_secs = k.timeout_secs.or(mine.timeout_secs);
        mine.max_retries = k.max_retries.or(mine.max_retries);
        mine.embed_history = k.embed_history.or(mine.embed_history);
        mine.embed_memory = k.embed_memory.or(mine.embed_memory);
        mine.rrf_k = k.rrf_k.or(mine.rrf_k);
        mine.lexical_weight = k.lexical_weight.or(mine.lexical_weight);
        mine.vector_weight = k.vector_weight.or(mine.vector_weight);
        let p = over.plugins;
        self.plugins.trimmer = p.trimmer.or(self.plugins.trimmer.take());
        self.plugins.summariser = p.summariser.or(self.plugins.summariser.take());
        self.plugins.provider = p.provider.or(self.plugins.provider.take());
        self.plugins.embedder = p.embedder.or(self.plugins.embedder.take());
        self.plugins.cache_mib = p.cache_mib.or(self.plugins.cache_mib);
        for (kind, table) in p.options {
            self.plugins.options.entry(kind).or_default().extend(table);
        }
        for (kind, l) in p.limits {
            let base = self.plugins.limits.entry(kind).or_default();
            *base = LimitRequest {
                memory_mib: l.memory_mib.or(base.memory_mib),
                time_ms: l.time_ms.or(base.time_ms),
                complete_calls: l.complete_calls.or(base.complete_calls),
                complete_max_tokens: l.complete_max_tokens.or(base.complete_max_tokens),
            };
        }
    }

    /// The id of the plugin selected for `kind`, if any.
    pub fn selected(&self, kind: PluginKind) -> Option<&str> {
        match kind {
            PluginKind::Trimmer => Some(self.plugins.trimmer.as_deref().unwrap_or("trimmer")),
            PluginKind::Summariser => Some(self.plugins.summariser.as_deref().unwrap_or("summariser")),
            PluginKind::Provider => self.plugins.provider.as_deref(),
            PluginKind::Embedder => self.plugins.embedder.as_deref(),
            // Hooks are chosen per event (`[[hooks.<event>]] plugin`).
            PluginKind::Hook => None,
            // The extractor is `[memory] extract`.
            PluginKind::Extractor => self.memory.extract.as_deref(),
        }
    }

    /// The compiled-plugin cache's size cap in bytes (`[plugins] cache_mib`).
    pub fn plugin_cache_bytes(&self) -> u64 {
        self.plugins.cache_mib.map_or(PLUGIN_CACHE_BYTES, |mib| mib.saturating_mul(1 << 20))
    }

    /// The options for plugins of `kind`, as the JSON object plugins receive (`{}` when none).
    pub fn options_json(&self, kind: PluginKind) -> String {
        self.plugins.options.get(&kind).and_then(|t| serde_json::to_string(t).ok()).unwrap_or_else(|| "{}".to_string())
    }

    /// The memory context's budget in tokens, when configured.
    pub fn memory_context_tokens(&self) -> Option<usize> {
        self.memory.context_tokens
    }

    /// The user's limit overrides for `kind`.
    pub fn limits(&self, kind: PluginKind) -> LimitRequest {
        self.plugins.limits.get(&kind).copied().unwrap_or_default()
    }
}

fn read(path: &Path) -> Result<Config, Error> {
    Ok(read_with_digest(path)?.0)
}

/// [`read`], with the digest of the bytes parsed (none for a missing file).
fn read_with_digest(path: &Path) -> Result<(Config, Option<String>), Error> {
    let (config, digest): (Config, _) = match std::fs::read_to_string(path) {
        Ok(text) => (
            toml::from_str(&text).map_err(|e| Error { path: path.to_path_buf(), message: toml_error(&text, &e) })?,
            Some(digest(text.as_bytes())),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Config::default(), None)),
        Err(e) => return Err(Error { path: path.to_path_buf(), message: e.to_string() }),
    };
    let urls = config
        .providers
        .iter()
        .map(|(name, p)| (format!("[providers.{name}] base_url"), p.base_url.as_deref()))
        .chain(std::iter::once(("[knowledge] base_url".to_string(), config.knowledge.base_url.as_deref())));
    config.redaction.policy().map_err(|e| Error { path: path.to_path_buf(), message: format!("[redaction]: {e}") })?;
    config
        .retention
        .retention()
        .map_err(|e| Error { path: path.to_path_buf(), message: format!("[retention] {e}") })?;
    let percents = [
        ("early_mark_percent", config.compaction.early_mark_percent, DEFAULT_EARLY_MARK_PERCENT),
        ("idle_above_percent", config.compaction.idle_above_percent, DEFAULT_IDLE_ABOVE_PERCENT),
    ];
    for (key, value, default) in percents {
        if let Some(p) = value.filter(|p| !(1..=100).contains(p)) {
            return Err(Error {
                path: path.to_path_buf(),
                message: format!(
                    "[compaction] {key} is {p}: give a percent of the threshold from 1 to 100 ({default} by default)"
                ),
            });
        }
    }
    if let Some(every) = &config.retention.every {
        parse_age(every).map_err(|e| Error { path: path.to_path_buf(), message: format!("[retention] every: {e}") })?;
    }
    for (key, url) in urls {
        if let Some(url) = url {
            check_base_url(url).map_err(|why| Error {
                path: path.to_path_buf(),
                message: format!(
                    "{key} is `{url}`, which is not an http or https URL ({why}): give one such as \
                     http://127.0.0.1:11434/v1"
                ),
            })?;
        }
    }
    Ok((config, digest))
}

/// What a TOML error says, without the file's text: where (line and column) and what is wrong,
/// any quoted value in it left out — the line may hold a credential, and the message ends up in
/// errors and logs.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let mut message = String::new();
    for (i, piece) in e.message().split('"').enumerate() {
        message.push_str(if i % 2 == 1 { "\"…\"" } else { piece });
    }
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            // The key the line sets, when it sets one (its name, never its value).
            let key = text.lines().nth(line - 1).and_then(|l| l.split_once('=')).map(|(k, _)| k.trim()).filter(|k| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            });
            match key {
                Some(key) => format!("line {line}, column {column} (`{key}`): {}", message.trim()),
                None => format!("line {line}, column {column}: {}", message.trim()),
            }
        }
        None => message.trim().to_string(),
    }
}

/// What [`Error::message`] says of a `[serve]` key set outside a service's own file.
pub const SERVICE_ONLY: &str = "belongs only in a network service's own configuration file";

/// Refuses the `[serve]` keys only a service file may set (in `file`, a user's or project's
/// configuration): they would turn every local service process — the Go SDK's child among them —
/// into a network service.
fn service_only(config: &Config, file: &Path) -> Result<(), Error> {
    let s = &config.serve;
    let set = [
        ("listen", s.listen.is_some()),
        ("tls_cert", s.tls_cert.is_some()),
        ("tls_key", s.tls_key.is_some()),
        ("insecure_listen", s.insecure_listen.is_some()),
    ];
    match set.iter().find(|(_, on)| *on) {
        Some((key, _)) => Err(Error {
            path: file.to_path_buf(),
            message: format!("`{key}` under [serve] {SERVICE_ONLY}, not in a user's or a project's configuration"),
        }),
        None => Ok(()),
    }
}

/// Whether `url` is an absolute http(s) URL with a host (what a base URL must be).
fn check_base_url(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| e.to_string())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("its scheme is {}", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("it names no host".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_does_not_parse_is_said_where_without_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("service.toml");
        // A value of the wrong type, and a key the file may not hold: where, and no value.
        std::fs::write(&file, "[serve]\nmax_connections = \"sk-live-4f9a\"\n").unwrap();
        let err = Config::load_service(&file).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("`max_connections`") && !err.contains("sk-live"), "{err}");
        std::fs::write(&file, "\n[providers.a]\napi_key = \"sk-live-4f9a\"\n").unwrap();
        let err = Config::load_service(&file).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("`api_key`") && !err.contains("sk-live"), "{err}");
    }

    #[test]
    fn a_service_file_is_read_alone_with_its_paths_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("service.toml");
        std::fs::write(
            &file,
            "[serve]\nlisten = \"wss://0.0.0.0:7420\"\ntls_cert = \"tls/cert.pem\"\ntls_key = \"/etc/seshat/key.pem\"\n\
             [chat]\nsystem_prompt_file = \"prompt.md\"\n",
        )
        .unwrap();
        let c = Config::load_service(&file).unwrap();
        assert_eq!(c.serve.listen.as_deref(), Some("wss://0.0.0.0:7420"));
        assert_eq!(c.serve.tls_cert, Some(dir.path().join("tls/cert.pem")));
        assert_eq!(c.serve.tls_key, Some(PathBuf::from("/etc/seshat/key.pem")));
        assert_eq!(c.chat.system_prompt_file, Some(dir.path().join("prompt.md")));
        // The same keys in a user's file are refused, naming where they belong.
        std::fs::write(dir.path().join(FILE), "[serve]\ntls_key = \"k.pem\"\n").unwrap();
        let err = Config::load(dir.path(), None).unwrap_err().to_string();
        assert!(err.contains("tls_key") && err.contains(SERVICE_ONLY), "{err}");
        let err = Config::load_service(&dir.path().join("missing.toml")).unwrap_err().to_string();
        assert!(err.contains("missing.toml") && err.contains("no such file"), "{err}");
    }

    #[test]
    fn project_overrides_user_key_by_key() {
        let user = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(
            user.path().join(FILE),
            "[plugins]\ntrimmer = \"mine\"\nprovider = \"openai\"\n[plugins.limits.trimmer]\nmemory_mib = 32\ntime_ms = 100\n",
        )
        .unwrap();
        std::fs::create_dir_all(project.path().join(".seshat")).unwrap();
        std::fs::write(
            project.path().join(".seshat").join(FILE),
            "[plugins]\ntrimmer = \"ours\"\n[plugins.limits.trimmer]\ntime_ms = 50\n",
        )
        .unwrap();
        let c = Config::load(user.path(), Some(project.path())).unwrap();
        assert_eq!(c.selected(PluginKind::Trimmer), Some("ours"));
        assert_eq!(c.selected(PluginKind::Provider), Some("openai"));
        assert_eq!(c.selected(PluginKind::Summariser), Some("summariser"));
        assert_eq!(
            c.limits(PluginKind::Trimmer),
            LimitRequest { memory_mib: Some(32), time_ms: Some(50), ..Default::default() }
        );
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_file() {
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join(FILE), "[plugins]\ntrimer = \"typo\"\n").unwrap();
        let err = Config::load(user.path(), None).unwrap_err();
        assert!(err.to_string().contains("config.toml") && err.to_string().contains("trimer"), "{err}");
    }
}
