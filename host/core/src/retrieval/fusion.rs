//! Reciprocal rank fusion: rankings from different searches (bm25, vector neighbours) merged by
//! rank alone, so their incomparable scores never meet. An item at 1-based rank `r` of a ranking
//! of weight `w` earns `w / (k + r)`; an item's score is the sum over the rankings it is in.

use serde::{Deserialize, Serialize};

/// How rankings are fused.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    /// The rank offset `k` (60 in the paper that introduced the method): larger flattens the
    /// difference between the first ranks.
    pub k: f64,
    /// The weight of the lexical ranking.
    pub lexical: f64,
    /// The weight of the vector ranking.
    pub vector: f64,
}

impl Weights {
    /// History's and memory's fusion, chosen on the tuning split of the recall benchmark on
    /// real dialogues (`benches/recall.rs`: the setting adding the most at 10 while below the
    /// lexical ranking at no k): a small `k`, so the first ranks of each ranking weigh more, and
    /// the vector ranking at three quarters of the lexical one, which keeps the lexical first hit
    /// where the vectors do not agree.
    pub const RECALL: Weights = Weights { k: 10.0, lexical: 1.0, vector: 0.75 };
}

impl Default for Weights {
    fn default() -> Self {
        Weights { k: 60.0, lexical: 1.0, vector: 1.0 }
    }
}

/// One fused item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fused<T> {
    /// The item.
    pub id: T,
    /// Its fused score (higher is better).
    pub score: f64,
    /// Its 1-based rank in the lexical ranking, if it is there.
    pub lexical_rank: Option<usize>,
    /// Its 1-based rank in the vector ranking, if it is there.
    pub vector_rank: Option<usize>,
}

/// Fuses a lexical and a vector ranking (each best first, no repeats), best first: by score,
/// then by the better of its ranks, then lexical rank, then first seen.
pub fn fuse<T: Clone + PartialEq>(lexical: &[T], vector: &[T], w: Weights) -> Vec<Fused<T>> {
    let mut out: Vec<Fused<T>> = Vec::with_capacity(lexical.len() + vector.len());
    for (i, id) in lexical.iter().enumerate() {
        out.push(Fused {
            id: id.clone(),
            score: w.lexical / (w.k + (i + 1) as f64),
            lexical_rank: Some(i + 1),
            vector_rank: None,
        });
    }
    for (i, id) in vector.iter().enumerate() {
        let earned = w.vector / (w.k + (i + 1) as f64);
        match out.iter_mut().find(|f| f.id == *id) {
            Some(f) => {
                f.score += earned;
                f.vector_rank = Some(i + 1);
            }
            None => out.push(Fused { id: id.clone(), score: earned, lexical_rank: None, vector_rank: Some(i + 1) }),
        }
    }
    let best = |f: &Fused<T>| f.lexical_rank.unwrap_or(usize::MAX).min(f.vector_rank.unwrap_or(usize::MAX));
    // A stable sort keeps first-seen order among exact ties.
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(best(a).cmp(&best(b)))
            .then(a.lexical_rank.unwrap_or(usize::MAX).cmp(&b.lexical_rank.unwrap_or(usize::MAX)))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_in_both_rankings_beats_one_at_the_top_of_either() {
        let w = Weights::default();
        let fused = fuse(&["a", "b", "c"], &["c", "d"], w);
        let ids: Vec<&str> = fused.iter().map(|f| f.id).collect();
        // b (lexical 2) and d (vector 2) tie at 1/62: the lexical rank breaks it.
        assert_eq!(ids, ["c", "a", "b", "d"]);
        assert_eq!(fused[0].score, 1.0 / 63.0 + 1.0 / 61.0);
        assert_eq!((fused[0].lexical_rank, fused[0].vector_rank), (Some(3), Some(1)));
        // A tie between lexical 1 and vector 1 goes to the lexical one.
        let tie = fuse(&["x"], &["y"], w);
        assert_eq!(tie.iter().map(|f| f.id).collect::<Vec<_>>(), ["x", "y"]);
    }

    #[test]
    fn recall_weights_keep_the_lexical_first_hit_over_a_vector_first_the_words_rank_far_down() {
        // `y` is the vectors' first and the words' 40th; `x` is the words' first only.
        let lexical: Vec<String> = std::iter::once("x".to_string())
            .chain((2..40).map(|i| format!("filler{i}")))
            .chain(std::iter::once("y".to_string()))
            .collect();
        let vector = vec!["y".to_string()];
        let first = |w: Weights| fuse(&lexical, &vector, w)[0].id.clone();
        // Equal weights and k = 60 flatten the ranks: being in both lists wins.
        assert_eq!(first(Weights::default()), "y");
        // History's small k lets the first rank weigh more, the vectors at three quarters.
        assert_eq!(first(Weights::RECALL), "x");
        // Closer in the words' list, agreement wins again.
        let near: Vec<String> = ["x", "a", "b", "y"].map(String::from).to_vec();
        assert_eq!(fuse(&near, &vector, Weights::RECALL)[0].id, "y");
    }

    #[test]
    fn weights_shift_the_order() {
        let w = Weights { k: 1.0, lexical: 0.0, vector: 1.0 };
        let fused = fuse(&["a", "b"], &["b", "a"], w);
        assert_eq!(fused[0].id, "b");
        assert_eq!(fused[0].score, 0.5);
    }
}
