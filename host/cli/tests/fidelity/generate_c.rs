//! The third generator of coding sessions, written for outcomes no rule names: every tool outcome
//! is one line buried in the middle of a run that **succeeded**, phrased in everyday words (no
//! error, failure, warning or summary word, often no unit), among hundreds of lines of the run's
//! own structured log (`key=value` records, table rows, request logs). The other categories are
//! phrased afresh as well. Its random numbers are a PCG-style LCG with an output permutation,
//! fixed here forever; its seeds ([`super::HELD_OUT_SEEDS_C`]) were fixed before it was first
//! run against the summarisers.

use seshat::conversation::{MessageStatus, NewMessage, Part, Role};

use super::generate::{Category, Fact, Transcript};

/// A 64-bit LCG whose output is permuted (PCG's XSH-RR on the high half): fixed forever.
struct Draw(u64);

impl Draw {
    fn new(seed: u64) -> Self {
        let mut d = Draw(seed ^ 0x853C_49E6_748F_EA9B);
        d.next();
        d
    }

    fn next(&mut self) -> u32 {
        let old = self.0;
        self.0 = old.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        xorshifted.rotate_right((old >> 59) as u32)
    }

    fn upto(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }

    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.upto(hi - lo + 1)
    }

    fn one<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.upto(xs.len())]
    }
}

const SERVICES: &[&str] = &[
    "checkout",
    "inventory",
    "billing",
    "search",
    "gateway",
    "scheduler",
    "mailer",
    "catalog",
    "reports",
    "uploads",
    "sessions",
    "metrics",
    "ledger",
    "payouts",
];

/// What facts are about; each used once per session.
const SUBJECTS: &[&str] = &[
    "retries",
    "backfill",
    "rollover",
    "throttle",
    "snapshot",
    "warmup",
    "handoff",
    "cutover",
    "eviction",
    "fanout",
    "quorum",
    "drain",
    "replica",
    "rebalance",
    "heartbeat",
    "lease",
    "checksum",
    "compaction",
    "manifest",
    "spool",
    "cursor",
    "watermark",
    "shard",
    "bucket",
    "digest",
    "ticker",
    "cohort",
    "ledger",
    "mirror",
    "relay",
    "sweep",
    "tombstone",
    "journal",
    "outbox",
    "backlog",
    "budget",
    "canary",
    "pager",
    "quota",
    "ratchet",
];

/// What a choice picks between.
const PICKS: &[&str] = &[
    "postgres", "sqlite", "redis", "kafka", "nats", "zstd", "lz4", "protobuf", "msgpack", "axum", "hyper", "tokio",
    "rayon", "serde", "sled", "etcd", "consul", "envoy", "nginx", "caddy",
];

const LETTERS: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ0123456789";

struct Session {
    draw: Draw,
    messages: Vec<NewMessage>,
    facts: Vec<Fact>,
    used: std::collections::HashSet<String>,
    subjects: Vec<&'static str>,
    calls: usize,
}

impl Session {
    fn code(&mut self, tag: &str) -> String {
        loop {
            let s: String = (0..5).map(|_| LETTERS[self.draw.upto(LETTERS.len())] as char).collect();
            let code = format!("{tag}{s}");
            if self.used.insert(code.clone()) {
                return code;
            }
        }
    }

    fn subject(&mut self) -> &'static str {
        let i = self.draw.upto(self.subjects.len());
        self.subjects.swap_remove(i)
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
        let id = format!("tc-{}", self.calls);
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

    /// A successful run's log of `n` records in one of three shapes, with `buried` somewhere in
    /// its middle third, ending as such a run ends.
    fn run(&mut self, service: &str, buried: Option<String>) -> usize {
        let n = if self.draw.upto(4) == 0 { self.draw.between(250, 600) } else { self.draw.between(40, 180) };
        let shape = self.draw.upto(3);
        let mut out: Vec<String> = Vec::with_capacity(n + 2);
        for i in 0..n {
            let line = match shape {
                0 => format!(
                    "ts=2026-11-{:02}T{:02}:{:02}:{:02}Z level=info svc={service} op={} id={:08x} took_us={}",
                    1 + i % 28,
                    i % 24,
                    (i * 7) % 60,
                    (i * 13) % 60,
                    self.draw.one(&["get", "put", "scan", "list"]),
                    self.draw.next(),
                    self.draw.between(30, 90_000)
                ),
                1 => format!(
                    "| {service}_{i:04} | {:>5} | {:>7} | ok |",
                    self.draw.between(1, 64),
                    self.draw.between(100, 999_999)
                ),
                _ => format!(
                    "{}.{}.{}.{} - - [07/Dec/2026:06:{:02}:{:02}] \"GET /{service}/v1/items/{} HTTP/1.1\" 200 {}",
                    10,
                    self.draw.upto(255),
                    self.draw.upto(255),
                    self.draw.upto(255),
                    i % 60,
                    (i * 11) % 60,
                    self.draw.between(1, 99_999),
                    self.draw.between(200, 40_000)
                ),
            };
            out.push(line);
        }
        if let Some(b) = buried {
            let at = n / 3 + self.draw.upto(n / 3 + 1);
            out.insert(at, b);
        }
        out.push(match shape {
            0 => format!("ts=2026-12-07T06:00:00Z level=info svc={service} op=close id=00000000 took_us=1"),
            1 => format!("| {service}_end | 0 | 0 | ok |"),
            _ => "10.0.0.1 - - [07/Dec/2026:07:00:00] \"GET /healthz HTTP/1.1\" 200 2".to_string(),
        });
        self.tool("exec", format!(r#"{{"argv":["make","run-{service}"]}}"#), &out)
    }

    /// A look at the service's settings: noise.
    fn browse(&mut self, service: &str) {
        let n = self.draw.between(15, 90);
        let out: Vec<String> =
            (0..n).map(|i| format!("{service}.setting_{i} = {}", self.draw.between(0, 5_000))).collect();
        self.tool("exec", format!(r#"{{"argv":["cat","{service}.conf"]}}"#), &out);
    }

    fn quiet_turn(&mut self) {
        let service = self.draw.one(SERVICES);
        let q = match self.draw.upto(3) {
            0 => format!("Poke at {service} a bit, just to see how it's wired."),
            1 => format!("Can you glance over the {service} settings?"),
            _ => format!("Refresh my memory on {service}."),
        };
        self.say(Role::User, q);
        for _ in 0..self.draw.between(1, 2) {
            match self.draw.upto(2) {
                0 => self.browse(service),
                _ => {
                    self.run(service, None);
                }
            }
        }
        self.say(Role::Assistant, format!("{service} looks the way you left it."));
    }
}

/// Live facts a session plants: 4 requests, 4 live decisions, 8 outcomes, 4 open items, 4
/// constraints.
const ASKS: usize = 4;
const CHAINS: [usize; 4] = [2, 3, 1, 2];
const OUTCOMES: usize = 8;
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
        subjects: SUBJECTS.to_vec(),
        calls: 0,
    };
    s.say(Role::User, "Hi. Some ground rules before we start on the services.".into());
    for i in 0..RULES {
        let (service, subject) = (s.draw.one(SERVICES), s.subject());
        let code = s.code("G");
        let text = match i {
            0 => format!("The {subject} path in {service} must never block the request thread ({code})."),
            1 => format!("Don't ever log customer ids from {service}'s {subject} code ({code})."),
            2 => format!("Always put {subject} changes in {service} behind a flag ({code})."),
            _ => format!("{service} {subject}: no new dependencies, we vendor what we use ({code})."),
        };
        let at = s.messages.len();
        s.fact(Category::Constraint, &code, format!("{service} {subject}"), at);
        s.say(Role::User, text);
    }
    s.say(Role::Assistant, "Understood; I'll hold to all four.".into());

    let turns = (size / 2_500).max(10) as usize;
    #[derive(Clone, Copy)]
    enum Event {
        Ask,
        Choice(usize),
        Outcome,
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
    for _ in 0..OUTCOMES {
        let at = s.draw.upto(turns);
        schedule[at].push(Event::Outcome);
    }
    for _ in 0..OPENS {
        let at = s.draw.upto(turns);
        schedule[at].push(Event::Open);
    }
    let mut chains: Vec<Option<(&str, String, &str)>> = vec![None; CHAINS.len()];
    for events in schedule {
        if events.is_empty() {
            s.quiet_turn();
            continue;
        }
        let service = s.draw.one(SERVICES);
        let mut opening = format!("Back to {service} for a bit.");
        let mut remarks = Vec::new();
        let mut pending = Vec::new();
        let mut asked = None;
        let mut runs = Vec::new();
        for event in events {
            match event {
                Event::Ask => {
                    let subject = s.subject();
                    let code = s.code("A");
                    opening = match s.draw.upto(3) {
                        0 => format!("Task {code}: give {service} a way to pause its {subject} without a restart."),
                        1 => format!("Next up ({code}) — {service} should expose its {subject} state over HTTP."),
                        _ => format!("I need {service}'s {subject} to survive a redeploy; tracking it as {code}."),
                    };
                    asked = Some((code, format!("{service} {subject}")));
                }
                Event::Choice(chain) => {
                    let pick = s.draw.one(PICKS);
                    let code = s.code("C");
                    let line = match chains[chain].clone() {
                        None => {
                            let subject = s.subject();
                            chains[chain] = Some((subject, code.clone(), pick));
                            pending.push((Category::Decision, code.clone(), format!("{subject} {pick}")));
                            format!("For {subject} in {service} we settle on {pick} ({code}).")
                        }
                        Some((subject, old, old_pick)) => {
                            for f in s.facts.iter_mut().filter(|f| f.code == old) {
                                f.replaced_by = Some(code.clone());
                            }
                            chains[chain] = Some((subject, code.clone(), pick));
                            pending.push((Category::Decision, code.clone(), format!("{subject} {pick}")));
                            match s.draw.upto(3) {
                                0 => format!("Scratch {old} — {subject} goes on {pick}, not {old_pick} ({code})."),
                                1 => format!("{subject}: {pick} now, {old_pick} is out ({code} supersedes {old})."),
                                _ => format!(
                                    "Changed my mind on {subject}: {pick} rather than {old_pick}, {code} over {old}."
                                ),
                            }
                        }
                    };
                    remarks.push(line);
                }
                Event::Outcome => {
                    let subject = s.subject();
                    let code = s.code("O");
                    let (n, m) = (s.draw.between(3, 900), s.draw.between(3, 900));
                    let line = match s.draw.upto(6) {
                        0 => format!("{service} handed {n} fewer {subject} records on than the day before [{code}]"),
                        1 => format!("the {subject} table of {service} now holds {n} rows where it held {m} [{code}]"),
                        2 => format!(
                            "a second copy of the {subject} job for {service} woke up next to the first [{code}]"
                        ),
                        3 => format!("{subject} in {service} came back after {n} where the plan allows {m} [{code}]"),
                        4 => {
                            format!("nobody has read the {subject} queue of {service} since the {}rd [{code}]", n % 28)
                        }
                        _ => format!("{service} {subject} counter reads {n}, about double last week's {m} [{code}]"),
                    };
                    runs.push((code, format!("{service} {subject}"), line));
                }
                Event::Open => {
                    let subject = s.subject();
                    let code = s.code("L");
                    pending.push((Category::Open, code.clone(), format!("{subject} {service}")));
                    remarks.push(match s.draw.upto(2) {
                        0 => format!("Still to do: the {subject} bit of {service} ({code})."),
                        _ => format!("Parking {service}'s {subject} question until tomorrow ({code})."),
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
            s.browse(service);
        }
        for (code, query, line) in runs {
            let at = s.run(service, Some(line));
            s.fact(Category::Outcome, &code, query, at);
        }
        let at = s.messages.len();
        for (category, code, query) in pending {
            s.fact(category, &code, query, at);
        }
        let mut reply = format!("That's {service} done for now. ");
        reply.push_str(&remarks.join(" "));
        s.say(Role::Assistant, reply);
    }
    let estimate = |s: &Session| s.messages.iter().map(|m| seshat::window::estimate_parts(&m.parts)).sum::<u64>();
    while estimate(&s) < 25_000 {
        s.quiet_turn();
    }
    s.say(Role::User, "Where do things stand? Short version.".into());
    let tokens = estimate(&s);
    Transcript { seed, messages: s.messages, facts: s.facts, tokens }
}
