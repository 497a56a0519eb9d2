//! An embedder plugin for Seshat: turns batches of texts into one embeddings HTTP API's requests,
//! and its answers into vectors. The host sends the request (adding the key) and checks the
//! vectors: one per text, all of the model's length, all finite.
use seshat_plugin_sdk::embedder::{Auth, EmbedHttp, EmbedRequest, Embedder, EmbedderInfo, Error, Purpose, error, model};

struct Plugin;

impl Embedder for Plugin {
    fn info() -> EmbedderInfo {
        EmbedderInfo {
            id: "example".into(),
            default_base_url: "https://api.example.com/v1".into(),
            auth: Auth::Bearer,
            key_env: Some("EXAMPLE_API_KEY".into()),
            // The host never sends more texts than this in one request.
            max_batch: 32,
            models: vec![model("example-embed", 384, 512)],
        }
    }

    /// One batch as a request: here, the texts one per line.
    fn build_request(request: EmbedRequest) -> Result<EmbedHttp, Error> {
        let kind = if request.purpose == Purpose::Query { "query" } else { "document" };
        let lines: Vec<String> = request.texts.iter().map(|t| t.replace('\n', " ")).collect();
        Ok(EmbedHttp {
            method: "POST".into(),
            url: format!("{}/embed?model={}&kind={kind}", request.base_url.trim_end_matches('/'), request.model),
            headers: vec![("content-type".into(), "text/plain".into())],
            body: lines.join("\n").into_bytes(),
        })
    }

    /// The answer: here, one line of comma-separated numbers per text.
    fn parse_response(status: u16, body: Vec<u8>) -> Result<Vec<Vec<f32>>, Error> {
        if !(200..300).contains(&status) {
            return Err(error("server_error", format!("the server answered HTTP {status}")));
        }
        let text = String::from_utf8(body).map_err(|_| error("invalid_response", "the answer is not UTF-8"))?;
        text.lines()
            .map(|line| {
                line.split(',')
                    .map(|n| n.trim().parse::<f32>().map_err(|_| error("invalid_response", format!("`{n}` is not a number"))))
                    .collect()
            })
            .collect()
    }
}

seshat_plugin_sdk::export_embedder!(Plugin);
