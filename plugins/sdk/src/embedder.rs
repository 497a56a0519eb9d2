#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "embedder",
        pub_export_macro: true,
        export_macro_name: "__export_embedder_world",
        default_bindings_module: "::seshat_plugin_sdk::embedder::__bindings",
        runtime_path: "::seshat_plugin_sdk::__wit_bindgen::rt",
    });
}
#[doc(hidden)]
pub use bindings as __bindings;
#[doc(hidden)]
pub use bindings::__export_embedder_world;

pub use bindings::exports::seshat::plugin::embed::{
    Auth, EmbedHttp, EmbedRequest, EmbedderInfo, EmbeddingModel, Guest as __Guest, Purpose,
};
pub use bindings::seshat::plugin::types::{Error, Role};

/// An embedder.
pub trait Embedder {
    /// What the embedder serves.
    fn info() -> EmbedderInfo;
    /// Turns a batch of texts into an HTTP request (never with credentials).
    fn build_request(request: EmbedRequest) -> Result<EmbedHttp, Error>;
    /// Decodes an answer (or an error body, for any status): one vector per text, in order.
    fn parse_response(status: u16, body: Vec<u8>) -> Result<Vec<Vec<f32>>, Error>;
}

kind_helpers!("[knowledge] options");

impl<T: Embedder> __Guest for T {
    fn info() -> EmbedderInfo {
        __install_panic_hook();
        <T as Embedder>::info()
    }
    fn build_request(request: EmbedRequest) -> Result<EmbedHttp, Error> {
        __install_panic_hook();
        <T as Embedder>::build_request(request)
    }
    fn parse_response(status: u16, body: Vec<u8>) -> Result<Vec<Vec<f32>>, Error> {
        __install_panic_hook();
        <T as Embedder>::parse_response(status, body)
    }
}

/// An error with a stable `code` and a message for people.
pub fn error(code: &str, message: impl Into<String>) -> Error {
    Error { code: code.into(), message: message.into() }
}

/// A model entry for [`EmbedderInfo::models`].
pub fn model(id: &str, dimensions: u32, max_input_tokens: u32) -> EmbeddingModel {
    EmbeddingModel { id: id.into(), dimensions, max_input_tokens }
}

/// Exports an [`Embedder`] implementation as the plugin's embedder.
#[macro_export]
macro_rules! export_embedder {
    ($t:ident) => {
        $crate::embedder::__export_embedder_world!($t with_types_in $crate::embedder::__bindings);
        $crate::__version_section!();
    };
}
