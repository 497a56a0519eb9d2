//! Lifecycle hooks: the user's own commands run at moments of a session's life
//! ([`HookEvent`]), told what happens as JSON ([`HookPayload`]) and able to answer
//! ([`HookDecision`]): go on, block with a reason, add context to the request, or — before a
//! compaction — give its summary extra instructions or skip it this time. Nothing else a hook does
//! changes the stored history.
//!
//! Hooks come from the user's `config.toml` and, once the user trusts the file as it is
//! ([`trust`]), from a project's `.seshat/config.toml`. The hooks of one event run one after
//! another, the user's first, each file's in its order; a block stops the rest. A hook that fails
//! (cannot start, runs past its timeout, exits with a status other than 0 or 2, answers something
//! that is not a decision) is reported and passed over, unless it is `required`: then it blocks.

mod command;
pub mod trust;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use seshat_protocol::hooks::{HookDecision, HookEvent, HookPayload, Verdict};

use crate::config::{Config, HookConfig};

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
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::User(p) => write!(f, "user ({})", p.display()),
            Source::Project(p) => write!(f, "project ({})", p.display()),
        }
    }
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// When it runs.
    pub event: HookEvent,
    /// The command (`sh -c`).
    pub command: String,
    /// The tools it runs for (`|`-separated names, `*` any characters), when it says.
    pub matcher: Option<String>,
    /// How long it may run.
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
    /// trusts its file as it is. Commands run in `project_dir`. A timeout that is no duration is
    /// an error naming the hook.
    pub fn from_config(
        config: &Config,
        user_file: &Path,
        trust: &trust::Trust,
        project_dir: Option<&Path>,
    ) -> Result<Hooks, String> {
        let mut hooks = Vec::new();
        add(&mut hooks, &config.hooks, &Source::User(user_file.to_path_buf()))?;
        let mut untrusted = Vec::new();
        if let Some(project) = &config.project_hooks {
            if trust.trusts(&project.path, &project.digest) {
                add(&mut hooks, &project.hooks, &Source::Project(project.path.clone()))?;
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
            let ran = command::run(&hook.command, self.dir.as_deref(), &env, &input, hook.timeout);
            let decided = match ran {
                Ok(ran) => decision(event, &ran),
                Err(e) => Err(e.to_string()),
            };
            let name = format!("the {event} hook `{}` ({})", hook.command, hook.source);
            let decision = match decided {
                Ok(d) => d,
                Err(why) => {
                    tracing::warn!(event = %event, command = %hook.command, "a hook failed: {why}");
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

/// Adds `declared`'s hooks, from `source`.
fn add(
    hooks: &mut Vec<Hook>,
    declared: &std::collections::BTreeMap<HookEvent, Vec<HookConfig>>,
    source: &Source,
) -> Result<(), String> {
    for (event, list) in declared {
        for h in list {
            let timeout = match h.timeout.as_deref() {
                None => DEFAULT_TIMEOUT,
                Some(t) => crate::config::parse_age(t)
                    .map(|ms| Duration::from_millis(ms.unsigned_abs()))
                    .map_err(|e| format!("the {event} hook `{}` in {source}: its timeout {e}", h.command))?,
            };
            if h.command.trim().is_empty() {
                return Err(format!("a {event} hook in {source} has an empty command"));
            }
            hooks.push(Hook {
                event: *event,
                command: h.command.clone(),
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
