//! `seshat tokens`: the bearer tokens clients of a network `seshat serve` present. A token is
//! printed once, when it is made; the store keeps only its salted hash. With `--remote`, on the
//! service, as the token's user, who must be an admin.

use std::io::Write;
use std::process::ExitCode;

use crate::{Context, format};

/// What `seshat tokens` does.
#[derive(Debug, clap::Subcommand)]
pub enum TokensCommand {
    /// Make a token for a user and print it (once: it cannot be shown again).
    Create {
        /// The user it acts for (`seshat users add` first).
        #[arg(long)]
        user: String,
        /// When it stops working: a span from now (`30d`, `12h`, `90m`) or a time
        /// (`2027-01-31T12:00:00Z`). Default: never.
        #[arg(long, value_name = "WHEN")]
        expires: Option<String>,
        /// It may read sessions, memory and documents but write nothing.
        #[arg(long)]
        read_only: bool,
        /// Allow a token for `local`, the store's operator (it acts as the operator from
        /// anywhere); refused without this.
        #[arg(long)]
        operator: bool,
        /// Print the token and its listing as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token and make a new one for the same user, access and expiry (printed once).
    Rotate {
        /// The token's id.
        id: String,
        /// Print the new token and its listing as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the tokens (never their secrets).
    List {
        /// Only this user's.
        #[arg(long)]
        user: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its id (`tokens list` shows it): it is refused from now on.
    Revoke {
        /// The token's id.
        id: String,
    },
}

/// `--expires`: a span from now or a time, as Unix milliseconds.
fn expiry(when: &str) -> anyhow::Result<i64> {
    format::when("--expires", when, true)
}

pub fn run(ctx: &Context, cmd: TokensCommand) -> anyhow::Result<ExitCode> {
    let mut store = crate::principals::Principals::open(ctx)?;
    let mut out = format::stdout();
    match cmd {
        TokensCommand::Create { user, expires, read_only, operator, json } => {
            let expires_at = expires.as_deref().map(expiry).transpose()?;
            let made = store.create_token(&user, read_only, expires_at, operator)?;
            return show_new(&mut out, &made, json);
        }
        TokensCommand::Rotate { id, json } => {
            let made = store.rotate_token(&id)?;
            eprintln!("Revoked token {id}.");
            return show_new(&mut out, &made, json);
        }
        TokensCommand::List { user, json } => {
            let tokens = store.tokens(user.as_deref())?;
            if json {
                format::json(&mut out, &tokens)?;
            } else if tokens.is_empty() {
                writeln!(out, "No tokens. `seshat tokens create --user NAME` makes one.")?;
            } else {
                writeln!(
                    out,
                    "{:<16}  {:<16}  {:<10}  {:<16}  {:<16}  {:<16}  STATE",
                    "ID", "USER", "ACCESS", "CREATED", "EXPIRES", "LAST USED"
                )?;
                let now = jiff::Timestamp::now().as_millisecond();
                for t in &tokens {
                    let state = match (t.revoked_at, t.expires_at) {
                        (Some(r), _) => format!("revoked {}", format::time(r)),
                        (None, Some(e)) if e <= now => "expired".to_string(),
                        _ => "active".to_string(),
                    };
                    writeln!(
                        out,
                        "{:<16}  {:<16}  {:<10}  {:<16}  {:<16}  {:<16}  {state}",
                        t.id,
                        t.user,
                        if t.read_only { "read" } else { "read-write" },
                        format::time(t.created_at),
                        t.expires_at.map(format::time).unwrap_or_else(|| "never".into()),
                        t.last_used_at.map(format::time).unwrap_or_else(|| "never".into()),
                    )?;
                }
            }
        }
        TokensCommand::Revoke { id } => {
            if store.revoke_token(&id)? {
                writeln!(out, "Revoked token {id}.")?;
            } else {
                writeln!(out, "Token {id} was already revoked.")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a new token once (its secret on stdout, the rest on stderr; or all of it as JSON).
fn show_new<W: Write>(
    out: &mut format::Visible<W>,
    made: &seshat::store::NewToken,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if json {
        #[derive(serde::Serialize)]
        struct Made<'a> {
            token: &'a str,
            #[serde(flatten)]
            info: &'a seshat::store::TokenInfo,
        }
        format::json(out, &Made { token: &made.token, info: &made.info })?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "{}", made.token)?;
    out.flush()?;
    eprintln!(
        "Token {} for {}{}{}. It is shown only now: keep it secret (clients send it as SESHAT_TOKEN).",
        made.info.id,
        made.info.user,
        if made.info.read_only { ", read-only" } else { "" },
        made.info.expires_at.map(|e| format!(", expires {}", format::time(e))).unwrap_or_default(),
    );
    Ok(ExitCode::SUCCESS)
}
