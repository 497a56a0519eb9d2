//! `seshat mcp`: the memory tools over MCP's stdio transport, under the reference memory server's
//! plain names, so existing MCP client configurations work unchanged.

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
    store: Mutex<Store>,
    project: Option<String>,
    tools: Vec<Tool>,
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
        let args = Value::Object(request.arguments.unwrap_or_default());
        let output = {
            let mut store =
                self.store.lock().map_err(|_| McpError::internal_error("the store lock is poisoned", None))?;
            let mut memory = store.memory(self.project.as_deref());
            tools::call(&mut memory, &request.name, &args)
        };
        let result = if output.is_error {
            CallToolResult::structured_error(output.structured)
        } else {
            CallToolResult::structured(output.structured)
        };
        Ok(result.into())
    }
}

/// The tool definitions in MCP's shape.
fn mcp_tools() -> anyhow::Result<Vec<Tool>> {
    tools::definitions()
        .into_iter()
        .map(|d| {
            let tool = json!({
                "name": d.name,
                "title": d.title,
                "description": d.description,
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

pub fn run(ctx: &Context, _args: &Args) -> anyhow::Result<ExitCode> {
    let server = MemoryServer { store: Mutex::new(ctx.store()?), project: ctx.repository.clone(), tools: mcp_tools()? };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    runtime.block_on(async move {
        let service = server.serve(rmcp::transport::stdio()).await.context("MCP handshake failed")?;
        service.waiting().await.context("MCP server stopped")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
