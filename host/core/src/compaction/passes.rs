//! What each compaction took out of the live view, read back from a session's records (`seshat
//! sessions show --compactions`): the trims, pass by pass, and for each summary the messages it
//! replaced. The figures are those the pass's own report gave when it ran.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::store::{Compaction, CompactionStatus, CompactionTrigger, PluginRef, Retracted, Rewind, Trim};
use seshat_protocol::turn::{SeqRange, TrimSize};

/// One step of a session's compaction history, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Pass {
    /// Tool results trimmed together (one pass of the trimmer).
    Trims {
        /// Unix milliseconds.
        created_at: i64,
        /// The trimmer that proposed them.
        #[serde(skip_serializing_if = "Option::is_none")]
        plugin: Option<PluginRef>,
        /// Each result, with its sizes.
        trims: Vec<TrimSize>,
    },
    /// A summary, or a failed attempt at one.
    Summary {
        /// Unix milliseconds.
        created_at: i64,
        /// What started it.
        trigger: CompactionTrigger,
        /// Whether it was applied.
        status: CompactionStatus,
        /// Tokens in use before the pass (in the model's tokens).
        tokens_before: u64,
        /// After it (none when it failed).
        #[serde(skip_serializing_if = "Option::is_none")]
        tokens_after: Option<u64>,
        /// The messages that left the live view for it, as seq ranges (empty when it failed).
        summarised_seqs: Vec<SeqRange>,
        /// The live view resumed at this seq.
        #[serde(skip_serializing_if = "Option::is_none")]
        first_kept_seq: Option<u64>,
        /// The summary text (what it kept of them).
        #[serde(skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// The model that wrote it.
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Why it failed, or why it counted as a failure.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// A session's compaction history from its records: `compactions` and `trims` oldest first (as
/// the store lists them), the seqs of its `messages`, the messages the user `pinned` and the
/// `rewinds` in force (out of the view, so never summarised). What was `undone` (`/uncompact`,
/// `compact --undo`) is left out: the view is as if it had never been made.
pub fn passes(
    compactions: &[Compaction],
    trims: &[Trim],
    messages: &[u64],
    pinned: &[u64],
    rewinds: &[Rewind],
    undone: &[Retracted],
) -> Vec<Pass> {
    // Retractions name records by their place in the session's lists, from 1.
    let compaction_undone =
        |n: usize| undone.iter().any(|r| matches!(r, Retracted::Compaction { number } if *number == n as u64));
    let trim_undone = |n: usize| {
        undone.iter().any(|r| matches!(r, Retracted::Trims { first, last } if (*first..=*last).contains(&(n as u64))))
    };
    let trims: Vec<&Trim> = trims.iter().enumerate().filter(|(i, _)| !trim_undone(i + 1)).map(|(_, t)| t).collect();
    let compactions: Vec<&Compaction> =
        compactions.iter().enumerate().filter(|(i, _)| !compaction_undone(i + 1)).map(|(_, c)| c).collect();
    let mut out: Vec<Pass> = Vec::new();
    // Trims a pass recorded together share their time and trimmer.
    for t in trims {
        let size = TrimSize { seq: t.seq, part: t.part, bytes_before: t.original_size, bytes_after: t.new_size };
        match out.last_mut() {
            Some(Pass::Trims { created_at, plugin, trims }) if *created_at == t.created_at && *plugin == t.plugin => {
                trims.push(size);
            }
            _ => out.push(Pass::Trims { created_at: t.created_at, plugin: t.plugin.clone(), trims: vec![size] }),
        }
    }
    let present: BTreeSet<u64> = messages.iter().copied().collect();
    let rewound = |s: u64| rewinds.iter().any(|r| (r.from_seq..=r.through_seq).contains(&s));
    // What the view held before each summary: from where the one before resumed, with the request
    // it kept verbatim before its cut.
    let (mut resumed, mut kept_request) = (1, None);
    for c in compactions {
        let mut summarised = Vec::new();
        if c.status == CompactionStatus::Ok
            && let Some(first_kept) = c.first_kept_seq
        {
            let candidates = kept_request.into_iter().chain(resumed..first_kept);
            summarised = SeqRange::of(
                candidates
                    .filter(|s| present.contains(s) && Some(*s) != c.pinned_seq && !pinned.contains(s) && !rewound(*s))
                    .collect::<BTreeSet<u64>>(),
            );
            (resumed, kept_request) = (first_kept, c.pinned_seq);
        }
        out.push(Pass::Summary {
            created_at: c.created_at,
            trigger: c.trigger,
            status: c.status,
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
            summarised_seqs: summarised,
            first_kept_seq: c.first_kept_seq,
            summary: c.summary.clone(),
            model: c.model.clone(),
            error: c.error.clone(),
        });
    }
    // Oldest first; a pass's trims are recorded before its summary.
    out.sort_by_key(|p| match p {
        Pass::Trims { created_at, .. } => (*created_at, 0),
        Pass::Summary { created_at, .. } => (*created_at, 1),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compaction(first_kept: u64, pinned: Option<u64>, at: i64) -> Compaction {
        Compaction {
            trigger: CompactionTrigger::Auto,
            tokens_before: 100,
            tokens_after: Some(10),
            through_seq: 50,
            first_kept_seq: Some(first_kept),
            pinned_seq: pinned,
            summary: Some("s".into()),
            model: None,
            status: CompactionStatus::Ok,
            error: None,
            created_at: at,
            instructions: None,
            plugin: None,
        }
    }

    fn summarised(p: &Pass) -> Vec<(u64, u64)> {
        match p {
            Pass::Summary { summarised_seqs, .. } => summarised_seqs.iter().map(|r| (r.from, r.through)).collect(),
            Pass::Trims { .. } => panic!("a trims pass: {p:?}"),
        }
    }

    #[test]
    fn each_summary_names_what_left_the_view_since_the_one_before() {
        let messages: Vec<u64> = (1..=40).collect();
        let rewinds = [Rewind { from_seq: 12, through_seq: 13, created_at: 0 }];
        // The first kept request 8 verbatim before its cut at 10; the user pinned 3 and 25.
        let cs = [compaction(10, Some(8), 5), compaction(30, None, 9)];
        let out = passes(&cs, &[], &messages, &[3, 25], &rewinds, &[]);
        assert_eq!(summarised(&out[0]), vec![(1, 2), (4, 7), (9, 9)]);
        // The second takes the request the first kept, and not what was rewound or pinned.
        assert_eq!(summarised(&out[1]), vec![(8, 8), (10, 11), (14, 24), (26, 29)]);
    }

    #[test]
    fn an_undone_compaction_is_left_out_and_the_next_starts_where_the_view_was() {
        let messages: Vec<u64> = (1..=40).collect();
        let cs = [compaction(10, None, 5), compaction(20, None, 9)];
        let out = passes(&cs, &[], &messages, &[], &[], &[Retracted::Compaction { number: 1 }]);
        assert_eq!(out.len(), 1);
        assert_eq!(summarised(&out[0]), vec![(1, 19)]);
    }

    #[test]
    fn trims_recorded_together_are_one_pass_and_passes_are_in_time_order() {
        let trim = |seq, at| Trim {
            seq,
            part: 0,
            original_size: 1000,
            new_size: 10,
            replacement: "r".into(),
            created_at: at,
            plugin: None,
        };
        let out = passes(
            &[compaction(5, None, 7)],
            &[trim(2, 7), trim(3, 7), trim(6, 9)],
            &[1, 2, 3, 4, 5, 6],
            &[],
            &[],
            &[],
        );
        let kinds: Vec<(&str, usize)> = out
            .iter()
            .map(|p| match p {
                Pass::Trims { trims, .. } => ("trims", trims.len()),
                Pass::Summary { .. } => ("summary", 0),
            })
            .collect();
        assert_eq!(kinds, vec![("trims", 2), ("summary", 0), ("trims", 1)]);
    }
}
