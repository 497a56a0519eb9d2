//! Counting tokens where the model's own tokenizer can run here: OpenAI's models, with the BPE
//! ranks `tiktoken-rs` ships (`o200k_base` for the GPT-4o, GPT-4.1, GPT-5 and o-series families,
//! `cl100k_base` for GPT-4 and GPT-3.5). Counts are cached by (tokenizer, content hash), so a
//! turn counts only what is new.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use tiktoken_rs::CoreBPE;

/// The counts kept at most; past it the cache starts over (a session's texts are a few thousand).
const CACHE_ENTRIES: usize = 100_000;

/// Which of OpenAI's tokenizers `model` uses, if it is one of theirs.
fn tokenizer(model: &str) -> Option<(u8, &'static CoreBPE)> {
    let m = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let o200k = ["gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1", "o3", "o4", "gpt-oss"];
    if o200k.iter().any(|p| m.starts_with(p)) {
        return Some((0, tiktoken_rs::o200k_base_singleton()));
    }
    if ["gpt-4", "gpt-3.5", "gpt-35"].iter().any(|p| m.starts_with(p)) {
        return Some((1, tiktoken_rs::cl100k_base_singleton()));
    }
    None
}

/// The name of the tokenizer `model`'s tokens are counted with here, if any.
pub fn tokenizer_name(model: &str) -> Option<&'static str> {
    tokenizer(model).map(|(which, _)| if which == 0 { "o200k_base" } else { "cl100k_base" })
}

/// Whether `model`'s tokens can be counted here.
pub fn counts(model: &str) -> bool {
    tokenizer(model).is_some()
}

/// `text`'s tokens in `model`'s own tokenizer, when it can run here.
pub fn count(model: &str, text: &str) -> Option<u64> {
    let (which, bpe) = tokenizer(model)?;
    if text.is_empty() {
        return Some(0);
    }
    static CACHE: OnceLock<Mutex<HashMap<(u8, u64), u64>>> = OnceLock::new();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    let key = (which, hasher.finish());
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(&n) = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key) {
        return Some(n);
    }
    let n = bpe.count_ordinary(text) as u64;
    let mut cache = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    cache.insert(key, n);
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openais_models_are_counted_with_their_own_tokenizer_and_others_are_not() {
        // "hello world" is two tokens in both OpenAI tokenizers.
        assert_eq!(count("gpt-4o-mini", "hello world"), Some(2));
        assert_eq!(count("openai/gpt-4.1", "hello world"), Some(2));
        assert_eq!(count("gpt-4-turbo", "hello world"), Some(2));
        assert_eq!(count("qwen2.5-coder:7b", "hello world"), None);
        assert_eq!(count("claude-sonnet-4-5", "hello world"), None);
        // Cached: the same answer again.
        let code = "    fn main() {\n        println!(\"{}\", 1);\n    }\n".repeat(20);
        assert_eq!(count("gpt-4o", &code), count("gpt-4o", &code));
        assert!(count("gpt-4o", &code).unwrap() < crate::window::estimate_text(&code));
    }
}
