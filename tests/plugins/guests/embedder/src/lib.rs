//! A deterministic test embedder: it sends the batch's texts, one per line, to `<base_url>/echo`;
//! the tests' loopback server echoes the body back, and the vectors are computed here from the
//! words of each text, by a fixed table of topics. Texts about the same topic in other words get
//! the same direction, so tests know exactly which chunks a vector search ranks first. Plumbing
//! only: no claim about retrieval quality is made from it. It misbehaves on request (the model
//! `loop`, `membomb` or `panic`), to prove the sandbox holds for embedders too.

use seshat_plugin_sdk::embedder::{Auth, EmbedHttp, EmbedRequest, Embedder, EmbedderInfo, Error, error, model};

/// The topics, one dimension each; a text with none of these words points along the last one.
const TOPICS: &[&[&str]] = &[
    &["car", "cars", "truck", "automobile", "vehicle", "engine", "motor"],
    &["apple", "banana", "fruit", "orchard", "pear"],
    &["database", "sqlite", "storage", "disk", "persist"],
    &["http", "socket", "network", "request", "server"],
    &["rain", "weather", "storm", "cloud", "forecast"],
    &["guitar", "music", "song", "melody", "piano"],
    &["error", "failure", "crash", "panic", "bug"],
];

/// The vector length: one per topic, plus one for none.
const DIMENSIONS: u32 = TOPICS.len() as u32 + 1;

fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMENSIONS as usize];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let word = word.to_lowercase();
        if let Some(topic) = TOPICS.iter().position(|t| t.contains(&word.as_str())) {
            v[topic] += 1.0;
        }
    }
    if v.iter().all(|x| *x == 0.0) {
        v[TOPICS.len()] = 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

struct Topics;

impl Embedder for Topics {
    fn info() -> EmbedderInfo {
        EmbedderInfo {
            id: "test-embedder".into(),
            default_base_url: "http://127.0.0.1:9/v1".into(),
            auth: Auth::None,
            key_env: None,
            max_batch: 4,
            models: vec![model("topics", DIMENSIONS, 64), model("topics-long", DIMENSIONS, 4096)],
        }
    }

    fn build_request(request: EmbedRequest) -> Result<EmbedHttp, Error> {
        misbehave::on(&request.model, "test embedder");
        // Line breaks separate texts on the wire: they become spaces (the words are what count).
        let lines: Vec<String> = request.texts.iter().map(|t| t.replace(['\n', '\r'], " ")).collect();
        Ok(EmbedHttp {
            method: "POST".into(),
            url: format!("{}/echo", request.base_url.trim_end_matches('/')),
            headers: vec![("content-type".into(), "text/plain".into()), ("x-model".into(), request.model)],
            body: lines.join("\n").into_bytes(),
        })
    }

    fn parse_response(status: u16, body: Vec<u8>) -> Result<Vec<Vec<f32>>, Error> {
        if status != 200 {
            return Err(error("server_error", format!("the echo server answered {status}")));
        }
        let text = String::from_utf8(body).map_err(|_| error("invalid_response", "the echo is not UTF-8"))?;
        Ok(text.split('\n').map(vector).collect())
    }
}

seshat_plugin_sdk::export_embedder!(Topics);
