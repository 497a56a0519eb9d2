//! The tools an agent may call: the built-in memory, history and knowledge tools and the
//! application's own.

use serde_json::Value;

use super::history;
use crate::memory;
use crate::plugins::ToolSpec;
use crate::store::Store;

/// A tool an application registers with [`crate::client::Agent`].
pub trait Tool: Send {
    /// Its name, description and JSON Schema.
    fn spec(&self) -> ToolSpec;
    /// Runs it. `Err` is a tool error the model reads (it is not fatal to the turn).
    fn call(&mut self, arguments: &Value) -> Result<String, String>;
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolReply {
    /// The content for the model.
    pub content: String,
    /// Whether it failed.
    pub is_error: bool,
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
    pub fn with_knowledge(mut self, knowledge: crate::retrieval::Knowledge, project: String) -> Self {
        self.knowledge = Some((knowledge, project));
        self
    }

    /// Makes `history_search` and `memory_search_nodes` hybrid where `recall` embeds them.
    pub fn with_recall(mut self, recall: crate::retrieval::Recall) -> Self {
        self.recall = Some(recall);
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

    /// The specs as sent to the provider.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        if self.memory {
            specs.extend(memory::tools::definitions().into_iter().map(|d| ToolSpec {
                name: format!("{}{}", memory::tools::AGENT_PREFIX, d.name),
                description: d.description.to_string(),
                parameters: d.input_schema.to_string(),
            }));
        }
        if self.history {
            specs.extend(history::specs());
        }
        if self.knowledge.is_some() {
            specs.extend(crate::retrieval::tools::specs());
        }
        specs.extend(self.custom.iter().map(|t| t.spec()));
        if let Some(only) = &self.only {
            specs.retain(|s| only.contains(&s.name));
        }
        specs
    }

    /// Runs the tool `name` in `session`. Unknown tools and unparsable arguments are tool errors.
    pub fn call(
        &mut self,
        store: &mut Store,
        project: Option<&str>,
        session: &str,
        name: &str,
        arguments: &str,
    ) -> ToolReply {
        let args: Value = match serde_json::from_str(if arguments.trim().is_empty() { "{}" } else { arguments }) {
            Ok(v) => v,
            Err(e) => {
                return ToolReply {
                    content: format!("the arguments of `{name}` are not valid JSON ({e}); send a JSON object"),
                    is_error: true,
                };
            }
        };
        if self.memory && name.starts_with(memory::tools::AGENT_PREFIX) {
            let out = match self.recall.as_mut().filter(|r| r.memory()) {
                Some(recall) => {
                    let mut search = |m: &mut memory::Memory<'_>, q: &str, s: Option<memory::Scope>, n: usize| {
                        recall.search_memory(m, q, s, n)
                    };
                    memory::tools::call_with(&mut store.memory(project), name, &args, Some(&mut search))
                }
                None => memory::tools::call(&mut store.memory(project), name, &args),
            };
            return ToolReply { content: out.text(), is_error: out.is_error };
        }
        if self.history && history::is_history_tool(name) {
            return match history::call_with(store, session, name, &args, self.recall.as_mut()) {
                Ok(content) => ToolReply { content, is_error: false },
                Err(content) => ToolReply { content, is_error: true },
            };
        }
        if let Some((knowledge, project)) =
            self.knowledge.as_mut().filter(|_| crate::retrieval::tools::is_knowledge_tool(name))
        {
            return match crate::retrieval::tools::call(knowledge, project, name, &args) {
                Ok(v) => ToolReply { content: serde_json::to_string_pretty(&v).unwrap_or_default(), is_error: false },
                Err(content) => ToolReply { content, is_error: true },
            };
        }
        match self.custom.iter_mut().find(|t| t.spec().name == name) {
            Some(tool) => match tool.call(&args) {
                Ok(content) => ToolReply { content, is_error: false },
                Err(content) => ToolReply { content, is_error: true },
            },
            None => ToolReply { content: format!("there is no tool named `{name}`"), is_error: true },
        }
    }
}
