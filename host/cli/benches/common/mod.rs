//! Timing and reporting helpers shared by the benchmark binaries.

#![allow(dead_code)]

pub mod agent;
pub mod chat;
pub mod provider;

use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift), so every run measures the same corpus.
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `n` characters drawn from `set`.
    pub fn from(&mut self, set: &[u8], n: usize) -> String {
        (0..n).map(|_| set[self.below(set.len())] as char).collect()
    }
}

/// How long `f` takes.
pub fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// The median of some timings.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The median of `runs` timings of `f`.
pub fn median_of(runs: usize, mut f: impl FnMut()) -> Duration {
    median((0..runs).map(|_| time(&mut f)).collect())
}

/// A duration the way the tables show it.
pub fn fmt(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.2} s", d.as_secs_f64())
    } else if d >= Duration::from_millis(1) {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    }
}

/// One table row: Seshat's time, the baseline's, their ratio and the target.
pub fn report(name: &str, ours: Duration, base: Duration, target: &str) {
    let ratio = ours.as_secs_f64() / base.as_secs_f64();
    println!("| {name} | {} | {} | {ratio:.3}× | {target} |", fmt(ours), fmt(base));
}

/// A model client for benchmarks that make no summary call.
pub struct NoModel;

impl seshat::compaction::ModelClient for NoModel {
    fn complete(
        &self,
        _: &str,
        _: seshat::plugins::CompletionRequest,
    ) -> Result<seshat::plugins::Completion, seshat::plugins::ModelError> {
        Err(seshat::plugins::ModelError::new("none", "no model call in this benchmark"))
    }
    fn context_window(&self, _: &str) -> Option<u64> {
        None
    }
}

/// Reads one HTTP/1.1 request from a loopback client: its path and body, or `None` when the
/// connection closed.
pub fn read_request(reader: &mut impl std::io::BufRead) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
    let mut len = 0;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((path, body))
}
