//! The first generator of labelled sessions for the memory-extraction benchmark: coding sessions
//! between a user and an agent, with the user's lasting statements (preferences, facts about
//! themselves, project constraints, decisions, "remember …") labelled as [`Fact`]s, and their
//! corrections later in the same session labelled as replacing what they correct.
//!
//! A session is built around one of a few small projects (a Python API, a dashboard, a Rust CLI,
//! a Go worker, a data pipeline, an auth gateway): the user asks for fixes, the agent reads files
//! and runs commands through tool calls, and between the task talk the user states lasting
//! things, embedded in longer messages as people type them. Around those sit what an extractor
//! must leave alone: the agent's words (acknowledgements that repeat the user's values back,
//! summaries quoting a contributing guide or an ADR), tool output full of "prefer", "must",
//! "always" and "decided" (guides, configs, logs, commit history, meeting notes), and the user's
//! own transient requests, questions, hypotheticals, other people's opinions and musings. Apart
//! from fact statements and the agent's echoes of them, no message holds any fact's key, so a
//! key found elsewhere cannot make an unlabelled observation look right.
//!
//! Everything is drawn from a SplitMix64 stream seeded by the transcript's seed, so a seed always
//! gives the same transcript. The seeds the benchmark uses (tuning and held-out, in `mod.rs`)
//! were fixed before any extractor was run against this generator.

use super::labels::{Fact, Transcript};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};

/// Builds the labelled transcript of `seed`: 12 to 40 messages, starting with the user's, with
/// 3 to 8 labelled facts of which 1 to 3 correct an earlier one. The same seed always gives the
/// same transcript.
pub fn transcript(seed: u64) -> Transcript {
    let mut rng = Rng(seed);
    let project = &PROJECTS[rng.below(PROJECTS.len())];
    let (units, order) = plan(&mut rng);
    let keys = units.iter().flat_map(|u| keys_of(u.value)).collect();
    let mut g = Generator {
        rng,
        project,
        fact_of: vec![None; units.len()],
        units,
        keys,
        tasks_used: Vec::new(),
        current: Vec::new(),
        messages: Vec::new(),
        facts: Vec::new(),
    };
    for turn in g.lay_out(&order) {
        g.render(turn);
    }
    Transcript { messages: g.messages, facts: g.facts }
}

/// SplitMix64: small, fast and good enough to pick templates.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64) < p
    }

    /// One of `xs` (not empty).
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// Something a user can state as lasting, with the values it can take.
struct Topic {
    /// Its name as a placeholder in distractor templates (`{db}`).
    id: &'static str,
    /// How a correction naming only the topic refers to it ("the deadline").
    about: &'static str,
    /// Its values: the text as typed, then, after `|`, its keys separated by `;` when they are
    /// not simply the text in lower case.
    values: &'static [&'static str],
    /// Statements of a value (`{v}`).
    state: &'static [&'static str],
    /// Corrections naming the value they replace (`{old}`) and the new one (`{v}`).
    fix: &'static [&'static str],
}

const TOPICS: &[Topic] = &[
    Topic {
        id: "pkg",
        about: "the package manager",
        values: &["pnpm", "yarn", "bun"],
        state: &[
            "we use {v} in this repo, don't generate any other lockfile",
            "fyi we're a {v} shop, so install deps with {v}",
            "always use {v} for installing stuff here",
            "we standardised on {v} for js deps",
        ],
        fix: &[
            "we moved from {old} to {v} last week, so use {v} from now on",
            "not {old} anymore — it's {v} now",
            "switch from {old} to {v}, we just migrated",
        ],
    },
    Topic {
        id: "py",
        about: "the minimum python version",
        values: &[
            "Python 3.9|python 3.9",
            "Python 3.10|python 3.10",
            "Python 3.11|python 3.11",
            "Python 3.12|python 3.12",
        ],
        state: &[
            "we must support {v}, some customers are stuck on it",
            "the minimum supported version is {v}",
            "everything has to keep running on {v}",
            "our floor is {v}, so no newer syntax than that",
        ],
        fix: &[
            "we changed the floor from {old} to {v}",
            "min version is {v} now, not {old}",
            "forget {old}, the version we have to support is {v}",
        ],
    },
    Topic {
        id: "db",
        about: "the database",
        values: &["Postgres|postgres", "MySQL|mysql", "SQLite|sqlite", "MariaDB|mariadb", "CockroachDB|cockroach"],
        state: &[
            "our prod db is {v}",
            "we're on {v} for everything, keep the sql compatible with it",
            "the main datastore is {v}",
        ],
        fix: &[
            "we're not on {old} anymore — it's {v} now",
            "we migrated off {old}, {v} is the db now",
            "the move off {old} is finished, everything's on {v}",
        ],
    },
    Topic {
        id: "day",
        about: "deploy days",
        values: &[
            "Fridays|fridays",
            "Tuesdays|tuesdays",
            "Thursdays|thursdays",
            "Mondays|mondays",
            "Wednesdays|wednesdays",
        ],
        state: &[
            "we deploy on {v} only",
            "prod deploys happen on {v}, nothing ships on other days",
            "releases go out on {v}, plan around that",
        ],
        fix: &["deploys moved from {old} to {v}", "we don't ship on {old} anymore, it's {v} now"],
    },
    Topic {
        id: "indent",
        about: "indentation",
        values: &["tabs", "4 spaces", "2 spaces"],
        state: &[
            "indent with {v} everywhere please",
            "i prefer {v} for indentation",
            "house style is {v}, no exceptions",
        ],
        fix: &[
            "switch the indentation from {old} to {v}",
            "we're moving from {old} to {v} for indentation, use {v} going forward",
        ],
    },
    Topic {
        id: "name",
        about: "what to call me",
        values: &["Priya", "Tomasz", "Aiko", "Mateo", "Ingrid", "Kwame", "Siobhan", "Dmitri", "Leilani", "Bastian"],
        state: &["my name is {v}, by the way", "i'm {v} btw", "you can call me {v}"],
        fix: &["actually call me {v}, nobody calls me {old}", "i go by {v}, not {old}"],
    },
    Topic {
        id: "os",
        about: "my setup",
        values: &[
            "macOS|macos",
            "Windows 11|windows",
            "Ubuntu 24.04|ubuntu",
            "Fedora|fedora",
            "Arch Linux|arch linux",
            "NixOS|nixos",
        ],
        state: &["i'm on {v}, so give me commands for that", "my machine runs {v}", "i develop on {v}"],
        fix: &["new laptop — i'm on {v} now, not {old}", "i moved from {old} to {v}, adjust the commands"],
    },
    Topic {
        id: "tz",
        about: "my timezone",
        values: &[
            "CET|cet",
            "PST|pst",
            "JST|jst",
            "AEST|aest",
            "Europe/Lisbon|lisbon",
            "America/Chicago|chicago",
            "Asia/Kolkata|kolkata",
        ],
        state: &["my timezone is {v}", "i'm on {v} time, keep that in mind for schedules", "i'm in {v}"],
        fix: &["i relocated, so i'm on {v} now instead of {old}", "timezone changed from {old} to {v}"],
    },
    Topic {
        id: "deadline",
        about: "the deadline",
        values: &[
            "March 3|march 3",
            "April 14|april 14",
            "June 12|june 12",
            "September 30|september 30",
            "November 8|november 8",
            "May 19|may 19",
        ],
        state: &["the deadline is {v}", "we need to ship this by {v}, hard stop", "the beta has to be out by {v}"],
        fix: &["the deadline moved from {old} to {v}", "not {old} anymore, we got pushed to {v}"],
    },
    Topic {
        id: "english",
        about: "the language you answer in",
        values: &[
            "British English|british english",
            "American English|american english",
            "Australian English|australian english",
        ],
        state: &[
            "please always answer in {v}",
            "use {v} spelling in everything you write for me",
            "i'd like replies in {v}",
        ],
        fix: &["switch to {v} instead of {old} please", "forget {old}, write in {v}"],
    },
    Topic {
        id: "test",
        about: "the test framework",
        values: &["pytest", "vitest", "jest", "mocha", "rspec", "nextest"],
        state: &["we write tests with {v}", "all new tests go in {v}, please", "stick to {v} for tests"],
        fix: &["we moved the tests from {old} to {v}", "use {v}, not {old} — we migrated the suite"],
    },
    Topic {
        id: "fmt",
        about: "the formatter",
        values: &["ruff", "black", "prettier", "biome", "gofumpt", "clang-format"],
        state: &[
            "format everything with {v} before you hand it back",
            "our formatter is {v}, run it on anything you touch",
            "we use {v} for formatting",
        ],
        fix: &["we replaced {old} with {v} for formatting", "formatter is {v} now, {old} is gone"],
    },
    Topic {
        id: "naming",
        about: "naming",
        values: &["snake_case", "camelCase|camelcase", "kebab-case", "PascalCase|pascalcase"],
        state: &["file names are {v} in this repo", "use {v} for all new identifiers", "i like {v} for function names"],
        fix: &["go with {v} instead of {old} for names", "we're moving from {old} to {v} for naming"],
    },
    Topic {
        id: "ci",
        about: "CI",
        values: &[
            "GitHub Actions|github actions",
            "GitLab CI|gitlab",
            "CircleCI|circleci",
            "Buildkite|buildkite",
            "Jenkins|jenkins",
        ],
        state: &["our ci runs on {v}", "we're on {v} for ci, so write pipelines for that"],
        fix: &["we moved ci off {old} to {v}", "ci is {v} now, {old} got decommissioned"],
    },
    Topic {
        id: "cloud",
        about: "hosting",
        values: &["AWS|aws", "GCP|gcp", "Azure|azure", "Fly.io|fly.io", "Hetzner|hetzner"],
        state: &["we host everything on {v}", "prod lives on {v}"],
        fix: &["we finished the move from {old} to {v}", "hosting is {v} now, we left {old}"],
    },
    Topic {
        id: "commits",
        about: "commit messages",
        values: &["Conventional Commits|conventional commits", "gitmoji", "imperative one-line subjects|imperative"],
        state: &["commit messages follow {v}", "please write commits with {v}"],
        fix: &["we dropped {old}, use {v} for commits"],
    },
    Topic {
        id: "merge",
        about: "merging",
        values: &["squash merges|squash", "rebase-and-merge|rebase", "merge commits"],
        state: &["we only do {v} into main", "main gets {v}, nothing else"],
        fix: &["we're doing {v} now instead of {old}"],
    },
    Topic {
        id: "readonly",
        about: "the off-limits folder",
        values: &[
            "vendor/",
            "third_party/|third_party",
            "legacy/billing/|legacy/billing",
            "src/generated/|src/generated",
        ],
        state: &[
            "don't touch {v}, ever",
            "never edit anything under {v}, another team owns it",
            "treat {v} as read-only",
        ],
        fix: &["{old} is fine to edit now, but {v} is off limits", "the read-only folder is {v} now, not {old}"],
    },
    Topic {
        id: "reviewer",
        about: "reviews",
        values: &["@mira|mira", "@jonas|jonas", "@platform-team|platform-team", "@yusuf|yusuf"],
        state: &["always tag {v} for review on prs", "{v} has to approve anything touching auth"],
        fix: &["tag {v} instead of {old} for reviews from now on"],
    },
    Topic {
        id: "format",
        about: "how you format answers",
        values: &["bullet points", "short paragraphs", "numbered steps", "a single code block|single code block"],
        state: &["i prefer answers as {v}", "please always give me {v}, i skim a lot"],
        fix: &["i'd rather have {v} than {old} actually", "{v} works better for me than {old}, switch to that"],
    },
    Topic {
        id: "fe",
        about: "the frontend framework",
        values: &["React|react", "Vue|vue", "Svelte|svelte", "SolidJS|solidjs", "Angular|angular"],
        state: &["we're going with {v} for the new dashboard", "we decided on {v} for the frontend"],
        fix: &["we're switching the dashboard from {old} to {v}", "change of plan: {v}, not {old}"],
    },
    Topic {
        id: "orm",
        about: "the ORM",
        values: &["SQLAlchemy|sqlalchemy", "Prisma|prisma", "Drizzle|drizzle", "sqlx", "Diesel|diesel", "GORM|gorm"],
        state: &["let's standardise on {v} for db access", "we use {v} for all queries, no raw sql"],
        fix: &["we're ripping out {old} in favour of {v}"],
    },
    Topic {
        id: "queue",
        about: "the message queue",
        values: &["Kafka|kafka", "RabbitMQ|rabbitmq", "NATS|nats", "SQS|sqs", "Redis Streams|redis streams"],
        state: &["we decided to use {v} for the event bus", "events go through {v}, that's settled"],
        fix: &["we're going with {v} instead of {old} for events"],
    },
    Topic {
        id: "editor",
        about: "my editor",
        values: &["Neovim|neovim", "Helix|helix", "Emacs|emacs", "IntelliJ|intellij", "Sublime Text|sublime"],
        state: &["i use {v}, so skip tips for other editors", "my editor is {v}"],
        fix: &["i'm on {v} these days, not {old}"],
    },
    Topic {
        id: "node",
        about: "the node version",
        values: &["Node 18|node 18", "Node 20|node 20", "Node 22|node 22"],
        state: &["we pin {v} in prod", "target {v}, that's what the lambdas run"],
        fix: &["we moved from {old} to {v}", "prod runs {v} now, not {old}"],
    },
    Topic {
        id: "staging",
        about: "the staging url",
        values: &["staging.acme-internal.dev", "stg.paperplane.io", "staging-eu.kitehq.net", "preprod.orbitly.app"],
        state: &["remember that the staging url is {v}", "please remember: staging lives at {v}"],
        fix: &["staging moved from {old} to {v}, remember that one instead"],
    },
    Topic {
        id: "msrv",
        about: "the MSRV",
        values: &["1.74", "1.78", "1.81", "1.85"],
        state: &["our msrv is {v}, so no newer std apis", "we must build on rust {v}"],
        fix: &["msrv went from {old} to {v}"],
    },
    Topic {
        id: "role",
        about: "my role",
        values: &["tech lead", "SRE|sre", "data engineer", "frontend dev", "security engineer"],
        state: &["i'm the {v} on this team, fyi", "for context, my role is {v}"],
        fix: &["i moved over to {v}, i'm not {old} anymore"],
    },
    Topic {
        id: "quotes",
        about: "quote style",
        values: &["single quotes", "double quotes"],
        state: &["we use {v} in js", "strings get {v}, always"],
        fix: &["use {v} instead of {old} for strings"],
    },
    Topic {
        id: "container",
        about: "containers",
        values: &["Podman|podman", "Docker|docker", "Colima|colima"],
        state: &["we use {v} locally", "i run everything in {v}"],
        fix: &["i switched from {old} to {v} locally"],
    },
    Topic {
        id: "typecheck",
        about: "type checking",
        values: &["mypy", "pyright"],
        state: &["type check with {v}", "ci runs {v}, code has to pass it"],
        fix: &["we replaced {old} with {v} for type checks"],
    },
    Topic {
        id: "oncall",
        about: "the on-call split",
        values: &[
            "Mira weekdays, Jonas weekends|mira;jonas",
            "Yusuf weekdays, Elena weekends|yusuf;elena",
            "Hana weekdays, Omar weekends|hana;omar",
        ],
        state: &["remember the on-call split: {v}", "for pages, on-call is {v}"],
        fix: &["on-call changed: it's {v} now, not {old}"],
    },
    Topic {
        id: "dbhost",
        about: "the prod db host",
        values: &[
            "pg-main-02 on port 6432|pg-main-02;6432",
            "db-core-1 on port 5433|db-core-1;5433",
            "sql-primary-a on port 3307|sql-primary-a;3307",
        ],
        state: &["remember the prod db is {v}", "note for later: the prod database host is {v}"],
        fix: &["the db host changed, it's {v} now, not {old}"],
    },
    Topic {
        id: "api",
        about: "the API style",
        values: &["GraphQL|graphql", "gRPC|grpc", "JSON-RPC|json-rpc"],
        state: &["we decided the public api is {v}", "new endpoints are {v}, that's agreed"],
        fix: &["we're going with {v} for the api, not {old}"],
    },
    Topic {
        id: "cache",
        about: "the cache",
        values: &["Redis|redis", "Memcached|memcached", "Valkey|valkey"],
        state: &["we use {v} for caching", "the cache layer is {v}"],
        fix: &["cache is {v} now, we replaced {old}"],
    },
    Topic {
        id: "pypkg",
        about: "python packaging",
        values: &["Poetry|poetry", "pip-tools", "PDM|pdm", "Hatch|hatch"],
        state: &["we manage python deps with {v}", "use {v} for python deps, not plain pip"],
        fix: &["we moved python deps from {old} to {v}"],
    },
    Topic {
        id: "dates",
        about: "date formats",
        values: &["ISO 8601|iso 8601", "DD/MM/YYYY|dd/mm/yyyy"],
        state: &["dates in the ui are {v}", "always format dates as {v}"],
        fix: &["switch dates from {old} to {v}"],
    },
    Topic {
        id: "lang",
        about: "new services",
        values: &["Rust|rust", "Kotlin|kotlin", "Elixir|elixir", "TypeScript|typescript"],
        state: &["new services are written in {v}", "we decided all new services are {v}"],
        fix: &["new services are {v} now, we stopped using {old} for them"],
    },
];

/// Names for other people, in distractors.
const PERSONS: &[&str] = &["Dana", "Raj", "Bea", "Felix", "Noor", "Chen", "Marta", "Ollie"];
/// Build systems, in musings.
const BUILDS: &[&str] = &["Bazel", "Nx", "Turborepo", "Pants", "Buck2"];
/// `indent_style` values in an `.editorconfig`.
const INDENT_STYLES: &[&str] = &["tab", "space"];

/// Words before an initial statement.
const PREFIXES: &[&str] =
    &["", "", "", "", "fyi ", "btw, ", "oh and ", "also, ", "heads up: ", "for the record, ", "just so you know, "];
/// Words before a correction that names the old value.
const FIX_PREFIXES: &[&str] = &["", "", "", "oh, ", "btw ", "quick update: ", "fyi "];
/// An initial statement (`{s}`) put as a request to remember it.
const REMEMBER: &[&str] = &[
    "please remember that {s}",
    "remember this for later: {s}",
    "for future sessions: {s}",
    "make a note: {s}",
    "keep this in mind going forward: {s}",
];
/// Corrections naming only the topic.
const ABOUT: &[&str] = &[
    "change of plan for {about}: {v}",
    "update on {about} — it's {v} now, ignore what i said before",
    "correction re {about}: {v}",
    "quick fix to what i said about {about}: {v}",
];
/// Bare corrections of the message just before.
const BARE: &[&str] = &[
    "oh wait, actually make that {v}",
    "sorry, i meant {v}",
    "actually no — {v}",
    "hm, scratch that: {v}",
    "wait, correction: {v}, not {old}",
    "my bad, {v}",
];
/// Terminal punctuation of a statement.
const STOPS: &[&str] = &[".", ".", ".", ".", "!"];

/// The agent's acknowledgements that do not repeat a value.
const ACKS: &[&str] = &["Noted.", "Okay.", "Got it.", "", "Thanks, noted.", ""];
/// The agent repeating a statement back.
const ECHO: &[&str] = &[
    "Got it — {v}.",
    "Noted: {v}.",
    "Understood, {v} from here on.",
    "Thanks, I'll keep {v} in mind.",
    "Okay, {v} it is.",
];
/// The agent repeating a correction back.
const ECHO_FIX: &[&str] = &["Got it — {v}, not {old}.", "Updated: {v} instead of {old}.", "Okay, switching to {v}."];
/// The agent recalling a standing statement later on.
const LATER_ECHO: &[&str] =
    &["(Kept {v}, as you asked.)", "As you said earlier: {v}.", "I followed your note about {v}."];
/// How the user opens a session, before the intro.
const GREETINGS: &[&str] = &["hey! ", "morning. ", "hi — ", "ok, ", "", "hello, "];

/// What the user says that is no lasting statement, and what the agent answers.
struct Line {
    user: &'static str,
    reply: &'static str,
    hint: Hint,
}

/// A tool round a [`Line`] asks for, when the agent makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    None,
    Tests,
    Log,
}

const fn l(user: &'static str, reply: &'static str) -> Line {
    Line { user, reply, hint: Hint::None }
}

/// Questions: nothing stated.
const QUESTIONS: &[Line] = &[
    l(
        "should we use {cache} for the session store, or is that overkill?",
        "For sessions {cache} would work, but at your traffic an in-process cache is enough; I'd keep it simple.",
    ),
    l(
        "do you prefer {fmt} or {fmt2} for something like this?",
        "Both are fine; {fmt} is faster, {fmt2} has more editor integrations. No strong preference from me.",
    ),
    l(
        "would {queue} make sense for the webhook retries?",
        "It could, but a retries table with a next_attempt_at column is simpler at this volume.",
    ),
    l(
        "is it worth moving these tests to {test}?",
        "Probably not right now — the current suite works and a migration would touch every file.",
    ),
    l(
        "what do you think about {orm} here?",
        "It would cut some boilerplate, but these queries are simple enough that it's optional.",
    ),
    l(
        "should the new service live on {cloud} too?",
        "Keeping it next to the rest is simplest operationally; nothing in the code ties it to one provider.",
    ),
    l(
        "do you think {fe} would be a better fit for the admin panel?",
        "It would work; the bigger cost is the rewrite, not the framework.",
    ),
    l(
        "should we deploy on {day} instead?",
        "Mid-week is usually calmer, but it depends on who's around to watch the rollout.",
    ),
    l(
        "any reason not to use {api} for the internal endpoints?",
        "Mostly tooling overhead; for a handful of endpoints it may not pay off.",
    ),
    l(
        "is {typecheck} strict enough to catch this kind of bug?",
        "With strict optional checks on, yes — it would flag the None path.",
    ),
    l(
        "would {naming} be more readable for these file names?",
        "Marginally; consistency with the rest of the repo matters more.",
    ),
    l(
        "which is faster for this, {db} or {db2}?",
        "For this workload they'd be close; the indexes matter more than the engine.",
    ),
];

/// Hypotheticals: nothing decided.
const HYPOTHETICALS: &[Line] = &[
    l(
        "if we used {queue}, would we still need the outbox table?",
        "Yes — the outbox is what makes publishing transactional, whatever the broker.",
    ),
    l(
        "suppose we moved to {cloud} — what breaks first?",
        "The IAM setup and the storage SDK calls; the app code itself is portable.",
    ),
    l(
        "hypothetically, if we went with {fe} for the rewrite, could we keep the design tokens?",
        "Yes, the tokens are plain CSS variables, so they'd carry over.",
    ),
    l(
        "if we switched to {db} one day, how painful would the migrations be?",
        "The schema is portable; the JSON columns and upserts would need rework.",
    ),
    l(
        "in a world where we ran {ci}, would the cache step still work?",
        "The idea carries over, but the step would need rewriting in their syntax.",
    ),
    l(
        "what if we used {orm} instead of the hand-written queries, would the tests still pass?",
        "Most would; the ones asserting exact SQL would need updating.",
    ),
    l(
        "if we ever had to support {py}, what would we lose?",
        "Mostly newer syntax and a couple of typing features; nothing structural.",
    ),
    l(
        "say we adopted {commits} — would the changelog tooling just work?",
        "Mostly, yes; it can generate release notes from the prefixes.",
    ),
];

/// Other people's opinions the user does not adopt.
const OTHERS: &[Line] = &[
    l(
        "{person} wants {api}, not sure yet.",
        "Makes sense to wait until that's settled; nothing here depends on it yet.",
    ),
    l("{person} keeps pushing for {queue}. i'm not convinced.", "Understood — I won't assume it."),
    l(
        "fwiw {person} thinks we should standardise on {fmt}, but that's just their take, nothing's agreed.",
        "Okay, I'll leave the tooling as it is.",
    ),
    l("{person} prefers {indent}, apparently. we'll see.", "Okay — I'll keep the existing style in this change."),
    l(
        "{person} from the platform team suggested moving to {cloud}. no decision yet.",
        "Got it, nothing to change for now.",
    ),
    l(
        "my manager floated {db} for the analytics stuff but it's just an idea",
        "Fair, I'll leave it out of this change.",
    ),
    l(
        "{person} said the deadline might be {deadline} but i haven't heard it officially",
        "Okay, I won't plan around it until it's confirmed.",
    ),
    l("{person} uses {editor} and keeps telling me to switch, lol", "Ha — happy to tailor tips if you ever do."),
];

/// Uncertain musings.
const MUSINGS: &[Line] = &[
    l("maybe we'll move to {build} someday.", "Could be worth it once the repo grows; not needed today."),
    l("might try {editor} at some point, who knows", "It has decent LSP support if you do."),
    l(
        "we could end up on {cloud} eventually, no idea honestly",
        "Fine — the code doesn't depend much on the provider.",
    ),
    l(
        "part of me wants to rewrite this in {lang} one day lol",
        "Ha — the hot path might benefit, the rest probably not.",
    ),
    l(
        "not sure, maybe {test} would be nicer? just thinking out loud",
        "Worth a spike some time; no need to change now.",
    ),
    l("i keep going back and forth on {naming} vs {naming2}, whatever", "Either is fine as long as it's consistent."),
    l(
        "someday i'd love to try {container} instead, but not now",
        "Sure, it's mostly a drop-in swap when you get to it.",
    ),
];

/// Requests for the current task only.
const TRANSIENTS: &[Line] = &[
    Line { user: "run the tests.", reply: "Running them now.", hint: Hint::Tests },
    Line { user: "can you look at the log first?", reply: "Sure, starting with the log.", hint: Hint::Log },
    Line {
        user: "rerun the failing test with verbose output please",
        reply: "Rerunning it verbosely.",
        hint: Hint::Tests,
    },
    l("for this PR skip the changelog.", "Sure, no changelog entry this time."),
    l("just for now use a mock for the payment client.", "Okay, I'll stub it with a mock for now."),
    l("this time don't bother updating the docs.", "Okay, code only this time."),
    l("for this one just give me the diff, no explanation", "Sure — diff only."),
    l("i'm on my {os} laptop today, so give me commands for that.", "Got it, I'll use commands that work there."),
    l("just for this throwaway script use {pkg}, doesn't matter.", "Okay, {pkg} for the throwaway script."),
    l(
        "temporarily disable the flaky test, we'll fix it next week",
        "Marked it as skipped with a note pointing at the ticket.",
    ),
    l("for today's session let's keep answers short", "Will do."),
    l("leave the TODOs in for now", "Leaving them."),
    l("don't push yet, i want to look at it first", "Okay, it's committed locally only."),
    l("for this PR use {merge}, it's a big one", "Okay, I'll set that on the PR."),
];

/// The kinds of distractor the user says.
const DISTRACTORS: &[&[Line]] = &[QUESTIONS, HYPOTHETICALS, OTHERS, MUSINGS, TRANSIENTS];

/// Task talk that states nothing.
const FOLLOWUPS: &[Line] = &[
    l("looks good.", "Great."),
    l("nice, that fixed it.", "Glad it works."),
    l("hmm, still failing for me.", "Let me check again — it may be a stale build."),
    l("ok ship it.", "Pushed."),
    l("thanks!", "You're welcome."),
    l("perfect, thx", "Anytime."),
    l("can you also bump the version?", "Bumped the patch version."),
    l("can you open a PR for that?", "Opened it as a draft."),
    l("cool. what's left?", "Just the retry logic in the client."),
    l("ok, one more thing.", "Sure, go ahead."),
    l("that's much cleaner, nice", "Thanks."),
    l("did you update the tests too?", "Yes, both cases are covered."),
    l("great, merge it when ci is green", "Will do once it's green."),
];

/// A file or command output the agent reads in a tool round, and what it says before and after.
struct Doc {
    pre: &'static str,
    tool: &'static str,
    /// The path, the command, or for `grep` the pattern and the path separated by a tab.
    arg: &'static str,
    content: &'static str,
    post: &'static str,
    error: bool,
}

/// The application log, read when the user asks to look at the log.
const LOG: Doc = Doc {
    pre: "Pulling the recent logs.",
    tool: "run_shell",
    arg: "{logcmd}",
    content: "2024-06-03T10:12:01.114Z INFO  server listening on 0.0.0.0:8443
2024-06-03T10:12:01.220Z INFO  tls: negotiated preferred cipher suite TLS_AES_128_GCM_SHA256
2024-06-03T10:12:07.908Z WARN  retry policy: always retry idempotent requests on 503 (max=5)
2024-06-03T10:12:09.331Z INFO  scheduler decided to evict pod worker-7f9c4 (memory pressure)
2024-06-03T10:12:11.002Z ERROR {logerr}
2024-06-03T10:12:11.004Z INFO  request finished status=500 duration_ms=12
",
    post: "The error line is the relevant one: {logerr}. The TLS and eviction messages are unrelated.",
    error: false,
};

/// Files and outputs full of preference and decision wording that are nobody's statement.
const DOCS: &[Doc] = &[
    LOG,
    Doc {
        pre: "Let me check the contributing guide before changing anything.",
        tool: "read_file",
        arg: "CONTRIBUTING.md",
        content: "# Contributing to {proj}

Thanks for helping out! A few house rules:

## Style

- We prefer {indent} for indentation.
- Always run {fmt} before pushing.
- Never commit directly to `main`; we use {merge}.

## Tests

Every PR must include tests. We decided on {test} for all new suites.

## Commit messages

Use {commits}. Keep the subject under 72 characters.
",
        post: "The contributing guide asks for {indent}, {fmt} before pushing, and {merge}; I'll keep the \
               change consistent with that.",
        error: false,
    },
    Doc {
        pre: "There's an ADR on this area, let me read it.",
        tool: "read_file",
        arg: "docs/adr/0007-event-bus.md",
        content: "# 7. Use {queue} for domain events

Date: 2023-11-02
Status: Accepted

## Context

Services currently poll each other's tables to find out what changed.

## Decision

We decided to use {queue} as the event bus. Producers must write to the outbox table in the same
transaction and a relay publishes from there.

## Consequences

- We always publish through the shared client.
- Consumers must be idempotent.
",
        post: "ADR 7 settled on {queue} with an outbox relay, so consumers have to be idempotent — relevant for \
               the retry path.",
        error: false,
    },
    Doc {
        pre: "Checking the editor settings first.",
        tool: "read_file",
        arg: ".editorconfig",
        content: "# top-most EditorConfig file
root = true

# we always want LF endings, CI must reject CRLF
[*]
end_of_line = lf
insert_final_newline = true
indent_style = {indentw}
indent_size = 4

[*.md]
trim_trailing_whitespace = false
",
        post: "The .editorconfig uses {indentw} indentation and LF endings; I'll match that.",
        error: false,
    },
    Doc {
        pre: "Let me look at the CI workflow.",
        tool: "read_file",
        arg: ".github/workflows/ci.yml",
        content: "name: ci

on:
  push:
    branches: [main]
  pull_request:

# NOTE: production deploys must only run on {day}; the team decided this after the March outage.

jobs:
  test:
    runs-on: ubuntu-latest
    timeout-minutes: 15
    steps:
      - uses: actions/checkout@v4
      - name: install
        run: make deps
      - name: lint
        run: make lint   # always run before tests
      - name: test
        run: {testcmd}
",
        post: "The workflow runs lint, then `{testcmd}`; there's also a note that prod deploys only run on {day}, \
               which doesn't affect this change.",
        error: false,
    },
    Doc {
        pre: "I'll check last week's sync notes for context.",
        tool: "read_file",
        arg: "notes/2024-05-14-weekly-sync.md",
        content: "# Weekly sync — 14 May

Attendees: {person}, {person2}, {person3}

- {person} prefers {fe} for the admin rewrite; {person2} would rather keep the current stack. No decision.
- Agreed to always tag a second reviewer on migrations.
- {person3} will look into {cache} for the rate limiter.
- Decided: the {db} upgrade waits until after the release.

Action items:
- [ ] {person2}: draft the on-call rota
- [ ] {person}: benchmark {orm}
",
        post: "The notes mention {person} preferring {fe} and a pending {db} upgrade, but nothing about this bug.",
        error: false,
    },
    Doc {
        pre: "Let me see what changed recently.",
        tool: "run_shell",
        arg: "git log --oneline -8",
        content: "9f3c2a1 fix: guard against empty batches
4be7d90 chore: switch from {pkg} to {pkg2}
1c0e55b docs: we decided on {orm} for new services
e7a1f3c ci: always run migrations in a transaction
2d9b8e4 revert \"prefer {cache} for sessions\"
77aa0c2 feat: add retry budget to the http client
0b1d6f9 style: reformat with {fmt}
c4e2b18 test: cover the timezone edge case
",
        post: "Recent history has a switch from {pkg} to {pkg2}, an ORM note and a {fmt} reformat — nothing touching \
               this code path since last week.",
        error: false,
    },
    Doc {
        pre: "Let me grep for the existing settings.",
        tool: "grep",
        arg: "prefer\tsrc",
        content: "src/config.ts:12:  // prefer IPv4 when both are available
src/http/client.ts:40:  preferredRegion: \"eu-west-1\",
src/http/client.ts:41:  // we decided to always send the idempotency key
src/db/pool.ts:8:  preferReadReplica: true, // must stay true for reports
",
        post: "The only matches are the IPv4, region and read-replica settings, so nothing else to change.",
        error: false,
    },
    Doc {
        pre: "Checking the project config.",
        tool: "read_file",
        arg: "pyproject.toml",
        content: "[project]
name = \"{proj}\"
version = \"2.4.1\"
# we must stay installable on {py} — enterprise customers pin it
dependencies = [\"httpx>=0.27\", \"pydantic>=2.6\"]

[tool.coverage.run]
branch = true
# always measure the worker too
source = [\"app\", \"worker\"]
",
        post: "pyproject says it must stay installable on {py}; I'll avoid newer syntax in this change.",
        error: false,
    },
    Doc {
        pre: "Let me read the style guide.",
        tool: "read_file",
        arg: "docs/STYLE.md",
        content: "# Style guide

## Naming
We always use {naming} for file names. Types are nouns, functions are verbs.

## Formatting
Quotes: we prefer {quotes}. Wrap at 100 columns.

## Docs
Write docs in {english}. Never use Latin abbreviations (e.g., i.e.) in user-facing text.
",
        post: "The style guide wants {naming} file names and {quotes}; the new file follows that.",
        error: false,
    },
    Doc {
        pre: "Running the linter.",
        tool: "run_shell",
        arg: "make lint",
        content: "make: *** No rule to make target 'lint'.  Stop.\n",
        post: "There's no lint target here, so I ran the formatter on the changed files directly.",
        error: true,
    },
    Doc {
        pre: "Checking the README's deploy section.",
        tool: "read_file",
        arg: "README.md",
        content: "# {proj}

## Deploying

We deploy on {day} after the standup. Never deploy without a green CI run, and always announce it in #deploys.

## Local setup

    make deps
    make dev

We prefer {container} for local services; see `compose.yaml`.
",
        post: "The README says deploys happen on {day} after a green run; nothing to change there for this task.",
        error: false,
    },
    Doc {
        pre: "Let me check package.json.",
        tool: "read_file",
        arg: "package.json",
        content: "{
  \"name\": \"{proj}\",
  \"private\": true,
  \"packageManager\": \"{pkg}@9.1.0\",
  \"scripts\": {
    \"test\": \"{test} run\",
    \"format\": \"{fmt} --write .\"
  },
  \"//\": \"we always pin exact versions; never use ^ ranges\"
}
",
        post: "package.json pins {pkg} and formats with {fmt}; I'll use the existing scripts.",
        error: false,
    },
    Doc {
        pre: "There's a decisions log in docs, let me check it.",
        tool: "read_file",
        arg: "docs/decisions.md",
        content: "# Decisions

## 2024-03
- We're going with {api} for partner integrations.
- Always use {dates} in API payloads.
- {person} prefers {lang} for the new ingest service (not agreed yet).

## 2024-01
- Decided to keep the monorepo; revisit {build} in Q3.
",
        post: "decisions.md lists {api} for partner integrations and {dates} in payloads — consistent with what I did.",
        error: false,
    },
    Doc {
        pre: "Let me list what's in there.",
        tool: "list_dir",
        arg: "{dir}",
        content: "{dir}/\n  __init__.py\n  README.md  # NOTE: we decided to always keep this folder flat\n  \
                  helpers.py\n  legacy_helpers.py  # must not be imported by new code\n",
        post: "The folder is flat, with a legacy helpers module new code shouldn't import.",
        error: false,
    },
];

/// A fix the user asks for in a project, with what the agent finds and does.
struct Task {
    ask: &'static str,
    /// The index of the file it is about in [`Project::files`].
    file: usize,
    finding: &'static str,
    done: &'static str,
}

/// A small codebase a session works on.
struct Project {
    name: &'static str,
    intro: &'static str,
    /// A folder for `list_dir`.
    dir: &'static str,
    files: &'static [(&'static str, &'static str)],
    test_cmd: &'static str,
    test_fail: &'static str,
    test_pass: &'static str,
    log_cmd: &'static str,
    log_error: &'static str,
    tasks: &'static [Task],
}

const PROJECTS: &[Project] = &[
    Project {
        name: "orders-api",
        intro: "working on the orders api today",
        dir: "app/services",
        files: &[
            (
                "app/routes/orders.py",
                r#"from fastapi import APIRouter, Depends, HTTPException

from app.db import get_db
from app.schemas import OrderIn
from app.services.pricing import price_cart

router = APIRouter(prefix="/orders", tags=["orders"])


@router.post("", status_code=201)
async def create_order(payload: OrderIn, db=Depends(get_db)):
    cart = await db.carts.get(payload.cart_id)
    total = price_cart(cart.items)
    if cart is None:
        raise HTTPException(status_code=404, detail="cart not found")
    order = await db.orders.insert(cart_id=cart.id, total=total)
    return {"id": order.id, "total": str(total)}
"#,
            ),
            (
                "app/services/pricing.py",
                r#"from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


# Finance decided we always round per line, never per order (see FIN-212).
def price_cart(items):
    if not items:
        raise ValueError("cart is empty")
    total = Decimal("0")
    for item in items:
        line = Decimal(item.unit_price) * item.quantity
        total += line.quantize(CENT, rounding=ROUND_HALF_UP)
    return total - discount_for(items)


def discount_for(items):
    rate = Decimal("0.05") if len(items) >= 10 else Decimal("0")
    return sum(Decimal(i.unit_price) * i.quantity for i in items) * rate
"#,
            ),
            (
                "tests/test_orders.py",
                r#"import pytest

pytestmark = pytest.mark.asyncio


async def test_create_order(client, cart_factory):
    cart = await cart_factory(items=2)
    resp = await client.post("/orders", json={"cart_id": cart.id})
    assert resp.status_code == 201


async def test_create_order_empty_cart(client, cart_factory):
    cart = await cart_factory(items=0)
    resp = await client.post("/orders", json={"cart_id": cart.id})
    assert resp.status_code == 422
"#,
            ),
        ],
        test_cmd: "python -m pytest -q tests/test_orders.py",
        test_fail: r#".F                                                                       [100%]
=================================== FAILURES ===================================
_________________________ test_create_order_empty_cart _________________________

    async def test_create_order_empty_cart(client, cart_factory):
        cart = await cart_factory(items=0)
        resp = await client.post("/orders", json={"cart_id": cart.id})
>       assert resp.status_code == 422
E       assert 500 == 422
E        +  where 500 = <Response [500 Internal Server Error]>.status_code

tests/test_orders.py:17: AssertionError
=========================== short test summary info ============================
FAILED tests/test_orders.py::test_create_order_empty_cart - assert 500 == 422
1 failed, 1 passed in 0.41s
"#,
        test_pass: "..                                                                    [100%]\n2 passed in 0.37s\n",
        log_cmd: "kubectl logs deploy/orders-api --since=15m | tail -n 20",
        log_error: "order 8812: price_cart failed: ValueError('cart is empty')",
        tasks: &[
            Task {
                ask: "the /orders endpoint 500s when the cart is empty, can you take a look?",
                file: 0,
                finding: "create_order prices the cart before checking it, and price_cart raises on an empty cart — \
                          that's the 500.",
                done: "I moved the checks above the pricing call; an empty cart now gets a 422 with a clear message.",
            },
            Task {
                ask: "some totals are off by a cent. can you check pricing.py?",
                file: 1,
                finding: "price_cart rounds every line but subtracts an unrounded discount, so the total can drift by \
                          a cent.",
                done: "The discount is quantized the same way now, and there's a regression test with the order from \
                       the ticket.",
            },
            Task {
                ask: "could you add a test for the 404 when the cart doesn't exist?",
                file: 2,
                finding: "There's a test for the empty cart but nothing for a missing one.",
                done: "Added test_create_order_missing_cart, which posts an unknown cart id and expects a 404.",
            },
        ],
    },
    Project {
        name: "usage-dashboard",
        intro: "i'm on the usage dashboard this week",
        dir: "src/lib",
        files: &[
            (
                "src/lib/format.ts",
                r#"const UNITS = ["B", "KB", "MB", "GB", "TB"];

// We always show one decimal place in the dashboard (design decided this in Q1).
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(1)} ${UNITS[unit]}`;
}

export function formatPercent(ratio: number): string {
  return `${Math.round(ratio * 100)}%`;
}
"#,
            ),
            (
                "src/hooks/useUsage.ts",
                r#"import { useEffect, useState } from "react";
import { fetchUsage, type UsageOptions, type UsagePoint } from "../api/usage";

export function useUsage(options: UsageOptions) {
  const [data, setData] = useState<UsagePoint[]>([]);
  const [error, setError] = useState<Error | null>(null);

  useEffect(() => {
    let cancelled = false;
    fetchUsage(options)
      .then((points) => !cancelled && setData(points))
      .catch((err) => !cancelled && setError(err));
    return () => {
      cancelled = true;
    };
  }, [options]);

  return { data, error };
}
"#,
            ),
            (
                "src/components/UsageChart.tsx",
                r#"import { LineChart } from "@acme/charts";
import { useUsage } from "../hooks/useUsage";

type Props = { teamId: string; range: "7d" | "30d" | "90d" };

export function UsageChart({ teamId, range }: Props) {
  const { data } = useUsage({ teamId, range });
  const series = [
    { name: "requests", points: data.map((p) => [p.at, p.requests]) },
    { name: "errors", points: data.map((p) => [p.at, p.errors]) },
  ];
  return <LineChart series={series} animate height={240} />;
}
"#,
            ),
        ],
        test_cmd: "npm run test -- src/lib",
        test_fail: r#" FAIL  src/lib/format.test.ts > formatBytes > uses binary units with two decimals
AssertionError: expected '1.5 KB' to be '1.46 KB' // Object.is equality

- Expected
+ Received

- 1.46 KB
+ 1.5 KB

 ❯ src/lib/format.test.ts:9:31

 Test Files  1 failed | 3 passed (4)
      Tests  1 failed | 21 passed (22)
   Duration  1.18s
"#,
        test_pass: r#" ✓ src/lib/format.test.ts (6 tests) 4ms
 ✓ src/lib/date.test.ts (9 tests) 6ms
 ✓ src/hooks/useUsage.test.ts (4 tests) 31ms
 ✓ src/components/UsageChart.test.tsx (3 tests) 58ms

 Test Files  4 passed (4)
      Tests  22 passed (22)
   Duration  1.21s
"#,
        log_cmd: "tail -n 20 logs/dev-server.log",
        log_error: "GET /api/usage?range=30d 504 gateway timed out after 10000ms",
        tasks: &[
            Task {
                ask: "formatBytes shows 1.5 KB for 1500 bytes, product wants 1.46 KB. can you fix it?",
                file: 0,
                finding: "formatBytes divides by 1000 instead of 1024 and only keeps one decimal.",
                done: "formatBytes now divides by 1024 and keeps two decimals; I updated the snapshot tests.",
            },
            Task {
                ask: "the chart flickers every time the range changes, any idea why?",
                file: 2,
                finding: "UsageChart rebuilds its series array on every render, so the chart sees new data each time \
                          and re-animates.",
                done: "The series is memoised on the data now, so the chart only redraws when it actually changes.",
            },
            Task {
                ask: "useUsage fires two requests on mount, can you look?",
                file: 1,
                finding: "The effect depends on the whole options object, which is recreated on every render, so it \
                          fires twice.",
                done: "The effect depends on range and teamId only now; one request on mount.",
            },
        ],
    },
    Project {
        name: "ingest",
        intro: "hacking on the ingest cli",
        dir: "src",
        files: &[
            (
                "src/parser.rs",
                r#"use std::fmt;

#[derive(Debug)]
pub struct ParseError(String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "parse error: {}", self.0)
    }
}

/// Splits the input into records. We decided early on to never allocate per field.
pub fn parse_records(input: &str) -> Result<Vec<Vec<&str>>, ParseError> {
    input.split('\n').filter(|line| !line.is_empty()).map(split_fields).collect()
}

fn split_fields(line: &str) -> Result<Vec<&str>, ParseError> {
    let mut fields = Vec::new();
    let mut in_quotes = false;
    let mut start = 0;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ',' if !in_quotes => {
                fields.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if in_quotes {
        return Err(ParseError(format!("unterminated quoted field: {line}")));
    }
    fields.push(&line[start..]);
    Ok(fields)
}
"#,
            ),
            (
                "src/main.rs",
                r#"use clap::Parser;

mod parser;
mod sink;

#[derive(Parser)]
struct Args {
    /// Input file (CSV).
    input: std::path::PathBuf,
    /// Parse and validate, but write nothing.
    #[arg(long)]
    dry_run: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.input)?;
    let records = parser::parse_records(&text)?;
    let mut sink = sink::Sink::new("ingest.db")?;
    for record in records {
        sink.write(&record)?;
    }
    eprintln!("ingested {} records", sink.count());
    Ok(())
}
"#,
            ),
            (
                "Cargo.toml",
                r#"[package]
name = "ingest"
version = "0.7.2"
edition = "2021"

[dependencies]
anyhow = "1"
clap = { version = "4.5", features = ["derive"] }
rusqlite = { version = "0.31", features = ["bundled"] }
"#,
            ),
        ],
        test_cmd: "cargo test parser",
        test_fail: r#"   Compiling ingest v0.7.2 (/home/dev/ingest)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.84s
     Running unittests src/main.rs (target/debug/deps/ingest-5c1f0e7a9b3d2e41)

running 4 tests
test parser::tests::plain_fields ... ok
test parser::tests::quoted_comma ... ok
test parser::tests::empty_lines_skipped ... ok
test parser::tests::multiline_quoted_field ... FAILED

failures:

---- parser::tests::multiline_quoted_field stdout ----
thread 'parser::tests::multiline_quoted_field' panicked at src/parser.rs:58:9:
called `Result::unwrap()` on an `Err` value: ParseError("unterminated quoted field: 7,\"first line")

failures:
    parser::tests::multiline_quoted_field

test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"#,
        test_pass: r#"    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.11s
     Running unittests src/main.rs (target/debug/deps/ingest-5c1f0e7a9b3d2e41)

running 5 tests
test parser::tests::plain_fields ... ok
test parser::tests::quoted_comma ... ok
test parser::tests::empty_lines_skipped ... ok
test parser::tests::multiline_quoted_field ... ok
test parser::tests::line_numbers_in_errors ... ok

test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"#,
        log_cmd: "RUST_LOG=debug ./target/debug/ingest samples/big.csv 2>&1 | tail -n 20",
        log_error: "parse error at line 48213: unterminated quoted field",
        tasks: &[
            Task {
                ask: "the parser chokes on quoted fields with newlines in them, can you take a look?",
                file: 0,
                finding: "parse_records splits on newlines before it looks at quotes, so a newline inside quotes ends \
                          the record early.",
                done: "The reader tracks whether it's inside quotes before splitting now, and there's a test with a \
                       multi-line field.",
            },
            Task {
                ask: "can you make --dry-run actually skip the writes?",
                file: 1,
                finding: "main parses --dry-run but never passes it down to the sink.",
                done: "The flag reaches Sink::new now, which logs instead of writing when it's set.",
            },
            Task {
                ask: "clippy is complaining about the error type, can you clean that up?",
                file: 0,
                finding: "ParseError wraps a bare String, so callers can't tell what failed or where.",
                done: "ParseError is an enum with line numbers now, and clippy is clean.",
            },
        ],
    },
    Project {
        name: "billing-worker",
        intro: "looking at the billing worker",
        dir: "internal/invoice",
        files: &[
            (
                "internal/invoice/invoice.go",
                r#"package invoice

import "errors"

// ErrClosed is returned when lines are added to a finalised invoice.
var ErrClosed = errors.New("invoice: closed")

type Line struct {
    SKU       string
    Quantity  int
    UnitCents int64
}

type Invoice struct {
    ID     string
    Lines  []Line
    closed bool
}

// AddLine appends a line. Billing decided in 2022 that we must never merge lines silently.
func (inv *Invoice) AddLine(l Line) error {
    if inv.closed {
        return ErrClosed
    }
    inv.Lines = append(inv.Lines, l)
    return nil
}

func (inv *Invoice) TotalCents() int64 {
    var total int64
    for _, l := range inv.Lines {
        total += int64(l.Quantity) * l.UnitCents
    }
    return total
}
"#,
            ),
            (
                "internal/invoice/invoice_test.go",
                r#"package invoice

import "testing"

func TestTotalCents(t *testing.T) {
    cases := []struct {
        name  string
        lines []Line
        want  int64
    }{
        {"empty", nil, 0},
        {"single", []Line{{SKU: "PRO-MONTHLY", Quantity: 1, UnitCents: 1900}}, 1900},
        {"renewal", []Line{{SKU: "PRO-ANNUAL", Quantity: 1, UnitCents: 19000}}, 19000},
    }
    for _, tc := range cases {
        inv := &Invoice{ID: "inv_test"}
        for _, l := range tc.lines {
            _ = inv.AddLine(l)
        }
        if got := inv.TotalCents(); got != tc.want {
            t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
        }
    }
}
"#,
            ),
            (
                "cmd/worker/main.go",
                r#"package main

import (
    "context"
    "log"
    "os"

    "example.com/billing/internal/worker"
)

func main() {
    ctx := context.Background()
    pool := worker.NewPool(8)
    if err := pool.Run(ctx); err != nil {
        log.Printf("worker stopped: %v", err)
        os.Exit(1)
    }
}
"#,
            ),
        ],
        test_cmd: "go test ./internal/invoice/...",
        test_fail: "--- FAIL: TestRenewalDoesNotDuplicateLines (0.00s)\n    invoice_test.go:41: renewal: got 2 \
                    lines, want 1\nFAIL\nFAIL\texample.com/billing/internal/invoice\t0.006s\nFAIL\n",
        test_pass: "ok  \texample.com/billing/internal/invoice\t0.005s\n",
        log_cmd: "journalctl -u billing-worker --since '10 min ago' | tail -n 20",
        log_error: "invoice inv_20931: duplicate line item sku=PRO-ANNUAL",
        tasks: &[
            Task {
                ask: "we're getting duplicate line items on annual plans, can you dig in?",
                file: 0,
                finding: "AddLine appends without checking whether the SKU is already on the invoice, and the renewal \
                          path calls it twice.",
                done: "AddLine merges quantities for an existing SKU now; I added a table test for the renewal path.",
            },
            Task {
                ask: "the worker doesn't shut down cleanly on SIGTERM, can you fix that?",
                file: 2,
                finding: "main never cancels the context on SIGTERM, so in-flight jobs are killed mid-write.",
                done: "main uses signal.NotifyContext now and waits for the pool to drain, capped at 30s.",
            },
            Task {
                ask: "can you add a test for invoices with zero-priced items?",
                file: 1,
                finding: "The table test has no case for zero-priced lines, so nothing pins down how they're counted.",
                done: "Added a zero-price case (a free add-on next to a paid plan) to the table test; it passes.",
            },
        ],
    },
    Project {
        name: "nightly-sync",
        intro: "working on the nightly sync pipeline",
        dir: "etl",
        files: &[
            (
                "dags/daily_sync.py",
                r#"from datetime import datetime, timedelta

from airflow import DAG
from airflow.operators.python import PythonOperator

from etl import extract, load, transform

default_args = {
    "owner": "data",
    "retries": 3,
    "retry_delay": timedelta(minutes=5),
}

# The data team decided this must always run after the partner export lands (02:00 UTC).
with DAG("daily_sync", start_date=datetime(2024, 1, 1), schedule="30 2 * * *", default_args=default_args) as dag:
    t_extract = PythonOperator(task_id="extract", python_callable=extract.run)
    t_transform = PythonOperator(task_id="transform", python_callable=transform.run)
    t_load = PythonOperator(task_id="load", python_callable=load.run)
    t_extract >> t_transform >> t_load
"#,
            ),
            (
                "etl/transform.py",
                r#"import logging

log = logging.getLogger(__name__)


def normalize(row: dict) -> dict:
    return {
        "customer_id": int(row["customer_id"]),
        "email": row["email"].strip().lower(),
        "total_cents": round(float(row["total"]) * 100),
        "placed_at": row["placed_at"],
    }


def run(batch: list) -> list:
    out = []
    for row in batch:
        out.append(normalize(row))
    log.info("transformed %d rows", len(out))
    return out
"#,
            ),
        ],
        test_cmd: "make test-etl",
        test_fail: "python -m pytest -q tests/etl\n...F....\nFAILED tests/etl/test_transform.py::test_guest_rows - \
                    KeyError: 'customer_id'\n1 failed, 7 passed in 0.88s\nmake: *** [Makefile:31: test-etl] Error 1\n",
        test_pass: "python -m pytest -q tests/etl\n.........\n9 passed in 0.81s\n",
        log_cmd: "tail -n 20 logs/daily_sync/transform/latest.log",
        log_error: "transform: KeyError 'customer_id' in batch 17 (rows 16000-16999)",
        tasks: &[
            Task {
                ask: "the nightly sync failed again with a KeyError, can you check transform.py?",
                file: 1,
                finding: "normalize assumes every row has customer_id, but the partner feed sends guest orders \
                          without one.",
                done: "Guest rows get customer_id=None now and go to their own table; the batch no longer aborts.",
            },
            Task {
                ask: "can you make the dag retry the extract step but not the load?",
                file: 0,
                finding: "Retries are set in default_args, so every task inherits them, load included.",
                done: "retries=3 is set on extract only now; load keeps retries=0 so it can't double-write.",
            },
        ],
    },
    Project {
        name: "auth-gateway",
        intro: "i'm poking at the auth gateway",
        dir: "src/middleware",
        files: &[
            (
                "src/middleware/rateLimit.ts",
                r#"import type { NextFunction, Request, Response } from "express";
import { TokenBucketStore } from "../lib/tokenBucket";

const store = new TokenBucketStore({ capacity: 10, refillPerSecond: 0.5 });

function keyFor(req: Request): string | undefined {
  const header = req.headers["x-forwarded-for"];
  return typeof header === "string" ? header.split(",")[0].trim() : undefined;
}

export function rateLimit(req: Request, res: Response, next: NextFunction) {
  const key = keyFor(req);
  if (!store.take(key as string)) {
    res.status(429).json({ error: "too many requests" });
    return;
  }
  next();
}
"#,
            ),
            (
                "src/routes/login.ts",
                r#"import { Router } from "express";
import { findUser } from "../db/users";
import { verifyPassword } from "../lib/passwords";

export const login = Router();

login.post("/login", async (req, res) => {
  const { username, password } = req.body;
  const user = await findUser(username);
  if (!user) {
    return res.status(401).json({ error: "invalid credentials" });
  }
  await verifyPassword(user.passwordHash, password); // throws on mismatch
  res.json({ token: await user.issueToken() });
});
"#,
            ),
        ],
        test_cmd: "npm test -- rateLimit",
        test_fail: r#"> auth-gateway@3.2.0 test
> node --test --import tsx test/rateLimit.test.ts

▶ rateLimit
  ✔ allows the first 10 requests (2.1ms)
  ✖ limits requests without x-forwarded-for (1.3ms)
    AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

    200 !== 429

▶ rateLimit (5.8ms)
ℹ tests 2
ℹ pass 1
ℹ fail 1
"#,
        test_pass: r#"> auth-gateway@3.2.0 test
> node --test --import tsx test/rateLimit.test.ts

▶ rateLimit
  ✔ allows the first 10 requests (2.0ms)
  ✔ limits requests without x-forwarded-for (1.1ms)
▶ rateLimit (5.1ms)
ℹ tests 2
ℹ pass 2
ℹ fail 0
"#,
        log_cmd: "kubectl logs deploy/auth-gateway --tail=20",
        log_error: "rate limiter: key undefined for POST /login (x-forwarded-for missing)",
        tasks: &[
            Task {
                ask: "the rate limiter lets everyone through when x-forwarded-for is missing, can you fix?",
                file: 0,
                finding: "keyFor returns undefined without the header, and the store treats undefined as a fresh key \
                          every time.",
                done: "keyFor falls back to the socket address now, and there's a test for a request without the \
                       header.",
            },
            Task {
                ask: "login returns 500 instead of 401 on a bad password, can you look?",
                file: 1,
                finding: "verifyPassword throws on a mismatch and the handler doesn't catch it.",
                done: "The handler maps a mismatch to a 401 now and logs the attempt without the username.",
            },
        ],
    },
];

/// How a statement relates to what came before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A first statement of its topic.
    Initial,
    /// A correction naming the value it replaces.
    Named,
    /// A correction naming only the topic.
    About,
    /// A bare correction of the message just before ("sorry, I meant …").
    Bare,
}

/// One planned statement.
#[derive(Debug, Clone, Copy)]
struct Unit {
    topic: usize,
    value: &'static str,
    /// The value it replaces.
    old: Option<&'static str>,
    /// The unit it replaces.
    target: Option<usize>,
    shape: Shape,
}

/// The text of a value.
fn text_of(value: &str) -> &str {
    value.split_once('|').map_or(value, |(text, _)| text)
}

/// The keys of a value.
fn keys_of(value: &str) -> Vec<String> {
    match value.split_once('|') {
        Some((_, keys)) => keys.split(';').map(str::to_string).collect(),
        None => vec![value.to_lowercase()],
    }
}

/// The statements of a transcript, each unit's index its id, and the order they are made in:
/// 2 to 5 topics stated, then 1 to 3 corrections placed after what they correct (a bare one
/// right after it).
fn plan(rng: &mut Rng) -> (Vec<Unit>, Vec<usize>) {
    loop {
        let initial = rng.range(2, 5);
        let corrections = rng.range(1, 3);
        let mut topics: Vec<usize> = Vec::new();
        while topics.len() < initial {
            let t = rng.below(TOPICS.len());
            if !topics.contains(&t) {
                topics.push(t);
            }
        }
        let mut units: Vec<Unit> = topics
            .iter()
            .map(|&topic| Unit {
                topic,
                value: rng.pick(TOPICS[topic].values),
                old: None,
                target: None,
                shape: Shape::Initial,
            })
            .collect();
        let mut order: Vec<usize> = (0..units.len()).collect();
        let mut corrected: Vec<usize> = Vec::new();
        for _ in 0..corrections {
            let fresh: Vec<usize> = topics.iter().copied().filter(|t| !corrected.contains(t)).collect();
            let topic = if !fresh.is_empty() && !rng.chance(0.15) { rng.pick(&fresh) } else { rng.pick(&topics) };
            let used: Vec<&str> = units.iter().filter(|u| u.topic == topic).map(|u| u.value).collect();
            let free: Vec<&'static str> = TOPICS[topic].values.iter().copied().filter(|v| !used.contains(v)).collect();
            if free.is_empty() {
                continue;
            }
            let value = rng.pick(&free);
            let Some(at) = order.iter().rposition(|&u| units[u].topic == topic) else { continue };
            let target = order[at];
            let mut shape = match rng.below(10) {
                0..=2 => Shape::Bare,
                3..=6 => Shape::Named,
                _ => Shape::About,
            };
            if shape == Shape::Bare && units[target].shape == Shape::Bare {
                shape = Shape::About;
            }
            let pos = if shape == Shape::Bare {
                at + 1
            } else {
                // Never between a bare correction and what it corrects.
                let mut pos = rng.range(at + 1, order.len());
                while order.get(pos).is_some_and(|&u| units[u].shape == Shape::Bare) {
                    pos += 1;
                }
                pos
            };
            units.push(Unit { topic, value, old: Some(units[target].value), target: Some(target), shape });
            order.insert(pos, units.len() - 1);
            corrected.push(topic);
        }
        if !corrected.is_empty() && distinct(&units) {
            return (units, order);
        }
    }
}

/// Whether no value's key is found in another value of the same transcript ("bun" in "Ubuntu").
fn distinct(units: &[Unit]) -> bool {
    units.iter().all(|a| {
        units.iter().all(|b| {
            let text = text_of(b.value).to_lowercase();
            a.value == b.value || keys_of(a.value).iter().all(|k| !text.contains(k.as_str()))
        })
    })
}

/// A piece of a user message.
enum Seg {
    /// A planned statement, by unit id.
    Fact(usize),
    /// A fix asked for.
    Task(&'static Task),
    /// Anything else, with the agent's answer.
    Say { user: String, reply: String, hint: Hint },
}

/// A user message, and how many tool rounds the agent's answer takes.
struct Turn {
    segs: Vec<Seg>,
    rounds: usize,
}

/// A tool call with its result.
struct Call {
    id: String,
    name: &'static str,
    arguments: String,
    result: String,
    error: bool,
}

/// The agent's text before some calls, the calls, and its text after their results.
struct Round {
    pre: String,
    calls: Vec<Call>,
    post: String,
}

/// The state of one transcript being written.
struct Generator {
    rng: Rng,
    project: &'static Project,
    units: Vec<Unit>,
    /// Every key of every statement: no text but statements and their echoes may hold one.
    keys: Vec<String>,
    /// The index in `facts` of each unit, once stated.
    fact_of: Vec<Option<usize>>,
    tasks_used: Vec<usize>,
    /// The units stated and not replaced yet.
    current: Vec<usize>,
    messages: Vec<NewMessage>,
    facts: Vec<Fact>,
}

impl Generator {
    /// Whether `text` holds no fact's key.
    fn clean(&self, text: &str) -> bool {
        let text = text.to_lowercase();
        !self.keys.iter().any(|k| text.contains(k.as_str()))
    }

    /// The user turns: the statements grouped into messages (one or two each, a bare correction
    /// alone and right after what it corrects), with 30–50% of messages stating nothing around
    /// them, and the tool rounds spread over the turns so that there are 12 to 40 messages.
    fn lay_out(&mut self, order: &[usize]) -> Vec<Turn> {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let a = self.units[order[i]];
            if let Some(&b) = order.get(i + 1) {
                let b = self.units[b];
                let next_bare = order.get(i + 2).is_some_and(|&c| self.units[c].shape == Shape::Bare);
                let pairable = a.shape != Shape::Bare && b.shape != Shape::Bare && a.topic != b.topic && !next_bare;
                if pairable && self.rng.chance(0.25) {
                    groups.push(vec![order[i], order[i + 1]]);
                    i += 2;
                    continue;
                }
            }
            groups.push(vec![order[i]]);
            i += 1;
        }
        let stating = groups.len();
        let silent = self.rng.range((3 * stating).div_ceil(7).max(1), stating.max(1));
        let mut gaps = vec![0usize; stating + 1];
        let allowed: Vec<usize> =
            (0..=stating).filter(|&g| g == stating || self.units[groups[g][0]].shape != Shape::Bare).collect();
        let mut left = silent;
        if self.rng.chance(0.7) {
            gaps[0] += 1;
            left -= 1;
        }
        for _ in 0..left {
            let g = self.rng.pick(&allowed);
            gaps[g] += 1;
        }
        let mut turns = Vec::new();
        for (g, &count) in gaps.iter().enumerate() {
            for _ in 0..count {
                let first = turns.is_empty();
                let segs = self.plain_segs(first);
                turns.push(Turn { segs, rounds: 0 });
            }
            if let Some(group) = groups.get(g) {
                let first = turns.is_empty();
                let segs = self.fact_segs(group, first);
                turns.push(Turn { segs, rounds: 0 });
            }
        }

        let users = turns.len();
        let lo = 6usize.saturating_sub(users).max(users.div_ceil(4));
        let hi = 20usize.saturating_sub(users).min(lo + 4).min(2 * users).max(lo);
        let total = self.rng.range(lo, hi);
        let wanted: Vec<usize> = (0..users)
            .filter(|&t| {
                turns[t].segs.iter().any(|s| match s {
                    Seg::Task(_) => true,
                    Seg::Say { hint, .. } => *hint != Hint::None,
                    Seg::Fact(_) => false,
                })
            })
            .collect();
        let mut assigned = 0;
        while assigned < total {
            let t =
                if !wanted.is_empty() && self.rng.chance(0.6) { self.rng.pick(&wanted) } else { self.rng.below(users) };
            if turns[t].rounds < 2 {
                turns[t].rounds += 1;
                assigned += 1;
            }
        }
        turns
    }

    /// A message stating nothing: task talk, distractors, or both.
    fn plain_segs(&mut self, first: bool) -> Vec<Seg> {
        if first && let Some(task) = self.task() {
            return vec![self.greeting(), Seg::Task(task)];
        }
        let roll = self.rng.below(100);
        let mut segs = Vec::new();
        if (30..45).contains(&roll) || (75..90).contains(&roll) || roll >= 90 {
            segs.push(self.say(&[FOLLOWUPS]));
        }
        if roll < 45 {
            match self.task() {
                Some(task) => segs.push(Seg::Task(task)),
                None => segs.push(self.say(DISTRACTORS)),
            }
        } else if roll < 90 {
            segs.push(self.say(DISTRACTORS));
        }
        segs
    }

    /// A message stating `group`, sometimes with task talk or a distractor around it.
    fn fact_segs(&mut self, group: &[usize], first: bool) -> Vec<Seg> {
        let mut segs: Vec<Seg> = group.iter().map(|&u| Seg::Fact(u)).collect();
        let bare = self.units[group[0]].shape == Shape::Bare;
        if first {
            segs.insert(0, self.greeting());
            if let Some(task) = self.task() {
                segs.push(Seg::Task(task));
            }
            return segs;
        }
        if self.rng.chance(0.45) {
            let extra = match self.rng.chance(0.5).then(|| self.task()).flatten() {
                Some(task) => Seg::Task(task),
                None => self.say(&[FOLLOWUPS]),
            };
            if !bare && self.rng.chance(0.5) {
                segs.insert(0, extra);
            } else {
                segs.push(extra);
            }
        }
        if !bare && self.rng.chance(0.25) {
            let extra = self.say(DISTRACTORS);
            segs.push(extra);
        }
        segs
    }

    /// The user's opening words.
    fn greeting(&mut self) -> Seg {
        let user = format!("{}{}.", self.rng.pick(GREETINGS), self.project.intro);
        Seg::Say { user, reply: String::new(), hint: Hint::None }
    }

    /// A task of the project not asked for yet whose words hold no key.
    fn task(&mut self) -> Option<&'static Task> {
        let tasks = self.project.tasks;
        let free: Vec<usize> = (0..tasks.len())
            .filter(|i| !self.tasks_used.contains(i))
            .filter(|&i| self.clean(tasks[i].ask) && self.clean(tasks[i].finding) && self.clean(tasks[i].done))
            .collect();
        if free.is_empty() {
            return None;
        }
        let i = self.rng.pick(&free);
        self.tasks_used.push(i);
        Some(&tasks[i])
    }

    /// A line from one of `lists`, its placeholders filled, holding no key.
    fn say(&mut self, lists: &[&'static [Line]]) -> Seg {
        for _ in 0..40 {
            let list = self.rng.pick(lists);
            let line = &list[self.rng.below(list.len())];
            let mut bound = self.bindings();
            let user = self.fill(line.user, &mut bound);
            let reply = self.fill(line.reply, &mut bound);
            if self.clean(&user) && self.clean(&reply) {
                return Seg::Say { user, reply, hint: line.hint };
            }
        }
        Seg::Say { user: "ok.".into(), reply: "Okay.".into(), hint: Hint::None }
    }

    /// The placeholders every template may use for the project.
    fn bindings(&self) -> Vec<(String, String)> {
        let p = self.project;
        [("proj", p.name), ("testcmd", p.test_cmd), ("logcmd", p.log_cmd), ("logerr", p.log_error), ("dir", p.dir)]
            .into_iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    /// `template` with each `{name}` replaced: by its binding in `bound`, else by a value of the
    /// pool `name` names (its trailing digits dropped, a value not bound to that pool yet), then
    /// bound. Braces around anything else are left as they are.
    fn fill(&mut self, template: &str, bound: &mut Vec<(String, String)>) -> String {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            let name = after.find('}').map(|end| &after[..end]);
            match name.and_then(|name| self.bind(name, bound)) {
                Some(value) => {
                    out.push_str(&value);
                    rest = &after[name.map_or(0, str::len) + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// The value of placeholder `name`, or `None` if it is none.
    fn bind(&mut self, name: &str, bound: &mut Vec<(String, String)>) -> Option<String> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
            return None;
        }
        if let Some((_, value)) = bound.iter().find(|(n, _)| n == name) {
            return Some(value.clone());
        }
        let pool_name = name.trim_end_matches(|c: char| c.is_ascii_digit());
        let pool = match pool_name {
            "person" => PERSONS,
            "build" => BUILDS,
            "indentw" => INDENT_STYLES,
            _ => TOPICS.iter().find(|t| t.id == pool_name)?.values,
        };
        let taken: Vec<&str> = bound
            .iter()
            .filter(|(n, _)| n.trim_end_matches(|c: char| c.is_ascii_digit()) == pool_name)
            .map(|(_, v)| v.as_str())
            .collect();
        let choices: Vec<&str> = pool.iter().map(|v| text_of(v)).filter(|v| !taken.contains(v)).collect();
        let value = if choices.is_empty() { text_of(pool[0]) } else { self.rng.pick(&choices) }.to_string();
        bound.push((name.to_string(), value.clone()));
        Some(value)
    }

    /// The sentence stating unit `id`, holding no other statement's key.
    fn fact_sentence(&mut self, id: usize) -> String {
        let unit = self.units[id];
        let topic = &TOPICS[unit.topic];
        let value = text_of(unit.value);
        let old = unit.old.map_or("", text_of);
        let mut own = keys_of(unit.value);
        own.extend(unit.old.map(keys_of).unwrap_or_default());
        let mut sentence = String::new();
        for _ in 0..20 {
            let template = match unit.shape {
                Shape::Initial => self.rng.pick(topic.state),
                Shape::Named => self.rng.pick(topic.fix),
                Shape::About => self.rng.pick(ABOUT),
                Shape::Bare => self.rng.pick(BARE),
            };
            let mut s = template.replace("{v}", value).replace("{old}", old).replace("{about}", topic.about);
            s = match unit.shape {
                Shape::Initial if !template.contains("remember") && self.rng.chance(0.12) => {
                    self.rng.pick(REMEMBER).replace("{s}", &s)
                }
                Shape::Initial => format!("{}{s}", self.rng.pick(PREFIXES)),
                Shape::Named => format!("{}{s}", self.rng.pick(FIX_PREFIXES)),
                Shape::About | Shape::Bare => s,
            };
            s.push_str(self.rng.pick(STOPS));
            let lower = s.to_lowercase();
            sentence = s;
            if !self.keys.iter().any(|k| !own.contains(k) && lower.contains(k.as_str())) {
                break;
            }
        }
        sentence
    }

    /// The agent's acknowledgement of unit `id`: half the time repeating its value back.
    fn ack(&mut self, id: usize) -> String {
        let unit = self.units[id];
        if self.rng.chance(0.5) {
            return self.rng.pick(ACKS).to_string();
        }
        let value = text_of(unit.value);
        match unit.old {
            None => self.rng.pick(ECHO).replace("{v}", value),
            Some(old) => self.rng.pick(ECHO_FIX).replace("{v}", value).replace("{old}", text_of(old)),
        }
    }

    /// Labels unit `id` as stated at `seq`.
    fn record(&mut self, id: usize, seq: u64) {
        let unit = self.units[id];
        let replaces = unit.target.and_then(|t| self.fact_of[t]);
        self.fact_of[id] = Some(self.facts.len());
        self.facts.push(Fact { seq, keys: keys_of(unit.value), replaces });
        if let Some(t) = unit.target {
            self.current.retain(|&c| c != t);
        }
        self.current.push(id);
    }

    /// The user message of `segs`: casual or capitalised, pieces joined by spaces or blank lines.
    fn user_text(&mut self, said: Vec<String>) -> String {
        let capitalise = self.rng.chance(0.5);
        let mut out = String::new();
        for s in said.into_iter().filter(|s| !s.is_empty()) {
            if !out.is_empty() {
                out.push_str(if self.rng.chance(0.12) { "\n\n" } else { " " });
            }
            if capitalise {
                let mut chars = s.chars();
                if let Some(c) = chars.next() {
                    out.extend(c.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push_str(&s);
            }
        }
        if out.ends_with('.') && !out.ends_with("..") && self.rng.chance(0.3) {
            out.pop();
        }
        out
    }

    /// Writes one turn: the user message, its labels, and the agent's answer with its tool
    /// rounds.
    fn render(&mut self, turn: Turn) {
        let Turn { segs, rounds } = turn;
        let task = segs.iter().find_map(|s| match s {
            Seg::Task(t) => Some(*t),
            _ => None,
        });
        let hint = segs
            .iter()
            .find_map(|s| match s {
                Seg::Say { hint, .. } if *hint != Hint::None => Some(*hint),
                _ => None,
            })
            .unwrap_or(Hint::None);
        let mut said = Vec::new();
        let mut replies = Vec::new();
        let mut stated = Vec::new();
        for seg in segs {
            match seg {
                Seg::Fact(id) => {
                    said.push(self.fact_sentence(id));
                    replies.push(self.ack(id));
                    stated.push(id);
                }
                Seg::Task(t) => {
                    said.push(t.ask.to_string());
                    if rounds == 0 {
                        replies.push(t.done.to_string());
                    }
                }
                Seg::Say { user, reply, hint } => {
                    said.push(user);
                    // The round's own words answer a request for one.
                    if hint == Hint::None || rounds == 0 || task.is_some() {
                        replies.push(reply);
                    }
                }
            }
        }
        let text = self.user_text(said);
        self.messages.push(message(Role::User, vec![Part::Text { text }]));
        let seq = self.messages.len() as u64;
        for &id in &stated {
            self.record(id, seq);
        }

        let mut built = Vec::new();
        for i in 0..rounds {
            let round = match (i, task, hint) {
                (0, Some(t), _) => self.task_round(t),
                (_, Some(_), _) => self.test_round(true),
                (0, None, Hint::Tests) => {
                    let pass = self.rng.chance(0.7);
                    self.test_round(pass)
                }
                (0, None, Hint::Log) => self.doc_round(Some(&LOG)),
                _ => self.doc_round(None),
            };
            built.push(round);
        }
        let mut text = replies.iter().filter(|r| !r.is_empty()).map(String::as_str).collect::<Vec<_>>().join(" ");
        for round in built {
            text = glue(&text, &round.pre);
            let mut parts = vec![Part::Text { text }];
            parts.extend(round.calls.iter().map(|c| Part::ToolCall {
                id: c.id.clone(),
                name: c.name.to_string(),
                arguments: c.arguments.clone(),
            }));
            self.messages.push(message(Role::Assistant, parts));
            let results = round
                .calls
                .into_iter()
                .map(|c| Part::ToolResult { call_id: c.id, content: c.result, is_error: c.error })
                .collect();
            self.messages.push(message(Role::Tool, results));
            text = round.post;
        }
        if rounds > 0
            && let Some(t) = task
        {
            text = glue(&text, t.done);
        }
        if !self.current.is_empty() && self.rng.chance(0.15) {
            let id = self.rng.pick(&self.current);
            if !stated.contains(&id) {
                let echo = self.rng.pick(LATER_ECHO).replace("{v}", text_of(self.units[id].value));
                text = glue(&text, &echo);
            }
        }
        if text.is_empty() {
            text = "Okay.".to_string();
        }
        self.messages.push(message(Role::Assistant, vec![Part::Text { text }]));
    }

    /// A tool call of `name` on `arg`, answered by `result`.
    fn call(&mut self, name: &'static str, arg: &str, result: String, error: bool) -> Call {
        let arguments = match name {
            "run_shell" => format!("{{\"command\":{}}}", json_string(arg)),
            "grep" => {
                let (pattern, path) = arg.split_once('\t').unwrap_or((arg, "."));
                format!("{{\"pattern\":{},\"path\":{}}}", json_string(pattern), json_string(path))
            }
            _ => format!("{{\"path\":{}}}", json_string(arg)),
        };
        let id = format!("call_{:016x}", self.rng.next_u64());
        Call { id, name, arguments, result, error }
    }

    /// Reading the file `task` is about, sometimes running the tests too.
    fn task_round(&mut self, task: &'static Task) -> Round {
        let p = self.project;
        let (path, content) = p.files[task.file];
        let with_tests = self.rng.chance(0.5);
        for tests in [with_tests, false] {
            let clean = self.clean(path)
                && self.clean(content)
                && (!tests || (self.clean(p.test_cmd) && self.clean(p.test_fail)));
            if !clean {
                continue;
            }
            let pre = self
                .rng
                .pick(&["Let me look at `{}` first.", "Opening {}.", "I'll start with {}."])
                .replace("{}", path);
            let pre = if tests { format!("{pre} Running the failing test as well.") } else { pre };
            let mut calls = vec![self.call("read_file", path, content.to_string(), false)];
            if tests {
                calls.push(self.call("run_shell", p.test_cmd, p.test_fail.to_string(), false));
            }
            return Round { pre, calls, post: task.finding.to_string() };
        }
        self.doc_round(None)
    }

    /// Running the project's tests.
    fn test_round(&mut self, pass: bool) -> Round {
        let p = self.project;
        let output = if pass { p.test_pass } else { p.test_fail };
        if !(self.clean(p.test_cmd) && self.clean(output)) {
            return self.doc_round(None);
        }
        let pre = self.rng.pick(&["Running the tests.", "Rerunning the suite.", "Let me run the tests."]).to_string();
        let post = if pass {
            self.rng.pick(&["All green.", "Everything passes.", "Tests pass now."]).to_string()
        } else {
            "One failure, in the same spot as before — I'll dig into it next.".to_string()
        };
        let calls = vec![self.call("run_shell", p.test_cmd, output.to_string(), false)];
        Round { pre, calls, post }
    }

    /// Reading `doc`, or a document drawn at random, its placeholders filled, holding no key.
    fn doc_round(&mut self, doc: Option<&'static Doc>) -> Round {
        for _ in 0..30 {
            let d = match doc {
                Some(d) => d,
                None => &DOCS[self.rng.below(DOCS.len())],
            };
            let mut bound = self.bindings();
            let pre = self.fill(d.pre, &mut bound);
            let arg = self.fill(d.arg, &mut bound);
            let content = self.fill(d.content, &mut bound);
            let post = self.fill(d.post, &mut bound);
            if [&pre, &arg, &content, &post].iter().all(|t| self.clean(t)) {
                let call = self.call(d.tool, &arg, content, d.error);
                return Round { pre, calls: vec![call], post };
            }
        }
        let path = self.project.files[0].0;
        let call = self.call("run_shell", "git status --short", format!(" M {path}\n?? notes.txt\n"), false);
        Round {
            pre: "Let me check the working tree.".into(),
            calls: vec![call],
            post: format!("Only {path} has changes so far."),
        }
    }
}

/// A complete message of `parts`.
fn message(role: Role, parts: Vec<Part>) -> NewMessage {
    NewMessage { role, parts, usage: None, status: MessageStatus::Complete }
}

/// `a` and `b` joined by a space, either possibly empty.
fn glue(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a} {b}"),
    }
}

/// `s` as a JSON string.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
