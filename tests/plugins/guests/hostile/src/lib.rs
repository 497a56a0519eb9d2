//! A trimmer that misbehaves on request: `budget.extra` names what to do. Used to prove the
//! sandbox holds. Each probe returns what the plugin observed as its error message, so the tests
//! can check the plugin really met the WASI error.

use seshat_plugin_sdk::trimmer::{
    Budget, Edit, Error, HeadTail, Level, MessageMeta, PartMeta, Replace, Trimmer, log, read_part,
};

struct Hostile;

fn observed(what: String) -> Result<Vec<Edit>, Error> {
    Err(Error { code: "observed".into(), message: what })
}

/// The instruction: `extra` is either `mode:arg` or a JSON object from the user's config with a
/// `"probe": "mode:arg"` string (parsed by hand: the plugin has no JSON dependency).
fn instruction(extra: &str) -> &str {
    match extra.split_once("\"probe\":\"") {
        Some((_, rest)) => rest.split('"').next().unwrap_or(""),
        None => extra,
    }
}

fn arg(extra: &str) -> &str {
    instruction(extra).split_once(':').map_or("", |(_, a)| a)
}

impl Trimmer for Hostile {
    fn trim(messages: Vec<MessageMeta>, parts: Vec<PartMeta>, budget: Budget) -> Result<Vec<Edit>, Error> {
        let mode = instruction(&budget.extra).split(':').next().unwrap_or("");
        match mode {
            "loop" | "membomb" => {
                misbehave::on(mode, "hostile plugin");
                Ok(Vec::new())
            }
            "panic" => panic!("hostile plugin panicked on purpose"),
            "log" => {
                for level in [Level::Trace, Level::Debug, Level::Info, Level::Warn, Level::Error] {
                    // The config's JSON escapes a control character; the plugin logs the raw one.
                    log(level, &format!("{level:?}: {}", arg(&budget.extra).replace("\\u001b", "\u{1b}")));
                }
                Ok(Vec::new())
            }
            "log-flood" => {
                let line = "y".repeat(5000);
                for _ in 0..100 {
                    log(Level::Warn, &line);
                }
                Ok(Vec::new())
            }
            "read-file" => observed(match std::fs::read_to_string(arg(&budget.extra)) {
                Ok(text) => format!("READ: {text}"),
                Err(e) => format!("file error: {e}"),
            }),
            "read-env" => observed(match std::env::var(arg(&budget.extra)) {
                Ok(v) => format!("ENV: {v}"),
                Err(e) => format!("env error: {e}; {} variables visible", std::env::vars().count()),
            }),
            "socket" => observed(match std::net::TcpStream::connect(arg(&budget.extra)) {
                Ok(_) => "CONNECTED".to_string(),
                Err(e) => format!("socket error: {e}"),
            }),
            "stdout" => {
                println!("{}", arg(&budget.extra));
                eprintln!("{}", arg(&budget.extra));
                Ok(Vec::new())
            }
            "read-part" => {
                let text = read_part(messages[0].id, 0).unwrap_or_default();
                observed(format!("read {} bytes", text.len()))
            }
            "edit-protected" => {
                let m = messages.iter().find(|m| m.protected).expect("a protected message");
                Ok(vec![Edit::Replace(Replace { message: m.id, part: 0, text: String::new() })])
            }
            "edit-text" => {
                // A valid edit first, then one on a text part: the whole answer must be rejected.
                Ok(vec![
                    Edit::HeadTail(HeadTail { message: messages[1].id, part: 0, head: 1, tail: 1 }),
                    Edit::Replace(Replace { message: messages[0].id, part: 0, text: String::new() }),
                ])
            }
            "edit-grow" => Ok(vec![Edit::Replace(Replace {
                message: messages[1].id,
                part: 0,
                text: "x"
                    .repeat(parts.iter().find(|p| p.message == messages[1].id).map_or(0, |p| p.bytes) as usize + 1),
            })]),
            "edit-unknown" => Ok(vec![Edit::HeadTail(HeadTail { message: 999_999, part: 0, head: 0, tail: 0 })]),
            "slow" => {
                // Burn about `arg` milliseconds of guest time, then answer.
                let ms: u64 = arg(&budget.extra).parse().unwrap_or(0);
                let start = std::time::Instant::now();
                while start.elapsed().as_millis() < ms as u128 {
                    std::hint::black_box(0);
                }
                Ok(Vec::new())
            }
            _ => Ok(Vec::new()),
        }
    }
}

seshat_plugin_sdk::export_trimmer!(Hostile);
