//! The tools an agent may call: the built-in memory, history and knowledge tools and the
//! application's own.

use serde_json::Value;

use super::history;
use crate::memory;
use crate::plugins::ToolSpec;
use crate::store::Store;
use crate::tool::{ToolDef, ToolOutput};

/// A tool an application registers with [`crate::client::Agent`].
pub trait Tool: Send {
    /// Its definition: name, description, JSON Schema of its arguments.
    fn definition(&self) -> ToolDef;
    /// Runs it. An error output is a tool error the model reads (it is not fatal to the turn).
    fn call(&mut self, arguments: &Value) -> ToolOutput;
}

/// The tools offered to the model.
#[derive(Default)]
pub struct Tools {
    memory: bool,
    history: bool,
    /// The document corpus and the project key its searches are for.
    knowledge: Option<(crate::retrieval::Knowledge, String)>,
    /// Hybrid history and memory search, when the user opted in to embedding them.
    recall: Option<crate::retrieval::Recall>,
    custom: Vec<Box<dyn Tool>>,
    /// When set, only these are offered (`[chat] tools = [...]`).
    only: Option<std::collections::HashSet<String>>,
    /// How long what the memory tools write is kept, by scope (`[memory.ttl]`).
    memory_ttls: memory::Ttls,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("memory", &self.memory)
            .field("history", &self.history)
            .field("knowledge", &self.knowledge.is_some())
            .field("custom", &self.custom.len())
            .finish()
    }
}

impl Tools {
    /// The memory tools only.
    pub fn with_memory() -> Self {
        Tools { memory: true, ..Tools::default() }
    }

    /// Every built-in tool: memory, and the history tools that read back what compaction took
    /// out of the view (what `seshat chat` offers).
    pub fn builtin() -> Self {
        Tools { memory: true, history: true, ..Tools::default() }
    }

    /// Adds the history tools (`history_search`, `history_read`).
    pub fn with_history(mut self) -> Self {
        self.history = true;
        self
    }

    /// Adds the knowledge tools (`knowledge_search`, `knowledge_read`) over `knowledge`, for the
    /// project whose key is `project`.
    pub(crate) fn with_knowledge(mut self, knowledge: crate::retrieval::Knowledge, project: String) -> Self {
        self.knowledge = Some((knowledge, project));
        self
    }

    /// Makes `history_search` and `memory_search_nodes` hybrid where `recall` embeds them.
    pub(crate) fn with_recall(mut self, recall: crate::retrieval::Recall) -> Self {
        self.recall = Some(recall);
        self
    }

    /// Keeps what the memory tools write as long as `ttls` say for its scope.
    pub fn with_memory_ttls(mut self, ttls: memory::Ttls) -> Self {
        self.memory_ttls = ttls;
        self
    }

    /// No tools.
    pub fn none() -> Self {
        Tools::default()
    }

    /// Offers only the tools named (the others are neither offered nor run).
    pub fn only(mut self, names: &[String]) -> Self {
        self.only = Some(names.iter().cloned().collect());
        self
    }

    /// Adds an application tool.
    pub fn register(&mut self, tool: Box<dyn Tool>) {
        self.custom.push(tool);
    }

    /// The tools offered, under the names the model calls them by (the memory tools prefixed).
    pub fn definitions(&self) -> Vec<ToolDef> {
        let mut defs = Vec::new();
        if self.memory {
            defs.extend(memory::tools::definitions().into_iter().map(|mut d| {
                d.name = format!("{}{}", memory::tools::AGENT_PREFIX, d.name);
                d
            }));
        }
        if self.history {
            defs.extend(history::definitions());
        }
        if self.knowledge.is_some() {
            defs.extend(crate::retrieval::tools::definitions());
        }
        defs.extend(self.custom.iter().map(|t| t.definition()));
        if let Some(only) = &self.only {
            defs.retain(|d| only.contains(&d.name));
        }
        defs
    }

    /// The definitions as sent to the provider.
    pub(crate) fn specs(&self) -> Vec<ToolSpec> {
        self.definitions().iter().map(spec).collect()
    }

    /// Runs the tool `name` in `session`. Unknown tools and unparsable arguments are tool errors.
    pub fn call(
        &mut self,
        store: &mut Store,
        project: Option<&str>,
        session: &str,
        name: &str,
        arguments: &str,
    ) -> ToolOutput {
        let args: Value = match serde_json::from_str(if arguments.trim().is_empty() { "{}" } else { arguments }) {
            Ok(v) => v,
            Err(e) => {
                return ToolOutput::error(format!(
                    "the arguments of `{name}` are not valid JSON ({e}); send a JSON object"
                ));
            }
        };
        if self.memory && name.starts_with(memory::tools::AGENT_PREFIX) {
            // Written by this session's agent, at the message that made the call (the last stored).
            let seq = store.session(session).map_or(0, |s| s.message_count);
            let mut memory = store
                .memory(project)
                .written_by(memory::Writer::agent(session, seq))
                .with_ttls(self.memory_ttls.clone());
            return match self.recall.as_mut().filter(|r| r.memory()) {
                Some(recall) => {
                    let mut search = |m: &mut memory::Memory<'_>, q: &str, s: Option<&memory::Scope>, n: usize| {
                        recall.search_memory(m, q, s, n)
                    };
                    memory::tools::call_with(&mut memory, name, &args, Some(&mut search))
                }
                None => memory::tools::call(&mut memory, name, &args),
            };
        }
        if self.history && history::is_history_tool(name) {
            return history::call_with(store, session, name, &args, self.recall.as_mut());
        }
        if let Some((knowledge, project)) =
            self.knowledge.as_mut().filter(|_| crate::retrieval::tools::is_knowledge_tool(name))
        {
            return crate::retrieval::tools::call(knowledge, project, name, &args);
        }
        match self.custom.iter_mut().find(|t| t.definition().name == name) {
            Some(tool) => tool.call(&args),
            None => ToolOutput::error(format!("there is no tool named `{name}`")),
        }
    }
}

/// A definition as a provider request carries it.
pub(crate) fn spec(def: &ToolDef) -> ToolSpec {
    ToolSpec { name: def.name.clone(), description: def.description.clone(), parameters: def.input_schema.to_string() }
}
