//! The second generator of coding sessions, written apart from the first (`generate.rs`) so the
//! benchmark does not only measure how well the summarisers learnt one generator's phrasing.
//!
//! What differs: the phrasing of every fact; tool outcomes of every kind — failures and warnings
//! in the middle of a log, and successful runs whose result is their **last** line (a benchmark's
//! throughput and p99, a build's artefact size, files written, a version); decisions replaced in
//! several wordings ("switch from A to B", "instead of", "no longer", "drop", "replaces"); and
//! noise between the facts that carries nothing (files read, directory listings, `git status`).
//! Its random numbers are xorshift64* (the first generator's are SplitMix64), fixed here forever.
//! Its seeds were fixed before it was first run against the summarisers.

use seshat::conversation::{MessageStatus, NewMessage, Part, Role};

use super::generate::{Category, Fact, Transcript};

/// xorshift64*: fixed forever, so a seed means the same session.
struct Draw(u64);

impl Draw {
    fn new(seed: u64) -> Self {
        Draw(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1)
    }

    fn u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn upto(&mut self, n: usize) -> usize {
        (self.u64() >> 33) as usize % n
    }

    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.upto(hi - lo + 1)
    }

    fn one<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.upto(xs.len())]
    }
}

const CRATES: &[&str] = &[
    "orders", "accounts", "notifier", "planner", "indexer", "router", "archive", "ledgerd", "profiles", "pipeline",
    "exporter", "importer", "courier", "vault", "tracker", "renderer",
];

/// What facts are about; each used once per session.
const TOPICS: &[&str] = &[
    "batching",
    "caching",
    "chunking",
    "dedup",
    "encoding",
    "expiry",
    "fencing",
    "gossip",
    "hashing",
    "hydration",
    "interning",
    "jitter",
    "locking",
    "logging",
    "mapping",
    "merging",
    "paging",
    "parsing",
    "pooling",
    "probing",
    "queueing",
    "ranking",
    "replay",
    "routing",
    "sampling",
    "scoring",
    "sealing",
    "sorting",
    "spilling",
    "staging",
    "striping",
    "tagging",
    "tiering",
    "timeouts",
    "tracing",
    "trimming",
    "unpacking",
    "validation",
    "versioning",
    "windowing",
];

/// What a decision chooses between.
const OPTIONS: &[&str] = &[
    "clickhouse",
    "duckdb",
    "rocksdb",
    "lmdb",
    "memcached",
    "rabbitmq",
    "pulsar",
    "capnp",
    "flatbuffers",
    "bincode",
    "actix",
    "warp",
    "tonic",
    "crossbeam",
    "flume",
    "xxhash",
    "brotli",
    "snappy",
    "parking_lot",
    "dashmap",
];

const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTVWXYZ23456789";

struct Session {
    draw: Draw,
    messages: Vec<NewMessage>,
    facts: Vec<Fact>,
    used: std::collections::HashSet<String>,
    topics: Vec<&'static str>,
    calls: usize,
}

impl Session {
    fn code(&mut self, tag: &str) -> String {
        loop {
            let s: String = (0..5).map(|_| ALPHABET[self.draw.upto(ALPHABET.len())] as char).collect();
            let code = format!("{tag}{s}");
            if self.used.insert(code.clone()) {
                return code;
            }
        }
    }

    fn topic(&mut self) -> &'static str {
        let i = self.draw.upto(self.topics.len());
        self.topics.swap_remove(i)
    }

    fn say(&mut self, role: Role, text: String) {
        self.messages.push(NewMessage {
            role,
            parts: vec![Part::Text { text }],
            usage: None,
            status: MessageStatus::Complete,
        });
    }

    fn fact(&mut self, category: Category, code: &str, query: String, message: usize) {
        self.facts.push(Fact { code: code.into(), category, query, message, replaced_by: None });
    }

    /// A tool call and its output; returns the index of the output's message.
    fn tool(&mut self, name: &str, args: String, output: &[String]) -> usize {
        self.calls += 1;
        let id = format!("call_{:04x}", self.calls);
        self.messages.push(NewMessage {
            role: Role::Assistant,
            parts: vec![Part::ToolCall { id: id.clone(), name: name.into(), arguments: args }],
            usage: None,
            status: MessageStatus::Complete,
        });
        self.messages.push(NewMessage {
            role: Role::Tool,
            parts: vec![Part::ToolResult { call_id: id, content: output.join("\n"), is_error: false }],
            usage: None,
            status: MessageStatus::Complete,
        });
        self.messages.len() - 1
    }

    fn lines(&mut self) -> usize {
        if self.draw.upto(5) == 0 { self.draw.between(200, 500) } else { self.draw.between(20, 140) }
    }

    /// A file read: source text that carries nothing to keep.
    fn read(&mut self, krate: &str) {
        let n = self.lines();
        let file = self.draw.one(&["lib.rs", "handler.rs", "model.rs", "config.rs", "errors.rs"]);
        let mut out = vec![format!("// {krate}/src/{file}")];
        while out.len() < n {
            let name = self.draw.one(&["open", "close", "step", "poll", "drain", "fill", "sync"]);
            out.push(format!("impl {}{} {{", name[..1].to_uppercase(), &name[1..]));
            out.push(format!("    pub fn {name}(&mut self, n: usize) -> io::Result<usize> {{"));
            out.push(format!("        self.count += n; // {}", self.draw.one(&["fast path", "rare", "hot loop"])));
            out.push("        Ok(self.count)".into());
            out.push("    }".into());
            out.push("}".into());
        }
        self.tool("read_file", format!(r#"{{"file":"{krate}/src/{file}"}}"#), &out);
    }

    /// A listing or `git status`: more noise.
    fn look(&mut self, krate: &str) {
        let n = self.draw.between(10, 60);
        if self.draw.upto(2) == 0 {
            let out: Vec<String> = (0..n)
                .map(|i| format!("-rw-r--r-- 1 dev dev {:>6} Dec  3 09:{:02} {krate}_{i}.rs", 300 + i * 37, i % 60))
                .collect();
            self.tool("shell", format!(r#"{{"command":"ls -l {krate}/src"}}"#), &out);
        } else {
            let mut out = vec!["On branch main".to_string(), "Changes not staged for commit:".into()];
            out.extend((0..n).map(|i| format!("\tmodified:   {krate}/src/part_{i}.rs")));
            self.tool("shell", r#"{"command":"git status"}"#.into(), &out);
        }
    }

    /// A test or bench run whose log is `n` lines of progress, with `middle` inside and `last`
    /// as its final line.
    fn run(&mut self, krate: &str, middle: Option<String>, last: Option<String>) -> usize {
        let n = self.lines();
        let mut out: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{:>4}/{n} {krate}::suite_{}::case_{i} ... {} ({} µs)",
                    i + 1,
                    self.draw.upto(9),
                    self.draw.one(&["pass", "pass", "pass", "skip"]),
                    self.draw.between(40, 9_000)
                )
            })
            .collect();
        if let Some(m) = middle {
            let at = n / 3 + self.draw.upto(n / 3 + 1);
            out.insert(at, m);
        }
        out.push(last.unwrap_or_else(|| format!("summary: {n} cases, 0 failures")));
        self.tool("shell", format!(r#"{{"command":"just test {krate}"}}"#), &out)
    }

    fn idle_turn(&mut self) {
        let krate = self.draw.one(CRATES);
        let q = match self.draw.upto(3) {
            0 => format!("Have a look around {krate}, nothing specific."),
            1 => format!("Skim {krate} and see if the layout makes sense."),
            _ => format!("What's in {krate}/src right now?"),
        };
        self.say(Role::User, q);
        for _ in 0..self.draw.between(1, 3) {
            match self.draw.upto(3) {
                0 => self.look(krate),
                _ => self.read(krate),
            }
        }
        self.say(Role::Assistant, format!("{krate} is in order; I saw nothing that needs your attention."));
    }
}

/// Live facts a session plants: 4 requests, 4 live decisions, 8 outcomes, 4 open items, 4
/// constraints.
const ASKS: usize = 4;
const CHAINS: [usize; 4] = [3, 2, 2, 1];
const RESULTS: usize = 8;
const OPENS: usize = 4;
const RULES: usize = 4;

/// A session for `seed`, from about 25k to 150k estimated tokens.
pub fn transcript(seed: u64) -> Transcript {
    let mut draw = Draw::new(seed);
    let size = draw.between(25_000, 140_000) as u64;
    let mut s = Session {
        draw,
        messages: Vec::new(),
        facts: Vec::new(),
        used: Default::default(),
        topics: TOPICS.to_vec(),
        calls: 0,
    };
    s.say(Role::User, "Morning. Before we touch anything, a few things I care about.".into());
    for i in 0..RULES {
        let (krate, topic) = (s.draw.one(CRATES), s.topic());
        let code = s.code("K");
        let text = match i {
            0 => format!("Hard requirement: {topic} in {krate} stays deterministic, no randomness anywhere ({code})."),
            1 => {
                format!("Please keep the {topic} output of {krate} byte-for-byte stable; downstream diffs it ({code}).")
            }
            2 => format!("I'd rather you didn't pull in crates for {topic} in {krate} — hand-roll it ({code})."),
            _ => format!("Ground rule for {krate}: every {topic} change ships with a changelog line ({code})."),
        };
        let at = s.messages.len();
        s.fact(Category::Constraint, &code, format!("{krate} {topic}"), at);
        s.say(Role::User, text);
    }
    s.say(Role::Assistant, "Got it, I will stick to those.".into());

    let turns = (size / 2_500).max(10) as usize;
    #[derive(Clone, Copy)]
    enum Event {
        Ask,
        Choice(usize),
        Result,
        Open,
    }
    let mut schedule: Vec<Vec<Event>> = vec![Vec::new(); turns];
    for i in 0..ASKS {
        schedule[(i * turns / ASKS + s.draw.upto(turns / ASKS)).min(turns - 1)].push(Event::Ask);
    }
    for (chain, &len) in CHAINS.iter().enumerate() {
        for step in 0..len {
            let at = (step * turns / len + s.draw.upto(turns / len)).min(turns - 1);
            schedule[at].push(Event::Choice(chain));
        }
    }
    for _ in 0..RESULTS {
        let at = s.draw.upto(turns);
        schedule[at].push(Event::Result);
    }
    for _ in 0..OPENS {
        let at = s.draw.upto(turns);
        schedule[at].push(Event::Open);
    }
    // Each chain: (topic, live code, live option, how many times replaced).
    let mut chains: Vec<Option<(&str, String, &str)>> = vec![None; CHAINS.len()];
    let mut wording = s.draw.upto(5);
    for events in schedule {
        if events.is_empty() {
            s.idle_turn();
            continue;
        }
        let krate = s.draw.one(CRATES);
        let mut opening = format!("Let's get back to {krate}.");
        let mut remarks = Vec::new();
        let mut pending = Vec::new();
        let mut asked = None;
        let mut runs = Vec::new();
        for event in events {
            match event {
                Event::Ask => {
                    let topic = s.topic();
                    let code = s.code("Q");
                    opening = match s.draw.upto(2) {
                        0 => format!("Could you make {topic} in {krate} resumable after a crash? Ticket {code}."),
                        _ => format!("I'd like {krate}'s {topic} to report its progress — {code}, needed for Friday."),
                    };
                    asked = Some((code, format!("{krate} {topic}")));
                }
                Event::Choice(chain) => {
                    let option = s.draw.one(OPTIONS);
                    let code = s.code("D");
                    let line = match chains[chain].clone() {
                        None => {
                            let topic = s.topic();
                            chains[chain] = Some((topic, code.clone(), option));
                            pending.push((Category::Decision, code.clone(), format!("{topic} {option}")));
                            format!("Going with {option} for the {topic} layer in {krate} ({code}).")
                        }
                        Some((topic, old, old_option)) => {
                            for f in s.facts.iter_mut().filter(|f| f.code == old) {
                                f.replaced_by = Some(code.clone());
                            }
                            chains[chain] = Some((topic, code.clone(), option));
                            pending.push((Category::Decision, code.clone(), format!("{topic} {option}")));
                            wording = (wording + 1) % 5;
                            match wording {
                                0 => format!(
                                    "Let's switch from {old_option} to {option} for {topic}: {code}, so {old} is out."
                                ),
                                1 => format!(
                                    "We'll use {option} instead of {old_option} for {topic} now ({code}); forget {old}."
                                ),
                                2 => format!("{old} no longer holds: {topic} moves to {option} ({code})."),
                                3 => format!("Drop {old_option} for {topic} ({old}); {option} it is ({code})."),
                                _ => format!("{code} replaces {old}: {topic} goes to {option}."),
                            }
                        }
                    };
                    remarks.push(line);
                }
                Event::Result => {
                    let topic = s.topic();
                    let code = s.code("R");
                    let n = s.draw.between(3, 900);
                    let (middle, last) = match s.draw.upto(6) {
                        0 => (
                            Some(format!(
                                "FAILED {krate}::{topic}::roundtrip: expected {n} records, found {} [{code}]",
                                n - 1
                            )),
                            None,
                        ),
                        1 => (
                            Some(format!(
                                "warning: {topic} buffer in {krate} grew to {n} MiB, over its 256 MiB budget [{code}]"
                            )),
                            None,
                        ),
                        2 => (
                            None,
                            Some(format!(
                                "bench {krate}/{topic}: {n},{:03} ops/s, p99 {}.{} ms [{code}]",
                                s.draw.upto(1000),
                                s.draw.between(1, 40),
                                s.draw.upto(10)
                            )),
                        ),
                        3 => (
                            None,
                            Some(format!(
                                "artefact dist/{krate}-{topic}.tar.zst: {}.{} MiB [{code}]",
                                s.draw.between(1, 90),
                                s.draw.upto(10)
                            )),
                        ),
                        4 => (None, Some(format!("wrote {n} files to out/{topic}/ [{code}]"))),
                        _ => (
                            None,
                            Some(format!(
                                "{krate}-{topic} {}.{}.{} built with rustc 1.95.0 [{code}]",
                                s.draw.upto(5),
                                s.draw.upto(30),
                                s.draw.upto(20)
                            )),
                        ),
                    };
                    runs.push((code, format!("{krate} {topic}"), middle, last));
                }
                Event::Open => {
                    let topic = s.topic();
                    let code = s.code("T");
                    pending.push((Category::Open, code.clone(), format!("{topic} {krate}")));
                    remarks.push(match s.draw.upto(2) {
                        0 => format!("Note to self: {topic} in {krate} still has a loose end ({code})."),
                        _ => format!("Left for later: the {topic} follow-up in {krate} ({code})."),
                    });
                }
            }
        }
        if let Some((code, query)) = asked {
            let at = s.messages.len();
            s.fact(Category::Request, &code, query, at);
        }
        s.say(Role::User, opening);
        if s.draw.upto(2) == 0 {
            s.read(krate);
        }
        for (code, query, middle, last) in runs {
            let at = s.run(krate, middle, last);
            s.fact(Category::Outcome, &code, query, at);
            if s.draw.upto(2) == 0 {
                s.look(krate);
            }
        }
        let at = s.messages.len();
        for (category, code, query) in pending {
            s.fact(category, &code, query, at);
        }
        let mut reply = format!("Done with this round of {krate}. ");
        reply.push_str(&remarks.join(" "));
        s.say(Role::Assistant, reply);
    }
    let estimate = |s: &Session| s.messages.iter().map(|m| seshat::window::estimate_parts(&m.parts)).sum::<u64>();
    while estimate(&s) < 25_000 {
        s.idle_turn();
    }
    s.say(Role::User, "OK, recap please: where are we?".into());
    let tokens = estimate(&s);
    Transcript { seed, messages: s.messages, facts: s.facts, tokens }
}
