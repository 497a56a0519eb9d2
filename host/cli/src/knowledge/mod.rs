//! `seshat knowledge …`: documents the agent can search — add files and directories, list,
//! remove (from the index only, never the files), search.

mod add;
mod add_remote;
mod embed;
mod list;
mod remove;
mod search;

use std::process::ExitCode;

use clap::Subcommand;

use seshat::memory::Scope as MemoryScope;

use super::{Context, format};

/// The `knowledge` subcommands.
#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// Index files and directories (respecting .gitignore and hidden files, as ripgrep does);
    /// run again to pick up changes: only files whose content changed are indexed again.
    Add(add::Args),
    /// Make the vectors that are missing: of chunks, and of the history and memory queued for
    /// embedding (`[knowledge] embed_history`, `embed_memory`).
    Embed(embed::Args),
    /// List the indexed documents.
    List(list::Args),
    /// Remove documents from the index (by path or id); your files are never touched.
    Remove(remove::Args),
    /// Search the indexed documents.
    Search(search::Args),
}

/// Runs a `knowledge` subcommand.
pub fn run(ctx: &Context, cmd: KnowledgeCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        KnowledgeCommand::Add(args) => add::run(ctx, &args),
        KnowledgeCommand::Embed(args) => embed::run(ctx, &args),
        KnowledgeCommand::List(args) => list::run(ctx, &args),
        KnowledgeCommand::Remove(args) => remove::run(ctx, &args),
        KnowledgeCommand::Search(args) => search::run(ctx, &args),
    }
}

/// The document corpus, with the configured embedder (if any).
pub(super) fn knowledge(ctx: &Context) -> anyhow::Result<seshat::retrieval::Knowledge> {
    let config = ctx.config()?;
    let embedder = seshat::retrieval::load_embedder(&config, &ctx.catalog(), &ctx.runtime())?;
    Ok(seshat::retrieval::Knowledge::new(ctx.store()?, embedder, seshat::retrieval::weights(&config)))
}

/// A progress bar on stderr when it is a terminal (none otherwise), with `template`.
pub(super) fn bar(template: &str) -> Option<indicatif::ProgressBar> {
    std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

/// Embeds the pending chunks with a progress bar; `None` without an embedder.
pub(super) fn embed(
    k: &mut seshat::retrieval::Knowledge,
    re_embed: bool,
) -> anyhow::Result<Option<seshat::retrieval::EmbedReport>> {
    if k.embedder().is_none() {
        return Ok(None);
    }
    let mut re_embed = re_embed;
    loop {
        let bar = bar("embedding {pos}/{len} chunks {wide_bar} {eta}");
        let report = k.embed_pending(re_embed, &mut |done, total| {
            if let Some(bar) = &bar {
                bar.set_length(total);
                bar.set_position(done);
            }
        });
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        match report {
            // On a terminal, the user is asked (with the count) rather than told to run again.
            Err(seshat::retrieval::Error::ModelChanged { from, to, vectors, chunks })
                if !re_embed && std::io::IsTerminal::is_terminal(&std::io::stdin()) =>
            {
                if !confirm(&format!(
                    "The index's {vectors} vectors were made by `{from}`; the configured model is `{to}`. Replace them, \
                     embedding all {chunks} chunks with `{to}`? [y/N] "
                ))? {
                    anyhow::bail!(
                        "nothing was re-embedded: the index keeps `{from}`'s vectors (search stays lexical until the models match)"
                    );
                }
                re_embed = true;
            }
            other => return Ok(Some(other?)),
        }
    }
}

/// Asks a yes/no question on the terminal; only `y` or `yes` is yes.
fn confirm(question: &str) -> anyhow::Result<bool> {
    eprint!("{}", format::visible(question));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// A scope as the index stores it, with the project key it goes with.
pub(super) fn target(ctx: &Context, scope: &Scope) -> seshat::knowledge::Target {
    match scope {
        Scope::Project => seshat::knowledge::Target { scope: Scope::Project, project: ctx.project.clone() },
        other => seshat::knowledge::Target { scope: other.clone(), project: String::new() },
    }
}

/// Where documents live: `project` (this project's), `user` (yours, seen in every project),
/// `cross` (general, seen in every project) or `team:NAME` (a team's, shared with its members).
pub type Scope = MemoryScope;
