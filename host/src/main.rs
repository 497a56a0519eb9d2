//! The `seshat` command-line interface. Errors and exit codes live here only; everything else is
//! the library.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    // Logs only when asked for (`RUST_LOG=debug`), on stderr; coloured only on a terminal and
    // never under NO_COLOR (https://no-color.org: set and not empty).
    if std::env::var_os("RUST_LOG").is_some() {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !no_color)
            .init();
    }
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        seshat::store::on_migration_progress(migration_progress());
    }
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                // The reader went away (`seshat sessions export | head`): not an error.
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {}", cli::visible(&format!("{err:#}")));
            if let Some(hint) = cli::hint(&err) {
                eprintln!("hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    let broken = |io: &std::io::Error| io.kind() == std::io::ErrorKind::BrokenPipe;
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>().is_some_and(broken)
            || matches!(e.downcast_ref::<seshat::store::Error>(), Some(seshat::store::Error::Io { cause, .. }) if broken(cause))
    })
}

/// A progress bar on stderr for a long database upgrade (indexing the history of a big database).
fn migration_progress() -> seshat::store::Progress {
    let bar = std::sync::Mutex::new(None::<indicatif::ProgressBar>);
    Box::new(move |what: &str, done: u64, total: u64| {
        let Ok(mut bar) = bar.lock() else { return };
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total);
            let style = indicatif::ProgressStyle::with_template("{msg}: {pos}/{len} messages {wide_bar} {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_message(what.to_string());
            bar
        });
        bar.set_position(done);
        if done >= total {
            bar.finish();
        }
    })
}
