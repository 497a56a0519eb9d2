//! Long coding-agent transcripts with planted facts, from a seed.
//!
//! A transcript is what a session with a coding agent looks like: requests, assistant replies,
//! tool calls (reading files, running tests, grepping, building) and their long outputs. Into it
//! go uniquely coded facts of every category the specification names: the user's constraints
//! and preferences (stated early), active requests, decisions (some replaced once or twice, the
//! replacement naming what it replaces), tool outcomes in the middle of long outputs, and open
//! items mentioned in passing. Each fact carries the words a user would type to find it again.
//!
//! The random numbers are a SplitMix64 stream written here rather than `rand`'s, whose generators
//! may change between versions: a seed must give the same transcript forever, or the benchmark's
//! held-out seeds stop meaning anything.

use seshat::conversation::{MessageStatus, NewMessage, Part, Role};

/// The categories of planted facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Something the user asked for and still expects.
    Request,
    /// What was decided (the newest of a chain of replacements is the live one).
    Decision,
    /// A tool outcome that still matters, in the middle of a long output.
    Outcome,
    /// Unfinished work mentioned in passing.
    Open,
    /// A constraint or preference the user stated early ("never", "always", "must", "don't").
    Constraint,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 5] =
        [Category::Request, Category::Decision, Category::Outcome, Category::Open, Category::Constraint];

    /// The category's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Category::Request => "requests",
            Category::Decision => "decisions",
            Category::Outcome => "tool outcomes",
            Category::Open => "open items",
            Category::Constraint => "constraints",
        }
    }
}

/// A planted fact.
#[derive(Debug, Clone)]
pub struct Fact {
    /// Its unique code (e.g. `OUT-7QK2`), which scoring looks for.
    pub code: String,
    /// Its category.
    pub category: Category,
    /// The words a user would type to find it (its content words, not its code).
    pub query: String,
    /// The index in [`Transcript::messages`] of the message holding it (seq is index + 1).
    pub message: usize,
    /// The code of the decision that replaced this one, if any (then it is no longer live).
    pub replaced_by: Option<String>,
}

/// A generated session.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The seed it came from.
    pub seed: u64,
    /// The messages, in order.
    pub messages: Vec<NewMessage>,
    /// The planted facts.
    pub facts: Vec<Fact>,
    /// Its estimated size in tokens.
    pub tokens: u64,
}

/// SplitMix64: small, fast and fixed forever.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }
}

/// Modules of the imaginary project; noise mentions them too.
const MODULES: &[&str] = &[
    "billing",
    "ingest",
    "scheduler",
    "gateway",
    "ledger",
    "search",
    "auth",
    "storage",
    "metrics",
    "mailer",
    "catalog",
    "checkout",
    "inventory",
    "pricing",
    "reports",
    "sync",
    "uploads",
    "webhooks",
    "sessions",
    "queue",
];

/// Nouns that name what a fact is about; used by facts only, each at most once per transcript.
const SUBJECTS: &[&str] = &[
    "checksum",
    "rollover",
    "quorum",
    "backpressure",
    "tombstone",
    "watermark",
    "debounce",
    "handshake",
    "throttle",
    "snapshot",
    "compaction",
    "idempotency",
    "pagination",
    "serializer",
    "keepalive",
    "heartbeat",
    "sharding",
    "eviction",
    "migration",
    "rebalance",
    "deadline",
    "fanout",
    "manifest",
    "cursor",
    "lease",
    "signature",
    "nonce",
    "bitmap",
    "tokenizer",
    "allocator",
    "bucket",
    "ratelimit",
    "canary",
    "failover",
    "journal",
    "prefetch",
    "redaction",
    "retention",
    "sandbox",
    "vacuum",
];

/// Technologies a decision can choose between.
const CHOICES: &[&str] = &[
    "postgres",
    "sqlite",
    "redis",
    "kafka",
    "nats",
    "protobuf",
    "msgpack",
    "tokio",
    "rayon",
    "axum",
    "hyper",
    "blake3",
    "sha256",
    "zstd",
    "lz4",
    "jemalloc",
    "mimalloc",
    "grpc",
    "websockets",
    "cron",
];

/// Symbols of the code base's alphabet for codes (no 0/O or 1/I confusion).
const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";

struct Builder {
    rng: Rng,
    messages: Vec<NewMessage>,
    facts: Vec<Fact>,
    codes: std::collections::HashSet<String>,
    subjects: Vec<&'static str>,
    calls: usize,
}

impl Builder {
    fn code(&mut self, prefix: &str) -> String {
        loop {
            let tail: String = (0..4).map(|_| CODE_ALPHABET[self.rng.below(CODE_ALPHABET.len())] as char).collect();
            let code = format!("{prefix}-{tail}");
            if self.codes.insert(code.clone()) {
                return code;
            }
        }
    }

    /// A subject not yet used by another fact.
    fn subject(&mut self) -> &'static str {
        let i = self.rng.below(self.subjects.len());
        self.subjects.swap_remove(i)
    }

    fn plant(&mut self, category: Category, code: &str, query: String) {
        self.facts.push(Fact {
            code: code.to_string(),
            category,
            query,
            message: self.messages.len(),
            replaced_by: None,
        });
    }

    fn push(&mut self, role: Role, parts: Vec<Part>) {
        self.messages.push(NewMessage { role, parts, usage: None, status: MessageStatus::Complete });
    }

    fn text(&mut self, role: Role, text: String) {
        self.push(role, vec![Part::Text { text }]);
    }

    /// One tool exchange: the call, then its output (with `planted` somewhere in the middle).
    fn exchange(&mut self, module: &str, planted: Option<String>) {
        self.calls += 1;
        let id = format!("toolu_{:05}", self.calls);
        let (name, args, lines) = match self.rng.below(4) {
            0 => ("run", format!(r#"{{"cmd":"cargo test -p {module}"}}"#), self.test_log(module)),
            1 => ("read_file", format!(r#"{{"path":"src/{module}/mod.rs"}}"#), self.source(module)),
            2 => ("run", format!(r#"{{"cmd":"cargo build -p {module}"}}"#), self.build_log(module)),
            _ => ("grep", format!(r#"{{"pattern":"fn ","path":"src/{module}"}}"#), self.grep(module)),
        };
        let mut lines = lines;
        if let Some(line) = planted {
            // Somewhere in the middle half, far from both ends.
            let at = lines.len() / 4 + self.rng.below(lines.len() / 2 + 1);
            lines.insert(at, line);
        }
        let content = lines.join("\n");
        self.push(
            Role::Assistant,
            vec![
                Part::Text { text: format!("Let me look at the {module} module.") },
                Part::ToolCall { id: id.clone(), name: name.into(), arguments: args },
            ],
        );
        self.push(Role::Tool, vec![Part::ToolResult { call_id: id, content, is_error: false }]);
    }

    fn length(&mut self) -> usize {
        // Mostly medium outputs, some very long ones.
        if self.rng.chance(250) { self.rng.range(250, 600) } else { self.rng.range(15, 160) }
    }

    fn test_log(&mut self, module: &str) -> Vec<String> {
        let n = self.length();
        let mut lines = vec![format!("   Compiling {module} v0.{}.{}", self.rng.below(9), self.rng.below(20))];
        lines.push(format!(
            "    Finished `test` profile [unoptimized + debuginfo] target(s) in {}.{}s",
            self.rng.range(2, 90),
            self.rng.below(10)
        ));
        lines.push(format!("     Running unittests src/lib.rs (target/debug/deps/{module}-{:016x})", self.rng.next()));
        lines.push(format!("running {n} tests"));
        for i in 0..n {
            let word = self.rng.pick(&["parses", "rounds", "orders", "merges", "splits", "keeps", "drops", "reads"]);
            let thing = self.rng.pick(&["input", "rows", "items", "values", "records", "entries", "bytes"]);
            lines.push(format!("test {module}::tests::{word}_{thing}_{i} ... ok"));
        }
        lines.push(String::new());
        lines.push(format!(
            "test result: ok. {n} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{}s",
            self.rng.range(10, 99)
        ));
        lines
    }

    fn build_log(&mut self, module: &str) -> Vec<String> {
        let n = self.length();
        let mut lines = Vec::with_capacity(n + 2);
        for _ in 0..n {
            let dep = self.rng.pick(&[
                "serde",
                "libc",
                "memchr",
                "itoa",
                "ryu",
                "bytes",
                "log",
                "cfg-if",
                "once_cell",
                "smallvec",
            ]);
            lines.push(format!(
                "   Compiling {dep} v{}.{}.{}",
                self.rng.below(3),
                self.rng.below(30),
                self.rng.below(20)
            ));
            if self.rng.chance(15) {
                lines.push(format!("warning: unused import: `std::fmt::Write` in src/{module}/util.rs"));
            }
        }
        lines.push(format!("   Compiling {module} v0.1.0 (/work/app/{module})"));
        lines.push(format!(
            "    Finished `dev` profile [unoptimized + debuginfo] target(s) in {}.{}s",
            self.rng.range(5, 200),
            self.rng.below(10)
        ));
        lines
    }

    fn source(&mut self, module: &str) -> Vec<String> {
        let n = self.length();
        let mut lines =
            vec![format!("//! The {module} module."), String::new(), "use std::collections::HashMap;".into()];
        while lines.len() < n {
            let f = self.rng.pick(&["load", "store", "apply", "render", "parse", "check", "build", "flush"]);
            let t = self.rng.pick(&["u32", "u64", "usize", "String", "Vec<u8>", "bool"]);
            lines.push(format!("pub fn {f}_{}(value: {t}) -> {t} {{", self.rng.below(100)));
            for _ in 0..self.rng.range(1, 6) {
                lines.push(format!(
                    "    let v{} = value.clone(); // {}",
                    self.rng.below(10),
                    self.rng.pick(&["keep it simple", "see above", "cheap", "copied"])
                ));
            }
            lines.push("    value".into());
            lines.push("}".into());
            lines.push(String::new());
        }
        lines
    }

    fn grep(&mut self, module: &str) -> Vec<String> {
        let n = self.length();
        (0..n)
            .map(|_| {
                let f = self.rng.pick(&["load", "store", "apply", "render", "parse", "check"]);
                format!(
                    "src/{module}/{}.rs:{}:pub fn {f}_{}(",
                    self.rng.pick(&["mod", "util", "types", "io"]),
                    self.rng.range(1, 900),
                    self.rng.below(100)
                )
            })
            .collect()
    }

    /// An ordinary turn with no fact in it.
    fn noise_turn(&mut self) {
        let module = self.rng.pick(MODULES);
        let ask = match self.rng.below(4) {
            0 => format!("Can you check how the {module} module handles empty input?"),
            1 => format!("Look at the tests for {module} and tell me if anything looks off."),
            2 => format!("What does the {module} code do when the config is missing?"),
            _ => format!("Run the {module} tests again, please."),
        };
        self.text(Role::User, ask);
        for _ in 0..self.rng.range(1, 3) {
            self.exchange(module, None);
        }
        let reply = format!(
            "The {module} module looks fine here: the functions are small and the tests cover the usual cases. \
             Nothing there needs changing for now."
        );
        self.text(Role::Assistant, reply);
    }
}

/// How many facts of each kind a transcript plants (live facts: 4 + 4 + 8 + 4 + 4 = 24, which a
/// 2,000-token summary can hold).
const REQUESTS: usize = 4;
const DECISION_CHAINS: [usize; 4] = [3, 3, 2, 1];
const OUTCOMES: usize = 8;
const OPEN: usize = 4;
const CONSTRAINTS: usize = 4;

/// A transcript for `seed`, between 20k and 150k estimated tokens.
pub fn transcript(seed: u64) -> Transcript {
    let mut rng = Rng(seed.wrapping_mul(0xA24B_AED4_963E_E407) ^ 0x5E5A_7000);
    let target = rng.range(20_000, 130_000) as u64;
    let mut b = Builder {
        rng,
        messages: Vec::new(),
        facts: Vec::new(),
        codes: Default::default(),
        subjects: SUBJECTS.to_vec(),
        calls: 0,
    };

    // The constraints and preferences first, in the opening messages.
    b.text(Role::User, "We are working on the app in /work/app today. Some ground rules before we start.".into());
    b.text(Role::Assistant, "Understood. Tell me the rules and I will follow them.".into());
    for i in 0..CONSTRAINTS {
        let (module, subject) = (b.rng.pick(MODULES), b.subject());
        let code = b.code("RULE");
        let text = match i % 4 {
            0 => format!("Never change the {subject} format in the {module} module without a migration (rule {code})."),
            1 => format!("Always run the {subject} tests of {module} before you tell me something is done ({code})."),
            2 => format!("You must keep the {module} {subject} API backwards compatible, it is public ({code})."),
            _ => format!(
                "Don't add new dependencies for the {subject} code in {module}; I prefer the standard library ({code})."
            ),
        };
        b.plant(Category::Constraint, &code, format!("{module} {subject}"));
        b.text(Role::User, text);
        b.text(Role::Assistant, "Noted.".into());
    }

    // The rest: turns until the size is reached, with the other facts at planned points.
    let tokens_per_turn = 2_300u64;
    let turns = (target / tokens_per_turn).max(8) as usize;
    #[derive(Clone)]
    enum Plan {
        Request,
        Decision(usize, usize),
        Outcome,
        Open,
    }
    let mut plan: Vec<Vec<Plan>> = vec![Vec::new(); turns];
    for i in 0..REQUESTS {
        plan[(turns * (2 * i + 1) / (2 * REQUESTS)).min(turns - 1)].push(Plan::Request);
    }
    for (chain, &len) in DECISION_CHAINS.iter().enumerate() {
        let start = b.rng.below(turns / 2 + 1);
        for step in 0..len {
            let at = start + (turns - start) * step / len + b.rng.below((turns - start) / len / 2 + 1);
            plan[at.min(turns - 1)].push(Plan::Decision(chain, step));
        }
    }
    for _ in 0..OUTCOMES {
        let at = b.rng.below(turns);
        plan[at].push(Plan::Outcome);
    }
    for _ in 0..OPEN {
        let at = b.rng.below(turns);
        plan[at].push(Plan::Open);
    }
    let mut chains: Vec<Option<(String, String, String)>> = vec![None; DECISION_CHAINS.len()];
    for events in plan {
        if events.is_empty() {
            b.noise_turn();
            continue;
        }
        let module = b.rng.pick(MODULES);
        let mut ask = None;
        let mut planted = Vec::new();
        let mut said = Vec::new();
        for event in events {
            match event {
                Plan::Request => {
                    let subject = b.subject();
                    let code = b.code("REQ");
                    let verb = b.rng.pick(&["add a retry to", "write a benchmark for", "document", "add metrics to"]);
                    ask = Some((
                        code.clone(),
                        format!("{module} {subject}"),
                        format!(
                            "Next: please {verb} the {subject} path in {module}; track it as {code}. I need it before the release."
                        ),
                    ));
                }
                Plan::Outcome => {
                    let subject = b.subject();
                    let code = b.code("OUT");
                    let n = b.rng.range(10, 400);
                    let line = match b.rng.below(4) {
                        0 => format!(
                            "thread '{module}::{subject}' panicked at src/{module}/{subject}.rs:{n}:9: {subject} mismatch, expected 7 got 9 ({code})"
                        ),
                        1 => format!(
                            "error[E0308]: mismatched types in the {subject} builder --> src/{module}/{subject}.rs:{n}:17 ({code})"
                        ),
                        2 => format!("test {module}::{subject}::survives_restart ... FAILED ({code})"),
                        _ => format!("{subject}_p99_latency_ms: {n} (budget 250, {module}, {code})"),
                    };
                    planted.push((code, format!("{module} {subject}"), line));
                }
                Plan::Decision(chain, step) => {
                    let choice = b.rng.pick(CHOICES).to_string();
                    let code = b.code("DEC");
                    match chains[chain].clone() {
                        None => {
                            let subject = b.subject().to_string();
                            said.push(format!(
                                "Decision: for the {subject} store in {module} we will use {choice} ({code}), because it is what the team knows."
                            ));
                            b.facts.push(Fact {
                                code: code.clone(),
                                category: Category::Decision,
                                query: format!("{subject} store {choice}"),
                                message: usize::MAX, // set below, when the reply is written
                                replaced_by: None,
                            });
                            chains[chain] = Some((subject, code, choice));
                        }
                        Some((subject, old, old_choice)) => {
                            said.push(format!(
                                "Change of plan for the {subject} store: {choice} instead of {old_choice}, after the load test ({code} replaces {old})."
                            ));
                            for f in b.facts.iter_mut().filter(|f| f.code == old) {
                                f.replaced_by = Some(code.clone());
                            }
                            b.facts.push(Fact {
                                code: code.clone(),
                                category: Category::Decision,
                                query: format!("{subject} store {choice}"),
                                message: usize::MAX,
                                replaced_by: None,
                            });
                            chains[chain] = Some((subject, code, choice));
                        }
                    }
                    let _ = step;
                }
                Plan::Open => {
                    let subject = b.subject();
                    let code = b.code("TODO");
                    said.push(format!(
                        "By the way, the {subject} cleanup in {module} is still not done; I will come back to it later ({code})."
                    ));
                    b.facts.push(Fact {
                        code,
                        category: Category::Open,
                        query: format!("{subject} cleanup {module}"),
                        message: usize::MAX,
                        replaced_by: None,
                    });
                }
            }
        }
        match ask {
            Some((code, query, text)) => {
                b.plant(Category::Request, &code, query);
                b.text(Role::User, text);
            }
            None => b.text(Role::User, format!("Let's continue with {module}.")),
        }
        if planted.is_empty() {
            b.exchange(module, None);
        }
        for (code, query, line) in planted {
            b.plant(Category::Outcome, &code, query);
            // The fact is in the tool result, one message after the call.
            b.facts.last_mut().expect("just planted").message += 1;
            b.exchange(module, Some(line));
        }
        let reply_at = b.messages.len();
        for f in b.facts.iter_mut().filter(|f| f.message == usize::MAX) {
            f.message = reply_at;
        }
        let mut reply = format!("I went through the {module} code and the output above. ");
        for s in said {
            reply.push_str(&s);
            reply.push(' ');
        }
        reply.push_str("Shall I go on?");
        b.text(Role::Assistant, reply);
    }
    // Long outputs vary: a short draw is topped up with ordinary turns to the 20k floor.
    let size = |b: &Builder| b.messages.iter().map(|m| seshat::window::estimate_parts(&m.parts)).sum::<u64>();
    while size(&b) < 20_000 {
        b.noise_turn();
    }
    b.text(Role::User, "Thanks. Where do we stand?".into());
    let tokens = size(&b);
    Transcript { seed, messages: b.messages, facts: b.facts, tokens }
}
