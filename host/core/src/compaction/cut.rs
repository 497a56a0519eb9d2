//! Where to cut the history (pure): keep recent messages from the newest back until the target,
//! then move the cut back so that no kept tool result lacks its call, and so that the kept part
//! starts at a turn boundary. The latest user request is pinned: kept verbatim even when it lies
//! before the cut.
//!
//! Messages the user pinned are never dropped: their tokens are set aside from the budget first,
//! and the walk passes over them for free.
//!
//! A turn boundary is a user message or, inside a tool loop that followed the latest user request
//! (whose request is pinned just before the kept part), an assistant message. The kept part never
//! starts with tool results, whose calls would then be missing.

use std::collections::HashMap;

use crate::conversation::Role;

/// What the cut needs to know about one message of the live view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The message's seq.
    pub seq: u64,
    /// Who wrote it.
    pub role: Role,
    /// Its estimated tokens (trims applied).
    pub tokens: u64,
    /// Ids of the tool calls it makes.
    pub calls: Vec<String>,
    /// Call ids its tool results answer.
    pub results: Vec<String>,
    /// Whether it is a user request (a user message with text).
    pub is_request: bool,
    /// Whether the user pinned it (kept whatever the budget).
    pub pinned: bool,
}

/// The decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// Index (into the items) of the first kept message; `items.len()` keeps nothing.
    pub first_kept: usize,
    /// Index of the pinned latest user request, when it lies before the cut.
    pub pinned: Option<usize>,
}

/// Chooses the cut so that the kept messages take at most `budget` tokens where possible (the
/// pairing and boundary rules can only keep more, never split an exchange).
pub fn choose(items: &[Item], budget: u64) -> Cut {
    let pinned: u64 = items.iter().filter(|i| i.pinned).map(|i| i.tokens).sum();
    let budget = budget.saturating_sub(pinned);
    let latest_request = items.iter().rposition(|i| i.is_request);
    let first = settle(items, walk(items, budget));
    match latest_request {
        Some(r) if r < first => {
            // The request will be pinned before the kept part: make room for it (a request the
            // user pinned has its room already).
            let room = if items[r].pinned { 0 } else { items[r].tokens };
            let first = settle(items, walk(items, budget.saturating_sub(room)).max(r + 1));
            Cut { first_kept: first, pinned: (r < first).then_some(r) }
        }
        _ => Cut { first_kept: first, pinned: None },
    }
}

/// From the newest back while the budget allows: the index of the first kept item. Pinned
/// items cost nothing here (their room was set aside).
fn walk(items: &[Item], budget: u64) -> usize {
    let cost = |i: &Item| if i.pinned { 0 } else { i.tokens };
    let mut first = items.len();
    let mut used = 0u64;
    while first > 0 && used + cost(&items[first - 1]) <= budget {
        first -= 1;
        used += cost(&items[first]);
    }
    first
}

/// Moves a cut back until every kept tool result has its call kept and the kept part starts at a
/// turn boundary.
pub(crate) fn settle(items: &[Item], mut first: usize) -> usize {
    let call_index: HashMap<&str, usize> =
        items.iter().enumerate().flat_map(|(i, it)| it.calls.iter().map(move |c| (c.as_str(), i))).collect();
    loop {
        let mut moved = false;
        // Results answering calls before the cut pull the cut back to the call.
        let earliest_call = items[first..]
            .iter()
            .flat_map(|it| it.results.iter())
            .filter_map(|id| call_index.get(id.as_str()).copied())
            .min();
        if let Some(call) = earliest_call
            && call < first
        {
            first = call;
            moved = true;
        }
        // Never start with tool results or a system message.
        while first < items.len() && first > 0 && matches!(items[first].role, Role::Tool | Role::System) {
            first -= 1;
            moved = true;
        }
        if !moved {
            return first;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(seq: u64, tokens: u64) -> Item {
        Item { seq, role: Role::User, tokens, calls: vec![], results: vec![], is_request: true, pinned: false }
    }
    fn call(seq: u64, tokens: u64, ids: &[&str]) -> Item {
        Item {
            seq,
            role: Role::Assistant,
            tokens,
            calls: ids.iter().map(|s| s.to_string()).collect(),
            results: vec![],
            is_request: false,
            pinned: false,
        }
    }
    fn result(seq: u64, tokens: u64, ids: &[&str]) -> Item {
        Item {
            seq,
            role: Role::Tool,
            tokens,
            calls: vec![],
            results: ids.iter().map(|s| s.to_string()).collect(),
            is_request: false,
            pinned: false,
        }
    }
    fn answer(seq: u64, tokens: u64) -> Item {
        Item { seq, role: Role::Assistant, tokens, calls: vec![], results: vec![], is_request: false, pinned: false }
    }

    #[test]
    fn keeps_from_the_newest_back_within_the_budget() {
        let items = vec![user(1, 100), answer(2, 100), user(3, 100), answer(4, 100)];
        let cut = choose(&items, 250);
        assert_eq!(cut, Cut { first_kept: 2, pinned: None });
    }

    #[test]
    fn never_separates_parallel_results_from_their_calls() {
        let items =
            vec![user(1, 10), call(2, 10, &["a", "b"]), result(3, 500, &["a"]), result(4, 10, &["b"]), answer(5, 10)];
        // The budget reaches back to seq 4 only: its call (seq 2) must come along.
        let cut = choose(&items, 30);
        assert_eq!(cut.first_kept, 1);
        assert_eq!(cut.pinned, Some(0));
    }

    #[test]
    fn pins_the_latest_request_when_a_tool_loop_puts_it_before_the_cut() {
        let mut items = vec![user(1, 10), answer(2, 10), user(3, 50)];
        for k in 0..20u64 {
            let id = format!("c{k}");
            items.push(call(4 + 2 * k, 10, &[&id]));
            items.push(result(5 + 2 * k, 100, &[&id]));
        }
        let cut = choose(&items, 300);
        assert_eq!(cut.pinned, Some(2), "the request (seq 3) is pinned");
        assert_eq!(items[cut.first_kept].role, Role::Assistant, "the kept part opens a tool exchange");
        let kept: u64 = items[cut.first_kept..].iter().map(|i| i.tokens).sum();
        assert!(kept + 50 <= 300, "kept {kept}");
    }

    #[test]
    fn pinned_items_are_never_dropped_and_their_tokens_come_off_the_budget() {
        let mut items = vec![user(1, 10), answer(2, 100), user(3, 10), answer(4, 100), user(5, 10), answer(6, 100)];
        items[1].pinned = true;
        // 250 less the 100 pinned leaves 150: the last request and its answer (110) fit, not more.
        let cut = choose(&items, 250);
        assert_eq!(cut, Cut { first_kept: 4, pinned: None });
        // Unpinned, the same budget keeps one more exchange.
        items[1].pinned = false;
        assert_eq!(choose(&items, 250), Cut { first_kept: 2, pinned: None });
        // A pinned message inside the kept part is counted once: 100 set aside, 120 for the rest.
        items[5].pinned = true;
        assert_eq!(choose(&items, 220), Cut { first_kept: 2, pinned: None });
        assert_eq!(choose(&items, 219), Cut { first_kept: 3, pinned: None });
    }

    #[test]
    fn a_pinned_latest_request_gets_no_second_room() {
        let mut items =
            vec![user(1, 10), user(2, 50), answer(3, 100), call(4, 10, &["a"]), result(5, 100, &["a"]), answer(6, 10)];
        items[1].pinned = true;
        // 170 − 50 pinned = 120: the tool exchange and the answer (120) fit behind the request.
        assert_eq!(choose(&items, 170), Cut { first_kept: 3, pinned: Some(1) });
        items[1].pinned = false;
        assert_eq!(choose(&items, 170), Cut { first_kept: 3, pinned: Some(1) }, "unpinned: the same room, once");
    }

    fn system(seq: u64, tokens: u64) -> Item {
        Item { role: Role::System, is_request: false, ..answer(seq, tokens) }
    }

    #[test]
    fn a_kept_result_pulls_the_cut_back_to_its_call_across_other_messages() {
        // A result that arrived after another message: the kept part would start at the answer,
        // but its result's call lies before it.
        let items = vec![user(1, 10), call(2, 10, &["a"]), answer(3, 10), result(4, 10, &["a"])];
        assert_eq!(settle(&items, 2), 1);
        assert_eq!(choose(&items, 20), Cut { first_kept: 1, pinned: Some(0) });
    }

    #[test]
    fn the_kept_part_never_starts_with_a_result_or_a_system_message() {
        // An orphan result (its call is not in the history) and a system message are stepped over.
        let items = vec![user(1, 10), answer(2, 10), result(3, 10, &["gone"]), system(4, 10), answer(5, 10)];
        assert_eq!(settle(&items, 3), 1);
        assert_eq!(settle(&items, 2), 1);
        assert_eq!(settle(&items, 4), 4, "an answer is a boundary inside a tool loop");
        assert_eq!(settle(&items, 5), 5, "keeping nothing stays put");
        // At the very start there is nothing to step back to.
        let items = vec![result(1, 10, &["gone"]), answer(2, 10)];
        assert_eq!(settle(&items, 0), 0);
        assert_eq!(settle(&items, 1), 1);
    }

    #[test]
    fn an_empty_budget_keeps_nothing_but_the_pin() {
        let items = vec![user(1, 10), answer(2, 10)];
        assert_eq!(choose(&items, 0), Cut { first_kept: 2, pinned: Some(0) });
    }
}
