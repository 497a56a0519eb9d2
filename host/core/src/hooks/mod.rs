//! Lifecycle hooks: the user's own commands run at moments of a session's life
//! ([`HookEvent`]), told what happens as JSON ([`HookPayload`]) and able to answer
//! ([`HookDecision`]): go on, block with a reason, add context to the request, or — before a
//! compaction — give its summary extra instructions or skip it this time. Nothing else a hook does
//! changes the stored history.
//!
//! A hook is a command ([`Action::Command`]), a sandboxed hook plugin or a program's own function
//! ([`Action::Handler`]: a [`Handler`]). Hooks come from the user's `config.toml`, once the user
//! trusts the file as it is ([`trust`]) from a project's `.seshat/config.toml`, and from the
//! program embedding Seshat ([`Hooks::register`]; a `seshat serve` client's registered hooks). The
//! hooks of one event run one after another — the user's file's, the project's, then the
//! program's, each in its order; a block stops the rest. A hook that fails (cannot start, runs
//! past its time, exits with a status other than 0 or 2, answers something that is not a
//! decision) is reported and passed over, unless it is `required`: then it blocks.

mod command;
mod data;
pub mod trust;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use seshat_protocol::hooks::{HookDecision, HookEvent, HookPayload, Verdict};

use crate::config::{Config, HookConfig};
pub use data::Data;

/// The payload of `data` in `session` (of `project`) at `seq`.
pub fn payload(session: &str, project: &str, seq: u64, data: &Data<'_>) -> HookPayload {
    HookPayload {
        event: data.event(),
        session: session.to_string(),
        project: project.to_string(),
        seq,
        data: data.fields(),
    }
}

/// How long a hook may run unless it says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a hook was declared.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The user's configuration file.
    User(PathBuf),
    /// A project's configuration file, trusted as it is.
    Project(PathBuf),
    /// The program embedding Seshat (a `seshat serve` client), by the name it gave.
    Program(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::User(p) => write!(f, "user ({})", p.display()),
            Source::Project(p) => write!(f, "project ({})", p.display()),
            Source::Program(name) => write!(f, "program ({name})"),
        }
    }
}

/// Something that answers a hook's event in the process: a hook plugin, a program's own function,
/// a `seshat serve` client asked over its connection.
pub trait Handler: Send + Sync {
    /// Answers `payload` (`tool` names the tool of a tool event) within `timeout`, or says why it
    /// could not, in words that follow "the hook … ".
    fn handle(&self, payload: &HookPayload, tool: Option<&str>, timeout: Duration) -> Result<HookDecision, String>;
}

/// What a hook runs.
#[derive(Clone)]
#[non_exhaustive]
pub enum Action {
    /// A command, run by `sh -c` in the project's directory.
    Command(String),
    /// A [`Handler`] in the process, named for people (`plugin guard`).
    Handler {
        /// How the hook is named in lists and reports.
        name: String,
        /// What answers.
        handler: Arc<dyn Handler>,
    },
}

impl std::fmt::Debug for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Command(c) => write!(f, "`{c}`"),
            Action::Handler { name, .. } => f.write_str(name),
        }
    }
}

/// A hook plugin as a [`Handler`]: one instance, its calls one at a time.
struct PluginHandler(std::sync::Mutex<crate::plugins::HookPlugin>);

impl Handler for PluginHandler {
    fn handle(&self, payload: &HookPayload, tool: Option<&str>, _timeout: Duration) -> Result<HookDecision, String> {
        let mut plugin = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        plugin.handle(payload, tool).map_err(|e| format!("failed: {e}"))
    }
}

/// Makes a hook plugin's [`Handler`] from its id (the front end's catalog and runtime).
pub type PluginLoader<'a> = dyn FnMut(&str) -> Result<crate::plugins::HookPlugin, String> + 'a;

/// A program's own hook, added to the hooks of every agent an environment opens
/// ([`crate::client::Overrides::hooks`]).
#[derive(Clone)]
#[non_exhaustive]
pub struct Registration {
    /// When it runs.
    pub event: HookEvent,
    /// Its name, in lists and reports.
    pub name: String,
    /// The tools it runs for (as a configured hook's `matcher`), when it says.
    pub matcher: Option<String>,
    /// How long its handler may take.
    pub timeout: Duration,
    /// Whether its failure blocks.
    pub required: bool,
    /// What answers.
    pub handler: Arc<dyn Handler>,
}

impl Registration {
    /// A hook named `name` at `event`, answered by `handler`: every tool, [`DEFAULT_TIMEOUT`], not
    /// required.
    pub fn new(event: HookEvent, name: impl Into<String>, handler: Arc<dyn Handler>) -> Self {
        Registration { event, name: name.into(), matcher: None, timeout: DEFAULT_TIMEOUT, required: false, handler }
    }

    /// Only for the tools `matcher` takes.
    pub fn matcher(mut self, matcher: impl Into<String>) -> Self {
        self.matcher = Some(matcher.into());
        self
    }

    /// Waited for at most `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A failure blocks.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("event", &self.event)
            .field("name", &self.name)
            .field("matcher", &self.matcher)
            .finish_non_exhaustive()
    }
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// When it runs.
    pub event: HookEvent,
    /// What it runs.
    pub action: Action,
    /// The tools it runs for (`|`-separated names, `*` any characters), when it says.
    pub matcher: Option<String>,
    /// How long it may run (a plugin: its limits').
    pub timeout: Duration,
    /// Whether its failure blocks.
    pub required: bool,
    /// Where it was declared.
    pub source: Source,
}

impl Hook {
    /// Whether it runs for the tool `tool` (every tool when it names none; events without a tool
    /// run it always).
    pub fn runs_for(&self, tool: Option<&str>) -> bool {
        match (self.matcher.as_deref(), tool) {
            (Some(m), Some(tool)) => m.split('|').map(str::trim).any(|p| glob(p, tool)),
            _ => true,
        }
    }
}

/// Whether `name` is `pattern`, where `*` stands for any characters.
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A hook file that declares hooks which do not run, and why (for the user to be told).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// The project's file.
    pub path: PathBuf,
    /// Whether it was trusted before, with other contents.
    pub changed: bool,
    /// How many hooks it declares.
    pub hooks: usize,
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.changed { "changed since you trusted it" } else { "not trusted" };
        write!(
            f,
            "the {} hook(s) of {} do not run: the file is {why} (trust it, once you have read it, and they run)",
            self.hooks,
            self.path.display()
        )
    }
}

/// What the hooks of one event decided together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outcome {
    /// Set when a hook blocked (or a required one failed): why.
    pub blocked: Option<String>,
    /// Text the hooks add to the request, in their order.
    pub context: Vec<String>,
    /// `pre_compact`: what the summary should also keep or stress.
    pub instructions: Vec<String>,
    /// `pre_compact`: a hook asked not to compact this time.
    pub skip: bool,
    /// Hooks that failed or answered what their event cannot take, passed over: what to report.
    pub failures: Vec<String>,
    /// How many hooks ran.
    pub ran: usize,
}

/// The hooks in force for a session.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
    /// Where commands run: the project's directory.
    dir: Option<PathBuf>,
    /// Project files whose hooks do not run.
    untrusted: Vec<Untrusted>,
}

impl Hooks {
    /// The hooks `config` declares: the user's (from `user_file`), then the project's when `trust`
    /// trusts its file as it is. Commands run in `project_dir`; `plugins` loads the hook plugins
    /// they name (each once). A timeout that is no duration, a hook naming neither or both of a
    /// command and a plugin, or a plugin that cannot be loaded is an error naming the hook.
    pub fn from_config(
        config: &Config,
        user_file: &Path,
        trust: &trust::Trust,
        project_dir: Option<&Path>,
        plugins: &mut PluginLoader<'_>,
    ) -> Result<Hooks, String> {
        let mut hooks = Vec::new();
        let mut loaded = std::collections::HashMap::new();
        add(&mut hooks, &config.hooks, &Source::User(user_file.to_path_buf()), plugins, &mut loaded)?;
        let mut untrusted = Vec::new();
        if let Some(project) = &config.project_hooks {
            if trust.trusts(&project.path, &project.digest) {
                add(&mut hooks, &project.hooks, &Source::Project(project.path.clone()), plugins, &mut loaded)?;
            } else {
                untrusted.push(Untrusted {
                    path: project.path.clone(),
                    changed: trust.changed(&project.path, &project.digest),
                    hooks: project.hooks.values().map(Vec::len).sum(),
                });
            }
        }
        // One event's hooks together, each source's in its order (the user's first).
        hooks.sort_by_key(|h: &Hook| (h.event, matches!(h.source, Source::Project(_))));
        Ok(Hooks { hooks, dir: project_dir.map(Path::to_path_buf), untrusted })
    }

    /// Adds a program's own hook after every hook of its event so far (a `seshat serve`
    /// client's, a Rust program's).
    pub fn register(&mut self, r: Registration) {
        let at = self.hooks.iter().rposition(|h| h.event <= r.event).map_or(0, |i| i + 1);
        self.hooks.insert(
            at,
            Hook {
                event: r.event,
                action: Action::Handler { name: format!("`{}`", r.name), handler: r.handler },
                matcher: r.matcher,
                timeout: r.timeout,
                required: r.required,
                source: Source::Program(r.name),
            },
        );
    }

    /// Every hook, by event.
    pub fn list(&self) -> &[Hook] {
        &self.hooks
    }

    /// The project files whose hooks do not run.
    pub fn untrusted(&self) -> &[Untrusted] {
        &self.untrusted
    }

    /// Whether any hook runs at `event`.
    pub fn any(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// Runs the hooks of `payload`'s event (those whose matcher takes `tool`), in order, until
    /// one blocks.
    pub fn run(&self, payload: &HookPayload, tool: Option<&str>) -> Outcome {
        let mut out = Outcome::default();
        let event = payload.event;
        let hooks: Vec<&Hook> = self.hooks.iter().filter(|h| h.event == event && h.runs_for(tool)).collect();
        if hooks.is_empty() {
            return out;
        }
        let input = serde_json::to_vec(payload).unwrap_or_default();
        let dir = self.dir.as_ref().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
        let mut env = vec![
            ("SESHAT_EVENT", event.as_str()),
            ("SESHAT_SESSION_ID", payload.session.as_str()),
            ("SESHAT_PROJECT", payload.project.as_str()),
            ("SESHAT_PROJECT_DIR", dir.as_str()),
        ];
        if let Some(tool) = tool {
            env.push(("SESHAT_TOOL", tool));
        }
        for hook in hooks {
            out.ran += 1;
            let decided = match &hook.action {
                Action::Command(command) => {
                    match command::run(command, self.dir.as_deref(), &env, &input, hook.timeout) {
                        Ok(ran) => decision(event, &ran),
                        Err(e) => Err(e.to_string()),
                    }
                }
                Action::Handler { handler, .. } => handler.handle(payload, tool, hook.timeout),
            };
            let name = format!("the {event} hook {} ({})", hook.action, hook.source);
            let decision = match decided {
                Ok(d) => d,
                Err(why) => {
                    tracing::warn!(event = %event, hook = %hook.action, "a hook failed: {why}");
                    out.failures.push(format!("{name} {why}"));
                    if hook.required {
                        out.blocked = Some(format!("{name} is required and {why}"));
                        break;
                    }
                    continue;
                }
            };
            if let Some(text) = decision.context.filter(|t| !t.trim().is_empty()) {
                if event.takes_context() {
                    out.context.push(text);
                } else {
                    out.failures.push(format!("{name} added context, which {event} does not take"));
                }
            }
            if decision.instructions.is_some() || decision.skip {
                if event == HookEvent::PreCompact {
                    out.instructions.extend(decision.instructions.filter(|t| !t.trim().is_empty()));
                    out.skip |= decision.skip;
                } else {
                    out.failures.push(format!("{name} answered instructions or skip, which only pre_compact takes"));
                }
            }
            if decision.decision == Verdict::Block {
                let reason = decision.reason.unwrap_or_else(|| "no reason given".into());
                if event.can_block() {
                    out.blocked = Some(format!("blocked by {name}: {reason}"));
                    break;
                }
                out.failures.push(format!("{name} asked to block, which {event} cannot be ({reason})"));
            }
        }
        out
    }
}

/// Adds `declared`'s hooks, from `source`, loading the plugins they name through `plugins` (once
/// each: `loaded`).
fn add(
    hooks: &mut Vec<Hook>,
    declared: &std::collections::BTreeMap<HookEvent, Vec<HookConfig>>,
    source: &Source,
    plugins: &mut PluginLoader<'_>,
    loaded: &mut std::collections::HashMap<String, Arc<dyn Handler>>,
) -> Result<(), String> {
    for (event, list) in declared {
        for h in list {
            let action = match (h.command.as_deref(), h.plugin.as_deref()) {
                (Some(command), None) if !command.trim().is_empty() => Action::Command(command.to_string()),
                (Some(_), None) => return Err(format!("a {event} hook in {source} has an empty command")),
                (None, Some(id)) => {
                    if h.timeout.is_some() {
                        return Err(format!(
                            "the {event} hook plugin `{id}` in {source} sets a timeout: a plugin's time is its limits \
                             ([plugins.limits.hook] time_ms); remove `timeout`"
                        ));
                    }
                    let handler = match loaded.get(id) {
                        Some(h) => h.clone(),
                        None => {
                            let plugin = plugins(id)
                                .map_err(|e| format!("the {event} hook plugin `{id}` in {source} cannot run: {e}"))?;
                            let handler: Arc<dyn Handler> = Arc::new(PluginHandler(std::sync::Mutex::new(plugin)));
                            loaded.insert(id.to_string(), handler.clone());
                            handler
                        }
                    };
                    Action::Handler { name: format!("plugin `{id}`"), handler }
                }
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "a {event} hook in {source} sets both `command` and `plugin`: a hook runs one of them; split \
                         it into two [[hooks.{event}]] entries"
                    ));
                }
                (None, None) => {
                    return Err(format!(
                        "a {event} hook in {source} sets neither `command` nor `plugin`: say what it runs"
                    ));
                }
            };
            let timeout = match h.timeout.as_deref() {
                None => DEFAULT_TIMEOUT,
                Some(t) => crate::config::parse_age(t)
                    .map(|ms| Duration::from_millis(ms.unsigned_abs()))
                    .map_err(|e| format!("the {event} hook {action} in {source}: its timeout {e}"))?,
            };
            hooks.push(Hook {
                event: *event,
                action,
                matcher: h.matcher.clone(),
                timeout,
                required: h.required,
                source: source.clone(),
            });
        }
    }
    Ok(())
}

/// What a command's run says: its decision, or why it is none.
fn decision(event: HookEvent, ran: &command::Ran) -> Result<HookDecision, String> {
    match ran.code {
        Some(0) => {
            let text = ran.stdout.trim();
            if text.is_empty() {
                Ok(HookDecision::default())
            } else if text.starts_with('{') {
                serde_json::from_str(text).map_err(|e| format!("answered JSON that is not a decision ({e})"))
            } else if event.text_is_context() {
                Ok(HookDecision { context: Some(text.to_string()), ..HookDecision::default() })
            } else {
                Err(format!("printed text that is not a JSON decision: {}", first_line(text)))
            }
        }
        Some(2) => {
            let reason = ran.stderr.trim();
            let reason = if reason.is_empty() { "no reason given".to_string() } else { reason.to_string() };
            Ok(HookDecision { decision: Verdict::Block, reason: Some(reason), ..HookDecision::default() })
        }
        Some(code) => Err(format!("exited with status {code}: {}", first_line(ran.stderr.trim()))),
        None => Err("was ended by a signal".into()),
    }
}

/// The first line of `text`, at most 200 characters, its control characters shown as `?`.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(200).map(|c| if c.is_control() { '?' } else { c }).collect();
    if line.chars().count() > 200 {
        out.push('…');
    }
    if out.is_empty() { "(nothing on its standard error)".into() } else { out }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn a_matcher_takes_names_and_stars() {
        assert!(glob("bash", "bash"));
        assert!(!glob("bash", "bashful"));
        assert!(glob("edit_*", "edit_file"));
        assert!(!glob("edit_*", "read_file"));
        assert!(glob("*_file", "read_file"));
        assert!(glob("mcp_*_write*", "mcp_fs_write_text"));
        assert!(!glob("mcp_*_write*", "mcp_fs_read"));
        assert!(glob("*", "anything"));
    }
}
