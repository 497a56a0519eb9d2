//! Embedder plugins (0.2.0): pure translators between texts and one embeddings HTTP API, as
//! provider plugins are for chat. They never see credentials and have no network; the host
//! (`crate::embeddings`) batches, sends what they build and checks the vectors they decode.

use std::sync::OnceLock;

use serde::Serialize;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

use super::bindings::v0_2 as v2;
use super::provider::AuthScheme;
use super::sandbox::{self, Slot, State};
use super::{Error, LoadedPlugin, PluginKind, Result};

use v2::embedder::exports::seshat::plugin::embed as e;

/// An embedding model an embedder knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmbeddingModel {
    /// The model id.
    pub id: String,
    /// The length of its vectors.
    pub dimensions: u32,
    /// The longest input it takes, in tokens.
    pub max_input_tokens: u32,
}

/// What an embedder serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmbedderInfo {
    /// Short id.
    pub id: String,
    /// Base URL when none is configured.
    pub default_base_url: String,
    /// Authentication scheme.
    pub auth: AuthScheme,
    /// Conventional environment variable of the key.
    pub key_env: Option<String>,
    /// The most texts one request may carry (at least 1).
    pub max_batch: u32,
    /// Known models.
    pub models: Vec<EmbeddingModel>,
}

/// What texts are embedded for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbedPurpose {
    /// Text to be found.
    Document,
    /// A search query.
    Query,
}

/// One batch of texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedRequest {
    /// The model id.
    pub model: String,
    /// The texts.
    pub texts: Vec<String>,
    /// What they are for.
    pub purpose: EmbedPurpose,
    /// The vector length asked for, when the user set one.
    pub dimensions: Option<u32>,
    /// The base URL.
    pub base_url: String,
    /// Options, a JSON object.
    pub extra: String,
}

type Pre = v2::embedder::EmbedderPre<State<()>>;

fn linker() -> wasmtime::Result<&'static Linker<State<()>>> {
    static LINKER: OnceLock<Linker<State<()>>> = OnceLock::new();
    sandbox::linker(&LINKER, |l| v2::embedder::Embedder::add_to_linker::<_, HasSelf<_>>(l, |s| s))
}

/// A loaded embedder, ready to call.
pub struct EmbedderPlugin {
    allowed_hosts: Vec<String>,
    pre: Pre,
    slot: Slot<(), v2::embedder::Embedder>,
}

impl std::fmt::Debug for EmbedderPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedderPlugin").field("id", &self.slot.id).finish_non_exhaustive()
    }
}

impl EmbedderPlugin {
    /// Prepares a loaded plugin as an embedder.
    pub fn new(plugin: &LoadedPlugin) -> Result<Self> {
        let (pre, slot) = sandbox::prepare(plugin, PluginKind::Embedder, linker(), Pre::new)?;
        Ok(Self { allowed_hosts: plugin.manifest.allowed_hosts.clone(), pre, slot: slot.with_bindings() })
    }

    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.slot.id
    }

    /// The SHA-256 of its `.wasm`, in hex.
    pub fn sha256(&self) -> &str {
        &self.slot.sha256
    }

    /// What its calls have used so far.
    pub fn usage(&self) -> super::Usage {
        self.slot.usage
    }

    /// Hosts its manifest allows requests to.
    pub fn allowed_hosts(&self) -> &[String] {
        &self.allowed_hosts
    }

    /// Texts its log lines and panic messages never show (the host passes the credential).
    pub fn redact_logs(&mut self, secrets: Vec<String>) {
        self.slot.redact(secrets);
    }

    fn call<R>(
        &mut self,
        f: impl FnOnce(
            &mut Store<State<()>>,
            &v2::embedder::Embedder,
        ) -> wasmtime::Result<std::result::Result<R, super::bindings::v0_1::wit::Error>>,
    ) -> Result<R> {
        let pre = &self.pre;
        self.slot.call(|s| pre.instantiate(s), f)
    }

    fn invalid(&self, message: String) -> Error {
        Error::InvalidOutput { plugin: self.slot.id.clone(), message }
    }

    /// What the embedder serves, checked: a batch of at least one, models with a vector length.
    pub fn info(&mut self) -> Result<EmbedderInfo> {
        let info = self.call(|s, b| b.seshat_plugin_embed().call_info(s).map(Ok))?;
        if info.max_batch == 0 {
            return Err(self.invalid("its `max-batch` is 0: a batch holds at least one text".into()));
        }
        if let Some(m) = info.models.iter().find(|m| m.dimensions == 0 || m.max_input_tokens == 0) {
            return Err(self.invalid(format!(
                "model `{}` has {} dimensions and takes {} tokens: both must be at least 1",
                m.id, m.dimensions, m.max_input_tokens
            )));
        }
        Ok(EmbedderInfo {
            id: info.id,
            default_base_url: info.default_base_url,
            auth: match info.auth {
                e::Auth::None => AuthScheme::None,
                e::Auth::Bearer => AuthScheme::Bearer,
                e::Auth::Header(h) => AuthScheme::Header(h),
            },
            key_env: info.key_env,
            max_batch: info.max_batch,
            models: info
                .models
                .into_iter()
                .map(|m| EmbeddingModel { id: m.id, dimensions: m.dimensions, max_input_tokens: m.max_input_tokens })
                .collect(),
        })
    }

    /// Builds the HTTP request for a batch, checked as providers' requests are.
    pub fn build_request(&mut self, request: &EmbedRequest) -> Result<super::HttpRequest> {
        let req = e::EmbedRequest {
            model: request.model.clone(),
            texts: request.texts.clone(),
            purpose: match request.purpose {
                EmbedPurpose::Document => e::Purpose::Document,
                EmbedPurpose::Query => e::Purpose::Query,
            },
            dimensions: request.dimensions,
            base_url: request.base_url.clone(),
            extra: request.extra.clone(),
        };
        let http = self.call(|s, b| b.seshat_plugin_embed().call_build_request(s, &req))?;
        super::provider::check_request(
            &self.slot.id,
            super::provider::RawRequest {
                method: http.method,
                url: http.url,
                headers: http.headers,
                body: http.body,
                splice: None,
            },
        )
    }

    /// Decodes an answer into one vector per text of the batch of `expected` texts, each of
    /// `dimensions` numbers when that is known, all finite and the same length.
    pub fn parse_response(
        &mut self,
        status: u16,
        body: &[u8],
        expected: usize,
        dimensions: Option<u32>,
    ) -> Result<Vec<Vec<f32>>> {
        let vectors = self.call(|s, b| b.seshat_plugin_embed().call_parse_response(s, status, body))?;
        if vectors.len() != expected {
            return Err(self.invalid(format!(
                "it decoded {} vectors for a batch of {expected} texts: there must be one per text",
                vectors.len()
            )));
        }
        let want = dimensions.map(|d| d as usize).or_else(|| vectors.first().map(Vec::len)).unwrap_or(0);
        if let Some((i, v)) = vectors.iter().enumerate().find(|(_, v)| v.len() != want || v.is_empty()) {
            return Err(
                self.invalid(format!("vector {i} has {} numbers where the model's vectors have {want}", v.len()))
            );
        }
        if let Some(i) = vectors.iter().position(|v| v.iter().any(|x| !x.is_finite())) {
            return Err(self.invalid(format!("vector {i} holds a number that is not finite (NaN or infinity)")));
        }
        Ok(vectors)
    }
}
