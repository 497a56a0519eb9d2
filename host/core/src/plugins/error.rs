//! The plugin runtime's error type. Every message names the plugin and says what happened.

use std::path::PathBuf;

/// Errors loading or calling plugins.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A plugin file could not be read.
    #[error("cannot read {}: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },
    /// A `plugin.toml` is missing or malformed.
    #[error("invalid plugin manifest {}: {message}", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The component is not a plugin of the expected kind.
    #[error("plugin `{plugin}` is not a {expected}: {found}")]
    WrongKind {
        /// The plugin.
        plugin: String,
        /// The expected kind.
        expected: &'static str,
        /// What it is instead.
        found: String,
    },
    /// The component was built for a contract version this host does not speak.
    #[error(
        "plugin `{plugin}` was built for seshat:plugin@{found}; this seshat speaks {expected}. \
         Rebuild the plugin against seshat:plugin@{expected}"
    )]
    Incompatible {
        /// The plugin.
        plugin: String,
        /// The version range this host speaks.
        expected: &'static str,
        /// The version the plugin was built for.
        found: String,
    },
    /// The file is not a valid WebAssembly component, or its imports cannot be satisfied.
    #[error("plugin `{plugin}` cannot be loaded: {message}")]
    Load {
        /// The plugin.
        plugin: String,
        /// Why.
        message: String,
    },
    /// The plugin used up its time budget and was stopped.
    #[error(
        "plugin `{plugin}` ({kind}) ran past its time budget of {budget_ms} ms of guest time and was stopped; \
         it will be restarted on the next call"
    )]
    Timeout {
        /// The plugin.
        plugin: String,
        /// Its kind.
        kind: &'static str,
        /// The budget.
        budget_ms: u64,
    },
    /// The plugin tried to use more memory than allowed and was stopped.
    #[error(
        "plugin `{plugin}` ({kind}) tried to grow its memory past the {limit_mib} MiB limit and was stopped; \
         it will be restarted on the next call"
    )]
    Memory {
        /// The plugin.
        plugin: String,
        /// Its kind.
        kind: &'static str,
        /// The limit.
        limit_mib: u64,
    },
    /// The plugin crashed (a trap: panic, unreachable, stack overflow, …).
    #[error(
        "plugin `{plugin}` ({kind}) crashed: {message}; it will be restarted on the next call{}",
        stderr_lines(stderr)
    )]
    Trap {
        /// The plugin.
        plugin: String,
        /// Its kind.
        kind: &'static str,
        /// The trap.
        message: String,
        /// The last of what it wrote to stderr in that call (an interpreter's traceback), redacted
        /// and with control characters escaped; empty when it wrote nothing.
        stderr: String,
    },
    /// The plugin returned an error of its own.
    #[error("plugin `{plugin}` reported an error [{code}]: {message}")]
    Plugin {
        /// The plugin.
        plugin: String,
        /// The plugin's error code.
        code: String,
        /// The plugin's message.
        message: String,
    },
    /// The plugin's answer broke the contract; it was rejected whole.
    #[error("plugin `{plugin}` returned an invalid answer, rejected whole: {message}")]
    InvalidOutput {
        /// The plugin.
        plugin: String,
        /// What was wrong.
        message: String,
    },
    /// No plugin of that name is installed.
    #[error("no {kind} plugin named `{name}` is installed")]
    NotFound {
        /// The kind looked for.
        kind: &'static str,
        /// The name asked for.
        name: String,
    },
    /// The configuration is invalid.
    #[error("invalid configuration {}: {message}", path.display())]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// A stable, machine-matchable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Io { .. } => "plugin_io",
            Error::Manifest { .. } => "plugin_manifest",
            Error::WrongKind { .. } => "plugin_wrong_kind",
            Error::Incompatible { .. } => "plugin_incompatible",
            Error::Load { .. } => "plugin_load",
            Error::Timeout { .. } => "plugin_timeout",
            Error::Memory { .. } => "plugin_memory",
            Error::Trap { .. } => "plugin_trap",
            Error::Plugin { .. } => "plugin_error",
            Error::InvalidOutput { .. } => "plugin_invalid_output",
            Error::NotFound { .. } => "plugin_not_found",
            Error::Config { .. } => "config",
        }
    }
}

/// A crashed plugin's stderr tail as the error's last lines, indented (nothing when empty).
fn stderr_lines(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        return String::new();
    }
    let mut out = String::from("\nthe end of what it wrote to stderr:");
    for line in stderr.trim_end().lines() {
        out.push('\n');
        if !line.trim().is_empty() {
            out.push_str("    ");
            out.push_str(line);
        }
    }
    out
}

/// Result alias for the plugin runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;
