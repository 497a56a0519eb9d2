//! The library's blocking API called from inside a caller's async runtime — as `seshat mcp`
//! (rmcp, on tokio) and any async Rust program call it: a turn against a provider, the embedder,
//! the knowledge search with vectors, everything dropped inside the runtime. None of it may start,
//! block on or drop a runtime of its own there (tokio panics when one does).

use seshat::client::{AgentOptions, Quiet};
use seshat::providers::Cancel;

use crate::chat::sdk_agent;
use crate::knowledge::{echo_server, notes, with_test_embedder};
use crate::support::Home;
use crate::support::server::{Reply, Server, anthropic};

#[test]
fn a_turn_an_embedding_and_a_hybrid_search_work_inside_a_tokio_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let home = Home::new();
        let server = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["Inside."]) }]);
        let mut agent = sdk_agent(&home, &server, seshat::client::Tools::none(), AgentOptions::default());
        let out = agent.turn("hello", &Cancel::default(), &mut Quiet).unwrap();
        assert_eq!(out.text, "Inside.");
        drop(agent);

        let home = Home::new();
        let echo = echo_server();
        with_test_embedder(&home, &echo, "topics");
        let config = seshat::config::Config::load(home.path(), None).unwrap();
        let catalog = seshat::plugins::Catalog::discover(home.path(), None);
        let plugins = seshat::plugins::Runtime::new(None);
        let mut embedder = seshat::retrieval::load_embedder(&config, &catalog, &plugins).unwrap().expect("configured");
        let vectors = embedder
            .embed(&["my truck".to_string()], seshat::plugins::EmbedPurpose::Document, &Cancel::default())
            .unwrap();
        assert_eq!(vectors.len(), 1);

        let root = notes(&home);
        let mut k = seshat::retrieval::Knowledge::open(&home.path().join("async.db")).unwrap().with_embedder(embedder);
        let target = seshat::knowledge::Target { scope: seshat::memory::Scope::Project, project: "/async".into() };
        k.add(std::slice::from_ref(&root), &target, &mut |_, _, _| {}).unwrap();
        assert_eq!(k.embed_pending(false, &mut |_, _| {}).unwrap().embedded, 4);
        let filter = seshat::store::KnowledgeFilter { project: "/async", scope: None };
        let found = k.search(filter, "car", 5).unwrap();
        assert_eq!(found.mode, seshat::retrieval::Mode::Hybrid);
        // a.md says "automobile", not "car": only the vectors find it.
        assert!(found.hits.iter().any(|h| h.path.ends_with("a.md")), "{found:?}");
        drop(k);
    });
}
