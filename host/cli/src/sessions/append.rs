//! `seshat sessions append`: scripts add messages to a session, one JSON object per line.
//!
//! Each line is appended in its own transaction and acknowledged on stdout (`<session id> <seq>`)
//! once it is durable, so a caller that is killed or kills us knows exactly what was saved.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use serde::Deserialize;
use seshat::conversation::{MessageStatus, NewMessage, Part, Role, Usage};

use crate::Context;

/// Arguments of `sessions append`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Each input line is a message, e.g.\n  \
    {\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"hello\"}]}\n\
    A line may name another session with \"session\": \"<id or prefix>\".")]
pub struct Args {
    /// The session id, or any unique prefix of it.
    id: String,
}

/// One input line: a message, optionally for another session.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    session: Option<String>,
    role: Role,
    parts: Vec<Part>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    status: MessageStatus,
}

/// Where the lines go: this machine's store, or the service's `session/append`.
enum Target {
    Local(seshat::store::Store),
    Remote(crate::remote::Remote),
}

impl Target {
    /// The session a line names (an id or a prefix): resolved locally; the service resolves it
    /// when appending.
    fn resolve(&self, session: &str) -> anyhow::Result<String> {
        match self {
            Target::Local(store) => Ok(store.resolve(session)?),
            Target::Remote(_) => Ok(session.to_string()),
        }
    }

    /// Appends `msg` to `session` (resolved); its session's whole id and its seq.
    fn append(&mut self, session: &str, msg: &NewMessage) -> anyhow::Result<(String, u64)> {
        match self {
            Target::Local(store) => {
                let seq = store.append(session, std::slice::from_ref(msg))?[0];
                Ok((session.to_string(), seq))
            }
            Target::Remote(remote) => {
                let params = seshat_protocol::methods::SessionAppendParams {
                    session: session.to_string(),
                    messages: vec![msg.clone()],
                };
                let added = remote.request::<seshat_protocol::methods::SessionAppend>(&params)?;
                let seq = added.seqs.first().copied().ok_or_else(|| anyhow!("the service appended nothing"))?;
                Ok((added.session, seq))
            }
        }
    }
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    // Locally an unknown session is refused before anything is read; the service says so at the
    // first line.
    let (mut target, default) = match ctx.remote()? {
        Some(remote) => (Target::Remote(remote), args.id.clone()),
        None => {
            let store = ctx.store()?;
            let id = store.resolve(&args.id)?;
            (Target::Local(store), id)
        }
    };
    let mut out = std::io::stdout().lock();
    let limit = crate::record_limit(&ctx.config()?);
    let (mut stdin, mut bytes) = (std::io::stdin().lock(), Vec::new());
    for number in 1.. {
        match seshat::input::next_line(&mut stdin, &mut bytes, limit).context("cannot read stdin")? {
            seshat::input::Line::End => break,
            seshat::input::Line::Read => {}
            seshat::input::Line::TooLong => anyhow::bail!(
                "line {number}: the message is longer than {}, the largest record Seshat reads (raise \
                 `max_record_mib` under [store] in config.toml); the lines before it were appended",
                seshat::input::describe_limit(limit)
            ),
        }
        let line = std::str::from_utf8(&bytes).map_err(|_| anyhow!("line {number}: not valid UTF-8"))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line = serde_json::from_str(line).map_err(|e| anyhow!("line {number}: {e}"))?;
        let session = match &parsed.session {
            Some(prefix) => target.resolve(prefix).with_context(|| format!("line {number}"))?,
            None => default.clone(),
        };
        let msg = NewMessage { role: parsed.role, parts: parsed.parts, usage: parsed.usage, status: parsed.status };
        let (session, seq) = target.append(&session, &msg).with_context(|| format!("line {number}"))?;
        writeln!(out, "{session} {seq}")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
