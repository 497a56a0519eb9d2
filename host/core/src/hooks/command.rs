//! Running one command hook: `sh -c COMMAND` in the project's directory, in a process group of its
//! own, the payload on its standard input, its output read (capped), killed with its group past
//! its timeout.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The most of a hook's standard output or error read; the rest is discarded.
const MAX_OUTPUT: usize = 1 << 20;

/// What a command did.
#[derive(Debug)]
pub(super) struct Ran {
    /// Its exit status (`None`: ended by a signal).
    pub code: Option<i32>,
    /// Its standard output, at most [`MAX_OUTPUT`] bytes, lossily decoded.
    pub stdout: String,
    /// Its standard error, likewise.
    pub stderr: String,
}

/// Why a command gave no answer.
#[derive(Debug)]
pub(super) enum Failed {
    /// It could not be started.
    Start(std::io::Error),
    /// It ran past its timeout (and was killed).
    TimedOut(Duration),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Start(e) => write!(f, "could not be started: {e}"),
            Failed::TimedOut(t) => write!(f, "ran past its timeout ({} ms) and was stopped", t.as_millis()),
        }
    }
}

/// Runs `command` with `input` on its standard input and `env` added to its environment.
pub(super) fn run(
    command: &str,
    dir: Option<&Path>,
    env: &[(&str, &str)],
    input: &[u8],
    timeout: Duration,
) -> Result<Ran, Failed> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(dir) = dir.filter(|d| d.is_dir()) {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own group, so a timeout stops what it started too.
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(Failed::Start)?;
    let pid = child.id();
    // Written and read on threads of their own: a hook that does not read its input, or writes
    // much, does not stall it.
    let stdin = child.stdin.take();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            // A hook that exits without reading its input closes the pipe: not an error.
            let _ = stdin.write_all(&input);
        }
    });
    // Each pipe read on its own thread, to its end (past the cap, read and dropped, so the hook
    // never blocks on a full pipe); what was read is sent when the pipe closes.
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        let (sent, read) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = (&mut pipe).take(MAX_OUTPUT as u64).read_to_end(&mut out);
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
            let _ = sent.send(String::from_utf8_lossy(&out).into_owned());
        });
        read
    };
    let stdout = reader(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = reader(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = match waited.recv_timeout(timeout) {
        Ok(status) => status,
        Err(_) => {
            kill_group(pid);
            let _ = waited.recv();
            drop(writer);
            return Err(Failed::TimedOut(timeout));
        }
    };
    // What it left running in its group keeps the pipes open: stopped with it. (A process it
    // moved out of its group may hold them still: its output is not waited for past a moment.)
    kill_group(pid);
    drop(writer);
    let (stdout, stderr) =
        (stdout.recv_timeout(LINGER).unwrap_or_default(), stderr.recv_timeout(LINGER).unwrap_or_default());
    let code = status.map_err(Failed::Start)?.code();
    Ok(Ran { code, stdout, stderr })
}

/// How long a hook's output is waited for once it has exited.
const LINGER: Duration = Duration::from_secs(2);

/// Stops the process group `pid` leads.
fn kill_group(pid: u32) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}
