//! Seshat's embedder for the `/v1/embeddings` API: OpenAI's, which Ollama, llama.cpp's server,
//! vLLM and LM Studio serve too. A pure translator: the host sends what it builds and never shows
//! it the key.

use serde_json::{Map, Value};
use seshat_plugin_sdk::embedder::{
    Auth, EmbedHttp, EmbedRequest, Embedder, EmbedderInfo, Error, Purpose, error, model,
};

struct OpenAi;

/// Models whose vectors are asked for with a task prefix (nomic's): the query and the documents
/// it should find are embedded differently.
fn prefix(model: &str, purpose: Purpose) -> &'static str {
    if !model.starts_with("nomic-embed-text") {
        return "";
    }
    match purpose {
        Purpose::Query => "search_query: ",
        Purpose::Document => "search_document: ",
    }
}

impl Embedder for OpenAi {
    fn info() -> EmbedderInfo {
        EmbedderInfo {
            id: "openai".into(),
            default_base_url: "https://api.openai.com/v1".into(),
            auth: Auth::Bearer,
            key_env: Some("OPENAI_API_KEY".into()),
            // OpenAI takes up to 2,048 inputs a request; local servers are happier with fewer.
            max_batch: 64,
            models: vec![
                model("text-embedding-3-small", 1536, 8191),
                model("text-embedding-3-large", 3072, 8191),
                model("text-embedding-ada-002", 1536, 8191),
                // Common local models (Ollama's names), at the input lengths their servers run.
                model("nomic-embed-text", 768, 2048),
                model("mxbai-embed-large", 1024, 512),
                model("all-minilm", 384, 256),
                model("bge-m3", 1024, 8192),
            ],
        }
    }

    fn build_request(request: EmbedRequest) -> Result<EmbedHttp, Error> {
        let extra: Map<String, Value> =
            match serde_json::from_str(if request.extra.trim().is_empty() { "{}" } else { &request.extra }) {
                Ok(Value::Object(m)) => m,
                _ => {
                    return Err(error(
                        "invalid_options",
                        format!("embedder options must be a JSON object, not `{}`", request.extra),
                    ));
                }
            };
        let pre = prefix(&request.model, request.purpose);
        let input: Vec<Value> = request.texts.iter().map(|t| Value::from(format!("{pre}{t}"))).collect();
        let mut body = Map::new();
        body.insert("model".into(), Value::from(request.model.as_str()));
        body.insert("input".into(), Value::from(input));
        body.insert("encoding_format".into(), Value::from("float"));
        if let Some(d) = request.dimensions {
            body.insert("dimensions".into(), Value::from(d));
        }
        for (k, v) in extra {
            if body.contains_key(&k) {
                return Err(error(
                    "invalid_options",
                    format!("embedder option `{k}` is set by Seshat and cannot be overridden"),
                ));
            }
            body.insert(k, v);
        }
        Ok(EmbedHttp {
            method: "POST".into(),
            url: format!("{}/embeddings", request.base_url.trim_end_matches('/')),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("accept".into(), "application/json".into()),
            ],
            body: Value::Object(body).to_string().into_bytes(),
        })
    }

    fn parse_response(status: u16, body: Vec<u8>) -> Result<Vec<Vec<f32>>, Error> {
        let value: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(_) if !(200..300).contains(&status) => Value::Null,
            Err(e) => return Err(error("invalid_response", format!("the embeddings answer is not JSON: {e}"))),
        };
        if !(200..300).contains(&status) {
            return Err(http_error(status, &value, &body));
        }
        let Some(data) = value["data"].as_array() else {
            return Err(error("invalid_response", "the embeddings answer has no `data` list"));
        };
        // Each item says its input's index; servers may answer out of order.
        let mut out: Vec<Option<Vec<f32>>> = vec![None; data.len()];
        for (at, item) in data.iter().enumerate() {
            let index = item["index"].as_u64().map_or(at, |i| i as usize);
            let Some(numbers) = item["embedding"].as_array() else {
                return Err(error(
                    "invalid_response",
                    format!(
                        "item {at} of the embeddings answer has no `embedding` list (ask for `encoding_format: float`)"
                    ),
                ));
            };
            let vector: Option<Vec<f32>> = numbers.iter().map(|n| n.as_f64().map(|f| f as f32)).collect();
            let Some(vector) = vector else {
                return Err(error(
                    "invalid_response",
                    format!("item {at}'s embedding holds something that is not a number"),
                ));
            };
            match out.get_mut(index) {
                Some(slot @ None) => *slot = Some(vector),
                _ => {
                    return Err(error(
                        "invalid_response",
                        format!("item {at} has index {index}, which is out of range or repeated"),
                    ));
                }
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

/// Maps an error (`{"error":{"message":…}}`, or a bare body) to a stable code.
fn http_error(status: u16, value: &Value, body: &[u8]) -> Error {
    let detail = match (&value["error"]["message"], &value["error"]) {
        (Value::String(m), _) => m.clone(),
        (_, Value::String(m)) => m.clone(),
        _ => String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned(),
    };
    let (code, hint) = match status {
        401 => ("auth_failed", "check the API key (OPENAI_API_KEY or [knowledge] api_key_env)"),
        404 => (
            "not_found",
            "check [knowledge] model and base_url (it usually ends in /v1); the server may not serve embeddings",
        ),
        other => seshat_plugin_sdk::http_status(other),
    };
    error(code, format!("the embeddings server answered HTTP {status}: {detail} ({hint})"))
}

seshat_plugin_sdk::export_embedder!(OpenAi);
