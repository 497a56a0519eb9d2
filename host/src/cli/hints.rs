//! What the command line adds to a library error: the command or flag that helps. The library
//! says what happened in its own terms (the Go SDK's users read the same words); the flags and
//! subcommands to reach for are the CLI's, added here under the error.

use seshat::client::Error as ClientError;
use seshat::store::Error as StoreError;

/// The hint for the first error in `err`'s chain that has one.
pub fn hint(err: &anyhow::Error) -> Option<String> {
    err.chain().find_map(|cause| {
        if let Some(e) = cause.downcast_ref::<StoreError>() {
            return store(e);
        }
        if let Some(e) = cause.downcast_ref::<seshat::plugins::Error>() {
            return plugins(e);
        }
        if let Some(e) = cause.downcast_ref::<seshat::memory::Error>() {
            return memory(e);
        }
        match cause.downcast_ref::<ClientError>()? {
            ClientError::Store(e) => store(e),
            ClientError::Plugin(e) => plugins(e),
            ClientError::Memory(e) => memory(e),
            _ => None,
        }
    })
}

fn store(e: &StoreError) -> Option<String> {
    Some(match e {
        StoreError::ForeignDatabase { .. } => "point --db or SESHAT_HOME at a Seshat database or a new path".into(),
        StoreError::SessionNotFound(_) => "run `seshat sessions list --all` to see the ids".into(),
        StoreError::SessionExists(_) => "pass --new-id to import it as a new session".into(),
        StoreError::NoSuchMessage { session, .. } => format!("`seshat sessions show {session} --full` lists them"),
        _ => return None,
    })
}

fn plugins(e: &seshat::plugins::Error) -> Option<String> {
    match e {
        seshat::plugins::Error::NotFound { .. } => Some("run `seshat plugins list` to see what is installed".into()),
        _ => None,
    }
}

fn memory(e: &seshat::memory::Error) -> Option<String> {
    match e {
        seshat::memory::Error::NoSuchDeletion(_) => Some("`seshat memory --action deleted` lists them".into()),
        _ => None,
    }
}
