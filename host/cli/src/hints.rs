//! What the command line adds to a library error: the command or flag that helps. The library
//! says what happened in its own terms (the Go SDK's users read the same words); the flags and
//! subcommands to reach for are the CLI's, added here under the error.

use seshat::client::Error as ClientError;
use seshat::store::Error as StoreError;

/// The hint for the first error in `err`'s chain that has one.
pub fn hint(err: &anyhow::Error) -> Option<String> {
    err.chain().find_map(hint_of)
}

/// The hint for `err` or the first of its sources that has one.
pub fn hint_for(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    std::iter::successors(Some(err), |e| e.source()).find_map(hint_of)
}

fn hint_of(cause: &(dyn std::error::Error + 'static)) -> Option<String> {
    if let Some(e) = cause.downcast_ref::<StoreError>() {
        return store(e);
    }
    if let Some(e) = cause.downcast_ref::<seshat::plugins::Error>() {
        return plugins(e);
    }
    if let Some(e) = cause.downcast_ref::<seshat::config::Error>() {
        return config(e);
    }
    if let Some(e) = cause.downcast_ref::<seshat::memory::Error>() {
        return memory(e);
    }
    if let Some(e) = cause.downcast_ref::<seshat::compaction::Error>() {
        return compaction(e);
    }
    match cause.downcast_ref::<seshat::retrieval::Error>() {
        Some(seshat::retrieval::Error::ModelChanged { .. }) => {
            return Some("`seshat knowledge embed --re-embed` re-embeds them".into());
        }
        Some(seshat::retrieval::Error::Embedder(_)) => {
            return Some(
                "the chunks embedded so far are kept: `seshat knowledge embed` embeds the rest (timeout_secs under \
                 [knowledge] gives a slow server longer)"
                    .into(),
            );
        }
        _ => {}
    }
    match cause.downcast_ref::<ClientError>()? {
        ClientError::Store(e) => store(e),
        ClientError::Plugin(e) => plugins(e),
        ClientError::Memory(e) => memory(e),
        ClientError::Compaction(e) => compaction(e),
        ClientError::Config(e) => config(e),
        ClientError::ContextOverflow(_) => Some(COMPACT_BY_HAND.into()),
        ClientError::Sizing { code: "message_too_large", .. } => {
            Some("--window <TOKENS> gives the window when the server runs the model with a larger one".into())
        }
        ClientError::Provider(seshat::providers::Error::NotConfigured(_)) => {
            Some("--provider and --model choose them for one run".into())
        }
        _ => None,
    }
}

fn config(e: &seshat::config::Error) -> Option<String> {
    e.message.contains(seshat::config::SERVICE_ONLY).then(|| {
        "move it to a file of its own given to `seshat serve --config FILE`, or give it to `seshat serve` as a flag \
         (`--listen`, `--tls-cert`, `--tls-key`, `--insecure-listen`)"
            .into()
    })
}

/// How to compact by hand, and how to start afresh.
const COMPACT_BY_HAND: &str =
    "`seshat compact` compacts the session by hand; `seshat chat` without --continue starts a new one";

fn compaction(e: &seshat::compaction::Error) -> Option<String> {
    use seshat::compaction::Error;
    match e {
        Error::CompactFull { .. } => Some(COMPACT_BY_HAND.into()),
        Error::WindowUnknown(_) => Some("pass --window <TOKENS>".into()),
        Error::WindowTooSmall(_) => Some("--window <TOKENS> gives the window the server really runs with".into()),
        _ => None,
    }
}

fn store(e: &StoreError) -> Option<String> {
    Some(match e {
        StoreError::ForeignDatabase { .. } => "point --db or SESHAT_HOME at a Seshat database or a new path".into(),
        StoreError::SessionNotFound(_) => "run `seshat sessions list --all` to see the ids".into(),
        StoreError::SessionExists(_) => "pass --new-id to import it as a new session".into(),
        StoreError::NoSuchMessage { session, .. } => format!("`seshat sessions show {session} --full` lists them"),
        StoreError::InvalidImport { repairable: true, .. } => {
            "pass --repair to import it with what breaks the structure kept out of the live view".into()
        }
        StoreError::Database { failure: seshat::store::Failure::Malformed, .. } => {
            "`seshat sessions import <export.jsonl>` brings a session back from its export".into()
        }
        StoreError::Migration { .. } => {
            "with the seshat that wrote it, `seshat db copy <this store> <new store>` copies \
            what it holds into a new database"
                .into()
        }
        StoreError::OutdatedSchema { .. } => "`seshat db migrate` upgrades it (`--dry-run` lists the migrations \
            first; `seshat db status` shows where it stands); see the README's \"Upgrading a team's service\""
            .into(),
        StoreError::CorruptMessage { session, .. } => {
            format!("`seshat sessions export {session}` keeps what can be read; `seshat sessions delete {session}`")
        }
        StoreError::PinBudget(_) => {
            "`seshat sessions pin <id>` lists the pins; `seshat sessions unpin` frees one".into()
        }
        _ => return None,
    })
}

fn plugins(e: &seshat::plugins::Error) -> Option<String> {
    match e {
        seshat::plugins::Error::NotFound { .. } => Some("run `seshat plugins list` to see what is installed".into()),
        seshat::plugins::Error::Incompatible { .. } => Some("`seshat plugins new` writes the current WIT".into()),
        seshat::plugins::Error::Load { message, .. } if message.contains("world of the WIT this host speaks") => {
            Some("`seshat plugins wit` prints that WIT".into())
        }
        _ => None,
    }
}

fn memory(e: &seshat::memory::Error) -> Option<String> {
    match e {
        seshat::memory::Error::NoSuchDeletion(_) => Some("`seshat memory --action deleted` lists them".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_errors_get_the_command_lines_hint_and_others_none() {
        let exists = anyhow::Error::new(StoreError::SessionExists("01J".into())).context("cannot import");
        assert_eq!(hint(&exists).as_deref(), Some("pass --new-id to import it as a new session"));
        let overflow = ClientError::ContextOverflow("the server refused the request for its length".into());
        assert!(hint_for(&overflow).is_some_and(|h| h.contains("`seshat compact`")));
        let wrapped = ClientError::Store(StoreError::SessionNotFound("zz".into()));
        assert!(hint_for(&wrapped).is_some_and(|h| h.contains("seshat sessions list --all")));
        let import =
            |repairable| anyhow::Error::new(StoreError::InvalidImport { line: 3, message: "x".into(), repairable });
        assert!(hint(&import(true)).is_some_and(|h| h.contains("--repair")));
        assert_eq!(hint(&import(false)), None, "what a repair cannot take gets no --repair hint");
        let unknown = ClientError::Compaction(seshat::compaction::Error::WindowUnknown("01J".into()));
        assert_eq!(hint_for(&unknown).as_deref(), Some("pass --window <TOKENS>"));
        assert!(hint_for(&StoreError::PinBudget("too much".into())).is_some_and(|h| h.contains("sessions pin")));
        assert_eq!(hint(&anyhow::anyhow!("something else")), None);
    }
}
