//! Documents cut into chunks by their structure, not by byte count: Markdown by headings and
//! paragraphs (text-splitter's Markdown splitter), Rust and Python by their syntax trees
//! (its code splitter with the tree-sitter grammars: items, then blocks, then statements), other
//! text by paragraphs, lines and sentences (its text splitter). Sizes are Seshat's own token estimate, so a chunk's size means what the
//! window means; neighbouring chunks overlap a little. Each chunk keeps its line range and, for
//! Markdown, the path of headings it sits under. Pure: no I/O.

use std::ops::Range;

use text_splitter::{ChunkConfig, ChunkSizer, CodeSplitter, MarkdownSplitter, TextSplitter};

/// How a document is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Markdown: headings, then paragraphs, then lines and sentences.
    Markdown,
    /// Rust, split by its syntax tree.
    Rust,
    /// Python, split by its syntax tree.
    Python,
    /// Other source code: blank-line separated blocks, then lines.
    Code,
    /// Anything else that is text.
    Text,
}

impl Kind {
    /// The kind of a file by its extension; `None` for what is not indexed as text.
    pub fn of(path: &std::path::Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "md" | "markdown" | "mdx" => Kind::Markdown,
            "rs" => Kind::Rust,
            "py" | "pyi" => Kind::Python,
            "go" | "js" | "ts" | "tsx" | "jsx" | "java" | "c" | "h" | "cc" | "cpp" | "hpp" | "rb" | "sh" | "toml"
            | "yaml" | "yml" | "json" | "sql" | "swift" | "kt" | "cs" | "php" | "lua" => Kind::Code,
            "txt" | "rst" | "adoc" | "org" | "csv" | "log" | "html" | "xml" => Kind::Text,
            _ => return None,
        })
    }

    /// Its name in the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Markdown => "markdown",
            Kind::Rust => "rust",
            Kind::Python => "python",
            Kind::Code => "code",
            Kind::Text => "text",
        }
    }
}

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Its first line, from 1.
    pub start_line: u32,
    /// Its last line (inclusive).
    pub end_line: u32,
    /// The headings it sits under, outermost first, joined by ` > ` (Markdown; empty otherwise).
    pub heading: String,
    /// Its text, exactly as in the document.
    pub text: String,
    /// Its estimated tokens.
    pub tokens: u64,
}

/// Sizes chunks by Seshat's token estimate.
struct Estimate;

impl ChunkSizer for Estimate {
    fn size(&self, chunk: &str) -> usize {
        crate::window::estimate_text(chunk) as usize
    }
}

/// Chunk size in estimated tokens, and how much neighbours overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    /// The most tokens a chunk holds (a longer unit — one huge line — is cut at words).
    pub max_tokens: usize,
    /// Tokens of the end of one chunk repeated at the start of the next.
    pub overlap_tokens: usize,
}

impl Default for Sizing {
    fn default() -> Self {
        Sizing { max_tokens: 400, overlap_tokens: 40 }
    }
}

/// `text` cut into chunks.
pub fn chunks(text: &str, kind: Kind, sizing: Sizing) -> Vec<Chunk> {
    let max = sizing.max_tokens.max(8);
    let config = ChunkConfig::new(max)
        .with_sizer(Estimate)
        .with_overlap(sizing.overlap_tokens.min(max / 2))
        .expect("the overlap is below the capacity");
    let spans: Vec<Range<usize>> = match kind {
        Kind::Markdown => MarkdownSplitter::new(config).chunk_indices(text).map(|(at, c)| at..at + c.len()).collect(),
        Kind::Rust | Kind::Python => {
            let language = if kind == Kind::Rust { tree_sitter_rust::LANGUAGE } else { tree_sitter_python::LANGUAGE };
            CodeSplitter::new(language, config)
                .expect("the grammars are built for this tree-sitter")
                .chunk_indices(text)
                .map(|(at, c)| at..at + c.len())
                .collect()
        }
        Kind::Code | Kind::Text => {
            TextSplitter::new(config).chunk_indices(text).map(|(at, c)| at..at + c.len()).collect()
        }
    };
    let spans = if matches!(kind, Kind::Rust | Kind::Python) { attach_comments(spans, text, kind) } else { spans };
    // Code only: a parser's boundaries leave scraps (`fn main()`, `}`) that mean nothing alone.
    // (Prose and Markdown were measured too, on the project's own documents: merging there changed
    // no hybrid result and cost one lexical hit, so they are left as the splitter cuts them.)
    let merge = matches!(kind, Kind::Rust | Kind::Python | Kind::Code);
    let spans = if merge { merge_scraps(spans, text, max) } else { spans };
    let starts = line_starts(text);
    let headings = if kind == Kind::Markdown { headings(text) } else { Vec::new() };
    spans
        .into_iter()
        .filter(|r| !text[r.clone()].trim().is_empty())
        .map(|r| {
            let chunk = &text[r.clone()];
            Chunk {
                start_line: line_of(&starts, r.start),
                end_line: line_of(&starts, r.end.saturating_sub(1).max(r.start)),
                heading: heading_at(&headings, r.start, chunk),
                text: chunk.to_string(),
                tokens: crate::window::estimate_text(chunk),
            }
        })
        .collect()
}

/// The fewest characters (trimmed) a chunk stands on its own with: below it (`fn main()`, `}`,
/// a lone heading) it means nothing found alone, and is merged into a neighbour.
pub const MIN_CHUNK_CHARS: usize = 40;

/// Merges each span whose text is a scrap (under [`MIN_CHUNK_CHARS`]) into the span after it, or
/// the last one into the one before, while the merged span stays within `max` estimated tokens.
fn merge_scraps(spans: Vec<Range<usize>>, text: &str, max: usize) -> Vec<Range<usize>> {
    let scrap = |r: &Range<usize>| text[r.clone()].trim().chars().count() < MIN_CHUNK_CHARS;
    let fits = |r: &Range<usize>| crate::window::estimate_text(&text[r.clone()]) as usize <= max;
    let mut out: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    let mut carried: Option<Range<usize>> = None;
    for span in spans {
        let span = match carried.take() {
            Some(c) => {
                let merged = c.start.min(span.start)..c.end.max(span.end);
                if fits(&merged) {
                    merged
                } else {
                    out.push(c);
                    span
                }
            }
            None => span,
        };
        if scrap(&span) {
            carried = Some(span);
        } else {
            out.push(span);
        }
    }
    if let Some(c) = carried {
        match out.last_mut() {
            Some(last) if fits(&(last.start.min(c.start)..last.end.max(c.end))) => {
                *last = last.start.min(c.start)..last.end.max(c.end);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Moves the comment lines that end a chunk (a Rust doc comment or attribute, a Python comment
/// or decorator: the grammar makes them siblings of the item they introduce) to the start of the
/// chunk after it, where their item is, when the two chunks meet without overlapping.
fn attach_comments(mut spans: Vec<Range<usize>>, text: &str, kind: Kind) -> Vec<Range<usize>> {
    let introduces = |line: &str| {
        let l = line.trim_start();
        match kind {
            Kind::Rust => l.starts_with("///") || l.starts_with("#[") || l.starts_with("//"),
            _ => l.starts_with('#') || l.starts_with('@'),
        }
    };
    for i in 0..spans.len().saturating_sub(1) {
        let (here, next) = (spans[i].clone(), spans[i + 1].clone());
        if next.start < here.end || !text[here.end..next.start].trim().is_empty() {
            continue;
        }
        let mut cut = here.end;
        loop {
            let body = text[here.start..cut].trim_end();
            let line_start = here.start + body.rfind('\n').map_or(0, |n| n + 1);
            if line_start <= here.start || !introduces(&text[line_start..here.start + body.len()]) {
                break;
            }
            cut = line_start;
        }
        if cut < here.end && !text[here.start..cut].trim().is_empty() {
            spans[i] = here.start..text[..cut].trim_end().len().max(here.start);
            spans[i + 1] = cut..next.end;
        }
    }
    spans
}

/// `text` cut into consecutive pieces of at most `max_tokens` estimated tokens each, at the
/// largest structural boundary that fits (paragraphs, lines, sentences, words), without overlap
/// and without losing a character: the pieces joined are `text`. Used to embed a text longer
/// than the model takes.
pub fn pieces(text: &str, max_tokens: usize) -> Vec<String> {
    if crate::window::estimate_text(text) as usize <= max_tokens {
        return vec![text.to_string()];
    }
    let config = ChunkConfig::new(max_tokens.max(1)).with_sizer(Estimate).with_trim(false);
    let mut out: Vec<String> = Vec::new();
    let mut end = 0;
    for (at, piece) in TextSplitter::new(config).chunk_indices(text) {
        // Whitespace between pieces goes with the piece before it.
        if let Some(last) = out.last_mut() {
            last.push_str(&text[end..at]);
        }
        out.push(piece.to_string());
        end = at + piece.len();
    }
    if let Some(last) = out.last_mut() {
        last.push_str(&text[end..]);
    }
    out
}

/// The byte offset of each line's start.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

/// The 1-based line holding byte `at`.
fn line_of(starts: &[usize], at: usize) -> u32 {
    (starts.partition_point(|&s| s <= at)) as u32
}

/// Markdown headings outside fenced code: (byte offset, level, title).
fn headings(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
        } else if let Some(rest) = line.strip_prefix('#') {
            let level = 1 + rest.chars().take_while(|&c| c == '#').count();
            let title = rest.trim_start_matches('#');
            if level <= 6 && (title.starts_with(' ') || title.trim().is_empty()) {
                out.push((at, level, title.trim().trim_end_matches('#').trim().to_string()));
            }
        }
        at += line.len();
    }
    out
}

/// The heading path in force at byte `at` — or, for a chunk that opens with a heading, that
/// heading's path.
fn heading_at(headings: &[(usize, usize, String)], at: usize, chunk: &str) -> String {
    let lead = chunk.len() - chunk.trim_start().len();
    let mut path: Vec<(usize, &str)> = Vec::new();
    for (pos, level, title) in headings {
        if *pos > at + lead {
            break;
        }
        path.retain(|(l, _)| l < level);
        path.push((*level, title));
    }
    path.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(" > ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Guide\n\nIntro paragraph.\n\n## Install\n\nRun the installer.\nThen restart.\n\n```sh\n# not a heading\nmake\n```\n\n## Use\n\nOpen the app.\n";

    #[test]
    fn markdown_chunks_keep_their_lines_and_heading_path() {
        let got = chunks(DOC, Kind::Markdown, Sizing { max_tokens: 16, overlap_tokens: 0 });
        let spans: Vec<(u32, u32, &str)> = got.iter().map(|c| (c.start_line, c.end_line, c.heading.as_str())).collect();
        // Sections first; the fenced block (whose `#` line is no heading) shares a chunk with the
        // short section after it, and the chunk is filed under where it starts.
        assert_eq!(spans, [(1, 3, "Guide"), (5, 8, "Guide > Install"), (10, 17, "Guide > Install")], "{got:#?}");
        let lines: Vec<&str> = DOC.lines().collect();
        for c in &got {
            assert_eq!(c.text, lines[c.start_line as usize - 1..c.end_line as usize].join("\n"), "exact lines");
        }
        let small = chunks(DOC, Kind::Markdown, Sizing { max_tokens: 8, overlap_tokens: 0 });
        let last = small.iter().find(|c| c.text.contains("Open the app.")).unwrap();
        assert_eq!((last.heading.as_str(), last.end_line), ("Guide > Use", 17), "{small:#?}");
    }

    #[test]
    fn text_is_cut_within_the_token_budget_and_overlaps() {
        let text: String = (1..=200).map(|i| format!("Line {i} says something about topic {i}.\n")).collect();
        let got = chunks(&text, Kind::Text, Sizing { max_tokens: 100, overlap_tokens: 20 });
        assert!(got.len() > 5);
        assert!(got.iter().all(|c| c.tokens <= 100), "{:?}", got.iter().map(|c| c.tokens).collect::<Vec<_>>());
        assert_eq!(got[0].start_line, 1);
        assert_eq!(got.last().unwrap().end_line, 200);
        assert!(got.windows(2).all(|w| w[1].start_line <= w[0].end_line), "neighbours overlap");
    }

    /// The chunks' texts, each checked to be exactly its lines of `text`.
    fn exact(text: &str, got: &[Chunk]) -> Vec<String> {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for c in got {
            let span: String = lines[c.start_line as usize - 1..c.end_line as usize].concat();
            assert!(
                span.contains(c.text.trim()),
                "chunk {}-{} is within its lines: {:?}",
                c.start_line,
                c.end_line,
                c.text
            );
            assert!(span.trim_start().starts_with(c.text.trim().lines().next().unwrap()), "{span:?} vs {:?}", c.text);
        }
        got.iter().map(|c| c.text.clone()).collect()
    }

    #[test]
    fn rust_is_cut_between_items_not_inside_them() {
        let item = |name: &str| {
            format!(
                "/// Adds {name}.\npub fn {name}(a: u64, b: u64) -> u64 {{\n    let total = a + b;\n    \
                 tracing::debug!(total, \"adding {name}\");\n    total\n}}\n"
            )
        };
        let text: String = (0..12).map(|i| item(&format!("add_{i}"))).collect();
        let got = chunks(&text, Kind::Rust, Sizing { max_tokens: 60, overlap_tokens: 0 });
        assert!(got.len() > 2, "{}", got.len());
        let texts = exact(&text, &got);
        for t in &texts {
            assert!(t.trim_start().starts_with("/// Adds"), "a chunk starts at an item's doc comment: {t:?}");
            assert!(t.trim_end().ends_with('}'), "and ends at an item's end: {t:?}");
        }
        // Lines exact: the third item is lines 13-18 (6 lines each, no blank between, 1-based).
        let third = got.iter().find(|c| c.text.contains("fn add_2(")).unwrap();
        assert!(third.start_line <= 13 && third.end_line >= 18, "{}-{}", third.start_line, third.end_line);
        assert_eq!(got.last().unwrap().end_line, 72, "the last item ends at line 72");
    }

    #[test]
    fn python_is_cut_between_definitions() {
        let def =
            |i: usize| format!("def step_{i}(x):\n    \"\"\"Step {i}.\"\"\"\n    y = x * {i}\n    return y + 1\n\n\n");
        let text: String = (0..10).map(def).collect();
        let got = chunks(&text, Kind::Python, Sizing { max_tokens: 40, overlap_tokens: 0 });
        assert!(got.len() > 2, "{}", got.len());
        for t in exact(&text, &got) {
            assert!(t.trim_start().starts_with("def step_"), "a chunk starts at a def: {t:?}");
            assert!(t.trim_end().ends_with("+ 1"), "and ends at its return: {t:?}");
        }
        let five = got.iter().find(|c| c.text.contains("def step_5(")).unwrap();
        assert!(five.start_line <= 31 && five.end_line >= 34, "{}-{}", five.start_line, five.end_line);
    }

    #[test]
    fn pieces_fit_the_limit_and_join_back_to_the_text() {
        let text: String = (0..300).map(|i| format!("Sentence number {i} of a long paragraph. ")).collect();
        let pieces = pieces(&text, 100);
        assert!(pieces.len() > 5, "{}", pieces.len());
        assert_eq!(pieces.concat(), text, "nothing is lost");
        for p in &pieces {
            assert!(crate::window::estimate_text(p.trim_end()) <= 100, "{}", crate::window::estimate_text(p));
        }
        assert_eq!(super::pieces("short", 100), ["short"]);
    }

    #[test]
    fn kinds_by_extension() {
        assert_eq!(Kind::of(std::path::Path::new("a/README.md")), Some(Kind::Markdown));
        assert_eq!(Kind::of(std::path::Path::new("src/lib.rs")), Some(Kind::Rust));
        assert_eq!(Kind::of(std::path::Path::new("tool.py")), Some(Kind::Python));
        assert_eq!(Kind::of(std::path::Path::new("main.go")), Some(Kind::Code));
        assert_eq!(Kind::of(std::path::Path::new("notes.txt")), Some(Kind::Text));
        assert_eq!(Kind::of(std::path::Path::new("logo.png")), None);
    }
}

#[cfg(test)]
mod scraps {
    use super::*;

    #[test]
    fn scraps_merge_into_a_neighbour_and_nothing_is_lost() {
        let text = "fn main() {}\n\n/// Adds two numbers, carefully, and says what it did.\nfn add(a: u64, b: u64) -> u64 {\n    a + b\n}\n\n}\n";
        let spans = vec![0..12, 14..text.len() - 2, text.len() - 2..text.len()];
        let merged = merge_scraps(spans, text, 400);
        assert_eq!(merged, vec![0..text.len()], "both scraps went into their neighbour");
        // Where merging would pass the size, the scrap stays as it is.
        let tight = merge_scraps(vec![0..12, 14..text.len()], text, 8);
        assert_eq!(tight, vec![0..12, 14..text.len()]);
    }

    #[test]
    fn a_source_file_cut_into_chunks_has_no_scrap_where_a_neighbour_can_take_it() {
        let text = "use std::io;\n\nfn a() {}\n\nfn b() {}\n\n/// The real work, described at some length here.\npub fn work(x: u32) -> u32 {\n    x * 2\n}\n";
        let chunks = chunks(text, Kind::Rust, Sizing { max_tokens: 400, overlap_tokens: 0 });
        assert!(chunks.iter().all(|c| c.text.trim().chars().count() >= MIN_CHUNK_CHARS), "{chunks:?}");
        assert!(chunks.iter().any(|c| c.text.contains("fn a()")) && chunks.iter().any(|c| c.text.contains("x * 2")));
    }
}
