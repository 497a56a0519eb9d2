//! The second transcript generator of the extraction benchmark.
//!
//! It was written apart from the first generator (`generate.rs`) and from the extractor it
//! judges, without reading either: its projects, topics, phrasings, sentence shapes and random
//! number generator are its own, so that the benchmark measures extraction rather than how well
//! an extractor has learnt one generator's wording.
//!
//! A session is a developer working with a coding agent on one project (Rust, TypeScript,
//! Python or Go): a task, follow-up requests, tool calls (`read_file`/`run_shell`/`grep`/
//! `edit_file`, or the `Read`/`Bash`/`Grep`/`Edit` family) answered by realistic output, and the
//! agent's replies. Some user messages state something lasting (a preference, a constraint, a
//! decision, a "remember …"), often embedded among task talk; one to three later messages
//! correct such a statement, naming the old value, only the new one, or the topic. Everything
//! else is a distractor and is not labelled: transient requests, one-off instructions for this
//! task, questions, hypotheticals, what someone else prefers, musings, non-committal remarks,
//! pasted output, and the assistant's and tools' text (CONTRIBUTING.md, manifests, ADRs, logs,
//! code comments), which is full of "prefer", "must" and "always".
//!
//! Randomness comes from a PCG32 (XSH-RR) generator seeded through SplitMix64, written here so
//! that a transcript depends on nothing but its seed. The seeds the benchmark runs are fixed
//! before any extractor is run against this generator and are not tuned afterwards.

use super::labels::{Fact, Transcript};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};

/// The labelled session for `seed`: 12 to 40 messages and the facts the user stated in them,
/// the same every time for the same seed.
pub fn transcript(seed: u64) -> Transcript {
    let transcript = Gen::new(seed).run();
    debug_assert!(well_formed(&transcript), "generate_b produced a malformed transcript for seed {seed}");
    transcript
}

// ---------------------------------------------------------------------------------------------
// Randomness

/// PCG32, XSH-RR variant (O'Neill 2014): 64-bit LCG state, 32-bit output.
struct Pcg32 {
    state: u64,
    inc: u64,
}

impl Pcg32 {
    const MULTIPLIER: u64 = 6_364_136_223_846_793_005;

    fn new(seed: u64) -> Self {
        let mut rng = Pcg32 { state: 0, inc: (splitmix64(seed ^ 0x5e5a_7b0b_2d1f_c3e7) << 1) | 1 };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(splitmix64(seed));
        rng.next_u32();
        rng
    }

    fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(Self::MULTIPLIER).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        xorshifted.rotate_right((old >> 59) as u32)
    }

    /// Uniform in `0..n` (Lemire's multiply-and-reject), `n` > 0.
    fn below(&mut self, n: usize) -> usize {
        let n = n as u32;
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u64::from(self.next_u32()) * u64::from(n);
            if (m as u32) >= threshold {
                return (m >> 32) as usize;
            }
        }
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, p: f64) -> bool {
        f64::from(self.next_u32()) < p * 4_294_967_296.0
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut roll = self.below(total as usize) as u32;
        for (i, &w) in weights.iter().enumerate() {
            if roll < w {
                return i;
            }
            roll -= w;
        }
        weights.len() - 1
    }

    fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

// ---------------------------------------------------------------------------------------------
// What users state: topics, each with values and ways of saying them

const RS: u8 = 1;
const TS: u8 = 2;
const PY: u8 = 4;
const GO: u8 = 8;
const ANY: u8 = RS | TS | PY | GO;

/// How a topic's value reads, which decides how corrections and distractors may phrase it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// A tool, a style, a service: "switched from X to Y" and "should we use X?" read right.
    Thing,
    /// A date, a number, a version: corrections say it moved.
    Value,
    /// Something about the user or a colleague: generic corrections only, no distractors.
    Personal,
}

/// One kind of lasting statement.
struct Topic {
    /// A name for tool output to look the topic up by.
    id: &'static str,
    /// What the value is of, as a correction would name it ("the database").
    noun: &'static str,
    /// The languages whose projects it fits (bits).
    langs: u8,
    class: Class,
    /// Never corrected (a standing rule with no alternative value).
    fixed: bool,
    /// `shown` or `shown|key|key`: the text put in the message and the keys a faithful
    /// observation keeps (the lowercased text itself when none are given).
    values: &'static [&'static str],
    /// Whole statements, `{v}` the value.
    says: &'static [&'static str],
    /// A plain clause stating it, `{v}` the value, for the "remember …" and "going forward …"
    /// wrappers and for corrections; it contains every key.
    clause: &'static str,
}

const MINVER_SAYS: &[&str] = &[
    "we must support {v}, some of our customers are stuck on it",
    "{v} is the floor, don't use language features newer than that",
    "hard constraint: everything has to keep working on {v}",
    "remember we still support {v}",
];
const PM_SAYS: &[&str] = &[
    "we use {v} in this repo, never anything else",
    "always use {v} for installs, the lockfile depends on it",
    "I prefer {v}, please don't create other lockfiles",
];
const LOG_SAYS: &[&str] = &[
    "logging goes through {v}, no stray print debugging left in",
    "we standardised on {v} for logging",
    "I prefer {v} for logs, use it everywhere",
];
const FMT_SAYS: &[&str] = &[
    "format everything with {v}, I don't want to argue about style ever again",
    "{v} is our formatter, run it before every commit",
];
const FW_SAYS: &[&str] = &[
    "we decided on {v} for the http layer",
    "let's go with {v} for the server, I don't want to revisit that",
    "the API is built on {v} and it stays that way",
];
const ORM_SAYS: &[&str] = &[
    "db access goes through {v}, no raw queries sprinkled around",
    "we're sticking with {v} for queries",
    "decided: {v} for the data layer",
];
const TEST_SAYS: &[&str] =
    &["tests are written with {v}, always", "I prefer {v} for tests", "stick with {v} for anything test-related"];

static TOPICS: &[Topic] = &[
    Topic {
        id: "indent",
        noun: "indentation",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["tabs", "spaces"],
        says: &[
            "I always indent with {v}, no exceptions",
            "{v} for indentation. always. I'm weirdly picky about that",
            "I'm a {v} person, stick to that in every file you touch",
            "indentation in this repo is {v}, full stop",
            "I can't stand anything other than {v} for indentation",
        ],
        clause: "we indent with {v}",
    },
    Topic {
        id: "quotes",
        noun: "string quotes",
        langs: TS | PY,
        class: Class::Thing,
        fixed: false,
        values: &["single quotes", "double quotes"],
        says: &[
            "I prefer {v} for strings",
            "{v} for string literals everywhere, that's the house style",
            "strings get {v} in this codebase, please keep it that way",
        ],
        clause: "strings use {v}",
    },
    Topic {
        id: "commit",
        noun: "commit messages",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["conventional commits", "gitmoji", "the imperative mood|imperative"],
        says: &[
            "commit messages: {v}, always",
            "stick to {v} for commit messages, every single time",
            "I really like {v} for commits, keep doing that",
            "our rule is {v} for commit messages",
        ],
        clause: "commit messages use {v}",
    },
    Topic {
        id: "db",
        noun: "the database",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["postgres", "sqlite", "mysql", "cockroachdb", "dynamodb"],
        says: &[
            "we decided to go with {v} for the main datastore",
            "let's go with {v} for the db. final answer",
            "ok decision made: {v} it is for persistence",
            "the service has to run on {v}, that's non-negotiable",
            "we're a {v} shop, so assume that for anything storage related",
        ],
        clause: "the database is {v}",
    },
    Topic {
        id: "deadline",
        noun: "the release deadline",
        langs: ANY,
        class: Class::Value,
        fixed: false,
        values: &["march 3", "april 18", "may 9", "june 24", "october 12"],
        says: &[
            "heads up, the deadline for v2 is {v}",
            "we have to ship the beta by {v}, hard deadline",
            "release date is locked in: {v}",
            "the client expects the release on {v}, no slipping",
        ],
        clause: "the release deadline is {v}",
    },
    Topic {
        id: "freeze",
        noun: "the code freeze",
        langs: ANY,
        class: Class::Value,
        fixed: false,
        values: &["december 18", "november 27", "january 9"],
        says: &["code freeze starts {v}, nothing risky after that", "we go into code freeze on {v}"],
        clause: "the code freeze starts {v}",
    },
    Topic {
        id: "minver",
        noun: "the minimum supported version",
        langs: PY,
        class: Class::Value,
        fixed: false,
        values: &["python 3.9|python|3.9", "python 3.10|python|3.10", "python 3.12|python|3.12"],
        says: MINVER_SAYS,
        clause: "we must support {v}",
    },
    Topic {
        id: "minver",
        noun: "the minimum supported version",
        langs: TS,
        class: Class::Value,
        fixed: false,
        values: &["node 18|node|18", "node 20|node|20", "node 22|node|22"],
        says: MINVER_SAYS,
        clause: "we must support {v}",
    },
    Topic {
        id: "minver",
        noun: "the MSRV",
        langs: RS,
        class: Class::Value,
        fixed: false,
        values: &["rust 1.70|1.70", "rust 1.75|1.75", "rust 1.80|1.80"],
        says: MINVER_SAYS,
        clause: "we must support {v}",
    },
    Topic {
        id: "minver",
        noun: "the minimum go version",
        langs: GO,
        class: Class::Value,
        fixed: false,
        values: &["go 1.21|1.21", "go 1.22|1.22", "go 1.23|1.23"],
        says: MINVER_SAYS,
        clause: "we must support {v}",
    },
    Topic {
        id: "notouch",
        noun: "the off-limits code",
        langs: ANY,
        class: Class::Thing,
        fixed: true,
        values: &[
            "the migrations folder|migrations",
            "vendor/|vendor",
            "the generated/ dir|generated",
            "the legacy billing code|legacy billing",
            "the proto files|proto",
        ],
        says: &[
            "don't ever touch {v}, another team owns it",
            "never edit anything in {v} by hand. seriously",
            "hands off {v}, always, not just today",
            "{v} is off limits for you, permanently",
        ],
        clause: "{v} must never be edited by hand",
    },
    Topic {
        id: "pm",
        noun: "the package manager",
        langs: TS,
        class: Class::Thing,
        fixed: false,
        values: &["pnpm", "yarn", "bun"],
        says: PM_SAYS,
        clause: "the package manager is {v}",
    },
    Topic {
        id: "pm",
        noun: "the package manager",
        langs: PY,
        class: Class::Thing,
        fixed: false,
        values: &["poetry", "pdm", "hatch"],
        says: PM_SAYS,
        clause: "the package manager is {v}",
    },
    Topic {
        id: "editor",
        noun: "my editor",
        langs: ANY,
        class: Class::Personal,
        fixed: false,
        values: &["neovim", "helix", "emacs", "zed"],
        says: &[
            "fyi I live in {v}, so keep that in mind for any editor config",
            "I use {v} for everything",
            "I edit everything in {v}, so don't bother suggesting vscode extensions",
        ],
        clause: "my editor is {v}",
    },
    Topic {
        id: "tz",
        noun: "where I'm based",
        langs: ANY,
        class: Class::Personal,
        fixed: false,
        values: &["berlin", "tokyo", "toronto", "lisbon", "singapore"],
        says: &[
            "I'm based in {v}, so use my local time when you mention times",
            "I work out of {v}, keep that in mind for anything time-related",
            "my timezone is {v} time, in case it matters",
        ],
        clause: "I'm in {v}",
    },
    Topic {
        id: "os",
        noun: "my OS",
        langs: ANY,
        class: Class::Personal,
        fixed: false,
        values: &["macos", "linux", "windows", "wsl"],
        says: &[
            "I'm on {v}, so give me commands that work there",
            "my dev machine runs {v}",
            "everything I do is on {v}, keep shell snippets compatible",
        ],
        clause: "my machine runs {v}",
    },
    Topic {
        id: "logging",
        noun: "the logging library",
        langs: RS,
        class: Class::Thing,
        fixed: false,
        values: &["tracing", "log4rs"],
        says: LOG_SAYS,
        clause: "logging uses {v}",
    },
    Topic {
        id: "logging",
        noun: "the logging library",
        langs: PY,
        class: Class::Thing,
        fixed: false,
        values: &["structlog", "loguru"],
        says: LOG_SAYS,
        clause: "logging uses {v}",
    },
    Topic {
        id: "logging",
        noun: "the logging library",
        langs: TS,
        class: Class::Thing,
        fixed: false,
        values: &["pino", "winston"],
        says: LOG_SAYS,
        clause: "logging uses {v}",
    },
    Topic {
        id: "logging",
        noun: "the logging library",
        langs: GO,
        class: Class::Thing,
        fixed: false,
        values: &["zerolog", "zap"],
        says: LOG_SAYS,
        clause: "logging uses {v}",
    },
    Topic {
        id: "merge",
        noun: "how PRs land",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["rebases|rebase", "squash merges|squash", "merge commits|merge commit"],
        says: &[
            "{v} only on main, that's how we do it",
            "our rule for PRs: {v} only",
            "I only want {v} on main, always",
        ],
        clause: "PRs land on main via {v}",
    },
    Topic {
        id: "prsize",
        noun: "the PR size limit",
        langs: ANY,
        class: Class::Value,
        fixed: false,
        values: &["200 lines|200", "400 lines|400", "600 lines|600"],
        says: &["keep PRs under {v}, reviewers here hate big diffs", "hard limit on PR size: {v} of diff"],
        clause: "PRs stay under {v}",
    },
    Topic {
        id: "linelen",
        noun: "the max line length",
        langs: ANY,
        class: Class::Value,
        fixed: false,
        values: &["80", "100", "120"],
        says: &[
            "max line length is {v}, set the formatter up for that",
            "I like lines capped at {v} chars",
            "wrap at {v} columns, always",
        ],
        clause: "the max line length is {v}",
    },
    Topic {
        id: "ci",
        noun: "CI",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["github actions", "gitlab ci|gitlab", "buildkite", "circleci"],
        says: &["we decided to move CI to {v}", "CI runs on {v} and that's not changing", "let's go with {v} for CI"],
        clause: "CI runs on {v}",
    },
    Topic {
        id: "hosting",
        noun: "hosting",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["fly.io", "railway", "kubernetes", "cloud run", "a hetzner box|hetzner"],
        says: &[
            "we deploy to {v}, assume that for anything infra-related",
            "decision on hosting: {v}",
            "prod lives on {v}",
        ],
        clause: "prod is hosted on {v}",
    },
    Topic {
        id: "queue",
        noun: "the job queue",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["nats", "rabbitmq", "kafka", "sqs"],
        says: &[
            "background jobs go through {v}, we settled that last week",
            "let's go with {v} for the queue",
            "we're standardizing on {v} for async work",
        ],
        clause: "the job queue is {v}",
    },
    Topic {
        id: "cache",
        noun: "the cache",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["redis", "memcached", "valkey"],
        says: &["the caching layer is {v}, decided", "we're going with {v} for caching"],
        clause: "the cache is {v}",
    },
    Topic {
        id: "jsoncase",
        noun: "JSON field naming",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["snake_case", "camelCase|camelcase", "kebab-case"],
        says: &["API payloads use {v} field names, always", "I want {v} for every json key we expose"],
        clause: "JSON fields are {v}",
    },
    Topic {
        id: "emoji",
        noun: "emojis",
        langs: ANY,
        class: Class::Thing,
        fixed: true,
        values: &["emojis|emoji"],
        says: &[
            "please never put {v} in code comments or commit messages",
            "I hate {v} in commit messages, don't ever add them",
        ],
        clause: "{v} never go in commits or code comments",
    },
    Topic {
        id: "diffs",
        noun: "showing changes",
        langs: ANY,
        class: Class::Thing,
        fixed: true,
        values: &["diffs|diff"],
        says: &["when you show me changes, give me {v}, not whole files. always", "I prefer {v} over full file dumps"],
        clause: "I want {v} instead of whole files when you show changes",
    },
    Topic {
        id: "colorblind",
        noun: "my eyesight",
        langs: ANY,
        class: Class::Personal,
        fixed: true,
        values: &["colorblind"],
        says: &["I'm {v}, so don't rely on red vs green when you explain output"],
        clause: "I'm {v}",
    },
    Topic {
        id: "bullets",
        noun: "answer format",
        langs: ANY,
        class: Class::Thing,
        fixed: true,
        values: &["bullet points|bullet"],
        says: &["I prefer short answers in {v}, not essays", "keep explanations to a few {v}, I skim"],
        clause: "I like answers as {v}",
    },
    Topic {
        id: "deps",
        noun: "dependencies",
        langs: ANY,
        class: Class::Thing,
        fixed: true,
        values: &["new dependencies|dependencies"],
        says: &["always ask me before adding {v}", "no {v} without checking with me first, ever"],
        clause: "{v} need my ok first",
    },
    Topic {
        id: "nopush",
        noun: "pushing",
        langs: ANY,
        class: Class::Thing,
        fixed: true,
        values: &["main|push|main"],
        says: &["never push straight to {v}, always go through a PR", "don't ever push to {v} directly"],
        clause: "nobody pushes directly to {v}",
    },
    Topic {
        id: "formatter",
        noun: "the formatter",
        langs: PY,
        class: Class::Thing,
        fixed: false,
        values: &["black", "ruff format|ruff"],
        says: FMT_SAYS,
        clause: "the formatter is {v}",
    },
    Topic {
        id: "formatter",
        noun: "the formatter",
        langs: TS,
        class: Class::Thing,
        fixed: false,
        values: &["prettier", "biome"],
        says: FMT_SAYS,
        clause: "the formatter is {v}",
    },
    Topic {
        id: "formatter",
        noun: "the formatter",
        langs: GO,
        class: Class::Thing,
        fixed: false,
        values: &["gofumpt", "gofmt"],
        says: FMT_SAYS,
        clause: "the formatter is {v}",
    },
    Topic {
        id: "framework",
        noun: "the web framework",
        langs: RS,
        class: Class::Thing,
        fixed: false,
        values: &["axum", "actix-web|actix", "poem"],
        says: FW_SAYS,
        clause: "the web framework is {v}",
    },
    Topic {
        id: "framework",
        noun: "the web framework",
        langs: PY,
        class: Class::Thing,
        fixed: false,
        values: &["fastapi", "django", "flask"],
        says: FW_SAYS,
        clause: "the web framework is {v}",
    },
    Topic {
        id: "framework",
        noun: "the web framework",
        langs: TS,
        class: Class::Thing,
        fixed: false,
        values: &["next.js", "remix", "sveltekit", "hono"],
        says: FW_SAYS,
        clause: "the web framework is {v}",
    },
    Topic {
        id: "framework",
        noun: "the web framework",
        langs: GO,
        class: Class::Thing,
        fixed: false,
        values: &["gorilla/mux|gorilla", "fiber", "huma"],
        says: FW_SAYS,
        clause: "the web framework is {v}",
    },
    Topic {
        id: "orm",
        noun: "the data layer",
        langs: RS,
        class: Class::Thing,
        fixed: false,
        values: &["sqlx", "diesel", "sea-orm"],
        says: ORM_SAYS,
        clause: "we use {v} for database access",
    },
    Topic {
        id: "orm",
        noun: "the data layer",
        langs: PY,
        class: Class::Thing,
        fixed: false,
        values: &["sqlalchemy", "peewee", "tortoise"],
        says: ORM_SAYS,
        clause: "we use {v} for database access",
    },
    Topic {
        id: "orm",
        noun: "the data layer",
        langs: TS,
        class: Class::Thing,
        fixed: false,
        values: &["prisma", "drizzle", "kysely"],
        says: ORM_SAYS,
        clause: "we use {v} for database access",
    },
    Topic {
        id: "orm",
        noun: "the data layer",
        langs: GO,
        class: Class::Thing,
        fixed: false,
        values: &["sqlc", "gorm", "bun"],
        says: ORM_SAYS,
        clause: "we use {v} for database access",
    },
    Topic {
        id: "tests",
        noun: "the test setup",
        langs: PY,
        class: Class::Thing,
        fixed: false,
        values: &["pytest", "unittest"],
        says: TEST_SAYS,
        clause: "tests use {v}",
    },
    Topic {
        id: "tests",
        noun: "the test setup",
        langs: TS,
        class: Class::Thing,
        fixed: false,
        values: &["vitest", "jest"],
        says: TEST_SAYS,
        clause: "tests use {v}",
    },
    Topic {
        id: "tests",
        noun: "the test setup",
        langs: RS,
        class: Class::Thing,
        fixed: false,
        values: &["cargo nextest|nextest", "proptest"],
        says: TEST_SAYS,
        clause: "tests use {v}",
    },
    Topic {
        id: "tests",
        noun: "the test setup",
        langs: GO,
        class: Class::Thing,
        fixed: false,
        values: &["testify", "gotestsum"],
        says: TEST_SAYS,
        clause: "tests use {v}",
    },
    Topic {
        id: "errors",
        noun: "error handling",
        langs: RS,
        class: Class::Thing,
        fixed: false,
        values: &["thiserror", "anyhow", "snafu"],
        says: &["error types in library crates use {v}, no exceptions", "I prefer {v} for errors"],
        clause: "errors use {v}",
    },
    Topic {
        id: "auth",
        noun: "auth",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["auth0", "keycloak", "clerk", "cognito"],
        says: &["we decided auth goes through {v}", "login is handled by {v}, don't roll our own"],
        clause: "auth is handled by {v}",
    },
    Topic {
        id: "license",
        noun: "the license",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["apache-2.0|apache", "mpl-2.0|mpl", "agpl", "bsd-3-clause|bsd"],
        says: &["the project is licensed {v}, keep the headers consistent", "we're going with {v} as the license"],
        clause: "the license is {v}",
    },
    Topic {
        id: "owner",
        noun: "the billing owner",
        langs: ANY,
        class: Class::Personal,
        fixed: false,
        values: &["Priya|priya|billing", "Marcus|marcus|billing", "Lena|lena|billing", "Tomás|tomás|billing"],
        says: &[
            "remember that {v} owns the billing module, loop them in on anything there",
            "{v} has to review anything that touches billing",
            "anything billing-related goes to {v} for review",
        ],
        clause: "{v} owns billing",
    },
    Topic {
        id: "port",
        noun: "the staging db port",
        langs: ANY,
        class: Class::Value,
        fixed: false,
        values: &["5433", "6543", "15432"],
        says: &[
            "remember the staging db listens on port {v}, not the default",
            "note for later: staging db is on port {v}",
            "staging database port is {v}, you'll need that for the tunnel",
        ],
        clause: "the staging db port is {v}",
    },
    Topic {
        id: "browsers",
        noun: "browser support",
        langs: TS,
        class: Class::Value,
        fixed: false,
        values: &["safari 15|safari|15", "safari 16|safari|16", "firefox esr"],
        says: &["we must support {v}, a big customer is stuck on it", "{v} support is a hard requirement"],
        clause: "{v} has to be supported",
    },
    Topic {
        id: "monitoring",
        noun: "error tracking",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["sentry", "datadog", "honeycomb"],
        says: &["errors get reported to {v}, that's what ops watches", "we decided on {v} for error tracking"],
        clause: "error tracking goes to {v}",
    },
    Topic {
        id: "image",
        noun: "the base image",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["alpine", "distroless", "debian slim|debian"],
        says: &["container images are built on {v}, decided", "always use {v} as the base image"],
        clause: "the base image is {v}",
    },
    Topic {
        id: "apistyle",
        noun: "the API style",
        langs: ANY,
        class: Class::Thing,
        fixed: false,
        values: &["graphql", "grpc", "json-rpc"],
        says: &["we're going with {v} for the public api", "decision on the api: {v}"],
        clause: "the public API uses {v}",
    },
    Topic {
        id: "coverage",
        noun: "the coverage floor",
        langs: ANY,
        class: Class::Value,
        fixed: false,
        values: &["85%", "90%", "95%"],
        says: &["coverage must stay above {v}, CI enforces it", "don't let coverage drop below {v}"],
        clause: "coverage stays above {v}",
    },
];

/// "Remember …" wrappers around a topic's clause `{c}`.
const REMEMBER: &[(&str, End)] = &[
    ("remember that {c}", End::Stop),
    ("please remember {c}", End::Stop),
    ("remember this for later: {c}", End::Stop),
    ("note for future sessions: {c}", End::Stop),
    ("can you remember that {c}", End::Ask),
    ("don't forget, {c}", End::Stop),
    ("make a note that {c}", End::Stop),
    ("for your memory: {c}", End::Stop),
];

/// Wrappers marking a clause `{c}` as lasting without the word "remember".
const LASTING: &[(&str, End)] = &[
    ("fyi {c}, and that's not changing", End::Stop),
    ("for the record, {c}", End::Stop),
    ("just so you know for next time, {c}", End::Stop),
    ("going forward, {c}", End::Stop),
    ("general rule: {c}", End::Stop),
    ("keep in mind {c}", End::Stop),
    ("this applies everywhere, not just here: {c}", End::Stop),
];

/// Corrections naming the old value, any class.
const FIX_OLD_ANY: &[&str] = &[
    "not {old} anymore, it's {new} now",
    "correction: {new}, not {old}",
    "scratch {old}, {new} instead",
    "hmm no, forget {old}. {new}",
    "wait, I said {old} earlier but it's actually {new}",
];
/// Corrections naming the old value of a tool, style or service.
const FIX_OLD_THING: &[&str] = &[
    "I've switched from {old} to {new}, update whatever you had",
    "we're no longer using {old}, it's {new} now",
    "we dropped {old}, we're on {new} now",
    "ok so {old} is out, {new} is in",
];
/// Corrections naming the old value of a date, number or version.
const FIX_OLD_VALUE: &[&str] =
    &["{noun} moved from {old} to {new}", "{noun} changed from {old} to {new}, sorry for the confusion"];
/// Corrections naming the topic and the new value only.
const FIX_NOUN: &[&str] = &[
    "change of plan on {noun}: {new}",
    "update on {noun}, it's {new} now",
    "small correction re {noun}, it's {new}",
    "new decision on {noun}: {new}",
    "ok {noun} changed, going with {new} instead",
    "heads up, {noun} is now {new}",
];
/// Corrections restating the topic's clause `{c}` with the new value.
const FIX_CLAUSE: &[&str] = &[
    "actually, {c} now",
    "wait, I got that wrong earlier: {c}",
    "update: {c} going forward",
    "that changed btw, {c} now",
    "let me correct myself, {c}",
];
/// Corrections of the fact stated just before, by its new value alone.
const FIX_RECENT: &[&str] = &[
    "actually, make that {new}",
    "hmm, on second thought make it {new}",
    "wait no, {new}. sorry",
    "eh, let's do {new} instead",
    "actually no, {new}",
];

// ---------------------------------------------------------------------------------------------
// What users say that is not lasting

const OPENERS: &[&str] = &["", "", "", "hey, ", "hi! ", "morning. ", "ok so ", "quick one: ", "yo ", "hey there. "];

const CONTEXTS: &[&str] = &["I'm in the {proj} repo today", "working on {proj} this morning", "back on {proj} again"];

const TASKS: &[(&str, End)] = &[
    ("the retry logic in {file} never gives up, can you take a look", End::Ask),
    ("the {test} test is flaky on CI, figure out why", End::Stop),
    ("I need cursor pagination on the orders endpoint", End::Stop),
    ("can you add a health check endpoint", End::Ask),
    ("the config loading in {file} is a mess, let's clean it up", End::Stop),
    ("add rate limiting to the public api, something simple", End::Stop),
    ("bump the dependencies and fix whatever breaks", End::Stop),
    ("{fn} has zero tests, can you write some", End::Ask),
    ("something in {file} is leaking connections under load, help me find it", End::Stop),
    ("we're getting timeouts from {fn} in staging, can you dig in", End::Ask),
    ("I want to split {file} into smaller modules, it's 900 lines", End::Stop),
];

const REQUESTS: &[(&str, End)] = &[
    ("run the tests again", End::Stop),
    ("can you run {test_cmd} and tell me what fails", End::Ask),
    ("can you look at the log first", End::Ask),
    ("open {file} and check how the timeout is set", End::Stop),
    ("revert that last change, it broke something", End::Stop),
    ("try again with a smaller batch size", End::Stop),
    ("show me the diff before you commit", End::Stop),
    ("can you fix the flaky test as well", End::Ask),
    ("rename {fn} to something clearer", End::Stop),
    ("add a test for the empty input case", End::Stop),
    ("go ahead and commit that", End::Stop),
    ("why does the {test} test pass locally but not on CI", End::Ask),
    ("look at {file} around line 40, something's off there", End::Stop),
    ("check whether {fn} is still used anywhere", End::Stop),
    ("undo the unrelated formatting changes in {file}, they make the diff noisy", End::Stop),
    ("make the error message a bit friendlier", End::Stop),
    ("split that function up, it's doing too much", End::Stop),
    ("add some logging around the retry so I can see what's happening", End::Stop),
    ("just run the {test} test", End::Stop),
    ("bump the timeout to 30s and rerun", End::Stop),
    ("ok push it", End::Stop),
    ("let's look at the failing test first", End::Stop),
    ("please use the existing helper instead of writing a new one", End::Stop),
    ("what does {fn} return when the list is empty", End::Ask),
    ("can you write the migration too", End::Ask),
];

const REQUEST_LEADS: &[&str] = &["", "", "now ", "anyway, ", "ok so ", "back to it: ", "next, "];

const ACKS: &[&str] = &[
    "ok",
    "nice",
    "thanks!",
    "perfect, thanks",
    "hmm",
    "ok cool",
    "lgtm",
    "great, that works",
    "ugh ok",
    "yep",
    "that's better",
    "nope, still broken",
    "ok that works",
    "looks good",
    "right",
    "sweet",
];

const CONNECTORS: &[&str] =
    &["btw ", "oh and ", "also ", "fyi ", "side note: ", "unrelated, but ", "", "", "and ", "one more thing, "];

const ONE_OFFS: &[&str] = &[
    "for this PR let's skip the changelog",
    "just this once, skip the pre-commit hooks, I need this out today",
    "for now just hardcode the region, we'll make it configurable later",
    "don't bother with docs for this spike",
    "for this branch only it's fine to leave the TODO in",
    "today let's not touch the tests, only the handler",
    "skip the e2e suite for now, it takes forever",
    "for this quick experiment use {a}, we'll throw it away after",
    "ignore the lint warnings for this commit",
    "put it all in one commit this time",
    "leave {file} alone for this change, I'll deal with it tomorrow",
    "use a fixed seed in that test for now so we can debug it",
];

const QUESTIONS: &[&str] = &[
    "should we use {a}",
    "would {a} be a better fit than what we have",
    "what do you think, {a} or {b}",
    "is it worth moving to {a} at some point",
    "does {a} handle this case, do you know",
    "how hard would it be to support {a}",
    "do you prefer {a} or {b} for something like this",
    "does {a} even make sense for a project this size",
    "wait, are we using {a} anywhere",
];

const HYPOTHETICALS: &[(&str, End)] = &[
    ("if we used {a} we wouldn't need half of this retry code", End::Stop),
    ("hypothetically, if we moved to {a}, how much would break", End::Ask),
    ("in theory we could go with {a}, but that's a whole project", End::Stop),
    ("if this were greenfield I'd probably reach for {a}", End::Stop),
    ("imagine we had {a} here, this would be trivial", End::Stop),
    ("if {who} gets their way we'll end up on {a}", End::Stop),
];

const REPORTED: &[&str] = &[
    "{who} prefers {a} but I'm not sure",
    "{who} keeps saying we should always use {a}. not convinced",
    "{who} wants everything on {a}, we'll see how that goes",
    "{who} mentioned {a} in standup, no idea if that's going anywhere",
    "apparently {who} decided on {a} for their own service, that's their call, not ours",
    "{who} thinks we must move to {a} asap, I disagree",
    "{who} swears by {a}",
];

const MUSINGS: &[&str] = &[
    "maybe we'll switch to {a} someday",
    "I might try {a} at some point, who knows",
    "not sure yet if {a} is worth it",
    "been toying with {a}, nothing decided though",
    "{a} could be interesting later, not now",
    "part of me wants to rewrite this with {a} but probably not",
    "we'll probably look at {a} eventually, no rush",
];

const NEGATED: &[&str] = &[
    "I don't really care about {noun} for this one, do whatever the file already does",
    "no strong opinion on {noun} right now, let's not get into it",
    "I'm not saying we should never use {a}, just not here",
    "it's not like we've decided on {a} or anything",
    "we haven't decided anything about {noun} yet",
    "I wouldn't say we're committed to {a}",
];

/// Distractors about a date, number or version (`{noun}`, `{a}`).
const VALUE_TALK: &[(&str, End)] = &[
    ("{who} says {noun} might change to {a}, nothing confirmed", End::Stop),
    ("what if {noun} were {a}", End::Ask),
    ("maybe {noun} ends up being {a}, who knows", End::Stop),
    ("is {a} even realistic for {noun}", End::Ask),
];

const PASTED: &[&str] = &[
    "got this when I ran it:\n```\nerror: the lockfile must be up to date before installing, run install again\n```",
    "CI says:\n```\nwarning: you should always pin dependency versions (3 unpinned found)\n```\nis that new?",
    "this is what git prints:\n```\nhint: You have divergent branches and need to specify how to reconcile \
     them.\nhint: You can do so by running one of the following commands sometime before\nhint: your next pull:\n\
     hint:\nhint:   git config pull.rebase false  # merge\nhint:   git config pull.rebase true   # rebase\nhint:\n\
     hint: You can replace \"git config\" with \"git config --global\" to set a default\nhint: preference for all \
     repositories.\nfatal: Need to specify how to reconcile divergent branches.\n```",
    "linter says\n```\n{file}:12:5  warning  'retries' is never reassigned, prefer a constant\n```",
    "deploy log ends with\n```\nERROR health check failed: service must answer on :8080 within 30s\n```\nany idea?",
    "from the review bot:\n```\nReviewer policy: changes under /infra must always be approved by @platform-team\n```",
];

const WHO: &[&str] = &[
    "Bob",
    "Dana",
    "my manager",
    "the platform team",
    "Kenji",
    "our CTO",
    "Sam from infra",
    "someone on the data team",
];

const TYPOS: &[(&str, &str)] = &[
    ("please ", "pls "),
    ("thanks", "thx"),
    (" you ", " u "),
    ("because", "bc"),
    ("don't", "dont"),
    ("I'm", "im"),
    ("that's", "thats"),
    ("it's", "its"),
    ("probably", "prob"),
];

// ---------------------------------------------------------------------------------------------
// What the assistant says

const ECHOES: &[&str] = &[
    "Noted: {v}.",
    "Got it, {v} from here on.",
    "Understood, I'll stick with {v}.",
    "Sure, {v} it is.",
    "Makes sense, I'll keep {v} in mind.",
    "Okay, {v} going forward.",
];

const SHORT: &[&str] = &["Sounds good.", "Done.", "Sure, done.", "On it.", "Great.", "Okay.", "Will do."];

const DONE: &[&str] = &[
    "I've fixed the off-by-one in `{fn}` and added a regression test.",
    "Updated `{file}`; the change is small, mostly moving the timeout into config.",
    "Done: `{fn}` now returns early on an empty cursor.",
    "Patched it. Want me to run the full suite?",
    "That should do it; the diff only touches `{file}`.",
    "I left the public API alone and only changed the internals of `{fn}`.",
    "Fixed, and `{test_cmd}` is green locally.",
    "Renamed it and updated the two call sites.",
];

const ANSWERS: &[&str] = &[
    "It depends. {a} is solid, but switching now means rewriting the integration; I'd want a concrete reason.",
    "{a} would work, though it's a bigger change than this task needs.",
    "Probably not worth it yet: {a} pays off at a scale we're not at.",
    "Fair enough. Nothing here forces a decision on {a} today.",
    "We could try {a} on a branch if you want numbers, but I wouldn't block this change on it.",
    "I haven't seen {a} used in this repo, so it would be new ground.",
];

const SUGGESTIONS: &[&str] = &[
    "Side note: we could move this to {a} later, it would remove the hand-rolled retry.",
    "If it were up to me we'd always run `{lint}` before pushing; it would have caught this.",
    "In the long run I'd recommend {a} for this kind of thing, but that's your call.",
    "A lot of teams prefer {a} here, for what it's worth.",
];

const RECALLS: &[&str] =
    &["(I kept {v} in mind, as you asked earlier.)", "Nothing here conflicts with what you said about {v}."];

const SOURCE_NOTES: &[&str] = &[
    "`{fn}` in `{file}` doubles the delay but never resets the attempt counter, so long-lived workers stop retrying.",
    "`{file}` computes the next cursor from the wrong row, which is why one item goes missing per page.",
    "`{fn}` ignores the configured timeout and falls back to the client default.",
    "The loop in `{fn}` swallows the last error, so callers only ever see a generic failure.",
];

const CODE_NOTES: &[&str] = &[
    "NOTE: we always cap retries at 5, the gateway must never see a retry storm",
    "we prefer explicit timeouts here over the client default",
    "TODO({who}): maybe move this onto {a} once the migration lands",
    "decided in #418: keep this synchronous, don't make it async",
    "never log the full payload, it can contain customer emails",
    "must stay backwards compatible with v1 clients",
    "HACK: always returns the first page until pagination is done",
];

const CODE_WHO: &[&str] = &["dana", "kenji", "marcus", "bob"];

const GREP_LINES: &[&str] = &[
    "    {c} TODO: prefer the shared client here once it lands",
    "    {c} NOTE: timeouts must stay below the load balancer's 60s idle timeout",
    "    {c} we always retry idempotent calls only",
    "    {c} FIXME: cursor is ignored when limit is 0",
    "    {c} decided with {who}: keep the limit at 50 for now",
];

const GIT_MESSAGES: &[&str] = &[
    "fix: handle empty cursor in {fn}",
    "decide on {a} for the sessions cache (ADR 0005)",
    "chore: always run migrations on boot",
    "refactor: prefer early returns in handlers",
    "test: cover retry exhaustion",
    "docs: note that {file} must stay backwards compatible",
    "ci: cache dependencies between jobs",
    "feat: add request ids to logs",
    "revert \"switch to the new http client\"",
];

const CONTRIBUTING: &str = "# Contributing to {proj}

Thanks for helping out! A few house rules:

- We prefer {indent} for indentation; the formatter config is checked in.
- Commit messages must use {commit}.
- Always {merge} before asking for review.
- Behaviour changes must come with a CHANGELOG entry.
- Never commit secrets; add new settings to `.env.example` instead.

## Running the tests

    {test_cmd}

Questions? Ask in #{proj}-dev.
";

const COMPOSE: &str = "services:
  db:
    image: {db}
    ports:
      - \"5432:5432\"
    environment:
      DB_PASSWORD: dev
  cache:
    image: {cache}
  app:
    build: .
    depends_on: [db, cache]
    # always start the db first; the app must not boot without it
";

const EDITORCONFIG: &str = "root = true

[*]
indent_style = {style}
indent_size = 4
end_of_line = lf
insert_final_newline = true
max_line_length = {len}

[*.md]
trim_trailing_whitespace = false
";

const ADR: &str = "# 7. Use {a} for background jobs

Status: proposed
Deciders: @dana, @marcus

## Context

The cron-based worker drops jobs when a deploy happens mid-run, and retries are hand-rolled.

## Decision

We will use {a} for all asynchronous work. Workers must be idempotent and always ack after the
side effect.

## Consequences

One more service to run locally; the retry helper in `{file}` can go.
";

const APP_LOG: &str = "2024-05-14T09:12:03Z INFO  starting {proj} on :8080
2024-05-14T09:12:04Z WARN  request_timeout not set, using default 30s (you should always set this explicitly)
2024-05-14T09:13:41Z ERROR upstream timed out after 30s; retrying (attempt 3/5)
2024-05-14T09:13:44Z ERROR retry budget exhausted; callers must back off
2024-05-14T09:13:44Z INFO  GET /orders?cursor=8812 503 30012ms
";

// ---------------------------------------------------------------------------------------------
// Projects and tools

/// Everything language-specific about a project.
struct Kit {
    bit: u8,
    projects: &'static [&'static str],
    files: &'static [&'static str],
    src_dir: &'static str,
    fns: &'static [&'static str],
    tests: &'static [&'static str],
    test_cmd: &'static str,
    test_one: &'static str,
    lint_cmd: &'static str,
    comment: &'static str,
    manifest_path: &'static str,
    manifest: &'static str,
    /// Source files an agent reads: path, the function in it, contents (`{note}` a comment).
    snippets: &'static [(&'static str, &'static str, &'static str)],
    tests_fail: &'static str,
    tests_pass: &'static str,
    lint_out: &'static str,
    edit: (&'static str, &'static str),
}

static KITS: &[Kit] = &[
    Kit {
        bit: RS,
        projects: &["tidepool", "ferrogate", "quillmark"],
        files: &["src/main.rs", "src/config.rs", "src/retry.rs", "src/http/routes.rs", "src/store/orders.rs"],
        src_dir: "src",
        fns: &["with_backoff", "load_config", "list_orders", "parse_cursor", "spawn_worker"],
        tests: &["retries_give_up_after_limit", "config_reads_env_overrides", "orders_paginate_by_cursor"],
        test_cmd: "cargo test",
        test_one: "cargo test {test}",
        lint_cmd: "cargo clippy --all-targets -- -D warnings",
        comment: "//",
        manifest_path: "Cargo.toml",
        manifest: "[package]
name = \"{proj}\"
version = \"0.4.2\"
edition = \"2021\"
rust-version = \"1.74\"

[dependencies]
axum = \"0.7\"
sqlx = { version = \"0.7\", features = [\"postgres\", \"runtime-tokio\"] }
tokio = { version = \"1\", features = [\"full\"] }
tracing = \"0.1\"
serde = { version = \"1\", features = [\"derive\"] }
anyhow = \"1\"
",
        snippets: &[
            (
                "src/retry.rs",
                "with_backoff",
                "use std::time::Duration;

{note}
pub async fn {fn}<T, E, F, Fut>(mut op: F, max: u32) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut delay = Duration::from_millis(100);
    let mut attempt = 0;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt >= max => return Err(e),
            Err(_) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
                attempt += 1;
            }
        }
    }
}
",
            ),
            (
                "src/store/orders.rs",
                "list_orders",
                "use sqlx::PgPool;

pub struct Page {
    pub items: Vec<Order>,
    pub next: Option<i64>,
}

{note}
pub async fn {fn}(pool: &PgPool, cursor: i64, limit: i64) -> sqlx::Result<Page> {
    let mut items = sqlx::query_as::<_, Order>(
        \"SELECT id, total_cents, created_at FROM orders WHERE id > $1 ORDER BY id LIMIT $2\",
    )
    .bind(cursor)
    .bind(limit + 1)
    .fetch_all(pool)
    .await?;
    let next = if items.len() as i64 > limit { items.pop().map(|o| o.id) } else { None };
    Ok(Page { items, next })
}
",
            ),
        ],
        tests_fail: "   Compiling {proj} v0.4.2 (/home/dev/{proj})
    Finished `test` profile [unoptimized + debuginfo] target(s) in 6.12s
     Running unittests src/lib.rs (target/debug/deps/{proj}-3f2a9c1d7b6e8a40)

running 4 tests
test config::tests::defaults_are_sane ... ok
test retry::tests::backoff_doubles ... ok
test store::tests::{test} ... FAILED
test http::tests::health_returns_ok ... ok

failures:

---- store::tests::{test} stdout ----
thread 'store::tests::{test}' panicked at src/store/orders.rs:212:9:
assertion `left == right` failed
  left: 49
 right: 50
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

failures:
    store::tests::{test}

test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.84s

error: test failed, to rerun pass `--lib`
",
        tests_pass: "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.31s
     Running unittests src/lib.rs (target/debug/deps/{proj}-3f2a9c1d7b6e8a40)

running 4 tests
test config::tests::defaults_are_sane ... ok
test retry::tests::backoff_doubles ... ok
test store::tests::{test} ... ok
test http::tests::health_returns_ok ... ok

test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.62s
",
        lint_out: "warning: this `impl` can be derived
  --> src/config.rs:41:1
   |
41 | / impl Default for Config {
42 | |     fn default() -> Self {
43 | |         Self { retries: 0 }
44 | |     }
45 | | }
   | |_^
   |
   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#derivable_impls
warning: `{proj}` (lib) generated 1 warning
error: could not compile `{proj}` (lib) due to 1 previous error
",
        edit: ("let mut delay = Duration::from_millis(100);", "let mut delay = cfg.base_delay;"),
    },
    Kit {
        bit: TS,
        projects: &["orderdesk", "pagewire", "shiftly"],
        files: &["src/index.ts", "src/api/orders.ts", "src/lib/retry.ts", "src/config.ts", "src/components/Table.tsx"],
        src_dir: "src",
        fns: &["withBackoff", "loadConfig", "listOrders", "parseCursor", "renderRow"],
        tests: &["paginates by cursor", "gives up after the retry limit", "reads config from env"],
        test_cmd: "npx vitest run",
        test_one: "npx vitest run -t \"{test}\"",
        lint_cmd: "npx eslint . --max-warnings 0",
        comment: "//",
        manifest_path: "package.json",
        manifest: "{
  \"name\": \"{proj}\",
  \"private\": true,
  \"packageManager\": \"yarn@4.1.0\",
  \"scripts\": {
    \"dev\": \"next dev\",
    \"test\": \"vitest run\",
    \"lint\": \"eslint . --max-warnings 0\"
  },
  \"engines\": { \"node\": \">=18\" },
  \"prettier\": { \"singleQuote\": true, \"printWidth\": 100 }
}
",
        snippets: &[
            (
                "src/api/orders.ts",
                "listOrders",
                "import { db } from \"../db\";

{note}
export async function {fn}(cursor = 0, limit = 50) {
  const rows = await db.query(
    \"select id, total_cents, created_at from orders where id > $1 order by id limit $2\",
    [cursor, limit + 1],
  );
  const next = rows.length > limit ? rows[limit - 1].id : null;
  return { items: rows.slice(0, limit), next };
}
",
            ),
            (
                "src/lib/retry.ts",
                "withBackoff",
                "{note}
export async function {fn}<T>(op: () => Promise<T>, attempts = 5): Promise<T> {
  let delay = 100;
  for (let i = 0; ; i++) {
    try {
      return await op();
    } catch (err) {
      if (i + 1 >= attempts) throw err;
      await new Promise((r) => setTimeout(r, delay));
      delay *= 2;
    }
  }
}
",
            ),
        ],
        tests_fail: "
 RUN  v1.6.0 /home/dev/{proj}

 ✓ tests/config.test.ts (4 tests) 9ms
 ❯ tests/orders.test.ts (6 tests | 1 failed) 41ms
   × orders > {test}
     → expected 49 to be 50 // Object.is equality

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  tests/orders.test.ts > orders > {test}
AssertionError: expected 49 to be 50 // Object.is equality
 ❯ tests/orders.test.ts:58:32

 Test Files  1 failed | 1 passed (2)
      Tests  1 failed | 9 passed (10)
   Duration  812ms
",
        tests_pass: "
 RUN  v1.6.0 /home/dev/{proj}

 ✓ tests/config.test.ts (4 tests) 8ms
 ✓ tests/orders.test.ts (6 tests) 37ms

 Test Files  2 passed (2)
      Tests  10 passed (10)
   Duration  655ms
",
        lint_out: "
/home/dev/{proj}/src/api/orders.ts
  14:9   error    Prefer using an optional chain expression instead  @typescript-eslint/prefer-optional-chain
  31:15  warning  'cursor' is never reassigned. Use 'const' instead   prefer-const

✖ 2 problems (1 error, 1 warning)
",
        edit: ("const limit = 50;", "const limit = Math.min(req.query.limit ?? 50, 200);"),
    },
    Kit {
        bit: PY,
        projects: &["ledgerly", "birdcount", "rota"],
        files: &["app/main.py", "app/models.py", "app/services/billing.py", "app/settings.py", "app/retry.py"],
        src_dir: "app",
        fns: &["with_backoff", "load_settings", "list_invoices", "parse_cursor", "send_reminder"],
        tests: &["test_invoices_paginate", "test_retry_gives_up", "test_settings_from_env"],
        test_cmd: "pytest -x",
        test_one: "pytest -x -k {test}",
        lint_cmd: "ruff check .",
        comment: "#",
        manifest_path: "pyproject.toml",
        manifest: "[project]
name = \"{proj}\"
version = \"0.9.0\"
requires-python = \">=3.10\"
dependencies = [\"fastapi>=0.110\", \"sqlalchemy>=2.0\", \"structlog\"]

[tool.ruff]
line-length = 88

[tool.pytest.ini_options]
addopts = \"-q\"
",
        snippets: &[
            (
                "app/retry.py",
                "with_backoff",
                "import logging
import time

log = logging.getLogger(__name__)


{note}
def {fn}(op, attempts=5, base_delay=0.1):
    for attempt in range(attempts):
        try:
            return op()
        except TimeoutError:
            log.warning(\"attempt %d timed out\", attempt)
            time.sleep(base_delay * 2**attempt)
    raise RuntimeError(\"gave up\")
",
            ),
            (
                "app/services/billing.py",
                "list_invoices",
                "from sqlalchemy import select

from app.models import Invoice


{note}
def {fn}(session, cursor=0, limit=50):
    stmt = select(Invoice).where(Invoice.id > cursor).order_by(Invoice.id).limit(limit + 1)
    rows = session.scalars(stmt).all()
    next_cursor = rows[limit - 1].id if len(rows) > limit else None
    return rows[:limit], next_cursor
",
            ),
        ],
        tests_fail: "============================= test session starts ==============================
collected 31 items

tests/test_billing.py ........F....                                      [ 41%]
tests/test_settings.py ..................                                [100%]

=================================== FAILURES ===================================
___________________________ {test} ___________________________

    def {test}(session):
        page, _ = list_invoices(session, cursor=0, limit=50)
>       assert len(page) == 50
E       assert 49 == 50

tests/test_billing.py:77: AssertionError
=========================== short test summary info ============================
FAILED tests/test_billing.py::{test} - assert 49 == 50
========================= 1 failed, 30 passed in 1.92s =========================
",
        tests_pass: "============================= test session starts ==============================
collected 31 items

tests/test_billing.py .............                                      [ 41%]
tests/test_settings.py ..................                                [100%]

============================== 31 passed in 1.71s ==============================
",
        lint_out: "app/services/billing.py:12:1: UP035 [*] `typing.List` is deprecated, use `list` instead
app/services/billing.py:48:9: SIM108 Use ternary operator `fee = 0 if waived else base_fee` instead of `if`-`else`-block
Found 2 errors.
[*] 1 fixable with the `--fix` option.
",
        edit: ("time.sleep(base_delay * 2**attempt)", "time.sleep(min(base_delay * 2**attempt, 5.0))"),
    },
    Kit {
        bit: GO,
        projects: &["kestrel", "lanternd", "parcelpost"],
        files: &[
            "cmd/server/main.go",
            "internal/store/store.go",
            "internal/http/handlers.go",
            "internal/retry/retry.go",
            "internal/config/config.go",
        ],
        src_dir: "internal",
        fns: &["ListOrders", "LoadConfig", "WithBackoff", "ParseCursor", "StartWorker"],
        tests: &["TestListOrdersPaginates", "TestBackoffGivesUp", "TestLoadConfigEnv"],
        test_cmd: "go test ./...",
        test_one: "go test ./... -run {test}",
        lint_cmd: "staticcheck ./...",
        comment: "//",
        manifest_path: "go.mod",
        manifest: "module github.com/acme/{proj}

go 1.22

require (
\tgithub.com/go-chi/chi/v5 v5.0.12
\tgithub.com/jackc/pgx/v5 v5.5.5
\tgo.uber.org/zap v1.27.0
)
",
        snippets: &[
            (
                "internal/store/store.go",
                "ListOrders",
                "package store

import (
\t\"context\"
)

{note}
func (s *Store) {fn}(ctx context.Context, cursor int64, limit int) ([]Order, error) {
\tconst q = `SELECT id, total_cents FROM orders WHERE id > $1 ORDER BY id LIMIT $2`
\trows, err := s.db.QueryContext(ctx, q, cursor, limit)
\tif err != nil {
\t\treturn nil, err
\t}
\tdefer rows.Close()
\tvar out []Order
\tfor rows.Next() {
\t\tvar o Order
\t\tif err := rows.Scan(&o.ID, &o.TotalCents); err != nil {
\t\t\treturn nil, err
\t\t}
\t\tout = append(out, o)
\t}
\treturn out, rows.Err()
}
",
            ),
            (
                "internal/retry/retry.go",
                "WithBackoff",
                "package retry

import (
\t\"context\"
\t\"time\"
)

{note}
func {fn}(ctx context.Context, attempts int, op func(context.Context) error) error {
\tdelay := 100 * time.Millisecond
\tvar err error
\tfor i := 0; i < attempts; i++ {
\t\tif err = op(ctx); err == nil {
\t\t\treturn nil
\t\t}
\t\tselect {
\t\tcase <-ctx.Done():
\t\t\treturn ctx.Err()
\t\tcase <-time.After(delay):
\t\t}
\t\tdelay *= 2
\t}
\treturn err
}
",
            ),
        ],
        tests_fail: "--- FAIL: {test} (0.02s)
    store_test.go:88: got 49 orders, want 50
FAIL
FAIL\tgithub.com/acme/{proj}/internal/store\t0.412s
ok  \tgithub.com/acme/{proj}/internal/http\t0.120s
ok  \tgithub.com/acme/{proj}/internal/retry\t0.031s
FAIL
",
        tests_pass: "ok  \tgithub.com/acme/{proj}/internal/store\t0.398s
ok  \tgithub.com/acme/{proj}/internal/http\t0.117s
ok  \tgithub.com/acme/{proj}/internal/retry\t0.029s
",
        lint_out: "internal/http/handlers.go:57:5: should use strings.EqualFold instead (SA6005)
internal/store/store.go:23:2: field cache is unused (U1000)
",
        edit: ("limit := 50", "limit := clampLimit(r.URL.Query().Get(\"limit\"))"),
    },
];

/// The names and shapes of one agent's tools.
struct Tools {
    read: &'static str,
    shell: &'static str,
    grep: &'static str,
    edit: &'static str,
    path_key: &'static str,
    id_prefix: &'static str,
    id_len: usize,
    edit_ok: &'static str,
    missing: &'static str,
}

static TOOLSETS: &[Tools] = &[
    Tools {
        read: "read_file",
        shell: "run_shell",
        grep: "grep",
        edit: "edit_file",
        path_key: "path",
        id_prefix: "call_",
        id_len: 24,
        edit_ok: "Applied 1 edit to {file}.",
        missing: "ENOENT: no such file or directory, open '{path}'",
    },
    Tools {
        read: "Read",
        shell: "Bash",
        grep: "Grep",
        edit: "Edit",
        path_key: "file_path",
        id_prefix: "toolu_01",
        id_len: 22,
        edit_ok: "The file {file} has been updated.",
        missing: "File does not exist: {path}",
    },
];

/// How often an assistant makes each kind of call (see `Gen::tool_call`): read a source file,
/// run tests, grep, read CONTRIBUTING.md, the manifest, docker-compose.yml, .editorconfig, an ADR,
/// lint, git log, the app log, edit a file, read a missing file.
const CALL_WEIGHTS: &[u32] = &[22, 16, 9, 6, 6, 4, 3, 4, 7, 5, 5, 10, 3];

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

// ---------------------------------------------------------------------------------------------
// The generator

/// How a fragment of a user message ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// A statement: a full stop, nothing, or a comma.
    Stop,
    /// A question mark, usually.
    Ask,
    /// A pasted block: nothing added.
    Block,
}

/// One sentence-ish piece of a user message.
struct Frag {
    text: String,
    end: End,
    /// States a fact: what follows starts a new sentence, so that "… always" never runs on
    /// into the next request.
    firm: bool,
}

impl Frag {
    fn stop(text: String) -> Self {
        Frag::new(text, End::Stop)
    }

    fn new(text: String, end: End) -> Self {
        Frag { text, end, firm: false }
    }
}

/// How this user types.
struct Style {
    /// Starts sentences in lower case.
    lower: bool,
    /// Writes "i" for "I".
    small_i: bool,
    /// Abbreviates and drops apostrophes.
    typos: bool,
    /// Sometimes breaks a message into paragraphs.
    newlines: bool,
}

/// A topic stated in this session and its current value.
#[derive(Clone, Copy)]
struct Stated {
    /// Index into `Gen::topics`.
    topic: usize,
    value: usize,
    /// Index of the fact that set the current value.
    fact: usize,
    /// The user turn that set it.
    turn: usize,
}

/// What the assistant's answer to a user message should take up.
struct Reply {
    /// The value of a fact just stated, which the assistant may echo.
    echo: Option<&'static str>,
    /// A value the user asked or mused about.
    asked: Option<&'static str>,
}

/// One tool call, its result, and what the assistant says around it.
struct Call {
    name: &'static str,
    args: String,
    result: String,
    error: bool,
    intro: String,
    note: String,
}

type Vars = [(&'static str, &'static str); 7];

struct Gen {
    rng: Pcg32,
    kit: &'static Kit,
    project: &'static str,
    topics: Vec<&'static Topic>,
    tools: &'static Tools,
    style: Style,
    stated: Vec<Stated>,
    /// Templates used so far, which later picks avoid when they can.
    used: Vec<&'static str>,
    msgs: Vec<NewMessage>,
    facts: Vec<Fact>,
}

impl Gen {
    fn new(seed: u64) -> Self {
        let mut rng = Pcg32::new(seed);
        let kit = &KITS[rng.below(KITS.len())];
        let project = rng.pick(kit.projects);
        let topics = TOPICS.iter().filter(|t| t.langs & kit.bit != 0).collect();
        let tools = &TOOLSETS[rng.below(TOOLSETS.len())];
        let style = Style {
            lower: rng.chance(0.6),
            small_i: rng.chance(0.35),
            typos: rng.chance(0.3),
            newlines: rng.chance(0.25),
        };
        Gen {
            rng,
            kit,
            project,
            topics,
            tools,
            style,
            stated: Vec::new(),
            used: Vec::new(),
            msgs: Vec::new(),
            facts: Vec::new(),
        }
    }

    fn run(mut self) -> Transcript {
        // Plan the exchanges first: after each user message, 1 (a reply), 3 (a round of tool calls)
        // or 5 (two rounds) assistant and tool messages, ending at 12 to 40 messages.
        let target = self.rng.range(12, 39);
        let mut plan = Vec::new();
        let mut len = 0;
        while len < target {
            len += 1;
            let room = target - len;
            let size = match self.rng.below(20) {
                0..=8 => 1,
                9..=16 => 3,
                _ => 5,
            };
            let size = if size <= room.max(1) {
                size
            } else if room >= 3 {
                3
            } else {
                1
            };
            plan.push(size);
            len += size;
        }
        // Then which user messages state something: 30 to 50% of them nothing.
        let quiet = 0.3 + 0.2 * self.rng.below(101) as f64 / 100.0;
        let n_quiet = (quiet * plan.len() as f64).round() as usize;
        let mut counts: Vec<usize> = (0..plan.len())
            .map(|turn| {
                if turn < n_quiet {
                    0
                } else if self.rng.chance(0.18) {
                    2
                } else {
                    1
                }
            })
            .collect();
        self.rng.shuffle(&mut counts);
        let mut corrections = self.rng.range(1, 3);
        for (turn, &size) in plan.iter().enumerate() {
            let fact_turns_left = counts[turn..].iter().filter(|&&c| c > 0).count();
            let reply = self.user_turn(turn, counts[turn], &mut corrections, fact_turns_left);
            self.exchange(size, &reply);
        }
        Transcript { messages: self.msgs, facts: self.facts }
    }

    /// A pick from `list`, avoiding (within a few tries) templates this session already used.
    fn fresh<T: Copy>(&mut self, list: &[T], text: fn(T) -> &'static str) -> T {
        let mut choice = self.rng.pick(list);
        for _ in 0..6 {
            if !self.used.contains(&text(choice)) {
                break;
            }
            choice = self.rng.pick(list);
        }
        self.used.push(text(choice));
        choice
    }

    fn push(&mut self, role: Role, parts: Vec<Part>) {
        self.msgs.push(NewMessage { role, parts, usage: None, status: MessageStatus::Complete });
    }

    fn vars(&mut self) -> Vars {
        let kit = self.kit;
        [
            ("{file}", self.rng.pick(kit.files)),
            ("{fn}", self.rng.pick(kit.fns)),
            ("{test}", self.rng.pick(kit.tests)),
            ("{proj}", self.project),
            ("{test_cmd}", kit.test_cmd),
            ("{lint}", kit.lint_cmd),
            ("{manifest}", kit.manifest_path),
        ]
    }

    // --- user messages -------------------------------------------------------------------------

    fn user_turn(&mut self, turn: usize, n_facts: usize, corrections: &mut usize, fact_turns_left: usize) -> Reply {
        let seq = self.msgs.len() as u64 + 1;
        let mut fact_frags = Vec::new();
        let mut echo = None;
        for k in 0..n_facts {
            let odds = *corrections as f64 / fact_turns_left.max(1) as f64;
            let want_fix =
                k == 0 && turn >= 2 && *corrections > 0 && (fact_turns_left <= *corrections || self.rng.chance(odds));
            let fixed = if want_fix { self.correction(turn, seq) } else { None };
            if fixed.is_some() {
                *corrections -= 1;
            }
            if let Some((frag, shown)) = fixed.or_else(|| self.new_fact(turn, seq)) {
                fact_frags.push(frag);
                echo = Some(shown);
            }
        }

        let mut frags = Vec::new();
        let mut asked = None;
        if turn == 0 {
            if self.rng.chance(0.3) {
                let vars = self.vars();
                frags.push(Frag::stop(fill(self.fresh(CONTEXTS, |t| t), &vars)));
            }
            let task = self.pick_frag(TASKS);
            if fact_frags.is_empty() || self.rng.chance(0.5) {
                frags.push(task);
                self.attach(&mut frags, fact_frags);
            } else {
                self.attach(&mut frags, fact_frags);
                frags.push(task);
            }
            let opener = self.rng.pick(OPENERS);
            frags[0].text.insert_str(0, opener);
        } else if fact_frags.is_empty() {
            match self.rng.below(10) {
                0..=3 => {
                    let (frag, a) = self.distractor();
                    asked = a;
                    frags.push(frag);
                    if self.rng.chance(0.3) {
                        frags.push(self.request());
                    }
                }
                4 | 5 => {
                    frags.push(self.ack());
                    frags.push(self.request());
                }
                6 => frags.push(self.ack()),
                7 => {
                    frags.push(self.ack());
                    let (frag, a) = self.distractor();
                    asked = a;
                    frags.push(frag);
                }
                _ => frags.push(self.request()),
            }
        } else {
            if self.rng.chance(0.35) {
                frags.push(self.ack());
            }
            self.attach(&mut frags, fact_frags);
            if self.rng.chance(0.2) {
                let (frag, a) = self.distractor();
                asked = a;
                frags.push(frag);
            }
            if self.rng.chance(0.6) {
                let mut request = self.request();
                request.text.insert_str(0, self.rng.pick(REQUEST_LEADS));
                frags.push(request);
            }
        }
        let text = self.render(&frags);
        self.push(Role::User, vec![Part::Text { text }]);
        Reply { echo, asked }
    }

    fn pick_frag(&mut self, list: &'static [(&'static str, End)]) -> Frag {
        let (template, end) = self.fresh(list, |(t, _)| t);
        let vars = self.vars();
        Frag::new(fill(template, &vars), end)
    }

    fn request(&mut self) -> Frag {
        self.pick_frag(REQUESTS)
    }

    fn ack(&mut self) -> Frag {
        Frag::stop(self.fresh(ACKS, |t| t).to_owned())
    }

    /// Appends fact fragments, each after the first with a connector ("btw", "oh and").
    fn attach(&mut self, frags: &mut Vec<Frag>, facts: Vec<Frag>) {
        for mut fact in facts {
            if !frags.is_empty() {
                let connector = self.rng.pick(CONNECTORS);
                let word = connector.trim_end_matches([' ', ':', ',']);
                if !word.is_empty() && !fact.text.starts_with(word) {
                    fact.text.insert_str(0, connector);
                }
            }
            fact.firm = true;
            frags.push(fact);
        }
    }

    /// States a topic not yet stated in this session.
    fn new_fact(&mut self, turn: usize, seq: u64) -> Option<(Frag, &'static str)> {
        let free: Vec<usize> = (0..self.topics.len()).filter(|&i| self.stated.iter().all(|s| s.topic != i)).collect();
        if free.is_empty() {
            return None;
        }
        let topic_ix = self.rng.pick(&free);
        let topic = self.topics[topic_ix];
        let value = self.rng.below(topic.values.len());
        let (shown, keys) = split_value(topic.values[value]);
        let frag = self.state_fact(topic, shown, &keys);
        self.stated.push(Stated { topic: topic_ix, value, fact: self.facts.len(), turn });
        self.facts.push(Fact { seq, keys, replaces: None });
        Some((frag, shown))
    }

    /// Replaces the value of a topic stated in an earlier turn.
    fn correction(&mut self, turn: usize, seq: u64) -> Option<(Frag, &'static str)> {
        let open: Vec<usize> = (0..self.stated.len())
            .filter(|&i| {
                let topic = self.topics[self.stated[i].topic];
                self.stated[i].turn < turn && !topic.fixed && topic.values.len() > 1
            })
            .collect();
        if open.is_empty() {
            return None;
        }
        // Mostly a topic not corrected yet; now and then one corrected again.
        let fresh: Vec<usize> =
            open.iter().copied().filter(|&i| self.facts[self.stated[i].fact].replaces.is_none()).collect();
        let which = if !fresh.is_empty() && self.rng.chance(0.9) {
            self.rng.pick(&fresh)
        } else if self.rng.chance(0.3) {
            self.rng.pick(&open)
        } else if !fresh.is_empty() {
            self.rng.pick(&fresh)
        } else {
            return None;
        };
        let before = self.stated[which];
        let topic = self.topics[before.topic];
        let mut value = self.rng.below(topic.values.len() - 1);
        if value >= before.value {
            value += 1;
        }
        let recent = before.fact + 1 == self.facts.len() && turn - before.turn == 1;
        let old = split_value(topic.values[before.value]).0;
        let (new, keys) = split_value(topic.values[value]);
        let frag = self.correct_fact(topic, old, new, &keys, recent);
        self.stated[which] = Stated { topic: before.topic, value, fact: self.facts.len(), turn };
        self.facts.push(Fact { seq, keys, replaces: Some(before.fact) });
        Some((frag, new))
    }

    fn state_fact(&mut self, topic: &'static Topic, shown: &str, keys: &[String]) -> Frag {
        for _ in 0..12 {
            let frag = if self.rng.chance(0.62) {
                Frag::stop(fill(self.fresh(topic.says, |t| t), &[("{v}", shown)]))
            } else {
                let clause = fill(topic.clause, &[("{v}", shown)]);
                let (wrapper, end) = if self.rng.chance(0.5) {
                    self.fresh(REMEMBER, |(t, _)| t)
                } else {
                    self.fresh(LASTING, |(t, _)| t)
                };
                Frag::new(fill(wrapper, &[("{c}", clause.as_str())]), end)
            };
            if has_keys(&frag.text, keys) {
                return frag;
            }
        }
        Frag::stop(fill(topic.clause, &[("{v}", shown)]))
    }

    fn correct_fact(&mut self, topic: &'static Topic, old: &str, new: &str, keys: &[String], recent: bool) -> Frag {
        let vars = [("{old}", old), ("{new}", new), ("{noun}", topic.noun)];
        for _ in 0..12 {
            let roll = self.rng.below(if recent { 100 } else { 85 });
            let text = if roll < 35 {
                let list = match topic.class {
                    Class::Thing => FIX_OLD_THING,
                    Class::Value => FIX_OLD_VALUE,
                    Class::Personal => FIX_OLD_ANY,
                };
                let template =
                    if self.rng.chance(0.5) { self.fresh(FIX_OLD_ANY, |t| t) } else { self.fresh(list, |t| t) };
                fill(template, &vars)
            } else if roll < 60 {
                fill(self.fresh(FIX_NOUN, |t| t), &vars)
            } else if roll < 85 {
                let clause = fill(topic.clause, &[("{v}", new)]);
                fill(self.fresh(FIX_CLAUSE, |t| t), &[("{c}", clause.as_str())])
            } else {
                fill(self.fresh(FIX_RECENT, |t| t), &vars)
            };
            if has_keys(&text, keys) {
                return Frag::stop(text);
            }
        }
        Frag::stop(format!("actually, {} now", fill(topic.clause, &[("{v}", new)])))
    }

    /// A value of some tool-or-style topic other than the one stated, and a second one.
    fn alternative(&mut self) -> (&'static Topic, &'static str, &'static str) {
        let things: Vec<usize> = (0..self.topics.len())
            .filter(|&i| {
                let topic = self.topics[i];
                topic.class == Class::Thing && !topic.fixed && topic.values.len() > 1
            })
            .collect();
        let topic_ix = self.rng.pick(&things);
        let topic = self.topics[topic_ix];
        let current = self.stated.iter().find(|s| s.topic == topic_ix).map(|s| s.value);
        let mut a = self.rng.below(topic.values.len());
        if Some(a) == current {
            a = (a + 1) % topic.values.len();
        }
        let mut b = self.rng.below(topic.values.len() - 1);
        if b >= a {
            b += 1;
        }
        (topic, split_value(topic.values[a]).0, split_value(topic.values[b]).0)
    }

    /// A user fragment that states nothing lasting, and the value it asks or muses about.
    fn distractor(&mut self) -> (Frag, Option<&'static str>) {
        let (topic, a, b) = self.alternative();
        let who = self.rng.pick(WHO);
        let vars = self.vars();
        let mut all = vec![("{a}", a), ("{b}", b), ("{who}", who), ("{noun}", topic.noun)];
        all.extend_from_slice(&vars);
        match self.rng.weighted(&[16, 10, 11, 10, 6, 12, 8, 6]) {
            0 => (Frag::new(fill(self.fresh(QUESTIONS, |t| t), &all), End::Ask), Some(a)),
            1 => {
                let (template, end) = self.fresh(HYPOTHETICALS, |(t, _)| t);
                (Frag::new(fill(template, &all), end), Some(a))
            }
            2 => (Frag::stop(fill(self.fresh(REPORTED, |t| t), &all)), Some(a)),
            3 => (Frag::stop(fill(self.fresh(MUSINGS, |t| t), &all)), Some(a)),
            4 => {
                // Non-committal about a topic not stated: otherwise it would contradict a fact.
                let unstated = self.stated.iter().all(|s| !std::ptr::eq(self.topics[s.topic], topic));
                let template =
                    if unstated { self.fresh(NEGATED, |t| t) } else { "I'm not saying we should never use {a}" };
                (Frag::stop(fill(template, &all)), None)
            }
            5 => (Frag::stop(fill(self.fresh(ONE_OFFS, |t| t), &all)), None),
            6 => (Frag::new(fill(self.fresh(PASTED, |t| t), &all), End::Block), None),
            _ => self.value_talk(who),
        }
    }

    /// A distractor about a date, number or version: someone's rumour, a what-if, a maybe.
    fn value_talk(&mut self, who: &'static str) -> (Frag, Option<&'static str>) {
        let values: Vec<usize> =
            (0..self.topics.len()).filter(|&i| self.topics[i].class == Class::Value && !self.topics[i].fixed).collect();
        let topic_ix = self.rng.pick(&values);
        let topic = self.topics[topic_ix];
        let current = self.stated.iter().find(|s| s.topic == topic_ix).map(|s| s.value);
        let mut a = self.rng.below(topic.values.len());
        if Some(a) == current {
            a = (a + 1) % topic.values.len();
        }
        let shown = split_value(topic.values[a]).0;
        let (template, end) = self.fresh(VALUE_TALK, |(t, _)| t);
        (Frag::new(fill(template, &[("{who}", who), ("{noun}", topic.noun), ("{a}", shown)]), end), None)
    }

    /// Joins fragments the way this user types.
    fn render(&mut self, frags: &[Frag]) -> String {
        let mut out = String::new();
        let mut sentence_start = true;
        for (i, frag) in frags.iter().enumerate() {
            let last = i + 1 == frags.len();
            let mut text = if frag.end == End::Block { frag.text.clone() } else { self.casual(&frag.text) };
            let upper = if self.style.lower { i == 0 && self.rng.chance(0.25) } else { sentence_start };
            if upper {
                text = capitalize(&text);
            }
            out.push_str(&text);
            let paragraph = !last && (frag.end == End::Block || (self.style.newlines && self.rng.chance(0.4)));
            let closed = frag.end == End::Block || text.ends_with(['.', '!', '?']);
            let mark = match frag.end {
                _ if closed => "",
                End::Ask if last => ["?", "", "??"][self.rng.weighted(&[75, 18, 7])],
                End::Ask => "?",
                End::Stop if last => ["", ".", "!"][self.rng.weighted(&[35, 55, 10])],
                End::Stop if frag.firm || paragraph => {
                    [".", "!", ""][self.rng.weighted(&[80, 12, if paragraph { 8 } else { 0 }])]
                }
                _ => [".", ",", " -", "!", ";"][self.rng.weighted(&[66, 13, 9, 6, 6])],
            };
            out.push_str(mark);
            sentence_start = paragraph || closed || matches!(mark, "." | "!" | "?" | "??");
            if !last {
                out.push_str(if paragraph { "\n\n" } else { " " });
            }
        }
        out
    }

    fn casual(&mut self, text: &str) -> String {
        let mut text = text.to_owned();
        if self.style.small_i {
            text = text.replace("I'm", "i'm").replace("I've", "i've").replace("I'd", "i'd").replace(" I ", " i ");
            if text.starts_with("I ") {
                text.replace_range(0..1, "i");
            }
        }
        if self.style.typos {
            for &(from, to) in TYPOS {
                if self.rng.chance(0.6) {
                    text = text.replace(from, to);
                }
            }
        }
        text
    }

    // --- assistant and tool messages ---------------------------------------------------------

    fn exchange(&mut self, size: usize, reply: &Reply) {
        if size == 1 {
            let text = self.plain_reply(reply);
            self.push(Role::Assistant, vec![Part::Text { text }]);
            return;
        }
        let mut lead = self.lead(reply);
        let mut carried = String::new();
        for _ in 0..size / 2 {
            let first = self.rng.weighted(CALL_WEIGHTS);
            let mut kinds = vec![first];
            if self.rng.chance(0.3) {
                let mut second = self.rng.weighted(CALL_WEIGHTS);
                while second == first {
                    second = self.rng.weighted(CALL_WEIGHTS);
                }
                kinds.push(second);
            }
            let calls: Vec<Call> = kinds.into_iter().map(|kind| self.tool_call(kind)).collect();
            let text = join(&[std::mem::take(&mut lead).as_str(), carried.as_str(), calls[0].intro.as_str()]);
            let mut parts = vec![Part::Text { text }];
            let mut results = Vec::new();
            let mut notes = Vec::new();
            for call in calls {
                let id = self.call_id();
                parts.push(Part::ToolCall { id: id.clone(), name: call.name.to_owned(), arguments: call.args });
                results.push(Part::ToolResult { call_id: id, content: call.result, is_error: call.error });
                notes.push(call.note);
            }
            self.push(Role::Assistant, parts);
            self.push(Role::Tool, results);
            carried = notes.join(" ");
        }
        let vars = self.vars();
        let mut closing = vec![carried];
        if self.rng.chance(0.15) {
            let (_, a, _) = self.alternative();
            let mut all = vars.to_vec();
            all.push(("{a}", a));
            closing.push(fill(self.fresh(SUGGESTIONS, |t| t), &all));
        }
        closing.push(fill(self.fresh(DONE, |t| t), &vars));
        if !self.stated.is_empty() && self.rng.chance(0.15) {
            let stated = self.rng.pick(&self.stated);
            let value = split_value(self.topics[stated.topic].values[stated.value]).0;
            closing.push(fill(self.rng.pick(RECALLS), &[("{v}", value)]));
        }
        let closing: Vec<&str> = closing.iter().map(String::as_str).collect();
        let text = join(&closing);
        self.push(Role::Assistant, vec![Part::Text { text }]);
    }

    /// The opening of the assistant's answer: an echo of a fact or a take on a question.
    fn lead(&mut self, reply: &Reply) -> String {
        if let Some(a) = reply.asked
            && self.rng.chance(0.7)
        {
            return fill(self.fresh(ANSWERS, |t| t), &[("{a}", a)]);
        }
        match reply.echo {
            Some(v) if self.rng.chance(0.55) => fill(self.fresh(ECHOES, |t| t), &[("{v}", v)]),
            _ => String::new(),
        }
    }

    fn plain_reply(&mut self, reply: &Reply) -> String {
        let lead = self.lead(reply);
        let vars = self.vars();
        let body =
            if self.rng.chance(0.7) { fill(self.fresh(DONE, |t| t), &vars) } else { self.rng.pick(SHORT).to_owned() };
        if lead.is_empty() || self.rng.chance(0.4) { join(&[lead.as_str(), body.as_str()]) } else { lead }
    }

    fn call_id(&mut self) -> String {
        let mut id = self.tools.id_prefix.to_owned();
        for _ in 0..self.tools.id_len {
            id.push(char::from(ALNUM[self.rng.below(ALNUM.len())]));
        }
        id
    }

    fn hex(&mut self, len: usize) -> String {
        (0..len).map(|_| char::from(b"0123456789abcdef"[self.rng.below(16)])).collect()
    }

    /// A shown value of the topic `id` in this language (any of its values).
    fn value_of(&mut self, id: &str) -> &'static str {
        let topic = self.topics.iter().copied().find(|t| t.id == id).unwrap_or(&TOPICS[0]);
        split_value(self.rng.pick(topic.values)).0
    }

    fn code_note(&mut self) -> String {
        let a = self.value_of("queue");
        let who = self.rng.pick(CODE_WHO);
        let note = fill(self.rng.pick(CODE_NOTES), &[("{a}", a), ("{who}", who)]);
        format!("{} {note}", self.kit.comment)
    }

    fn tool_call(&mut self, kind: usize) -> Call {
        let kit = self.kit;
        let tools = self.tools;
        let vars = self.vars();
        let file = vars[0].1;
        let read = |path: &str| json_object(&[(tools.path_key, path)]);
        let shell = |command: &str| json_object(&[("command", command)]);
        let plain = |name: &'static str, args: String, result: String, intro: String, note: String| Call {
            name,
            args,
            result,
            error: false,
            intro,
            note,
        };
        match kind {
            0 => {
                let (path, function, code) = self.rng.pick(kit.snippets);
                let mut vars = vars.to_vec();
                vars[0] = ("{file}", path);
                vars[1] = ("{fn}", function);
                let note = self.code_note();
                let result = fill(code, &vars).replace("{note}", &note);
                let intro = fill(self.rng.pick(&["Let me look at `{file}`.", "Reading `{file}` first."]), &vars);
                plain(tools.read, read(path), result, intro, fill(self.fresh(SOURCE_NOTES, |t| t), &vars))
            }
            1 => {
                let failing = self.rng.chance(0.55);
                let command = if self.rng.chance(0.5) { kit.test_cmd.to_owned() } else { fill(kit.test_one, &vars) };
                let result = fill(if failing { kit.tests_fail } else { kit.tests_pass }, &vars);
                let intro = self.rng.pick(&["Running the tests.", "Let me reproduce it first.", "Running the suite."]);
                let note = if failing {
                    fill(
                        "One failure: `{test}` gets 49 items where it expects 50, an off-by-one at the page boundary.",
                        &vars,
                    )
                } else {
                    "All tests pass.".to_owned()
                };
                Call { name: tools.shell, args: shell(&command), result, error: failing, intro: intro.to_owned(), note }
            }
            2 => {
                let pattern = self.rng.pick(&["timeout", "retry", "TODO", "cursor", "limit"]);
                let hits = self.rng.below(4);
                let mut result = String::new();
                for _ in 0..hits {
                    let path = self.rng.pick(kit.files);
                    let line = self.rng.range(3, 240);
                    let who = self.rng.pick(CODE_WHO);
                    let text = fill(self.rng.pick(GREP_LINES), &[("{c}", kit.comment), ("{who}", who)]);
                    result.push_str(&format!("{path}:{line}:{text}\n"));
                }
                let note = if hits == 0 {
                    format!("No matches for `{pattern}`.")
                } else {
                    format!("{hits} match{}; nothing surprising.", if hits == 1 { "" } else { "es" })
                };
                if hits == 0 {
                    result.push_str("No matches found.");
                }
                let args = json_object(&[("pattern", pattern), ("path", kit.src_dir)]);
                plain(tools.grep, args, result, format!("Searching for `{pattern}`."), note)
            }
            3 => {
                let indent = self.value_of("indent");
                let commit = self.value_of("commit");
                let merge = self.rng.pick(&["rebase on main", "squash your commits"]);
                let result = fill(
                    CONTRIBUTING,
                    &[
                        ("{proj}", self.project),
                        ("{indent}", indent),
                        ("{commit}", commit),
                        ("{merge}", merge),
                        ("{test_cmd}", kit.test_cmd),
                    ],
                );
                let note = format!(
                    "CONTRIBUTING.md says the project prefers {indent} for indentation and wants {commit} in \
                     commit messages; behaviour changes also need a CHANGELOG entry."
                );
                plain(tools.read, read("CONTRIBUTING.md"), result, "Let me check the contributing guide.".into(), note)
            }
            4 => {
                let result = fill(kit.manifest, &vars);
                let note =
                    fill(self.rng.pick(&["Nothing unusual in `{manifest}`.", "`{manifest}` looks fine."]), &vars);
                plain(tools.read, read(kit.manifest_path), result, "Checking the dependencies.".into(), note)
            }
            5 => {
                let db = self.rng.pick(&["postgres:16", "mysql:8.0", "mariadb:11", "cockroachdb/cockroach:v23.2.4"]);
                let cache = self.rng.pick(&["redis:7-alpine", "memcached:1.6", "valkey/valkey:7.2"]);
                let result = fill(COMPOSE, &[("{db}", db), ("{cache}", cache)]);
                let note = format!("Locally the stack is `{db}` plus `{cache}` via docker compose.");
                plain(
                    tools.read,
                    read("docker-compose.yml"),
                    result,
                    "Let me see how the local stack is wired.".into(),
                    note,
                )
            }
            6 => {
                let style = self.rng.pick(&["tab", "space"]);
                let len = self.rng.pick(&["80", "100", "120"]);
                let result = fill(EDITORCONFIG, &[("{style}", style), ("{len}", len)]);
                let note = format!("`.editorconfig` sets `indent_style = {style}` and `max_line_length = {len}`.");
                plain(tools.read, read(".editorconfig"), result, "Checking the editor config.".into(), note)
            }
            7 => {
                let a = self.value_of("queue");
                let result = fill(ADR, &[("{a}", a), ("{file}", file)]);
                let note = format!("There's an ADR proposing {a} for background jobs; it's still marked proposed.");
                let path = "docs/adr/0007-background-jobs.md";
                plain(tools.read, read(path), result, "Let me check the ADRs for anything relevant.".into(), note)
            }
            8 => Call {
                name: tools.shell,
                args: shell(kit.lint_cmd),
                result: fill(kit.lint_out, &vars),
                error: true,
                intro: "Running the linter.".into(),
                note: "The linter has a couple of minor complaints; I'll fix them while I'm here.".into(),
            },
            9 => {
                let cache = self.value_of("cache");
                let mut messages = GIT_MESSAGES.to_vec();
                self.rng.shuffle(&mut messages);
                let count = self.rng.range(5, 8);
                let mut result = String::new();
                for message in &messages[..count] {
                    let hash = self.hex(7);
                    let mut all = vars.to_vec();
                    all.push(("{a}", cache));
                    result.push_str(&format!("{hash} {}\n", fill(message, &all)));
                }
                let note = "Recent history doesn't show anything related.".to_owned();
                plain(tools.shell, shell("git log --oneline -8"), result, "Checking recent history.".into(), note)
            }
            10 => {
                let command = if self.rng.chance(0.5) {
                    "tail -n 20 logs/app.log".to_owned()
                } else {
                    format!("journalctl -u {} -n 20 --no-pager", self.project)
                };
                let result = fill(APP_LOG, &vars);
                let note = "The log shows the upstream timing out after 30s and the retry budget running out.";
                plain(tools.shell, shell(&command), result, "Let me look at the app log.".into(), note.into())
            }
            11 => {
                let args =
                    json_object(&[(tools.path_key, file), ("old_string", kit.edit.0), ("new_string", kit.edit.1)]);
                let result = fill(tools.edit_ok, &vars);
                plain(tools.edit, args, result, "Making the change.".into(), fill("Edited `{file}`.", &vars))
            }
            _ => {
                let path = "docs/ARCHITECTURE.md";
                Call {
                    name: tools.read,
                    args: read(path),
                    result: fill(tools.missing, &[("{path}", path)]),
                    error: true,
                    intro: "Let me see if there's an architecture doc.".into(),
                    note: "There's no architecture doc, so I'll go from the code.".into(),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// `template` with each `(name, value)` substituted.
fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for &(name, value) in vars {
        if out.contains(name) {
            out = out.replace(name, value);
        }
    }
    out
}

/// The text shown for a value entry and the keys a faithful observation keeps.
fn split_value(entry: &'static str) -> (&'static str, Vec<String>) {
    let mut pieces = entry.split('|');
    let shown = pieces.next().unwrap_or(entry);
    let keys: Vec<String> = pieces.map(str::to_owned).collect();
    if keys.is_empty() { (shown, vec![shown.to_lowercase()]) } else { (shown, keys) }
}

fn has_keys(text: &str, keys: &[String]) -> bool {
    let text = text.to_lowercase();
    keys.iter().all(|key| text.contains(key.as_str()))
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Non-empty pieces joined by spaces.
fn join(pieces: &[&str]) -> String {
    pieces.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join(" ")
}

/// A flat JSON object of string values.
fn json_object(pairs: &[(&str, &str)]) -> String {
    let mut out = String::from("{");
    for (i, &(key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, s) in [key, value].into_iter().enumerate() {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    c => out.push(c),
                }
            }
            out.push('"');
            if j == 0 {
                out.push(':');
            }
        }
    }
    out.push('}');
    out
}

/// Whether the labels fit the messages: every fact's seq is a user message containing its keys,
/// corrections point back, and every tool message answers the assistant calls just before it.
fn well_formed(transcript: &Transcript) -> bool {
    let messages = &transcript.messages;
    let text = |m: &NewMessage| -> String {
        m.parts.iter().filter_map(|p| if let Part::Text { text } = p { Some(text.as_str()) } else { None }).collect()
    };
    let facts_ok = transcript.facts.iter().enumerate().all(|(i, fact)| {
        let Some(message) = usize::try_from(fact.seq).ok().and_then(|s| s.checked_sub(1)).and_then(|s| messages.get(s))
        else {
            return false;
        };
        message.role == Role::User
            && !fact.keys.is_empty()
            && has_keys(&text(message), &fact.keys)
            && fact.replaces.is_none_or(|r| r < i)
    });
    let calls = |m: &NewMessage| -> Vec<String> {
        m.parts.iter().filter_map(|p| if let Part::ToolCall { id, .. } = p { Some(id.clone()) } else { None }).collect()
    };
    let shape_ok = messages.iter().enumerate().all(|(i, m)| match m.role {
        Role::Tool => {
            let answered: Vec<String> = m
                .parts
                .iter()
                .filter_map(|p| if let Part::ToolResult { call_id, .. } = p { Some(call_id.clone()) } else { None })
                .collect();
            i > 0 && messages[i - 1].role == Role::Assistant && calls(&messages[i - 1]) == answered
        }
        Role::Assistant if !calls(m).is_empty() => messages.get(i + 1).is_some_and(|next| next.role == Role::Tool),
        Role::User => m.parts.iter().all(|p| matches!(p, Part::Text { .. })),
        _ => true,
    });
    (12..=40).contains(&messages.len()) && facts_ok && shape_ok
}
