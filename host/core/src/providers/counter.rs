//! Counting a request's input tokens where the server can: the provider plugin builds the count
//! requests (`counters`, contract 0.3.0 — llama.cpp's and vLLM's `/tokenize`, llama-cpp-python's
//! `/extras/tokenize/count`, Anthropic's `/v1/messages/count_tokens`) and reads their answers;
//! the host sends them under the same destination and credential rules as chat. The first
//! counter that answers is remembered for the model; when none does (Ollama, OpenAI's own API, a
//! 0.1 or 0.2 plugin) the model is marked as having none and nothing more is sent for it. Counts
//! are cached by (model, content hash), so a request counted once is never counted again.

use std::hash::{Hash, Hasher};

use super::{Provider, counting};
use crate::conversation::{Part, Role};
use crate::plugins::{ChatRequest, PluginMessage, ToolSpec};
pub use seshat_protocol::turn::Counting;

/// The counts kept at most; past it the cache starts over.
const CACHE_ENTRIES: usize = 4_096;

/// What is known of a model's counter on this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Counter {
    /// The counter with this name answers.
    Uses(String),
    /// None answered, or the last one that did failed since: counts come from elsewhere.
    Without,
}

/// The key a count is cached under.
fn key(model: &str, system: &str, tools: &[ToolSpec], messages: &[(Role, &[Part])]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    model.hash(&mut h);
    system.hash(&mut h);
    for t in tools {
        (&t.name, &t.description, &t.parameters).hash(&mut h);
    }
    messages.hash(&mut h);
    h.finish()
}

impl Provider {
    /// The input tokens of a request with `system`, `tools` and `messages`, as the server counts
    /// them, when it has a counter that answers. A failing counter is a fallback, never an error:
    /// the caller then counts locally or estimates.
    pub(crate) fn count_input(
        &mut self,
        model: &str,
        system: &str,
        tools: &[ToolSpec],
        messages: &[(Role, &[Part])],
    ) -> Option<u64> {
        if self.counters.get(model) == Some(&Counter::Without) {
            return None;
        }
        let key = key(model, system, tools, messages);
        if let Some(&n) = self.counts.get(&key) {
            return Some(n);
        }
        let request = ChatRequest {
            model: model.to_string(),
            system: Some(system.to_string()).filter(|s| !s.is_empty()),
            tools: tools.to_vec(),
            max_tokens: 1,
            stream: false,
            base_url: self.base_url.clone(),
            extra: "{}".into(),
        };
        let messages: Vec<PluginMessage> =
            messages.iter().map(|(role, parts)| PluginMessage { id: 0, role: *role, parts: parts.to_vec() }).collect();
        let counters = match self.plugin.counters(&request, &messages) {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(provider = %self.name, error = %self.redact(&e.to_string()), "no counters");
                Vec::new()
            }
        };
        let known = match self.counters.get(model) {
            Some(Counter::Uses(name)) => Some(name.clone()),
            _ => None,
        };
        for counter in counters.into_iter().filter(|c| known.as_ref().is_none_or(|k| *k == c.name)) {
            let Ok(answer) = self.ask(&counter) else { break };
            self.count_requests += 1;
            let counted = match answer {
                Ok((status, body)) => self.plugin.parse_count(&counter.name, status, &body).ok().flatten(),
                Err(f) => {
                    tracing::debug!(provider = %self.name, counter = %counter.name, failure = %self.redact(&f.describe()), "counter failed");
                    None
                }
            };
            if let Some(n) = counted {
                self.counters.insert(model.to_string(), Counter::Uses(counter.name));
                if self.counts.len() >= CACHE_ENTRIES {
                    self.counts.clear();
                }
                self.counts.insert(key, n);
                return Some(n);
            }
        }
        // None answered (or the one that used to failed): count elsewhere from now on.
        self.counters.insert(model.to_string(), Counter::Without);
        None
    }

    /// How `model`'s tokens are counted where precision decides.
    pub fn counting(&self, model: &str) -> Counting {
        match self.counters.get(model) {
            Some(Counter::Uses(name)) => Counting::Server { counter: name.clone() },
            other => match counting::tokenizer_name(model) {
                Some(name) => Counting::Local { tokenizer: name.to_string() },
                None => Counting::Estimate { server_has_none: other.is_some() },
            },
        }
    }

    /// Requests sent to counters so far (tests and benchmarks).
    pub fn count_requests(&self) -> u64 {
        self.count_requests
    }
}
