//! `seshat mcp`: the memory tools over MCP's stdio transport, under the reference memory server's
//! plain names, so existing MCP client configurations work unchanged, the knowledge tools
//! (`knowledge_search`, `knowledge_read`) over the documents `seshat knowledge add` indexed, and
//! the history tools (`history_search`, `history_read`) over the conversations Seshat keeps.
//! Lines from the client pass the JSON-RPC [`gate`] before the MCP service sees them; one writer
//! puts the service's answers and the gate's on stdout, a whole line at a time.

mod gate;

use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use seshat::memory::tools;
use seshat::store::Store;

use super::Context;

/// Arguments of `mcp`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Configure an MCP client with the command `seshat` and the arguments [\"mcp\"].")]
pub struct Args {}

struct MemoryServer {
    /// Where the tools run: this machine's store, or a remote service (shared with the blocking
    /// threads the calls run on).
    backend: std::sync::Arc<Backend>,
    tools: Vec<Tool>,
    /// Whether a call is in flight, for a stop signal to wait for it.
    work: super::stop::Work,
}

/// Where the tools run.
enum Backend {
    /// This machine's store.
    Local(Box<Local>),
    /// A team's `seshat serve --listen` (`--remote`): each call is its `memory/<tool>` or
    /// `knowledge/search` method.
    Remote(Box<Mutex<super::remote::Remote>>),
}

/// What the tools use of this machine's store.
struct Local {
    store: Mutex<Store>,
    project: Option<String>,
    /// The document corpus and the project key its searches are for.
    knowledge: Mutex<(seshat::retrieval::Knowledge, String)>,
    /// Hybrid memory search, when memory is embedded.
    recall: Mutex<Option<seshat::retrieval::Recall>>,
    /// Embeds what the tools write, when memory is embedded (never delaying an answer).
    background: Option<seshat::retrieval::queue::Background>,
    /// How long what the tools write is kept, by scope (`[memory.ttl]`).
    ttls: seshat::memory::Ttls,
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        let mut server_info = Implementation::from_build_env();
        server_info.name = "seshat-memory".into();
        server_info.version = env!("CARGO_PKG_VERSION").into();
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = server_info;
        info.with_instructions(
            "Seshat's long-term memory: a knowledge graph of entities, observations and relations that lasts \
             across sessions, in scopes user, project and cross.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            return Err(McpError::invalid_params(format!("unknown tool `{}`", request.name), None));
        }
        self.work.begin();
        // The store's work blocks (a database's round trips, a lock): it runs on a blocking
        // thread, never on the executor that reads the client's lines and writes the answers.
        let backend = std::sync::Arc::clone(&self.backend);
        let answer = tokio::task::spawn_blocking(move || backend.call(request))
            .await
            .unwrap_or_else(|e| Err(McpError::internal_error(format!("the tool call failed: {e}"), None)));
        if self.work.end().is_some() {
            // Stopped by a signal while the call ran: its transaction is over, nothing else is.
            std::process::exit(0);
        }
        answer
    }
}

impl Backend {
    /// Runs one tool call (its writes are one transaction), blocking the calling thread.
    fn call(&self, request: CallToolRequestParams) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let local = match self {
            Backend::Local(local) => local,
            Backend::Remote(remote) => {
                let mut remote =
                    remote.lock().map_err(|_| McpError::internal_error("the connection lock is poisoned", None))?;
                return Ok(answer(remote_call(&mut remote, &request.name, &args)).into());
            }
        };
        if seshat::client::history::is_history_tool(&request.name) {
            let output = {
                let store =
                    local.store.lock().map_err(|_| McpError::internal_error("the store lock is poisoned", None))?;
                let project = local.knowledge.lock().map(|k| k.1.clone()).unwrap_or_default();
                seshat::client::history::call_shared(&store, &project, &request.name, &args)
            };
            return Ok(answer(output).into());
        }
        if seshat::retrieval::tools::is_knowledge_tool(&request.name) {
            let output = {
                let mut guard = local
                    .knowledge
                    .lock()
                    .map_err(|_| McpError::internal_error("the knowledge lock is poisoned", None))?;
                let (knowledge, project) = &mut *guard;
                seshat::retrieval::tools::call(knowledge, project, &request.name, &args)
            };
            return Ok(answer(output).into());
        }
        let output = {
            let mut store =
                local.store.lock().map_err(|_| McpError::internal_error("the store lock is poisoned", None))?;
            // Written by an agent over MCP; the answers say where each line came from.
            let mut memory = store
                .memory(local.project.as_deref())
                .written_by(seshat::memory::Writer::mcp())
                .with_sources(true)
                .with_ttls(local.ttls.clone());
            let mut recall =
                local.recall.lock().map_err(|_| McpError::internal_error("the recall lock is poisoned", None))?;
            match recall.as_mut().filter(|r| r.memory()) {
                Some(r) => {
                    let mut search = |m: &mut seshat::memory::Memory<'_>,
                                      q: &str,
                                      s: Option<&seshat::memory::Scope>,
                                      n: usize| r.search_memory(m, q, s, n);
                    tools::call_with(&mut memory, &request.name, &args, Some(&mut search))
                }
                None => tools::call(&mut memory, &request.name, &args),
            }
        };
        if let Some(b) = &local.background {
            b.poke();
        }
        Ok(answer(output).into())
    }
}

/// Runs tool `name` on the remote service: a memory tool as its `memory/<tool>` method (its
/// arguments read here as the method's params, so bad ones are refused as the local tool refuses
/// them), the knowledge tools as `knowledge/search` (its hits shaped as the local tool shapes
/// them) and `knowledge/read`.
fn remote_call(remote: &mut super::remote::Remote, name: &str, args: &Value) -> seshat::tool::ToolOutput {
    use seshat_protocol::methods as m;
    match name {
        seshat::retrieval::tools::SEARCH => match remote.call("knowledge/search", args) {
            Ok(Ok(result)) => match serde_json::from_value::<seshat::retrieval::Found>(result) {
                Ok(found) => seshat::tool::ToolOutput::ok(seshat::retrieval::tools::search_output(&found)),
                Err(e) => seshat::tool::ToolOutput::error(format!("the service's answer is not a search's: {e}")),
            },
            Ok(Err(refused)) => seshat::tool::ToolOutput::error(refused.to_string()),
            Err(e) => seshat::tool::ToolOutput::error(format!("{e:#}")),
        },
        seshat::retrieval::tools::READ => match remote.call("knowledge/read", args) {
            Ok(Ok(result)) => seshat::tool::ToolOutput::ok(result),
            Ok(Err(refused)) => seshat::tool::ToolOutput::error(refused.to_string()),
            Err(e) => seshat::tool::ToolOutput::error(format!("{e:#}")),
        },
        "create_entities" => remote_tool::<m::MemoryCreateEntities>(remote, name, args),
        "create_relations" => remote_tool::<m::MemoryCreateRelations>(remote, name, args),
        "add_observations" => remote_tool::<m::MemoryAddObservations>(remote, name, args),
        "delete_entities" => remote_tool::<m::MemoryDeleteEntities>(remote, name, args),
        "delete_observations" => remote_tool::<m::MemoryDeleteObservations>(remote, name, args),
        "delete_relations" => remote_tool::<m::MemoryDeleteRelations>(remote, name, args),
        "read_graph" => remote_tool::<m::MemoryReadGraph>(remote, name, args),
        "search_nodes" => remote_tool::<m::MemorySearchNodes>(remote, name, args),
        "open_nodes" => remote_tool::<m::MemoryOpenNodes>(remote, name, args),
        other => seshat::tool::ToolOutput::error(format!("unknown tool `{other}`")),
    }
}

/// Memory tool `name` as method `M` of the remote service.
fn remote_tool<M: seshat_protocol::methods::Method>(
    remote: &mut super::remote::Remote,
    name: &str,
    args: &Value,
) -> seshat::tool::ToolOutput {
    let params: M::Params = match tools::parse(name, args) {
        Ok(params) => params,
        Err(e) => return seshat::tool::ToolOutput::error(e.to_string()),
    };
    match remote.try_request::<M>(&params) {
        Ok(Ok(result)) => seshat::tool::ToolOutput::ok(serde_json::to_value(result).unwrap_or_default()),
        Ok(Err(refused)) => seshat::tool::ToolOutput::error(refused.to_string()),
        Err(e) => seshat::tool::ToolOutput::error(format!("{e:#}")),
    }
}

/// A tool's output as MCP's structured result, its error or note naming tools as MCP serves them.
fn answer(output: seshat::tool::ToolOutput) -> CallToolResult {
    let mut structured = match output.structured {
        // MCP's structured content is an object.
        Value::String(text) => json!({"text": text}),
        other => other,
    };
    // Only Seshat's own words are rewritten, never the data the user stored.
    for key in ["error", "note", "hint"] {
        if let Some(Value::String(text)) = structured.get_mut(key) {
            *text = tools::plain_names(text);
        }
    }
    if output.is_error
        && let Some(text) = structured.get_mut("text").and_then(|t| t.as_str().map(tools::plain_names))
    {
        structured["text"] = Value::String(text);
    }
    if output.is_error { CallToolResult::structured_error(structured) } else { CallToolResult::structured(structured) }
}

/// The tool definitions in MCP's shape: memory's, then knowledge's, then history's, under their
/// plain names.
fn mcp_tools() -> anyhow::Result<Vec<Tool>> {
    tools::definitions()
        .into_iter()
        .chain(seshat::retrieval::tools::definitions())
        .chain(seshat::client::history::shared_definitions())
        .map(|d| {
            let tool = json!({
                "name": d.name,
                "title": d.title,
                "description": tools::plain_names(&d.description),
                "inputSchema": d.input_schema,
                "annotations": {
                    "readOnlyHint": d.read_only,
                    "destructiveHint": d.destructive,
                    "idempotentHint": d.idempotent,
                    "openWorldHint": false
                }
            });
            serde_json::from_value(tool).with_context(|| format!("tool definition {}", d.name))
        })
        .collect()
}

pub fn run(ctx: &Context, _args: &Args, signals: Option<super::stop::Signals>) -> anyhow::Result<ExitCode> {
    let server = match ctx.remote()? {
        Some(remote) => MemoryServer {
            backend: std::sync::Arc::new(Backend::Remote(Box::new(Mutex::new(remote)))),
            // (The history tools read this machine's store: not offered over a remote service.)
            tools: mcp_tools()?.into_iter().filter(|t| !seshat::client::history::is_history_tool(&t.name)).collect(),
            work: super::stop::Work::default(),
        },
        None => {
            // The library opens what the tools need; an embedder that cannot be loaded leaves
            // the searches lexical, and the memory tools serve on.
            let env = ctx.environment(Default::default())?;
            let local = Local {
                store: Mutex::new(ctx.store()?),
                project: ctx.repository.clone(),
                knowledge: Mutex::new((env.knowledge()?, ctx.project.clone())),
                recall: Mutex::new(env.recall()),
                background: env.background(),
                ttls: seshat::memory::Ttls::parse(&ctx.config()?.memory.ttl)
                    .map_err(|e| anyhow::anyhow!("config.toml: {e}"))?,
            };
            MemoryServer {
                backend: std::sync::Arc::new(Backend::Local(Box::new(local))),
                tools: mcp_tools()?,
                work: super::stop::Work::default(),
            }
        }
    };
    if let Some(signals) = signals {
        // A call in flight finishes (its one transaction) before the process exits.
        let work = server.work.clone();
        signals.on_stop(move |signal| work.stop(signal, || std::process::exit(0), || {}));
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().enable_io().build()?;
    runtime.block_on(serve(server))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(server: MemoryServer) -> anyhow::Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (to_service, service_in) = tokio::io::duplex(1 << 16);
    let (service_out, from_service) = tokio::io::duplex(1 << 16);
    let service = server.serve((service_in, service_out));
    let (lines, mut outbox) = tokio::sync::mpsc::unbounded_channel::<String>();

    // The one writer of stdout.
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = outbox.recv().await {
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    // The service's answers, a line at a time.
    let relay = {
        let lines = lines.clone();
        tokio::spawn(async move {
            let mut from_service = BufReader::new(from_service);
            let mut line = String::new();
            while from_service.read_line(&mut line).await.is_ok_and(|n| n > 0) {
                let text = line.trim_end_matches(['\n', '\r']).to_string();
                if lines.send(text).is_err() {
                    break;
                }
                line.clear();
            }
        })
    };
    // The client's lines through the gate. The last line counts even without a line break: each
    // line reaches the service with one. At the input's end the service still answers all it
    // was given before it stops (rmcp finishes its requests; a test sends 200 at once).
    let reader = tokio::spawn(async move {
        let mut to_service = to_service;
        let mut stdin = BufReader::new(tokio::io::stdin());
        let mut gate = gate::Gate::default();
        let mut line = Vec::new();
        loop {
            line.clear();
            match stdin.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            match gate.check(text) {
                gate::Verdict::Forward => {
                    let mut framed = text.to_string();
                    framed.push('\n');
                    if to_service.write_all(framed.as_bytes()).await.is_err() {
                        break;
                    }
                }
                gate::Verdict::Answer(answer) => {
                    if lines.send(answer).is_err() {
                        break;
                    }
                }
                gate::Verdict::Ignore => {}
            }
        }
        drop(to_service);
    });
    let outcome = async {
        let running = service.await.context("MCP handshake failed")?;
        running.waiting().await.context("MCP server stopped")?;
        anyhow::Ok(())
    }
    .await;
    reader.abort();
    let _ = relay.await;
    let _ = writer.await;
    // An input that ended before `initialize` is a client that never started: not an error.
    match outcome {
        Err(e) if format!("{e:#}").contains("connection closed") => Ok(()),
        other => other,
    }
}
