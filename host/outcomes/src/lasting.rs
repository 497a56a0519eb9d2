//! What a user stated as lasting, by rule: the sentences of a user's message that say a
//! preference ("I prefer …", "always …"), a fact about the user ("my name is …"), a constraint
//! ("we must support …", "the deadline is …"), a decision ("we decided to …") or ask to be
//! remembered ("remember that …") — and none of the rest: questions, requests for the task at
//! hand, hypotheticals, musings, what someone else said. A correction ("actually …", "not X
//! anymore", "make that …") says which earlier statement it replaces ([`replaced`]).
//!
//! Only what the user wrote is read: the default extractor never looks at the assistant's words
//! or a tool's output, whatever they say. Precision comes before recall: a sentence that only
//! might be lasting is left out.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::decisions;

/// Whose memory a statement belongs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The user's own (a preference, how they want the agent to work, a fact about them).
    User,
    /// The project's (what "we" decided, use, must do).
    Project,
}

/// A lasting statement found in a user's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// Whose memory.
    pub scope: Scope,
    /// The statement as an observation: the sentence in the third person ("the user prefers
    /// tabs"), without the words that only introduced it ("remember that", "actually").
    pub observation: String,
    /// What it says about what it replaces.
    pub correction: Correction,
    /// What it is about (`deadline`, `prefer`, `database`), to find the statement it replaces.
    pub topic: Option<String>,
}

/// How a statement relates to what was said before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Correction {
    /// A statement of its own (it replaces one only when it gives its topic another value).
    None,
    /// It corrects something (it began "actually", "change of plan" …), naming what it drops
    /// when it does ("not MySQL anymore", "instead of yarn").
    Replaces(Vec<String>),
    /// It only corrects the statement before it ("make that 4 spaces", "I meant Friday"): its
    /// observation says so and names nothing of its own.
    Previous,
}

/// Words that begin a correction (lower case, at a sentence's start).
const CORRECTING: &[&str] = &[
    "actually",
    "scratch that",
    "change of plan",
    "change of plans",
    "correction",
    "let me correct myself",
    "let me correct that",
    "to correct myself",
    "correcting myself",
    "i misspoke",
    "quick update",
    "small update",
    "update",
    "i changed my mind",
    "changed my mind",
    "i've changed my mind",
    "on second thought",
    "on second thoughts",
    "wait",
    "no wait",
    "sorry for the confusion",
    "sorry about that",
    "sorry",
    "oops",
    "my bad",
    "ignore what i said before",
    "ignore what i said earlier",
    "ignore what i said",
    "forget what i said",
    "strike that",
    "hmm",
    "ok so",
    "so",
    "well",
];

/// Words at a sentence's start that carry nothing (lower case).
const FILLERS: &[&str] = &[
    "ok",
    "okay",
    "k",
    "also",
    "btw",
    "by the way",
    "oh",
    "and",
    "but",
    "great",
    "thanks",
    "thank you",
    "cool",
    "fwiw",
    "ps",
    "p.s",
    "one more thing",
    "alright",
    "right",
    "yes",
    "yeah",
    "yep",
    "sure",
    "nice",
    "perfect",
    "fyi",
    "heads up",
    "just so you know",
    "for context",
    "note",
    "and also",
    "one thing",
    "importantly",
    "not just here",
    "unrelated, but",
    "unrelated but",
    "unrelated",
    "side note",
    "oh and",
    "and remember",
    "just so you know for next time",
    "in general",
    "generally",
    "as a rule",
    "please",
];

/// What asks for a statement to be remembered; what follows is the statement.
const REMEMBER: &[&str] = &[
    "remember this for later",
    "remember this",
    "keep this in mind going forward",
    "keep this in mind",
    "this applies everywhere",
    "for the record",
    "for future sessions",
    "for future reference",
    "for next time",
    "for the future",
    "note for future sessions",
    "general rule",
    "as a general rule",
    "as a rule",
    "for your memory",
    "going forward",
    "from now on",
    "moving forward",
    "from here on",
    "decision",
    "decided",
    "please remember",
    "remember",
    "don't forget",
    "do not forget",
    "keep in mind",
    "bear in mind",
    "for future reference",
    "note for later",
    "make a note",
    "make a note of this",
    "save this",
    "store this",
];

/// A sentence that begins so is not lasting: a hypothesis, a doubt, a request or a question.
const NOT_LASTING_START: &[&str] = &[
    "if ",
    "what if",
    "suppose",
    "imagine",
    "maybe",
    "perhaps",
    "probably",
    "possibly",
    "might ",
    "i wonder",
    "i guess",
    "not sure",
    "i'm not sure",
    "im not sure",
    "i am not sure",
    "i don't know",
    "i dont know",
    "do you",
    "did you",
    "does ",
    "should we",
    "should i",
    "could we",
    "could you",
    "can you",
    "can we",
    "would ",
    "will you",
    "are you",
    "is it",
    "is there",
    "was ",
    "how ",
    "why ",
    "what ",
    "where ",
    "when ",
    "which ",
    "who ",
    "i think",
    "i feel",
    "i believe",
    "i suspect",
    "i hope",
    "hopefully",
    "i assume",
    "let me",
    "let's see",
    "lets see",
    "i was wondering",
    "i'm wondering",
    "any idea",
    "no idea",
    "thanks",
    "thank you",
    "looks good",
    "lgtm",
    "i'd love",
    "i would love",
    "it would be nice",
    "it'd be nice",
    "ideally",
    "in theory",
    "someone",
    "somebody",
    "they ",
    "he ",
    "she ",
    "you ",
    "you're",
    "your ",
];

/// Words anywhere in a sentence that make it about now, not for good.
const NOT_LASTING_ANYWHERE: &[&str] = &[
    "for this pr",
    "for this task",
    "for this change",
    "for this commit",
    "for this ticket",
    "for this branch",
    "for this one",
    "for this session",
    "for this run",
    "for this file",
    "for this function",
    "for this test",
    "for this release",
    "for now",
    "just this once",
    "this time",
    "temporarily",
    "for the moment",
    "right now",
    "someday",
    "some day",
    "at some point",
    "eventually",
    "one day",
    "might ",
    "maybe",
    "perhaps",
    "not sure",
    "i guess",
    "i think",
    "probably",
    "would be nice",
    "thinking about",
    "considering",
    "wondering",
    "unless",
    "we'll see",
    "for today",
    "today's",
    "this session",
    "nothing decided",
    "nothing's agreed",
    "nothing is agreed",
    "not agreed",
    "just their take",
    "their take",
    "not decided",
    "undecided",
    "toying with",
    "today",
    "tonight",
    "this morning",
    "this afternoon",
    "this week",
    "at the moment",
    "until tomorrow",
    "in this file",
    "in this function",
    "in this test",
    "here",
];

/// Verbs for what a person likes or does not (after "I", with an adverb or not).
const PREFERENCE_VERBS: &[&str] = &[
    "prefer",
    "like",
    "love",
    "hate",
    "dislike",
    "loathe",
    "detest",
    "despise",
    "enjoy",
    "favor",
    "favour",
    "avoid",
    "can't stand",
    "cannot stand",
    "don't like",
    "do not like",
    "don't want",
    "do not want",
    "never want",
    "always want",
    "always use",
    "never use",
    "only use",
    "always write",
    "never write",
    "always run",
    "never run",
    "want all",
    "want every",
    "need all",
    "need every",
    "like all",
    "like every",
    "use",
    "work",
    "live",
    "go by",
    "speak",
    "always",
    "never",
    "don't use",
    "do not use",
    "don't do",
    "stopped using",
    "switched to",
    "moved to",
    "no longer",
    "now use",
    "now prefer",
];

/// Adverbs between "I" and the verb.
const ADVERBS: &[&str] = &[
    "really",
    "strongly",
    "much",
    "very much",
    "definitely",
    "generally",
    "usually",
    "also",
    "still",
    "personally",
    "totally",
    "just",
    "absolutely",
    "honestly",
    "now",
    "mostly",
    "tend to",
    "do",
    "actually",
];

/// What follows "I'm"/"I am" when it is a fact about the user.
const IAM: &[&str] = &[
    "in aest",
    "in utc",
    "in cet",
    "in est",
    "in pst",
    "in ist",
    "in gmt",
    "in jst",
    "in bst",
    "in cst",
    "in edt",
    "in pdt",
    "in cest",
    "in nzst",
    "in sgt",
    "on ",
    "based in",
    "located in",
    "in the ",
    "from ",
    "a ",
    "an ",
    "colorblind",
    "colourblind",
    "vegan",
    "left-handed",
    "allergic",
    "using ",
    "working on",
    "working in",
    "working at",
    "working for",
    "responsible for",
    "the maintainer",
    "the owner",
    "the lead",
];

/// Nouns "my"/"our" introduce that are not lasting ("my question is …").
const PASSING: &[&str] = &[
    "question",
    "problem",
    "guess",
    "point",
    "bad",
    "concern",
    "issue",
    "worry",
    "idea",
    "understanding",
    "hunch",
    "fault",
    "mistake",
    "answer",
    "thought",
    "thoughts",
    "suggestion",
    "request",
    "feeling",
    "sense",
    "take",
    "hope",
    "plan for today",
    "goal today",
    "bet",
    "reasoning",
    "pleasure",
    "apologies",
    "apology",
    "code",
    "test",
    "tests",
    "branch",
    "pr",
    "change",
    "changes",
    "build",
    "output",
    "error",
    "fix",
    "attempt",
    "suspicion",
    "first thought",
    "intention",
];

/// Verbs of a decision after "we" (or "we've", "we'll", "we're").
const DECIDED: &[&str] = &[
    "going with",
    "going to use",
    "using",
    "standardizing on",
    "standardising on",
    "sticking with",
    "moving to",
    "switching to",
    "host",
    "are built on",
    "build on",
    "deploy to",
    "run on",
    "on",
    "all use",
    "all agreed",
    "doing",
    "'re doing",
    "are doing",
    "pin",
    "pinned",
    "follow",
    "only do",
    "do",
    "decided",
    "agreed",
    "chose",
    "have chosen",
    "'ve chosen",
    "settled on",
    "picked",
    "went with",
    "are going with",
    "'re going with",
    "will go with",
    "'ll go with",
    "are going to use",
    "'re going to use",
    "will use",
    "'ll use",
    "are using",
    "'re using",
    "use",
    "switched to",
    "moved to",
    "migrated to",
    "have moved to",
    "'ve moved to",
    "have switched to",
    "'ve switched to",
    "standardized on",
    "standardised on",
    "are standardizing on",
    "are standardising on",
    "'re standardizing on",
    "'re standardising on",
    "stick with",
    "are sticking with",
    "'re sticking with",
    "must",
    "have to",
    "need to support",
    "need to keep",
    "need to stay",
    "can't use",
    "cannot use",
    "can not use",
    "don't use",
    "do not use",
    "never use",
    "always use",
    "only use",
    "only support",
    "support",
    "target",
    "require",
    "deploy",
    "release",
    "ship",
    "run",
    "always",
    "never",
    "don't",
    "do not",
    "only",
    "mustn't",
    "should always",
    "should never",
    "no longer",
    "now use",
    "are on",
    "'re on",
    "are moving to",
    "'re moving to",
    "are switching to",
    "'re switching to",
    "write",
    "keep",
    "prefer",
    "like",
    "avoid",
];

/// What "let's" begins when it decides something for good.
const LETS: &[&str] = &[
    "let's go with",
    "lets go with",
    "let's stick with",
    "lets stick with",
    "let's standardize on",
    "let's standardise on",
    "lets standardize on",
    "lets standardise on",
    "let's adopt",
    "lets adopt",
    "let's switch to",
    "lets switch to",
    "let's move to",
    "lets move to",
    "let's always",
    "lets always",
    "let's never",
    "lets never",
    "let's settle on",
    "lets settle on",
];

/// What a sentence about the project says it uses or must do, with no "we".
const PROJECT_SUBJECTS: &[&str] = &[
    "the project",
    "this project",
    "the repo",
    "this repo",
    "the repository",
    "this repository",
    "the codebase",
    "this codebase",
    "the team",
    "our team",
    "the app",
    "the service",
    "the api",
    "ci",
    "the ci",
];

/// Start-of-sentence words for a rule for good, said to the agent.
const FOR_GOOD: &[&str] = &[
    "always",
    "never",
    "don't ever",
    "do not ever",
    "never ever",
    "from now on",
    "going forward",
    "in future",
    "in the future",
    "moving forward",
    "by default",
    "from here on",
    "henceforth",
    "whenever you",
    "every time you",
    "each time you",
    "any time you",
    "anytime you",
    "no matter what",
    "under no circumstances",
];

/// Words of a bare correction, after its marker ("make that …").
const BARE: &[&str] = &[
    "make that",
    "make it",
    "i meant",
    "i mean",
    "meant",
    "it should be",
    "should be",
    "change that to",
    "change it to",
];

/// The lasting statements of a user's message, in order.
pub fn statements(message: &str) -> Vec<Statement> {
    let mut out = read(message);
    for s in &mut out {
        s.observation = recase(&s.observation, message);
    }
    out
}

/// The words of `observation` (read in lower case) as the user cased them in `message`: a name
/// the user wrote with capitals ("Postgres 16", "GraphQL") keeps them; a word the user wrote in
/// capitals only to begin a sentence does not.
fn recase(observation: &str, message: &str) -> String {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '@' | '+' | '#');
    let mut cased: Vec<(String, &str)> = Vec::new();
    let mut sentence_start = true;
    for token in message.split(|c: char| !word(c)).filter(|t| !t.is_empty()) {
        let lower = token.to_lowercase();
        let at_start = core::mem::replace(&mut sentence_start, false);
        let capital_only_first = token.chars().skip(1).all(|c| !c.is_uppercase());
        if token != lower && !(at_start && capital_only_first) && !cased.iter().any(|(l, _)| *l == lower) {
            cased.push((lower, token));
        }
    }
    // Sentence starts, for the rule above, are not tracked past the first word: a capitalised
    // common word mid-message ("The") would be kept, so common words are never recased.
    const COMMON: &[&str] =
        &["the", "a", "an", "i", "we", "my", "our", "and", "or", "to", "is", "are", "in", "on", "for"];
    let mut out = String::with_capacity(observation.len());
    let mut rest = observation;
    while !rest.is_empty() {
        let end = rest.find(|c: char| !word(c)).unwrap_or(rest.len());
        let (token, tail) = rest.split_at(end);
        match cased.iter().find(|(l, _)| l == token).filter(|_| !COMMON.contains(&token)) {
            Some((_, original)) if original.len() == token.len() => out.push_str(original),
            _ => out.push_str(token),
        }
        let sep = tail.find(word).unwrap_or(tail.len());
        out.push_str(&tail[..sep]);
        rest = &tail[sep..];
    }
    out
}

/// The lasting statements of a message, in lower case.
fn read(message: &str) -> Vec<Statement> {
    let sentences = sentences(message);
    let mut out = Vec::new();
    // A correction whose value comes in the next sentence ("forget sentry. datadog!").
    let mut pending: Option<Marks> = None;
    for (i, (sentence, question)) in sentences.iter().enumerate() {
        let lower = normalise_quotes(&sentence.to_lowercase());
        if firm_suffix(&lower) {
            continue;
        }
        if looks_like_code(sentence) || reported(sentence) || sentence.len() > 600 {
            pending = None;
            continue;
        }
        let firm_after = sentences.get(i + 1).is_some_and(|(s, _)| firm_suffix(&s.to_lowercase()));
        // "Can you remember that …?" asks to remember, not a question.
        let asks_to_remember = ["can you ", "could you ", "will you ", "would you ", "can u ", "pls ", "please "]
            .iter()
            .find_map(|p| strip_markers(&lower).0.strip_prefix(p))
            .filter(|r| REMEMBER.iter().any(|m| r.starts_with(m)) || r.starts_with("note that"));
        let (lower, question) = match asks_to_remember {
            Some(r) => (String::from(r), &false),
            None => (lower.clone(), question),
        };
        let clauses = split_clauses(&lower);
        // A question's clauses count only before the one that asks, and none when it opens asking.
        let usable = match question {
            true if clauses.first().is_some_and(|c| asks(strip_markers(c).0)) => 0,
            true => clauses.len().saturating_sub(1),
            false => clauses.len(),
        };
        let mut j = 0;
        while j < usable {
            if firm_suffix(strip_markers(clauses[j]).0) {
                j += 1;
                continue;
            }
            let (rest, mut marks) = marks_of(clauses[j]);
            if let Some(p) = pending.take() {
                marks.correcting = true;
                marks.dropped.extend(p.dropped);
                marks.topic = marks.topic.or(p.topic);
            }
            // What a marker introduces is the rest of the sentence, up to a request or a question.
            let drops = |t: &str| {
                decisions::has(
                    t,
                    &[
                        "anymore",
                        "any more",
                        "no longer",
                        "not using",
                        "stopped using",
                        "dropped",
                        "ditched",
                        "scrapped",
                        "abandoned",
                        "switched from",
                        "moved from",
                        "no more",
                    ],
                )
            };
            let mut text = String::from(rest);
            let mut k = j + 1;
            while k < usable {
                // What drops something goes on to what replaces it ("not memcached anymore, it's valkey").
                let whole = marks.remember || marks.correcting || drops(&text);
                let next = clauses[k];
                if continues(next)
                    || (list_item(next) && (text.contains(" is ") || text.contains(" are ") || text.contains(':')))
                    || (whole && !starts_request(strip_markers(next).0))
                {
                    if !text.is_empty() {
                        text.push_str(", ");
                    }
                    text.push_str(strip_markers(next).0);
                    k += 1;
                } else {
                    break;
                }
            }
            let firm = firm_after && k >= usable || clauses.get(k).is_some_and(|c| firm_suffix(c));
            if text.trim().is_empty() {
                // A correction with no value yet: the next clause or sentence gives it.
                if marks.correcting {
                    pending = Some(marks);
                }
                j = k.max(j + 1);
                continue;
            }
            if let Some(s) = statement(&text, marks, firm) {
                out.push(s);
            }
            j = k.max(j + 1);
        }
        if *question {
            pending = None;
        }
    }
    out
}

/// What the words leading a clause said.
#[derive(Debug, Clone, Default)]
struct Marks {
    /// "remember", "for the record", "going forward": what follows is meant to last.
    remember: bool,
    /// "actually", "correction", "change of plan": what follows corrects something.
    correcting: bool,
    /// What a correction said it is about ("what I said about hosting").
    topic: Option<String>,
    /// What it said goes ("scratch axum", "forget sentry").
    dropped: Vec<String>,
}

/// A clause without its leading fillers and markers, and what they said.
fn marks_of(clause: &str) -> (&str, Marks) {
    let mut marks = Marks::default();
    let mut rest = clause.trim();
    loop {
        let before = rest;
        // "what I said about X:", "correction re X,", "update on X —", "change of plan on X:"
        for lead in TOPIC_LEADS {
            if let Some(after) = rest.strip_prefix(lead) {
                let (topic, value) = match after.find([':', '—', '–']) {
                    Some(at) => (&after[..at], &after[at..]),
                    None => (after, ""),
                };
                // "decision on hosting: …" decides; the other leads correct.
                if lead.starts_with("decid") {
                    marks.remember = true;
                } else {
                    marks.correcting = true;
                }
                marks.topic = Some(topic.trim().trim_start_matches("the ").to_string());
                rest = value.trim_start_matches([':', '—', '–', ' ', ',']);
            }
        }
        let (r, correcting) = strip_markers(rest);
        marks.correcting |= correcting;
        rest = r;
        let (r, remember) = strip_remember(rest);
        marks.remember |= remember;
        rest = r;
        // "I said actix-web earlier but it's actually axum"
        if let Some(after) = rest.strip_prefix("i said ")
            && let Some(at) = after.find(" but ")
        {
            let said = after[..at].trim_end_matches(" earlier").trim_end_matches(" before").trim_end_matches(',');
            marks.correcting = true;
            marks.dropped.push(said.trim().to_string());
            rest = after[at + " but ".len()..].trim_start_matches("it's actually ").trim_start_matches("actually ");
        }
        // "scratch axum", "forget sentry", "camelcase is out", "no more yarn"
        for lead in ["scratch ", "forget ", "no more ", "drop ", "ditch "] {
            if let Some(after) = rest.strip_prefix(lead)
                && after.split_whitespace().count() <= 3
                && !after.starts_with("that")
                && !after.starts_with("what")
                && !after.starts_with("it")
            {
                marks.correcting = true;
                marks.dropped.push(after.trim().trim_end_matches(['.', '!']).to_string());
                rest = "";
            }
        }
        for tail in [" changed", " has changed", " changed btw", " got changed", " moved"] {
            if let Some(topic) = rest.strip_suffix(tail)
                && (1..=4).contains(&topic.split_whitespace().count())
            {
                let topic =
                    topic.trim().trim_start_matches("ok ").trim_start_matches("the ").trim_start_matches("our ");
                marks.correcting = true;
                if !matches!(topic, "that" | "it" | "this" | "something" | "nothing" | "everything") {
                    marks.topic = Some(topic.to_string());
                }
                rest = "";
            }
        }
        for tail in [" is out", " are out"] {
            if let Some(name) = rest.strip_suffix(tail)
                && name.split_whitespace().count() <= 3
            {
                marks.correcting = true;
                marks.dropped.push(name.to_string());
                rest = "";
            }
        }
        if rest == before {
            return (rest.trim_start_matches([',', ':', '-', ' ', '—', '–']).trim(), marks);
        }
    }
}

/// Words that lead a correction's topic.
const TOPIC_LEADS: &[&str] = &[
    "new decision on ",
    "new decision about ",
    "decision on ",
    "decision about ",
    "decided on ",
    "quick fix to what i said about ",
    "small fix to what i said about ",
    "fix to what i said about ",
    "to what i said about ",
    "what i said about ",
    "small correction re ",
    "quick correction re ",
    "correction re ",
    "correction on ",
    "correction about ",
    "regarding ",
    "update on ",
    "quick update on ",
    "change of plan on ",
    "change of plans on ",
    "change of plan for ",
    "change of plan about ",
];

/// One statement: `text` (lower case, its leading marks stripped into `marks`), lasting when a
/// rule says so, a marker did, or a firm word followed it (`firm`: "…, always.").
fn statement(text: &str, mut marks: Marks, firm: bool) -> Option<Statement> {
    // A marker inside what was joined ("wait, I said X earlier but …").
    let (text, more) = marks_of(text);
    marks.remember |= more.remember;
    marks.correcting |= more.correcting;
    marks.topic = marks.topic.or(more.topic);
    marks.dropped.extend(more.dropped);
    let rest = text.trim().trim_end_matches(['.', '!']).trim();
    // What a marker or a firm word introduces is a value, whatever its first word ("change of
    // plan on how PRs land: merge commits").
    let introduced = marks.remember || marks.correcting || marks.topic.is_some() || firm;
    let request = starts_request(rest) || rest.strip_prefix("just ").is_some_and(starts_request);
    if rest.is_empty() || asks(rest) || (!introduced && request) {
        return None;
    }
    // "for this throwaway script …" is about now ("for this repo …" is not).
    if let Some(at) = rest.find("for this ") {
        let what = rest[at + "for this ".len()..].split_whitespace().next().unwrap_or("");
        if !matches!(what, "repo" | "repository" | "project" | "codebase" | "team" | "company" | "org" | "service") {
            return None;
        }
    }
    if NOT_LASTING_START.iter().any(|w| rest.starts_with(w))
        || NOT_LASTING_ANYWHERE.iter().any(|w| contains_phrase(rest, w))
    {
        return None;
    }
    let Marks { remember, correcting: marked, topic: said_topic, mut dropped } = marks;
    // "not MySQL anymore", "no longer X": the user says what stopped being true.
    let explicit = not_anymore(rest);
    let marked = marked || !explicit.is_empty();
    let mut correcting = marked;
    // Dropped names ("not MySQL anymore", "instead of yarn") make any sentence a correction.
    let than: Vec<String> = rest
        .split_once(" than ")
        .map(|(_, t)| t.split([',', '.', '!']).next().unwrap_or("").trim().to_string())
        .filter(|t| {
            (1..=3).contains(&t.split_whitespace().count())
                && ["better", "prefer", "rather"].iter().any(|w| rest.contains(w))
        })
        .into_iter()
        .collect();
    for name in decisions::dropped_names(rest).into_iter().chain(explicit).chain(not_x(rest)).chain(than) {
        if !dropped.contains(&name) {
            dropped.push(name);
        }
    }
    if !dropped.is_empty()
        || decisions::has(rest, &["no longer", "anymore", "any more", " changed", " is now ", " are now "])
        || rest.ends_with(" now")
    {
        correcting = true;
    }
    let scope = scope_of(rest);
    let firm = firm
        || [
            "it stays that way",
            "that's how we do it",
            "no exceptions",
            "hard deadline",
            "no slipping",
            "hard limit",
            "hard rule",
            "strict rule",
            "that's not changing",
            "for good",
            "that's final",
        ]
        .iter()
        .any(|p| contains_phrase(rest, p));
    // A correction someone marked ("actually", "scratch X", "what I said about Y") stands on its
    // own; words like "instead of" alone do not make a sentence lasting ("returns 500 instead of
    // 401" is a bug report).
    let lasting = remember
        || firm
        || lasting(rest)
        || (marked && (said_topic.is_some() || !dropped.is_empty()))
        // "not MySQL anymore, we use Postgres": a correction's later clause says what lasts.
        || (correcting && rest.split([',', ';', '—', '–']).skip(1).any(|clause| lasting(clause.trim())));
    if !lasting {
        if marked && (!request || bare(rest).is_some()) {
            let value = bare(rest).unwrap_or(rest);
            if value.split_whitespace().count() <= 8 && !vague(value) {
                return Some(Statement {
                    scope,
                    observation: String::from(value),
                    correction: Correction::Previous,
                    topic: None,
                });
            }
        }
        return None;
    }
    let mut observation = third_person(rest);
    if let Some(t) = &said_topic
        && !observation.contains(t.as_str())
    {
        observation = alloc::format!("{t}: {observation}");
    }
    if observation.split_whitespace().count() < 2 {
        if dropped.is_empty() {
            return None;
        }
        observation = alloc::format!("{observation} instead of {}", dropped.join(", "));
    }
    let correction = match (correcting, said_topic.is_some() || !dropped.is_empty()) {
        (false, _) => Correction::None,
        (true, _) => Correction::Replaces(dropped),
    };
    let topic = said_topic.or_else(|| topic(rest));
    Some(Statement { scope, topic, observation, correction })
}

/// Words that, alone after a statement, say it is for good ("…, always.", "decided").
fn firm_suffix(s: &str) -> bool {
    let s = s.trim().trim_end_matches(['.', '!']).trim();
    matches!(
        s,
        "always"
            | "decided"
            | "no exceptions"
            | "that's final"
            | "final answer"
            | "hard deadline"
            | "no slipping"
            | "for good"
            | "every time"
            | "everywhere"
            | "always please"
            | "please always"
            | "and it stays that way"
            | "it stays that way"
            | "that's how we do it"
            | "that's the rule"
            | "no matter what"
            | "period"
            | "that's not changing"
            | "keep it that way"
            | "ever"
            | "no matter what else"
            | "please keep it that way"
            | "not changing"
            | "and that's not changing"
            | "that won't change"
            | "settled"
            | "no debate"
            | "non-negotiable"
    ) || s.starts_with("and it stays")
        || s.starts_with("that's how we do")
        || s.starts_with("that's our convention")
        || s.starts_with("nothing ships on other days")
        || s.starts_with("im weirdly picky")
        || s.starts_with("i'm picky")
}

/// Whether a clause continues the one before it ("not plain pip", "instead of yarn").
fn continues(clause: &str) -> bool {
    let c = clause.trim();
    // "…, I'm not SRE anymore", "…, we replaced valkey": what the clause before it replaced.
    if decisions::has(c, &["anymore", "any more", "no longer"])
        || ["we replaced ", "replaced ", "replacing ", "which replaces ", "that replaces "]
            .iter()
            .any(|w| c.starts_with(w))
    {
        return c.split_whitespace().count() <= 8;
    }
    ["not ", "instead of ", "rather than ", "never ", "only ", "except ", "everywhere", "including ", "no "]
        .iter()
        .any(|w| c.starts_with(w))
        && c.split_whitespace().count() <= 6
}

/// Whether a clause is one more item of a list the clause before it began ("Mira weekdays,
/// Jonas weekends"): a few words, none a verb, a request or a courtesy.
fn list_item(clause: &str) -> bool {
    let c = clause.trim();
    let words: Vec<&str> = c.split_whitespace().collect();
    const NOT: &[&str] = &[
        "thanks", "thx", "thank", "please", "lol", "haha", "ok", "okay", "cool", "great", "nice", "perfect", "sure",
        "right", "yes", "no", "nope", "yeah", "hmm", "btw", "fyi", "and", "but", "so", "then", "anyway", "also",
        "though", "i", "we", "you", "it", "this", "that", "please", "sorry", "oops", "wait", "actually",
    ];
    let (unmarked, marks) = marks_of(c);
    (1..=3).contains(&words.len())
        && unmarked == c
        && !marks.correcting
        && !marks.remember
        && !NOT.contains(&words[0])
        && !words.iter().any(|w| {
            w.ends_with("ed")
                || (w.ends_with("ing") && !w.ends_with("thing"))
                || matches!(*w, "is" | "are" | "was" | "be" | "do" | "does" | "go" | "use" | "run")
        })
        && !asks(c)
        && !starts_request(c)
        && !firm_suffix(c)
}

/// Whether a clause asks something.
fn asks(clause: &str) -> bool {
    let c = clause.trim();
    [
        "can you",
        "could you",
        "can u",
        "could u",
        "would you",
        "will you",
        "do you",
        "did you",
        "should we",
        "should i",
        "shall we",
        "is it",
        "is there",
        "are there",
        "are you",
        "what",
        "how",
        "why",
        "where",
        "when ",
        "which",
        "who",
        "does ",
        "do we",
        "did we",
        "have you",
        "any idea",
        "is that",
        "was it",
        "would it",
        "could it",
    ]
    .iter()
    .any(|w| c.starts_with(w))
}

/// Whether a clause asks for something now ("run the tests", "please fix …").
fn starts_request(clause: &str) -> bool {
    const NOW: &[&str] = &[
        "run ",
        "fix ",
        "check ",
        "look ",
        "open ",
        "add ",
        "update ",
        "remove ",
        "rename ",
        "revert ",
        "undo ",
        "try ",
        "split ",
        "bump ",
        "push it",
        "push the",
        "push this",
        "push that",
        "commit it",
        "commit the",
        "commit this",
        "commit that",
        "merge it",
        "merge the",
        "merge this",
        "merge that",
        "rebase it",
        "rebase the",
        "rebase this",
        "show me",
        "tell me",
        "explain ",
        "write some",
        "write a ",
        "write the",
        "make the",
        "make it",
        "make sure the",
        "dig ",
        "figure ",
        "go ahead",
        "let me know",
        "help ",
        "debug ",
        "investigate ",
        "refactor ",
        "clean ",
        "delete ",
        "move the",
        "move this",
        "next",
        "then ",
        "now ",
        "please run",
        "please fix",
        "please check",
        "please look",
        "please add",
        "please update",
        "please remove",
        "please rename",
        "please revert",
        "please open",
        "please use the existing",
        "use the existing",
        "back to it",
        "anyway",
        "ok push",
        "ship it",
        "land it",
        "test it",
        "test the",
        "test this",
        "profile ",
        "review the",
        "review this",
        "review it",
        "review my",
        "read ",
        "grep ",
        "search ",
        "find ",
        "install ",
        "redo ",
        "retry ",
        "re-run ",
        "rerun ",
        "keep going",
        "continue",
        "start ",
        "stop ",
        "skip ",
        "ignore the",
        "don't worry",
        "no worries",
    ];
    let c = clause.trim();
    NOW.iter().any(|w| c.starts_with(w))
}

/// Markers that begin a new clause even without punctuation before them.
const MID_MARKERS: &[&str] = &["correction re ", "correction: ", "change of plan", "update on ", "scratch that"];

/// Splits a sentence (lower case) into clauses at commas, semicolons and dashes.
fn split_clauses(sentence: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = sentence.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let sep = match bytes[i] {
            b',' | b';' if bytes.get(i + 1).is_none_or(|b| *b == b' ') => Some(1),
            b' ' if bytes[i..].starts_with(b" - ") => Some(3),
            b' ' if bytes[i..].starts_with(" — ".as_bytes()) || bytes[i..].starts_with(" – ".as_bytes()) => {
                Some(" — ".len())
            }
            // A correction's marker inside a clause ("merge it when ci is green correction re the
            // cache: redis").
            b' ' if i > 0 && MID_MARKERS.iter().any(|m| bytes[i + 1..].starts_with(m.as_bytes())) => Some(1),
            _ => None,
        };
        match sep {
            Some(len) => {
                let clause = sentence[start..i].trim();
                if !clause.is_empty() {
                    out.push(clause);
                }
                i += len;
                start = i;
            }
            None => i += 1,
        }
    }
    let last = sentence[start..].trim().trim_end_matches(['.', '!', '?']).trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

/// "X, not Y" / "we replaced Y": the Y.
fn not_x(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for lead in ["replaced ", "replacing "] {
        if let Some(at) = s.find(lead) {
            let name = s[at + lead.len()..].split([',', '.', '!', ';']).next().unwrap_or("").trim();
            let name = name.trim_start_matches("the ");
            if (1..=2).contains(&name.split_whitespace().count()) {
                out.push(name.to_string());
            }
        }
    }
    for lead in [", not "] {
        if let Some(at) = s.rfind(lead) {
            let after = s[at + lead.len()..].trim().trim_end_matches(['.', '!']);
            let after = after.trim_start_matches("plain ").trim_start_matches("the ");
            let words = after.split_whitespace().count();
            if (1..=2).contains(&words) && !matches!(after, "sure" | "yet" | "really" | "now" | "here" | "always") {
                out.push(after.to_string());
                break;
            }
        }
    }
    out
}

/// Whether a sentence (lower case, markers stripped) says something lasting.
fn lasting(s: &str) -> bool {
    let words: Vec<&str> = s.split_whitespace().collect();
    let first = words.first().copied().unwrap_or("");
    // A rule for good, said to the agent.
    if FOR_GOOD.iter().any(|w| starts_with_phrase(s, w)) {
        return true;
    }
    if LETS.iter().any(|w| s.starts_with(w)) {
        return true;
    }
    if instruction(s) || scheduled(s) || switched(s) || universal(s) || attribute(s) || setup(s) || approval(s) {
        return true;
    }
    // "a single code block works better for me than numbered steps"
    if ["works better for me", "work better for me", "works best for me", "work best for me"]
        .iter()
        .any(|p| s.contains(p))
    {
        return true;
    }
    // "we're a mysql shop"
    if (s.starts_with("we're a ") || s.starts_with("we are a ")) && (s.contains(" shop") || s.contains(" house")) {
        return true;
    }
    // "the PR size limit moved from 200 lines to 400 lines"
    if s.contains(" from ")
        && s.contains(" to ")
        && ["moved", "changed", "went", "bumped", "raised", "lowered", "increased", "decreased", "shifted"]
            .iter()
            .any(|v| contains_phrase(s, v))
        && !s.starts_with("it ")
        && !s.starts_with("this ")
    {
        return true;
    }
    for subject in ["prod ", "production ", "staging ", "prod deploys", "deploys ", "releases "] {
        if let Some(after) = s.strip_prefix(subject) {
            let verb = after.split_whitespace().next().unwrap_or("");
            if matches!(
                verb,
                "runs" | "lives" | "is" | "uses" | "deploys" | "happen" | "happens" | "go" | "goes" | "sits" | "ships"
            ) {
                return true;
            }
        }
    }
    // "decision: …", "rule: …", "convention: …", "constraint: …"
    for label in ["decision:", "decided:", "rule:", "convention:", "constraint:", "policy:", "preference:"] {
        if s.starts_with(label) {
            return true;
        }
    }
    // About the user.
    if let Some(after) = after_subject(s, &["i", "i've", "i'll", "i'd", "i have", "i do", "i don't", "i do not"]) {
        if starts_transient_request(after) {
            return false;
        }
        if let Some(object) = after_verb(after, PREFERENCE_VERBS) {
            return lasting_object(object);
        }
        // "I want kebab-case for every json key": a want for every case is a rule.
        if let Some(object) = after_verb(after, &["want", "need", "'d like", "would like"])
            && ["every", "all ", "always", "any ", "everywhere", "whenever"].iter().any(|w| object.contains(w))
            && !object.starts_with("you to")
        {
            return true;
        }
        return false;
    }
    for iam in ["i'm ", "im ", "i am "] {
        if let Some(after) = s.strip_prefix(iam) {
            const ROLES: &[&str] = &[
                "engineer",
                "developer",
                "designer",
                "manager",
                "lead",
                "sre",
                "architect",
                "maintainer",
                "owner",
                "admin",
                "scientist",
                "analyst",
                "founder",
                "cto",
                "ceo",
                "intern",
                "contractor",
                "consultant",
            ];
            let role = (after.starts_with("a ") || after.starts_with("an ") || after.starts_with("the "))
                && ROLES.iter().any(|r| contains_phrase(after, r));
            let place = after.starts_with("in ") && kinds_in(after).iter().any(|k| matches!(*k, "place" | "timezone"));
            return role
                || place
                || (IAM.iter().any(|w| after.starts_with(w))
                    && !after.starts_with("on it")
                    && !after.starts_with("a bit"));
        }
    }
    if s.starts_with("call me ") || s.starts_with("my name is ") || s.starts_with("my name's ") {
        return true;
    }
    if let Some(after) = s.strip_prefix("my ").or_else(|| s.strip_prefix("our ")) {
        return possessive(after);
    }
    // About the project.
    if let Some(after) = after_subject(s, &["we", "we've", "we'll", "we're", "we are", "we have", "we will", "we all"])
    {
        if starts_transient_request(after) {
            return false;
        }
        return after_verb(after, DECIDED).is_some_and(lasting_object)
            || DECIDED.iter().any(|d| d.starts_with('\'') && after.is_empty() && s.contains(d));
    }
    for (prefix, rest) in [("we've ", "'ve "), ("we'll ", "'ll "), ("we're ", "'re ")] {
        if let Some(after) = s.strip_prefix(prefix) {
            let joined = alloc::format!("{rest}{after}");
            return after_verb(&joined, DECIDED).is_some_and(lasting_object);
        }
    }
    for subject in PROJECT_SUBJECTS {
        if let Some(after) = s.strip_prefix(subject).map(str::trim_start)
            && (after.starts_with("uses ")
                || after.starts_with("must ")
                || after.starts_with("runs on ")
                || after.starts_with("targets ")
                || after.starts_with("only ")
                || after.starts_with("never ")
                || after.starts_with("always ")
                || after.starts_with("is on ")
                || after.starts_with("deploys ")
                || after.starts_with("should always ")
                || after.starts_with("should never ")
                || after.starts_with("requires ")
                || after.starts_with("supports "))
        {
            return true;
        }
    }
    // "the deadline is …", "the minimum supported version is …"
    if first == "the"
        && let Some((subject, value)) = split_is(s)
    {
        let subject = subject.trim_start_matches("the ").trim();
        return is_attribute(subject) && !value.trim().is_empty() && !vague(value);
    }
    // "X must …", "all X must …", "nothing … may …"
    if let Some(at) = find_word(s, "must").or_else(|| find_word(s, "mustn't")).or_else(|| find_word(s, "shall"))
        && at > 0
    {
        let subject = &s[..at];
        let subject_words = subject.split_whitespace().count();
        let pronoun = matches!(subject.trim(), "it" | "this" | "that" | "there" | "you" | "which" | "i" | "he" | "she");
        return (1..=6).contains(&subject_words) && !pronoun && !subject.contains(" if ");
    }
    if starts_with_phrase(s, "no ") && (s.contains(" allowed") || s.contains(" ever") || s.contains(" in ")) {
        return s.split_whitespace().count() <= 10;
    }
    if starts_with_phrase(s, "don't touch")
        || starts_with_phrase(s, "do not touch")
        || starts_with_phrase(s, "never touch")
    {
        return true;
    }
    if (s.contains(" is off limits") || s.contains(" is off-limits") || s.contains(" are off limits"))
        && !s.contains("if ")
    {
        return true;
    }
    false
}

/// Whether a sentence names a date or a weekday for something scheduled ("we go into code freeze
/// on January 9", "the release is on April 18", "deploys happen on Thursdays").
fn scheduled(s: &str) -> bool {
    const EVENTS: &[&str] = &[
        "freeze",
        "deadline",
        "release",
        "ship",
        "launch",
        "due",
        "deploy",
        "demo",
        "cutoff",
        "cut-off",
        "go live",
        "go-live",
        "beta",
        "milestone",
        "expects",
        "rollout",
        "handoff",
        "hand-off",
        "standup",
    ];
    let dated = names_date(s) || kinds_in(s).contains(&"weekday");
    dated && EVENTS.iter().any(|e| s.contains(e)) && !s.contains(" was ") && !s.contains(" were ")
}

/// Whether a sentence says what needs the user's say-so ("new dependencies need my ok first").
fn approval(s: &str) -> bool {
    [
        "my ok",
        "my okay",
        "my approval",
        "my sign-off",
        "my signoff",
        "my review",
        "check with me",
        "checking with me",
        "ask me first",
        "asking me first",
        "run it by me",
        "running it by me",
    ]
    .iter()
    .any(|p| s.contains(p))
}

/// Whether a sentence says what the project or the user's machine is set up with, naming a
/// value whose kind is known: "db access goes through kysely", "errors get reported to sentry",
/// "my dev machine runs wsl".
fn setup(s: &str) -> bool {
    const VERBS: &[&str] = &[
        " runs ",
        " run on ",
        " runs on ",
        " goes through ",
        " go through ",
        " get reported to ",
        " gets reported to ",
        " lives on ",
        " live on ",
        " uses ",
        " is on ",
        " are on ",
        " is built on ",
        " is built with ",
        " are built with ",
        " goes to ",
        " go to ",
        " talks to ",
        " sits on ",
        " sits behind ",
        " is hosted on ",
        " are hosted on ",
        " is deployed to ",
        " are deployed to ",
        " is written in ",
        " are written in ",
        " are written with ",
        " is tested with ",
        " are tested with ",
        " is formatted with ",
        " are formatted with ",
        " use ",
        " develop on ",
        " run everything in ",
        " run everything on ",
        " code in ",
        " code on ",
        " work in ",
        " run ",
        " get ",
        " gets ",
        " follow ",
        " follows ",
        " pin ",
    ];
    let first = s.split_whitespace().next().unwrap_or("");
    !matches!(first, "it" | "this" | "that" | "they" | "he" | "she" | "you" | "there" | "which" | "what")
        && VERBS.iter().any(|v| s.contains(v))
        && !kinds_in(s).is_empty()
        && !s.contains(" was ")
        && !s.contains(" were ")
}

/// Whether a sentence says someone switched from one thing to another for good ("I moved from
/// Arch to macOS", "we finished the move from AWS to Hetzner", "switch to Australian English").
fn switched(s: &str) -> bool {
    const VERBS: &[&str] = &[
        "moved",
        "switched",
        "migrated",
        "bumped",
        "move",
        "switch",
        "migrate",
        "went",
        "changed",
        "upgraded",
        "downgraded",
        "moving",
        "switching",
        "migrating",
    ];
    let words: Vec<&str> = s.split_whitespace().collect();
    if s.ends_with(" to that") || s.ends_with(" to it") || s.ends_with(" to this") {
        return false;
    }
    let subject_ok = matches!(
        words.first().copied(),
        Some("i" | "we" | "we've" | "i've" | "we're" | "i'm" | "switch" | "move" | "migrate")
    ) || s.starts_with("please switch")
        || s.starts_with("we finished the move")
        || s.starts_with("we completed the move");
    let verb = words.iter().take(5).any(|w| VERBS.contains(&w.trim_end_matches(','))) || s.contains(" the move ");
    subject_ok
        && verb
        && s.contains(" to ")
        && !s.contains(" file")
        && !s.contains(" the branch")
        && !s.contains(" this ")
}

/// Whether a sentence states a rule over everything of a kind ("emojis never go in commits",
/// "everything has to keep running on Python 3.11", "@yusuf has to approve anything touching
/// auth").
fn universal(s: &str) -> bool {
    const WORDS: &[&str] = &["always", "never", "everything", "anything", "nothing", "everywhere", "no one", "nobody"];
    let first = s.split_whitespace().next().unwrap_or("");
    if matches!(first, "it" | "this" | "that" | "he" | "she" | "they" | "you" | "there" | "which" | "what") {
        return false;
    }
    // Code's behaviour ("the retry logic never gives up") is a bug report, not a rule.
    const CODE: &[&str] = &[
        "logic",
        "function",
        "loop",
        "handler",
        "method",
        "script",
        "job ",
        "the test",
        "the build",
        "parser",
        "query",
        "endpoint",
        "worker",
        "server",
        "client",
        "it ",
        "the app",
        "the page",
        "the button",
        "cron",
        "the sync",
        "the pipeline",
        "retry",
        "the cache ",
        "the tests",
        "the ci",
    ];
    if CODE.iter().any(|c| s.contains(c)) || (s.contains('/') && s.contains('.')) {
        return false;
    }
    let modal = ["has to", "have to", "must", "should", "needs to", "need to", " go ", " goes ", " gets ", " get "];
    WORDS.iter().any(|w| contains_phrase(s, w))
        && (modal.iter().any(|m| s.contains(m)) || s.starts_with("all ") || s.starts_with("every "))
}

/// Whether a sentence gives a project's thing a value: "the job queue is kafka", "JSON fields
/// are snake_case", "dates in the ui are DD/MM/YYYY", "the max line length is 120".
fn attribute(s: &str) -> bool {
    let Some((subject, value)) = split_is(s) else { return false };
    let subject = subject.trim();
    let first = subject.split_whitespace().next().unwrap_or("");
    if subject.is_empty()
        || matches!(
            first,
            "it" | "this"
                | "that"
                | "there"
                | "he"
                | "she"
                | "they"
                | "you"
                | "i"
                | "we"
                | "what"
                | "which"
                | "who"
                | "here"
                | "let"
                | "lets"
                | "let's"
                | "that's"
                | "it's"
                | "what's"
                | "there's"
                | "here's"
        )
        || subject.contains('/')
    {
        return false;
    }
    let words = subject.split_whitespace().count();
    const TRANSIENT_NOUNS: &[&str] = &[
        "error",
        "problem",
        "issue",
        "test",
        "build",
        "output",
        "log",
        "bug",
        "result",
        "fix",
        "diff",
        "change",
        "pr",
        "branch",
        "file",
        "function",
        "line",
        "code",
        "value",
        "response",
        "request",
        "failure",
        "crash",
        "reason",
        "cause",
        "question",
        "answer",
        "thing",
        "point",
        "idea",
        "plan",
        "guess",
        "trace",
        "stack",
        "exception",
        "warning",
        "message",
        "status",
        "run",
        "job",
        "step",
        "query",
        "page",
        "button",
        "endpoint",
        "script",
        "sync",
        "pipeline",
        "worker",
        "deploy",
        "release",
        "check",
        "tests",
        "lint",
        "commit",
        "merge",
    ];
    let head = subject.split_whitespace().last().unwrap_or("");
    let value = value.trim().trim_end_matches(['.', '!']);
    const TRANSIENT_VALUES: &[&str] = &[
        "broken",
        "failing",
        "flaky",
        "empty",
        "wrong",
        "missing",
        "slow",
        "fine",
        "ok",
        "okay",
        "null",
        "undefined",
        "red",
        "green",
        "off",
        "down",
        "up",
        "done",
        "weird",
        "odd",
        "strange",
        "gone",
        "stale",
        "stuck",
        "failed",
        "passing",
        "fixed",
        "blocked",
        "back",
        "better",
        "worse",
        "too ",
        "still ",
        "not ",
        "a mess",
        "messy",
        "confusing",
        "huge",
        "tiny",
        "timing out",
        "crashing",
        "hanging",
        "noisy",
        "in ",
        "on ",
        "at ",
        "from ",
        "being ",
        "getting ",
        "now ",
        "probably",
        "maybe",
    ];
    (1..=5).contains(&words)
        && !TRANSIENT_NOUNS.contains(&head)
        && !value.is_empty()
        && value.split_whitespace().count() <= 6
        && !vague(value)
        && !TRANSIENT_VALUES.iter().any(|t| value == t.trim() || value.starts_with(t))
        && !value.ends_with("ing")
        && !value.split_whitespace().next().is_some_and(|w| w.ends_with("ing"))
}

/// Whether a sentence instructs the agent for good: an imperative about a kind of thing ("write
/// commits with gitmoji", "keep PRs under 200 lines"), or one that says what to use instead of
/// what ("use poetry for python deps, not pip").
fn instruction(s: &str) -> bool {
    const VERBS: &[&str] = &[
        "use",
        "indent",
        "format",
        "write",
        "type check",
        "type-check",
        "lint",
        "keep",
        "target",
        "tag",
        "name",
        "prefix",
        "put",
        "give me",
        "prefer",
        "avoid",
        "wrap",
        "sort",
        "document",
        "log",
        "report",
        "route",
        "send",
        "pin",
        "squash",
        "rebase",
        "sign",
        "spell",
        "answer",
        "reply",
        "respond",
        "explain",
        "default to",
        "stick to",
        "stick with",
        "stay on",
        "build with",
        "test with",
        "deploy to",
        "deploy on",
        "ship on",
        "annotate",
        "comment",
        "quote",
        "capitalize",
        "capitalise",
        "call",
        "refer to",
        "address me",
        "speak",
        "go with",
        "treat",
    ];
    /// Kinds of things an instruction for good is about.
    const KINDS: &[&str] = &[
        "commits",
        "commit messages",
        "tests",
        "prs",
        "pull requests",
        "files",
        "strings",
        "dates",
        "functions",
        "branches",
        "comments",
        "docs",
        "errors",
        "logs",
        "explanations",
        "answers",
        "variables",
        "names",
        "deps",
        "dependencies",
        "imports",
        "lines",
        "code",
        "everything",
        "anything",
        "all ",
        "every ",
        "any ",
        "timestamps",
        "times",
        "numbers",
        "messages",
        "replies",
        "responses",
        "changes",
        "diffs",
        "spelling",
        "migrations",
        "queries",
        "types",
        "classes",
        "modules",
        "packages",
        "endpoints",
        "reviews",
        "releases",
        "deploys",
    ];
    let Some(verb) = VERBS.iter().find(|v| starts_with_phrase(s, v)) else { return false };
    let object = s[verb.len()..].trim_start();
    const SPECIFIC: &[&str] = &[
        "the existing",
        "the same",
        "this",
        "that",
        "it ",
        "it,",
        "a ",
        "an ",
        "the new",
        "the old",
        "the other",
        "my ",
        "your ",
        "the test",
        "the file",
        "the function",
        "the helper",
        "the output",
        "the log",
        "the fix",
        "the change",
        "going",
        "trying",
        "looking",
    ];
    if object.is_empty() || SPECIFIC.iter().any(|p| object.starts_with(p)) || object.split_whitespace().count() > 14 {
        return false;
    }
    let general = KINDS.iter().any(|k| contains_phrase(object, k.trim_end()));
    let contrast = [", not ", " not ", " instead of ", " rather than ", " over "].iter().any(|c| object.contains(c));
    let firm = ["always", "everywhere", "never", "only", "from now on", "by default", "read-only", "read only"]
        .iter()
        .any(|w| contains_phrase(object, w));
    let purpose = object.contains(" for ") && !object.contains(" for this") && !object.contains(" for now");
    let tool = matches!(*verb, "indent" | "format" | "type check" | "type-check" | "lint" | "test with" | "build with")
        && object.starts_with("with ");
    let versioned = matches!(*verb, "target" | "pin" | "stay on" | "stick to" | "stick with")
        && object.split_whitespace().take(3).any(|w| w.chars().any(|c| c.is_ascii_digit()));
    general || contrast || firm || tool || versioned || (purpose && *verb == "use")
}

/// Whether what follows "my"/"our" is a lasting attribute: "my editor is helix", "our stack is
/// rust", "my timezone is cet".
fn possessive(after: &str) -> bool {
    let Some((subject, value)) = split_is(after) else {
        // "our ci runs on …", "our team deploys …"
        let mut words = after.split_whitespace();
        let noun = words.next().unwrap_or("");
        let verb = words.next().unwrap_or("");
        return !PASSING.contains(&noun)
            && matches!(verb, "runs" | "uses" | "deploys" | "targets" | "requires" | "supports" | "ships" | "must");
    };
    let subject = subject.trim();
    let words = subject.split_whitespace().count();
    (1..=4).contains(&words) && !PASSING.iter().any(|p| subject == *p || subject.ends_with(p)) && !vague(value)
}

/// "X is Y" / "X are Y" / "X will be Y" split at the verb: (X, Y).
fn split_is(s: &str) -> Option<(&str, &str)> {
    for verb in [
        " is now ",
        " are now ",
        " is ",
        " are ",
        " will be ",
        " has moved to ",
        " moved to ",
        " changed to ",
        " was moved to ",
        " got moved to ",
        " should be ",
        "'s ",
    ] {
        if let Some(at) = s.find(verb) {
            return Some((&s[..at], &s[at + verb.len()..]));
        }
    }
    None
}

/// A value that says nothing lasting ("it", "fine", "broken").
fn vague(value: &str) -> bool {
    let v = value.trim().trim_end_matches(['.', '!']);
    matches!(
        v,
        "" | "it"
            | "this"
            | "that"
            | "fine"
            | "ok"
            | "okay"
            | "good"
            | "bad"
            | "broken"
            | "wrong"
            | "right"
            | "done"
            | "failing"
            | "weird"
            | "odd"
            | "strange"
            | "here"
            | "there"
    ) || v.starts_with("that ")
        || v.starts_with("broken")
        || v.starts_with("failing")
        || v.starts_with("not working")
        || v.starts_with("still ")
}

/// Nouns "the X is …" states for good.
fn is_attribute(subject: &str) -> bool {
    const NOUNS: &[&str] = &[
        "deadline",
        "due date",
        "release date",
        "launch date",
        "cutoff",
        "cut-off",
        "freeze",
        "code freeze",
        "minimum",
        "min",
        "maximum",
        "max",
        "target",
        "supported",
        "default",
        "convention",
        "rule",
        "policy",
        "standard",
        "style",
        "version",
        "budget",
        "limit",
        "timezone",
        "time zone",
        "owner",
        "maintainer",
        "stack",
        "database",
        "db",
        "language",
        "framework",
        "license",
        "licence",
        "branch",
        "main branch",
        "default branch",
        "registry",
        "region",
        "provider",
        "package manager",
        "formatter",
        "linter",
        "runtime",
        "editor",
        "os",
        "platform",
        "python version",
        "node version",
        "rust version",
        "go version",
        "java version",
        "line length",
        "indentation",
        "indent",
        "tab width",
        "port",
        "release",
        "release day",
        "deploy day",
        "on-call",
        "review",
        "reviewer",
        "ci",
        "test runner",
        "orm",
        "cloud",
    ];
    NOUNS.iter().any(|n| {
        subject == *n || subject.ends_with(&alloc::format!(" {n}")) || subject.starts_with(&alloc::format!("{n} "))
    })
}

/// What the sentence is about, to find an earlier one it gives another value to.
fn topic(s: &str) -> Option<String> {
    let s = s.trim_start_matches("the ");
    if let Some(rest) = s.strip_prefix("my ").or_else(|| s.strip_prefix("our ")).or(Some(s))
        && let Some((subject, _)) = split_is(rest)
    {
        let subject = subject.trim_start_matches("the ").trim();
        let words = subject.split_whitespace().count();
        if (1..=4).contains(&words) && !subject.starts_with("i ") && !subject.starts_with("we ") {
            return Some(subject.to_string());
        }
    }
    None
}

/// The value a bare correction gives ("make that 4 spaces" → "4 spaces").
fn bare(s: &str) -> Option<&str> {
    for lead in BARE {
        if let Some(value) = s.strip_prefix(lead) {
            let value = value.trim_start_matches([',', ':', ' ']).trim().trim_end_matches(['.', '!']);
            let words = value.split_whitespace().count();
            if (1..=8).contains(&words) {
                return Some(value);
            }
        }
    }
    None
}

/// Which of `candidates` (observations, newest first) `statement` replaces, if any.
pub fn replaced(statement: &Statement, candidates: &[&str]) -> Option<usize> {
    let lower: Vec<String> = candidates.iter().map(|c| normalise_quotes(&c.to_lowercase())).collect();
    match &statement.correction {
        // A bare correction: the newest line about the same thing, else the newest line.
        Correction::Previous => {
            let new = statement.observation.to_lowercase();
            let about = concepts_of(&new);
            let found = lower.iter().position(|c| concepts_of(c).iter().any(|k| about.contains(k)));
            // Else the newest line with a value of the same shape (a host name for a host name).
            let shape = shapes(&new);
            let shaped = lower.iter().position(|c| !shape.is_empty() && shapes(c).iter().any(|k| shape.contains(k)));
            return found.or(shaped).or((!candidates.is_empty()).then_some(0));
        }
        Correction::Replaces(dropped) if !dropped.is_empty() => {
            if let Some(i) = lower.iter().position(|c| dropped.iter().any(|d| decisions::has_word(c, d))) {
                return Some(i);
            }
        }
        _ => {}
    }
    let new = statement.observation.to_lowercase();
    // The same topic with another value ("the deadline is …" again).
    if let Some(topic) = &statement.topic {
        if let Some(i) = lower.iter().position(|c| {
            let c_topic = self::topic(c.trim_start_matches("the user's ").trim_start_matches("the user "));
            c_topic.as_deref() == Some(topic.as_str()) && *c != new
        }) {
            return Some(i);
        }
        // A correction's topic ("what I said about indentation") named in an earlier line, or
        // said by it in other words ("the off-limits folder" of "never edit vendor/").
        let words = content_words(topic);
        if matches!(statement.correction, Correction::Replaces(_))
            && !words.is_empty()
            && let Some(i) = lower
                .iter()
                .position(|c| *c != new && (words.iter().all(|w| stem_in(c, w)) || same_concept(topic, c)))
                .or_else(|| {
                    // The line holding the most of its words, a name weighing more than a generic
                    // word ("node" more than "version"); the newest of equals.
                    const GENERIC: &[&str] = &[
                        "version", "name", "names", "style", "format", "rule", "policy", "setting", "default", "owner",
                        "folder", "file", "files", "case", "thing", "stuff", "choice", "plan", "setup", "config",
                    ];
                    let weight = |c: &String| -> usize {
                        words
                            .iter()
                            .filter(|w| stem_in(c, w))
                            .map(|w| if GENERIC.contains(&w.as_str()) { 1 } else { 2 })
                            .sum()
                    };
                    let best = lower.iter().filter(|c| **c != new).map(weight).max().unwrap_or(0);
                    (best > 0).then(|| lower.iter().position(|c| *c != new && weight(c) == best)).flatten()
                })
        {
            return Some(i);
        }
    }
    if matches!(statement.correction, Correction::Replaces(_)) {
        // Another date for the same event ("the code freeze starts november 27 now").
        if names_date(&new) && SCHEDULED.iter().any(|e| new.contains(e)) {
            let dated = |c: &String| *c != new && names_date(c);
            let same_event =
                lower.iter().position(|c| dated(c) && SCHEDULED.iter().any(|e| new.contains(e) && c.contains(e)));
            if let Some(i) =
                same_event.or_else(|| lower.iter().position(|c| dated(c) && SCHEDULED.iter().any(|e| c.contains(e))))
            {
                return Some(i);
            }
        }
        // Something else said of the same thing ("I'm in Toronto now" of "I work out of Singapore").
        let about = concepts_of(&new);
        if !about.is_empty()
            && let Some(i) = lower.iter().position(|c| *c != new && concepts_of(c).iter().any(|k| about.contains(k)))
        {
            return Some(i);
        }
        // Another value of the same kind ("valkey" for "memcached", "macos" for "arch linux").
        let kinds = kinds_in(&new);
        if !kinds.is_empty()
            && let Some(i) = lower.iter().position(|c| kinds_in(c).iter().any(|k| kinds.contains(k)) && *c != new)
        {
            return Some(i);
        }
        // A correction that names no topic and drops nothing: the newest statement that shares
        // its verb and a word of what it is about.
        let new = content_words(&statement.observation.to_lowercase());
        let verb = lead_verb(&statement.observation.to_lowercase());
        if let Some(i) = lower.iter().position(|c| {
            let shared = content_words(c).iter().filter(|w| new.contains(w)).count();
            verb.is_some() && lead_verb(c) == verb && shared >= 1
        }) {
            return Some(i);
        }
    }
    None
}

/// Whether `text` holds `word` or a word with its stem (its first five letters: "indent" and
/// "indentation").
fn stem_in(text: &str, word: &str) -> bool {
    let stem: String = word.chars().take(5).collect();
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .any(|w| w == word || (stem.len() >= 4 && w.starts_with(&stem)))
}

/// The first verb of a third-person observation ("the user prefers …" → "prefer").
fn lead_verb(o: &str) -> Option<&'static str> {
    const VERBS: &[&str] = &[
        "prefer", "like", "love", "hate", "use", "want", "deploy", "release", "ship", "target", "support", "run",
        "write", "indent", "work", "live",
    ];
    let words: Vec<&str> = o.split_whitespace().take(6).collect();
    words.iter().find_map(|w| VERBS.iter().find(|v| w.starts_with(*v)).copied())
}

/// Words that say what a sentence is about (not its pronouns, verbs of liking or fillers).
fn content_words(s: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "the", "user", "user's", "a", "an", "and", "or", "to", "of", "in", "on", "for", "with", "we", "our", "us",
        "is", "are", "be", "it", "that", "this", "always", "never", "prefers", "prefer", "likes", "like", "use",
        "uses", "using", "now", "not", "no", "longer", "anymore", "actually", "instead", "than", "rather", "over",
        "all", "every", "should", "must", "want", "wants", "do", "don't", "does", "from", "by", "at", "as", "so", "i",
        "my", "me", "you", "your", "will", "would", "just", "only", "please", "make", "sure",
    ];
    s.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '.' || c == '-' || c == '+' || c == '#'))
        .map(|w| w.trim_matches(['.', '\'']))
        .filter(|w| w.len() > 1 && !STOP.contains(w))
        .map(ToString::to_string)
        .collect()
}

/// "not X anymore", "no X any more", "not X any longer": the X.
fn not_anymore(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for end in [" anymore", " any more", " any longer"] {
        if let Some(at) = s.find(end) {
            let before = &s[..at];
            if let Some(not) = before.rfind("not ").or_else(|| before.rfind("no ")) {
                let name = before[not..].split_once(' ').map(|x| x.1).unwrap_or("");
                let name = name.trim_start_matches("using ").trim_start_matches("on ").trim_start_matches("the ");
                let name = name.trim_start_matches("use ").trim();
                if !name.is_empty() && name.split_whitespace().count() <= 3 {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// Whose memory a sentence belongs in: the project's when it speaks for "we" or of the project.
fn scope_of(s: &str) -> Scope {
    let project_words =
        ["we", "we're", "we've", "we'll", "our", "ours", "us", "let's", "lets", "team", "repo", "project", "codebase"];
    let first_person = ["i", "i'm", "i've", "i'll", "i'd", "my", "me", "im"];
    let words: Vec<&str> = s.split(|c: char| !(c.is_alphanumeric() || c == '\'')).filter(|w| !w.is_empty()).collect();
    let first_user = words.iter().position(|w| first_person.contains(w));
    let first_project = words.iter().position(|w| project_words.contains(w));
    match (first_user, first_project) {
        (Some(u), Some(p)) if p < u => Scope::Project,
        (None, Some(_)) => Scope::Project,
        (None, None) if PROJECT_SUBJECTS.iter().any(|p| s.contains(p)) || s.starts_with("the ") => Scope::Project,
        _ => Scope::User,
    }
}

/// The sentence in the third person: "I prefer tabs" → "the user prefers tabs".
pub fn third_person(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let words: Vec<&str> = s.split(' ').collect();
    for (i, word) in words.iter().enumerate() {
        let (core, tail) = split_punctuation(word);
        let replaced: Option<&str> = match core {
            "i" => {
                // "I prefer" → "the user prefers": the verb after it takes its -s.
                Some("the user")
            }
            "i'm" | "im" => Some("the user is"),
            "i've" => Some("the user has"),
            "i'll" => Some("the user will"),
            "i'd" => Some("the user would"),
            "my" => Some("the user's"),
            "me" | "myself" => Some("the user"),
            "am" if i > 0 && words[i - 1] == "i" => Some("is"),
            _ => None,
        };
        if !out.is_empty() {
            out.push(' ');
        }
        match replaced {
            Some(r) => out.push_str(r),
            None if i > 0 && split_punctuation(words[i - 1]).0 == "i" => out.push_str(&third_person_verb(core)),
            None => out.push_str(core),
        }
        out.push_str(tail);
    }
    out.trim().trim_end_matches(['.', '!', ',', ';', ':']).trim().to_string()
}

/// A verb after "I" as after "the user" ("prefer" → "prefers", "have" → "has").
fn third_person_verb(verb: &str) -> String {
    match verb {
        "have" => "has".into(),
        "do" => "does".into(),
        "don't" => "doesn't".into(),
        "am" => "is".into(),
        "was" | "always" | "never" | "really" | "strongly" | "usually" | "generally" | "also" | "still" | "just"
        | "only" | "personally" | "definitely" | "totally" | "much" | "absolutely" | "mostly" | "now" | "can't"
        | "cannot" | "will" | "would" | "should" | "must" | "no" | "honestly" | "actually" => verb.into(),
        v if v.ends_with("ed") => v.into(),
        v if v.ends_with('s') || v.ends_with("sh") || v.ends_with("ch") || v.ends_with('x') || v.ends_with('o') => {
            alloc::format!("{v}es")
        }
        v if v.ends_with('y') && !v.ends_with("ay") && !v.ends_with("ey") && !v.ends_with("oy") => {
            alloc::format!("{}ies", &v[..v.len() - 1])
        }
        v => alloc::format!("{v}s"),
    }
}

fn split_punctuation(word: &str) -> (&str, &str) {
    let end = word.trim_end_matches([',', '.', '!', ';', ':', ')', '"']).len();
    (&word[..end], &word[end..])
}

/// The sentences of a message and whether each is a question. Code blocks and quoted lines
/// (`>`) are left out; a sentence ends at `.`, `!`, `?` or `;` followed by a space or the end,
/// and at a line's end.
fn sentences(message: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in message.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || trimmed.starts_with('>') || trimmed.starts_with("    ") || line.starts_with('\t') {
            continue;
        }
        let trimmed = trimmed.trim_start_matches(['-', '*', '•']).trim_start();
        let bytes = trimmed.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let ends = matches!(b, b'.' | b'!' | b'?' | b';')
                && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace())
                && !abbreviation(&trimmed[start..i]);
            if ends {
                let s = trimmed[start..=i].trim();
                if !s.is_empty() {
                    out.push((s, b == b'?'));
                }
                start = i + 1;
            }
        }
        let s = trimmed[start..].trim();
        if !s.is_empty() {
            out.push((s, s.ends_with('?')));
        }
    }
    out
}

/// Whether the text before a `.` ends with an abbreviation ("e.g", "i.e", "etc", "vs").
fn abbreviation(before: &str) -> bool {
    let last = before.rsplit(' ').next().unwrap_or("").to_lowercase();
    matches!(last.as_str(), "e.g" | "i.e" | "etc" | "vs" | "approx" | "no" | "mr" | "ms" | "dr")
}

/// Strips leading fillers and correction markers; whether a correction marker was there.
fn strip_markers(s: &str) -> (&str, bool) {
    let mut rest = s.trim();
    let mut correcting = false;
    loop {
        let before = rest;
        for marker in CORRECTING {
            if let Some(after) = strip_phrase(rest, marker) {
                // "so" and "well" only lead; they correct nothing alone.
                if !matches!(*marker, "so" | "well" | "hmm" | "ok so" | "sorry for the confusion" | "sorry about that")
                {
                    correcting = true;
                }
                rest = after;
            }
        }
        for filler in FILLERS {
            if let Some(after) = strip_phrase(rest, filler) {
                rest = after;
            }
        }
        if rest == before {
            return (rest, correcting);
        }
    }
}

/// Strips what asks for a statement to be remembered; whether it was there.
fn strip_remember(s: &str) -> (&str, bool) {
    for marker in REMEMBER {
        if let Some(after) = strip_phrase(s, marker) {
            // "remember to run the tests before you push" is a rule; "remember when …" is not.
            if after.starts_with("when ") || after.starts_with("how ") || after.starts_with("what ") {
                return (s, false);
            }
            let after = after.strip_prefix("that ").unwrap_or(after);
            let after = after.strip_prefix("this:").unwrap_or(after);
            return (after.trim_start_matches([':', ',', ' ']), true);
        }
    }
    (s, false)
}

/// `s` without the phrase `p` at its start (followed by a word boundary and optional `,` `:`
/// `-` `!`), or `None`.
fn strip_phrase<'a>(s: &'a str, p: &str) -> Option<&'a str> {
    let after = s.strip_prefix(p)?;
    let next = after.chars().next();
    if next.is_some_and(|c| c.is_alphanumeric() || c == '\'') {
        return None;
    }
    Some(after.trim_start_matches([',', ':', '-', '!', '.', ' ', '—', '–']).trim_start())
}

fn starts_with_phrase(s: &str, p: &str) -> bool {
    strip_phrase(s, p).is_some()
}

/// Whether `phrase` occurs in `s` at word boundaries.
fn contains_phrase(s: &str, phrase: &str) -> bool {
    let phrase = phrase.trim_end();
    let mut from = 0;
    while let Some(at) = s[from..].find(phrase) {
        let start = from + at;
        let end = start + phrase.len();
        let word = |c: char| c.is_alphanumeric() || c == '\'' || c == '_';
        let before_ok = start == 0 || !s[..start].chars().next_back().is_some_and(word);
        let after_ok = !s[end..].chars().next().is_some_and(word);
        if before_ok && after_ok {
            return true;
        }
        from = end;
    }
    false
}

/// The byte offset of `word` as a whole word in `s`.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = s[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let before_ok = start == 0 || s.as_bytes()[start - 1] == b' ';
        let after_ok = end == s.len() || s.as_bytes()[end] == b' ';
        if before_ok && after_ok {
            return Some(start);
        }
        from = end;
    }
    None
}

/// What follows one of `subjects` at the start of `s` (a word boundary after it).
fn after_subject<'a>(s: &'a str, subjects: &[&str]) -> Option<&'a str> {
    let mut best: Option<&str> = None;
    for subject in subjects {
        if let Some(after) = s.strip_prefix(subject)
            && after.starts_with(' ')
            && best.is_none_or(|b| after.len() < b.len())
        {
            best = Some(after.trim_start());
        }
    }
    best
}

/// What follows one of `verbs` (after optional adverbs) at the start of `s`.
fn after_verb<'a>(s: &'a str, verbs: &[&str]) -> Option<&'a str> {
    let mut rest = s.trim_start();
    loop {
        let before = rest;
        for adverb in ADVERBS {
            if let Some(after) = rest.strip_prefix(adverb)
                && after.starts_with(' ')
                && !verbs.iter().any(|v| rest.starts_with(v) && v.len() > adverb.len())
            {
                rest = after.trim_start();
            }
        }
        if rest == before {
            break;
        }
    }
    let mut best: Option<&str> = None;
    for verb in verbs {
        if let Some(after) = rest.strip_prefix(verb) {
            let boundary = after.is_empty()
                || after.starts_with([' ', ','])
                || (after.starts_with('s') && after[1..].starts_with(' '));
            if boundary && best.is_none_or(|b| after.len() < b.len()) {
                best = Some(after.trim_start_matches('s').trim_start());
            }
        }
    }
    best
}

/// Whether what a verb of liking or deciding is about is something for good (not "it", "that",
/// "you to …", "the way you did that").
fn lasting_object(object: &str) -> bool {
    let object = object.trim();
    if object.is_empty() {
        return false;
    }
    const PASSING_OBJECTS: &[&str] = &[
        "it",
        "it.",
        "it!",
        "that",
        "that.",
        "this",
        "this.",
        "these",
        "those",
        "you to",
        "you",
        "the way you",
        "the idea",
        "the change",
        "the changes",
        "the fix",
        "the new",
        "your",
        "what you",
        "how you",
        "a look",
        "to see",
        "to know",
        "to check",
        "to try",
        "to ask",
        "to fix",
        "to run",
        "to look",
        "to understand",
        "help",
        "some help",
        "a minute",
        "a second",
        "a break",
        "to go home",
        "more time",
        "a fix",
        "a quick",
        "on this",
        "on it",
        "on the",
        "at this",
        "here",
        "there",
        "late",
        "today",
        "tonight",
        "this morning",
        "the tests",
        "the test",
        "the build",
        "the log",
        "the logs",
        "the output",
        "the error",
        "the pr",
        "the diff",
    ];
    !PASSING_OBJECTS.iter().any(|p| {
        object == *p || object.starts_with(&alloc::format!("{p} ")) || object.starts_with(&alloc::format!("{p},"))
    })
}

/// Whether what follows the subject asks for something now ("I want you to fix …", "we need
/// to fix this bug").
fn starts_transient_request(after: &str) -> bool {
    const NOW: &[&str] = &[
        "want you to",
        "need you to",
        "'d like you to",
        "would like you to",
        "want to see",
        "need to fix",
        "need to find",
        "need to figure",
        "need to check",
        "need to debug",
        "need to look",
        "need to update",
        "need to add",
        "need to change",
        "need to get",
        "have to fix",
        "just need",
        "need a",
        "need to finish",
        "need to ship this",
        "need to merge",
        "are going to need",
        "will need",
        "need to",
        "have a",
        "have an",
        "have the",
        "have some",
        "have to go",
        "should",
        "could",
        "can ",
        "might",
        "may ",
        "tried",
        "was ",
        "were ",
        "did ",
        "got ",
        "saw ",
        "see ",
        "noticed",
        "think",
        "guess",
        "hope",
        "wonder",
        "suspect",
        "forgot",
        "asked",
        "said",
        "just ",
        "merged",
        "pushed",
        "fixed",
        "broke",
        "ran ",
        "wrote ",
        "added",
        "removed",
        "changed",
        "updated",
        "renamed",
        "moved the",
        "deleted",
        "looked",
        "checked",
        "tested",
        "deployed it",
        "shipped it",
        "released it",
        "are done",
        "are almost",
        "are close",
        "are blocked",
        "'re done",
        "'re blocked",
        "are seeing",
        "'re seeing",
        "are getting",
        "'re getting",
        "are hitting",
        "'re hitting",
        "get ",
    ];
    NOW.iter().any(|n| after.starts_with(n))
}

/// Whether a sentence reports what someone else says or wants ("Dana wants GraphQL").
fn reported(original: &str) -> bool {
    let mut words = original.split_whitespace();
    let (Some(first), Some(second)) = (words.next(), words.next()) else { return false };
    let named = first.chars().next().is_some_and(char::is_uppercase)
        && !matches!(
            first,
            "I" | "I'm"
                | "I've"
                | "I'd"
                | "I'll"
                | "We"
                | "We're"
                | "We've"
                | "We'll"
                | "My"
                | "Our"
                | "The"
                | "Always"
                | "Never"
                | "Please"
                | "Remember"
                | "Actually"
                | "Let's"
                | "Don't"
                | "Do"
                | "From"
                | "Going"
                | "In"
                | "Note"
                | "Also"
                | "Btw"
                | "BTW"
                | "FYI"
                | "Fyi"
                | "Ok"
                | "OK"
                | "Okay"
                | "So"
                | "And"
                | "But"
                | "Oh"
                | "No"
                | "Not"
                | "All"
                | "Every"
                | "Each"
                | "Any"
                | "This"
                | "That"
                | "Scratch"
                | "Change"
                | "Correction"
                | "Update"
                | "Sorry"
                | "Wait"
                | "Hmm"
                | "Make"
                | "Use"
                | "Keep"
                | "Stick"
                | "Decision"
                | "Rule"
                | "Ps"
                | "PS"
                | "P.S."
                | "Great"
                | "Thanks"
                | "Cool"
                | "Nice"
                | "Yes"
                | "Yeah"
                | "Sure"
                | "Right"
                | "Alright"
        );
    let says = matches!(
        second,
        "says"
            | "said"
            | "wants"
            | "thinks"
            | "prefers"
            | "likes"
            | "suggested"
            | "suggests"
            | "mentioned"
            | "asked"
            | "believes"
            | "proposed"
            | "proposes"
            | "argued"
            | "argues"
            | "recommends"
            | "recommended"
            | "insists"
            | "claims"
            | "uses"
            | "loves"
            | "hates"
            | "would"
            | "might"
            | "feels"
            | "felt"
    );
    (named && says) || first.eq_ignore_ascii_case("apparently")
}

/// Whether a sentence is mostly code (a path, a command, braces).
fn looks_like_code(s: &str) -> bool {
    let symbols = s.chars().filter(|c| matches!(c, '{' | '}' | '(' | ')' | '=' | '<' | '>' | '|' | '$' | '`')).count();
    symbols * 10 > s.len().max(1) || s.starts_with('$') || s.starts_with("cargo ") || s.starts_with("git ")
}

/// Curly quotes as straight ones.
fn normalise_quotes(s: &str) -> String {
    s.replace(['\u{2019}', '\u{2018}'], "'").replace(['\u{201c}', '\u{201d}'], "\"")
}

/// Values whose kind is common knowledge, by kind: a correction that gives a new value of a kind
/// replaces the statement holding another value of that kind ("actually, valkey" replaces "the
/// cache is memcached").
const KINDS_OF_VALUES: &[(&str, &[&str])] = &[
    (
        "hosting",
        &[
            "aws",
            "gcp",
            "google cloud",
            "azure",
            "hetzner",
            "fly.io",
            "fly",
            "railway",
            "heroku",
            "vercel",
            "netlify",
            "render",
            "digitalocean",
            "linode",
            "ovh",
            "cloudflare",
            "kubernetes",
            "k8s",
            "nomad",
            "bare metal",
            "on-prem",
        ],
    ),
    (
        "database",
        &[
            "postgres",
            "postgresql",
            "mysql",
            "mariadb",
            "sqlite",
            "mongodb",
            "mongo",
            "cockroachdb",
            "dynamodb",
            "cassandra",
            "oracle",
            "sql server",
            "mssql",
            "supabase",
            "planetscale",
            "neon",
            "duckdb",
            "clickhouse",
        ],
    ),
    ("cache", &["redis", "memcached", "valkey", "dragonfly", "keydb", "varnish"]),
    (
        "queue",
        &[
            "kafka",
            "rabbitmq",
            "sqs",
            "nats",
            "redis streams",
            "pulsar",
            "celery",
            "sidekiq",
            "beanstalkd",
            "pubsub",
            "kinesis",
        ],
    ),
    (
        "editor",
        &[
            "vim",
            "neovim",
            "nvim",
            "emacs",
            "vscode",
            "vs code",
            "helix",
            "zed",
            "sublime",
            "intellij",
            "goland",
            "pycharm",
            "webstorm",
            "nano",
            "cursor",
            "rustrover",
            "xcode",
        ],
    ),
    (
        "os",
        &[
            "macos",
            "mac",
            "linux",
            "ubuntu",
            "debian",
            "fedora",
            "arch linux",
            "arch",
            "windows",
            "wsl",
            "nixos",
            "freebsd",
            "popos",
            "pop!_os",
            "manjaro",
        ],
    ),
    (
        "package manager",
        &[
            "npm", "yarn", "pnpm", "bun", "pip", "poetry", "uv", "pipenv", "conda", "cargo", "maven", "gradle",
            "bundler", "composer", "hatch", "pdm",
        ],
    ),
    (
        "formatter",
        &[
            "prettier",
            "biome",
            "black",
            "ruff",
            "rustfmt",
            "gofmt",
            "autopep8",
            "yapf",
            "clang-format",
            "dprint",
            "eslint",
            "standard",
        ],
    ),
    (
        "test runner",
        &[
            "jest",
            "vitest",
            "mocha",
            "pytest",
            "unittest",
            "rspec",
            "minitest",
            "junit",
            "testify",
            "ginkgo",
            "nextest",
            "ava",
            "jasmine",
            "playwright",
            "cypress",
        ],
    ),
    (
        "ci",
        &[
            "github actions",
            "gitlab ci",
            "circleci",
            "jenkins",
            "buildkite",
            "travis",
            "drone",
            "woodpecker",
            "azure pipelines",
            "teamcity",
        ],
    ),
    (
        "framework",
        &[
            "react",
            "vue",
            "svelte",
            "sveltekit",
            "solidjs",
            "solid",
            "angular",
            "next.js",
            "nextjs",
            "nuxt",
            "remix",
            "astro",
            "django",
            "flask",
            "fastapi",
            "rails",
            "laravel",
            "spring",
            "express",
            "nestjs",
            "hono",
            "koa",
            "fastify",
            "actix-web",
            "actix",
            "axum",
            "rocket",
            "poem",
            "warp",
            "gin",
            "echo",
            "fiber",
            "chi",
            "phoenix",
            "htmx",
            "gorilla/mux",
            "gorilla",
            "huma",
            "beego",
            "iris",
            "buffalo",
            "sinatra",
            "hanami",
            "symfony",
            "ktor",
            "micronaut",
            "quarkus",
            "vapor",
        ],
    ),
    (
        "orm",
        &[
            "prisma",
            "drizzle",
            "typeorm",
            "sequelize",
            "kysely",
            "knex",
            "sqlalchemy",
            "django orm",
            "diesel",
            "sqlx",
            "seaorm",
            "gorm",
            "ent",
            "activerecord",
            "hibernate",
        ],
    ),
    (
        "logging",
        &["pino", "winston", "bunyan", "log4j", "logback", "zap", "zerolog", "slog", "tracing", "loguru", "structlog"],
    ),
    (
        "monitoring",
        &[
            "sentry",
            "datadog",
            "new relic",
            "honeycomb",
            "grafana",
            "prometheus",
            "rollbar",
            "bugsnag",
            "opentelemetry",
            "elastic",
            "splunk",
            "signoz",
        ],
    ),
    (
        "auth",
        &[
            "auth0",
            "clerk",
            "keycloak",
            "okta",
            "cognito",
            "firebase auth",
            "supabase auth",
            "lucia",
            "nextauth",
            "authentik",
            "ory",
        ],
    ),
    ("api style", &["rest", "graphql", "grpc", "json-rpc", "trpc", "soap", "openapi"]),
    (
        "language",
        &[
            "rust",
            "go",
            "golang",
            "python",
            "typescript",
            "javascript",
            "java",
            "kotlin",
            "swift",
            "ruby",
            "elixir",
            "c#",
            "c++",
            "scala",
            "zig",
            "php",
            "haskell",
            "ocaml",
            "clojure",
        ],
    ),
    (
        "english",
        &["british english", "american english", "australian english", "canadian english", "us english", "uk english"],
    ),
    (
        "naming",
        &["snake_case", "camelcase", "pascalcase", "kebab-case", "screaming_snake_case", "lowercase", "uppercase"],
    ),
    ("indentation", &["tabs", "spaces", "2 spaces", "4 spaces", "two spaces", "four spaces", "8 spaces"]),
    ("quotes", &["single quotes", "double quotes", "backticks"]),
    (
        "merging",
        &[
            "rebase",
            "rebases",
            "squash",
            "squash merges",
            "merge commits",
            "merge commit",
            "fast-forward",
            "squash-merge",
        ],
    ),
    ("commit style", &["conventional commits", "gitmoji", "imperative mood", "imperative", "angular style"]),
    (
        "answer format",
        &[
            "bullet points",
            "bullets",
            "numbered steps",
            "numbered lists",
            "numbered list",
            "a single code block",
            "code blocks",
            "code block",
            "prose",
            "paragraphs",
            "tables",
            "short answers",
            "long answers",
            "one-liners",
            "tl;dr",
        ],
    ),
    (
        "checker",
        &[
            "mypy",
            "pyright",
            "pyre",
            "clippy",
            "golangci-lint",
            "rubocop",
            "flake8",
            "pylint",
            "tsc",
            "staticcheck",
            "shellcheck",
            "hadolint",
            "stylelint",
            "oxlint",
        ],
    ),
    (
        "timezone",
        &[
            "utc", "gmt", "cet", "cest", "eet", "est", "edt", "cst", "cdt", "mst", "pst", "pdt", "aest", "aedt", "ist",
            "jst", "kst", "bst", "nzst", "sgt", "hkt", "brt", "art",
        ],
    ),
    (
        "place",
        &[
            "lisbon",
            "singapore",
            "toronto",
            "berlin",
            "london",
            "paris",
            "madrid",
            "amsterdam",
            "dublin",
            "stockholm",
            "oslo",
            "copenhagen",
            "helsinki",
            "warsaw",
            "prague",
            "vienna",
            "zurich",
            "munich",
            "new york",
            "boston",
            "seattle",
            "san francisco",
            "austin",
            "chicago",
            "denver",
            "vancouver",
            "montreal",
            "sydney",
            "melbourne",
            "auckland",
            "tokyo",
            "seoul",
            "bangalore",
            "bengaluru",
            "mumbai",
            "delhi",
            "dubai",
            "tel aviv",
            "cape town",
            "nairobi",
            "lagos",
            "sao paulo",
            "são paulo",
            "buenos aires",
            "mexico city",
            "bogota",
            "hong kong",
            "shanghai",
            "taipei",
            "manila",
            "jakarta",
            "bangkok",
            "istanbul",
            "athens",
            "rome",
            "milan",
            "barcelona",
            "brussels",
            "edinburgh",
            "manchester",
            "kyiv",
            "tallinn",
            "riga",
            "vilnius",
            "budapest",
            "bucharest",
        ],
    ),
    (
        "weekday",
        &[
            "mondays",
            "tuesdays",
            "wednesdays",
            "thursdays",
            "fridays",
            "saturdays",
            "sundays",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
        ],
    ),
    ("container", &["docker", "podman", "containerd", "lima", "colima", "orbstack", "rancher desktop"]),
    ("container image", &["alpine", "distroless", "debian-slim", "ubuntu", "scratch", "wolfi", "chainguard"]),
    ("bundler", &["webpack", "vite", "esbuild", "rollup", "parcel", "turbopack", "rspack", "swc"]),
    ("license", &["mit", "apache-2.0", "apache 2.0", "gpl", "gplv3", "agpl", "bsd", "mpl", "unlicense"]),
];

/// What a correction's topic may be called, and how the lines it corrects say it.
const CONCEPTS: &[(&[&str], &[&str])] = &[
    (
        &["off-limits", "off limits", "hands-off", "untouchable", "don't touch", "read-only"],
        &[
            "never edit",
            "don't touch",
            "do not touch",
            "never touch",
            "off limits",
            "off-limits",
            "don't modify",
            "never modify",
            "hands off",
            "don't edit",
        ],
    ),
    (
        &["hosting", "host", "cloud", "infra", "prod"],
        &["host", "hosted", "lives on", "runs on", "deploy to", "deployed to"],
    ),
    (&["on-call", "on call", "pages", "pager", "rota"], &["on-call", "on call", "pages", "pager", "rota"]),
    (
        &["timezone", "time zone", "location", "where i am", "where i live", "city", "based"],
        &[
            "timezone",
            "time zone",
            "based in",
            "i'm in",
            "the user is in",
            "located in",
            "lives in",
            "live in",
            "work out of",
            "works out of",
            "working out of",
            "work from",
            "works from",
            "utc",
            "gmt",
        ],
    ),
    (&["indentation", "indent", "tabs", "spaces"], &["indent", "tabs", "spaces"]),
    (
        &["format answers", "answers", "answer format", "how you answer", "how you reply", "explanations"],
        &["answers", "numbered", "bullet", "code block", "prose", "explanations", "replies"],
    ),
    (&["naming", "case", "field names", "file names"], &["case", "camel", "snake", "pascal", "kebab"]),
    (&["spelling", "english", "language"], &["english", "spelling"]),
    (&["review", "reviews", "approval", "approvals", "approver"], &["review", "approve", "approval"]),
    (&["line length", "line width", "max line"], &["line length", "line width", "columns", "chars"]),
];

/// What a line is about: the concepts it names or says (by index), and the kinds of the values it
/// names (offset past the concepts).
fn concepts_of(line: &str) -> Vec<usize> {
    let mut out: Vec<usize> = CONCEPTS
        .iter()
        .enumerate()
        .filter(|(_, (names, said))| names.iter().chain(said.iter()).any(|w| line.contains(w)))
        .map(|(i, _)| i)
        .collect();
    out.extend(
        KINDS_OF_VALUES
            .iter()
            .enumerate()
            .filter(|(_, (_, values))| values.iter().any(|v| contains_phrase(line, v)))
            .map(|(i, _)| CONCEPTS.len() + i),
    );
    out
}

/// Whether a line says what `topic` is about in its own words, or names a value of the kind
/// `topic` names ("hosting" and "we host on aws").
fn same_concept(topic: &str, line: &str) -> bool {
    CONCEPTS
        .iter()
        .any(|(names, said)| names.iter().any(|n| topic.contains(n)) && said.iter().any(|w| line.contains(w)))
        || KINDS_OF_VALUES
            .iter()
            .any(|(kind, values)| topic.contains(kind) && values.iter().any(|v| contains_phrase(line, v)))
}

/// The shapes of the values a line holds: a host name, a date, a version, a path, a number.
fn shapes(line: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let words: Vec<&str> = line.split_whitespace().map(|w| w.trim_end_matches(['.', ',', '!', ')', ':'])).collect();
    if words.iter().any(|w| {
        w.contains('.')
            && !w.starts_with('.')
            && w.split('.').count() >= 2
            && w.split('.').all(|p| !p.is_empty())
            && w.chars().any(char::is_alphabetic)
            && !w.contains('/')
    }) {
        out.push("host");
    }
    if names_date(line) {
        out.push("date");
    }
    if words.iter().any(|w| w.contains('/') && w.len() > 1) {
        out.push("path");
    }
    if words.iter().any(|w| {
        w.split('.').count() >= 2 && w.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    }) {
        out.push("version");
    }
    if words.iter().any(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit())) {
        out.push("number");
    }
    out
}

/// Words of scheduled events.
const SCHEDULED: &[&str] = &[
    "freeze",
    "deadline",
    "release",
    "ship",
    "launch",
    "due",
    "deploy",
    "demo",
    "cutoff",
    "cut-off",
    "go live",
    "go-live",
    "beta",
    "milestone",
    "rollout",
    "handoff",
    "hand-off",
];

/// Months, for dates.
const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

/// The kinds of the known values a text names.
fn kinds_in(text: &str) -> Vec<&'static str> {
    KINDS_OF_VALUES
        .iter()
        .filter(|(_, values)| values.iter().any(|v| contains_phrase(text, v)))
        .map(|(kind, _)| *kind)
        .collect()
}

/// Whether a text names a date (a month and a day, or a weekday).
fn names_date(text: &str) -> bool {
    let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    words.windows(2).any(|w| {
        (MONTHS.contains(&w[0]) && w[1].chars().all(|c| c.is_ascii_digit()) && w[1].len() <= 2)
            || (MONTHS.contains(&w[1])
                && w[0].trim_end_matches(|c: char| c.is_alphabetic()).chars().all(|c| c.is_ascii_digit())
                && !w[0].is_empty()
                && w[0].chars().next().is_some_and(|c| c.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Option<Statement> {
        let mut all = statements(text);
        assert!(all.len() <= 1, "{text}: {all:?}");
        all.pop()
    }

    #[test]
    fn preferences_decisions_and_rules_for_good_are_lasting() {
        let s = one("I prefer tabs over spaces.").unwrap();
        assert_eq!(s.observation, "the user prefers tabs over spaces");
        assert_eq!(s.scope, Scope::User);
        let s = one("ok cool. btw we decided to use Postgres 16 for the store").unwrap();
        assert_eq!(s.scope, Scope::Project);
        assert!(s.observation.contains("Postgres 16"), "the user's own capitals: {s:?}");
        assert!(one("Always write commit messages in the imperative mood").is_some());
        assert_eq!(one("remember that my timezone is CET").unwrap().observation, "the user's timezone is CET");
        assert!(one("The deadline is March 3.").is_some());
        assert!(one("all public functions must have docstrings").is_some());
    }

    #[test]
    fn questions_requests_musings_and_others_words_are_not() {
        for text in [
            "Should we use Redis?",
            "can you run the tests",
            "I want you to fix the flaky test",
            "maybe we'll switch to Bazel someday",
            "Dana prefers GraphQL but I'm not sure",
            "for this PR let's skip the changelog",
            "I like that",
            "if we used Kafka we would need more brokers",
            "we need to fix this bug before lunch",
            "my question is whether it scales",
            "I think we should use Redis",
        ] {
            assert_eq!(one(text), None, "{text}");
        }
    }

    #[test]
    fn corrections_say_what_they_replace() {
        let old = ["the user prefers tabs over spaces", "we use mysql for the store"];
        let s = one("we're not on MySQL anymore, we use Postgres now").unwrap();
        assert_eq!(replaced(&s, &old), Some(1), "{s:?}");
        let s = one("actually, make that 4 spaces").unwrap();
        assert_eq!(s.correction, Correction::Previous);
        assert_eq!(replaced(&s, &old), Some(0));
        let deadline = ["the deadline is march 3"];
        let s = one("change of plan: the deadline is March 10").unwrap();
        assert_eq!(replaced(&s, &deadline), Some(0), "{s:?}");
        let s = one("I prefer dark mode").unwrap();
        assert_eq!(replaced(&s, &old), None);
    }
}
