//! The connection's own methods: `initialize` (the client's settings and tools) and
//! `config/get`.

use serde_json::{Value, json};
use seshat_protocol::methods as m;

use crate::connection::ClientSetup;
use crate::error::RpcError;
use crate::outbox as rpc;
use crate::server::Server;

impl Server {
    /// `initialize`.
    pub(crate) fn initialize(&mut self, p: m::InitializeParams) -> Result<Option<Value>, RpcError> {
        if let Some(version) = &p.protocol_version {
            seshat_protocol::check_version(version, seshat_protocol::Peer::Client)
                .map_err(|e| RpcError::seshat("protocol_mismatch", e))?;
        }
        // A provider that cannot be selected is refused now, not at the first turn.
        if let Some(name) = &p.provider {
            let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
            seshat::client::check_provider(&config, &self.ctx.catalog(), name)
                .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
        }
        if self.acting.user.is_some() {
            self.enter_project(p.project.as_deref(), p.instructions)?;
        }
        crate::client_hooks::check(&p.hooks).map_err(|e| RpcError::invalid_params(format!("initialize: {e}")))?;
        let tools = p
            .tools
            .into_iter()
            .map(|t| {
                let schema = t.input_schema.unwrap_or_else(|| json!({"type": "object"}));
                seshat::tool::ToolDef::new(t.name, t.description, schema)
            })
            .collect();
        self.setup = Some(ClientSetup {
            tools,
            hooks: p.hooks,
            auto_compact: p.auto_compact,
            summary_model: p.compact_summary_model,
            provider: p.provider,
            model: p.model,
            window: p.window,
        });
        rpc::answer::<m::Initialize>(&m::InitializeResult {
            protocol_version: seshat_protocol::PROTOCOL_VERSION.into(),
            server_info: m::ServerInfo { name: "seshat".into(), version: env!("CARGO_PKG_VERSION").into() },
            capabilities: m::Capabilities {
                turns: true,
                tools: true,
                hooks: true,
                memory: true,
                knowledge: true,
                compaction: true,
            },
        })
    }

    /// `config/get`.
    pub(crate) fn config_get(&mut self) -> Result<Option<Value>, RpcError> {
        let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
        let providers = seshat::client::provider_names(&config, &self.ctx.catalog());
        rpc::answer::<m::ConfigGet>(&m::ConfigGetResult {
            project: self.ctx.project.clone(),
            // A network client is not told where the server keeps its store.
            database: if self.acting.user.is_some() { "remote".into() } else { self.ctx.db.to_string() },
            provider: config.plugins.provider.clone(),
            model: config.chat.model.clone(),
            auto_compact: config.chat.auto_compact.unwrap_or(true),
            compact_summary_model: config.chat.summary_model.clone(),
            embedder: config.plugins.embedder.clone(),
            providers,
        })
    }
}
