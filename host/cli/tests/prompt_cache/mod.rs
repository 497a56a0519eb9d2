//! Providers' prompt caches computed exactly as they are documented, for loopback servers that
//! answer with the usage a real one would report (shared by the tests and the benchmarks):
//!
//! * Anthropic (Messages API): a request is a list of blocks in cache order — the tools, the
//!   system blocks, then each message's content blocks. Each block marked `cache_control` (a
//!   breakpoint) writes the prefix ending at it; a request reads the longest prefix written before
//!   that ends at a block boundary at most 20 blocks before one of its breakpoints. The usage:
//!   `cache_read_input_tokens` (the prefix read), `cache_creation_input_tokens` (what follows it up
//!   to the last breakpoint), `input_tokens` (the rest).
//! * OpenAI (Chat Completions): the prompt (tools, then messages) is cached automatically; a
//!   request reads the longest prefix it shares with an earlier prompt, in steps of 128 tokens from
//!   1,024 (none below), as `prompt_tokens_details.cached_tokens`.
//!
//! A block's tokens are its text (its strings, `cache_control` left out) as Seshat estimates
//! it; OpenAI's prompt is compared four characters at a time: the figures are compared with each
//! other, never with a real tokenizer's.

use std::collections::HashSet;

use serde_json::Value;

/// What a request read and wrote, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Read from the cache.
    pub read: u64,
    /// Written to it (Anthropic only).
    pub written: u64,
    /// Neither.
    pub input: u64,
}

impl CacheUsage {
    /// The tokens the provider had to process (everything not read from the cache).
    pub fn processed(&self) -> u64 {
        self.written + self.input
    }
}

/// A text's tokens as Seshat estimates them (by kind of content), at least one.
fn tokens(text: &str) -> u64 {
    seshat::window::estimate_text(text).max(1)
}

/// The text of a JSON value: its strings and numbers, one after another.
fn text_of(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => out.push_str(s),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Array(a) => a.iter().for_each(|v| text_of(v, out)),
        Value::Object(o) => o.iter().filter(|(k, _)| *k != "cache_control").for_each(|(_, v)| text_of(v, out)),
        _ => {}
    }
}

/// [`text_of`] as a new string.
fn text(v: &Value) -> String {
    let mut out = String::new();
    text_of(v, &mut out);
    out
}

/// `v` without its `cache_control` fields (they mark the cache; they are not its content).
fn without_marks(v: &Value) -> (Value, bool) {
    match v {
        Value::Object(o) => {
            let marked = o.contains_key("cache_control");
            let mut o = o.clone();
            o.remove("cache_control");
            (Value::Object(o), marked)
        }
        other => (other.clone(), false),
    }
}

/// An Anthropic prompt cache.
#[derive(Debug, Default)]
pub struct Anthropic {
    /// The prefixes written: the hash of each block sequence ending at a breakpoint.
    written: HashSet<u64>,
}

impl Anthropic {
    /// What `body` (a Messages API request) reads and writes, and the cache after it.
    pub fn usage(&mut self, body: &Value) -> CacheUsage {
        // (what identifies the block, its tokens, a breakpoint)
        let mut blocks: Vec<(String, u64, bool)> = Vec::new();
        let mut push = |kind: &str, v: &Value| {
            let (v, marked) = without_marks(v);
            blocks.push((format!("{kind}:{v}"), tokens(&text(&v)), marked));
        };
        for tool in body["tools"].as_array().into_iter().flatten() {
            push("tool", tool);
        }
        match &body["system"] {
            Value::Array(a) => a.iter().for_each(|b| push("system", b)),
            other if !other.is_null() => push("system", other),
            _ => {}
        }
        for m in body["messages"].as_array().into_iter().flatten() {
            let role = m["role"].as_str().unwrap_or("?");
            match &m["content"] {
                Value::Array(a) => a.iter().for_each(|b| push(role, b)),
                other => push(role, other),
            }
        }
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (key, _, _) in &blocks {
            std::hash::Hash::hash(key, &mut h);
            hashes.push(std::hash::Hasher::finish(&h));
        }
        let breakpoints: Vec<usize> = blocks.iter().enumerate().filter(|(_, b)| b.2).map(|(i, _)| i).collect();
        // The longest prefix written before, looking back at most 20 blocks from a breakpoint.
        let read_through = breakpoints
            .iter()
            .filter_map(|&b| (b.saturating_sub(20)..=b).rev().find(|&j| self.written.contains(&hashes[j])))
            .max();
        let size = |range: std::ops::Range<usize>| blocks[range].iter().map(|b| b.1).sum::<u64>();
        let read_end = read_through.map_or(0, |j| j + 1);
        let last = breakpoints.last().map_or(0, |&b| b + 1).max(read_end);
        let usage =
            CacheUsage { read: size(0..read_end), written: size(read_end..last), input: size(last..blocks.len()) };
        self.written.extend(breakpoints.iter().map(|&b| hashes[b]));
        usage
    }
}

/// An OpenAI prompt cache.
#[derive(Debug, Default)]
pub struct OpenAi {
    /// Every prompt seen, as the token-sized pieces it is compared in.
    prompts: Vec<Vec<String>>,
}

/// The least prompt OpenAI caches, and the step its hits come in.
const OPENAI_MIN: u64 = 1_024;
const OPENAI_STEP: u64 = 128;

impl OpenAi {
    /// What `body` (a Chat Completions request) reads, and the cache after it.
    pub fn usage(&mut self, body: &Value) -> CacheUsage {
        let mut prompt = String::new();
        for tool in body["tools"].as_array().into_iter().flatten() {
            text_of(tool, &mut prompt);
        }
        for m in body["messages"].as_array().into_iter().flatten() {
            // Each message opens with its role, as a chat template renders it.
            prompt.push_str("<|");
            text_of(m, &mut prompt);
        }
        let chars: Vec<char> = prompt.chars().collect();
        let pieces: Vec<String> = chars.chunks(4).map(|c| c.iter().collect()).collect();
        let total = pieces.len() as u64;
        let shared = self
            .prompts
            .iter()
            .map(|p| p.iter().zip(&pieces).take_while(|(a, b)| a == b).count() as u64)
            .max()
            .unwrap_or(0);
        let read = if shared >= OPENAI_MIN { shared / OPENAI_STEP * OPENAI_STEP } else { 0 };
        self.prompts.push(pieces);
        CacheUsage { read, written: 0, input: total - read }
    }
}
