//! Embedder plugins (0.2.0): pure translators between texts and one embeddings HTTP API, as
//! provider plugins are for chat. They never see credentials and have no network; the host
//! (`crate::embeddings`) batches, sends what they build and checks the vectors they decode.

use serde::Serialize;

use super::bindings::{Versioned, v0_2 as v2, v0_3 as v3, v0_4 as v4};
use super::handle::{Handle, shared_accessors, versioned_kind};
use super::provider::AuthScheme;
use super::sandbox::State;
use super::{Error, PluginKind, Result};

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

versioned_kind! {
    /// Embedders (from 0.2.0): texts in, an HTTP request out; its answer in, vectors out. 0.1.0
    /// has no embedder world, so a plugin claiming to be a 0.1 embedder is linked against 0.2's
    /// and fails there, naming what it lacks.
    Embedder: PluginKind::Embedder, host (),
    v0_1 (v2::embedder::Embedder, v2::embedder::EmbedderPre<State<()>>),
    v0_2 (v2::embedder::Embedder, v2::embedder::EmbedderPre<State<()>>),
    v0_3 (v3::embedder::Embedder, v3::embedder::EmbedderPre<State<()>>),
    v0_4 (v4::embedder::Embedder, v4::embedder::EmbedderPre<State<()>>)
}

/// Runs `$body` with `$b` the bindings and `$e` the `embed` interface of the version the
/// instance speaks (the records are the same in every version, their Rust types are not).
macro_rules! each_version {
    ($bound:expr, |$b:ident| $body:expr) => {
        match $bound {
            Versioned::V0_1($b) | Versioned::V0_2($b) => $body,
            Versioned::V0_3($b) => $body,
            Versioned::V0_4($b) => $body,
        }
    };
    ($bound:expr, |$b:ident, $e:ident| $body:expr) => {
        match $bound {
            Versioned::V0_1($b) | Versioned::V0_2($b) => {
                use v2::embedder::exports::seshat::plugin::embed as $e;
                $body
            }
            Versioned::V0_3($b) => {
                use v3::embedder::exports::seshat::plugin::embed as $e;
                $body
            }
            Versioned::V0_4($b) => {
                use v4::embedder::exports::seshat::plugin::embed as $e;
                $body
            }
        }
    };
}

/// A loaded embedder, ready to call.
pub struct EmbedderPlugin {
    handle: Handle<Embedder>,
}

shared_accessors!(EmbedderPlugin);

impl EmbedderPlugin {
    fn invalid(&self, message: String) -> Error {
        self.handle.invalid(message)
    }

    /// What the embedder serves, checked: a batch of at least one, models with a vector length.
    pub fn info(&mut self) -> Result<EmbedderInfo> {
        let info = self.handle.call(|s, b| {
            each_version!(b, |b, e| b.seshat_plugin_embed().call_info(s).map(|info| {
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
                        .map(|m| EmbeddingModel {
                            id: m.id,
                            dimensions: m.dimensions,
                            max_input_tokens: m.max_input_tokens,
                        })
                        .collect(),
                })
            }))
        })?;
        if info.max_batch == 0 {
            return Err(self.invalid("its `max-batch` is 0: a batch holds at least one text".into()));
        }
        if let Some(m) = info.models.iter().find(|m| m.dimensions == 0 || m.max_input_tokens == 0) {
            return Err(self.invalid(format!(
                "model `{}` has {} dimensions and takes {} tokens: both must be at least 1",
                m.id, m.dimensions, m.max_input_tokens
            )));
        }
        Ok(info)
    }

    /// Builds the HTTP request for a batch, checked as providers' requests are.
    pub fn build_request(&mut self, request: &EmbedRequest) -> Result<super::HttpRequest> {
        let http = self.handle.call(|s, b| {
            each_version!(b, |b, e| {
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
                b.seshat_plugin_embed()
                    .call_build_request(s, &req)
                    .map(|r| r.map(|h| (h.method, h.url, h.headers, h.body)))
            })
        })?;
        let (method, url, headers, body) = http;
        super::provider::check_request(
            self.handle.id(),
            super::provider::RawRequest { method, url, headers, body, splice: None },
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
        let vectors = self
            .handle
            .call(|s, b| each_version!(b, |b| b.seshat_plugin_embed().call_parse_response(s, status, body)))?;
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
