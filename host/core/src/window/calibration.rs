//! The estimate calibrated per kind of content from real counts.
//!
//! A model's tokenizer departs from the estimate's prior differently for each kind: Llama 3's
//! and OpenAI's count code and JSON below the prior and prose at it, GPT-2-like vocabularies
//! count logs and identifiers above it. One scale for every kind, learnt on a request of code,
//! would then miscount the next request of prose. So the real counts (a server's counter, the
//! prompt size a server reports, the size a refusal names) fit one factor per kind — real tokens
//! per estimated token of that kind — by least squares over the requests counted, and a
//! request's calibrated size is the sum of its kinds' estimates times their factors. Requests of
//! different mixes tell the kinds apart; a kind no count has shown keeps its prior.

use serde_json::{Map, Value};

use super::kinds::{ContentKind, characters_by_kind};

/// The range a factor is kept in: from a tenth (runs of indentation, which some tokenizers
/// count as one token) to the most Seshat believes of any model.
const FACTOR_RANGE: (f64, f64) = (0.1, super::MAX_CALIBRATION);

/// How strongly the factors are held to where they started (the prior, or what a session
/// recorded), against each count: small, so a few counts of a kind decide its factor.
const PULL: f64 = 0.02;

/// How much an older count weighs against the next (the latest counts matter most: a server's
/// tokenizer does not change, but a session's content drifts).
const DECAY: f64 = 0.9;

/// A request's estimate split by kind of content, in estimate units (hundredths of four
/// characters, weighed by each kind's prior).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally([u64; 6]);

impl Tally {
    /// Adds `text`'s lines by kind.
    pub fn add_text(&mut self, text: &str) {
        for ((sum, chars), kind) in self.0.iter_mut().zip(characters_by_kind(text)).zip(ContentKind::ALL) {
            *sum += chars * kind.prior_hundredths();
        }
    }

    /// Adds `tokens` counted as prose (fixed overheads: a message's role and separators).
    pub fn add_prose_tokens(&mut self, tokens: u64) {
        self.0[0] += tokens * 400;
    }

    /// The tally of a request: its fixed `texts` and each message with its overhead.
    pub fn of_request<'a>(
        texts: &[&str],
        messages: impl IntoIterator<Item = &'a [crate::conversation::Part]>,
    ) -> Tally {
        let tally = std::cell::RefCell::new(Tally::default());
        for t in texts {
            tally.borrow_mut().add_text(t);
        }
        for parts in messages {
            tally.borrow_mut().add_prose_tokens(super::MESSAGE_OVERHEAD);
            super::parts_with(parts, &|t: &str| {
                tally.borrow_mut().add_text(t);
                Some(0)
            });
        }
        tally.into_inner()
    }

    /// The estimate of one kind, in tokens.
    pub fn tokens(&self, kind: ContentKind) -> f64 {
        let i = ContentKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.0[i] as f64 / 400.0
    }

    /// The whole estimate, in tokens.
    pub fn total(&self) -> f64 {
        self.0.iter().sum::<u64>() as f64 / 400.0
    }
}

/// Real tokens per estimated token, one factor per kind of content, for one model: a ridge
/// regression of the counts seen on each request's estimate by kind (each request weighed by its
/// share, so a large one does not drown the others), held lightly to where it started.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    factors: [f64; 6],
    /// Where the factors started (the prior's 1, or what a session recorded).
    start: [f64; 6],
    /// Σ xxᵀ over the counts seen (x: a request's estimate by kind, as shares of its total).
    gram: [[f64; 6]; 6],
    /// Σ x·y (y: the request's count over its estimate).
    moment: [f64; 6],
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration::starting_at([1.0; 6])
    }
}

impl Calibration {
    fn starting_at(factors: [f64; 6]) -> Self {
        Calibration { factors, start: factors, gram: [[0.0; 6]; 6], moment: [0.0; 6] }
    }

    /// The factor of `kind` (1 until a count says otherwise).
    pub fn factor(&self, kind: ContentKind) -> f64 {
        let i = ContentKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.factors[i]
    }

    /// `tally` in real tokens, as this calibration believes.
    pub fn real(&self, tally: &Tally) -> f64 {
        ContentKind::ALL.iter().map(|k| tally.tokens(*k) * self.factor(*k)).sum()
    }

    /// Real tokens per estimated token for a request of `tally`'s mix (1 for an empty one).
    pub fn scale(&self, tally: &Tally) -> f64 {
        let total = tally.total();
        if total > 0.0 { self.real(tally) / total } else { 1.0 }
    }

    /// Learns from a real count of a request of `tally`: the factors that best explain every
    /// count seen so far (the latest weighing most), each held lightly to where it started.
    pub fn learn(&mut self, tally: &Tally, real: u64) {
        let total = tally.total();
        if total <= 0.0 || real == 0 {
            return;
        }
        let x: Vec<f64> = ContentKind::ALL.iter().map(|k| tally.tokens(*k) / total).collect();
        let y = real as f64 / total;
        for i in 0..6 {
            self.moment[i] = self.moment[i] * DECAY + x[i] * y;
            for j in 0..6 {
                self.gram[i][j] = self.gram[i][j] * DECAY + x[i] * x[j];
            }
        }
        // (G + λI) f = m + λ·start, by Gaussian elimination (the matrix is symmetric positive
        // definite, so no pivoting is needed).
        let mut a = self.gram;
        let mut b = self.moment;
        for i in 0..6 {
            a[i][i] += PULL;
            b[i] += PULL * self.start[i];
        }
        for col in 0..6 {
            for row in col + 1..6 {
                let f = a[row][col] / a[col][col];
                let pivot = a[col];
                for (cell, above) in a[row].iter_mut().zip(pivot).skip(col) {
                    *cell -= f * above;
                }
                b[row] -= f * b[col];
            }
        }
        let mut f = [0.0; 6];
        for row in (0..6).rev() {
            let rest: f64 = (row + 1..6).map(|k| a[row][k] * f[k]).sum();
            f[row] = (b[row] - rest) / a[row][row];
        }
        for (factor, solved) in self.factors.iter_mut().zip(f) {
            *factor = if solved.is_finite() { solved.clamp(FACTOR_RANGE.0, FACTOR_RANGE.1) } else { *factor };
        }
    }

    /// As stored with a session: `{"prose": 1.0, "code": 0.8, …}`.
    pub fn to_json(&self) -> Value {
        let map: Map<String, Value> =
            ContentKind::ALL.iter().zip(self.factors).map(|(k, f)| (k.as_str().to_string(), Value::from(f))).collect();
        Value::Object(map)
    }

    /// As stored (`to_json`), the place later counts start from; kinds missing or out of range
    /// read as 1.
    pub fn from_json(value: &Value) -> Calibration {
        let mut factors = [1.0; 6];
        for (i, kind) in ContentKind::ALL.iter().enumerate() {
            if let Some(f) = value[kind.as_str()].as_f64().filter(|f| (FACTOR_RANGE.0..=FACTOR_RANGE.1).contains(f)) {
                factors[i] = f;
            }
        }
        Calibration::starting_at(factors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(text: &str) -> Tally {
        let mut t = Tally::default();
        t.add_text(text);
        t
    }

    #[test]
    fn a_count_of_one_kind_sets_that_kind_and_leaves_the_others() {
        let code = "let total = items.iter().map(|i| i.len()).sum::<usize>();\n".repeat(40);
        let prose = "The build step writes the cache key to disk before the tests run.\n".repeat(40);
        let mut c = Calibration::default();
        let t = tally(&code);
        // The model counts this code at 0.7 of the estimate.
        let real = (t.total() * 0.7).round() as u64;
        c.learn(&t, real);
        assert!((c.real(&t) - real as f64).abs() < real as f64 * 0.05, "{} vs {real}", c.real(&t));
        assert!(c.factor(ContentKind::Code) > 0.65, "{c:?}");
        assert!(c.factor(ContentKind::Code) < 0.75);
        assert_eq!(c.factor(ContentKind::Prose), 1.0, "prose was not in the request");
        // Prose alone is still estimated at its prior.
        assert_eq!(c.scale(&tally(&prose)), 1.0);
    }

    #[test]
    fn requests_of_different_mixes_tell_the_kinds_apart() {
        // A tokenizer counting prose at 1.1 and logs at 1.6 of the prior.
        let prose = "The build step writes the cache key to disk before the tests run.\n".repeat(30);
        let logs = "[2026-12-03T10:22:31.123Z] INFO  worker-7 processed rows=4812/10000 in 231ms\n".repeat(30);
        let truth = |t: &Tally| (t.tokens(ContentKind::Prose) * 1.1 + t.tokens(ContentKind::Logs) * 1.6).round() as u64;
        let mixes = [
            format!("{prose}{logs}"),
            format!("{prose}{prose}{logs}"),
            format!("{prose}{logs}{logs}{logs}"),
            prose,
            logs,
        ];
        let mut c = Calibration::default();
        for _ in 0..6 {
            for m in &mixes {
                let t = tally(m);
                c.learn(&t, truth(&t));
            }
        }
        assert!((c.factor(ContentKind::Prose) - 1.1).abs() < 0.03, "{:?}", c);
        assert!((c.factor(ContentKind::Logs) - 1.6).abs() < 0.03, "{:?}", c);
        // Stored and read back: later counts start from there.
        let back = Calibration::from_json(&c.to_json());
        assert_eq!(
            (back.factor(ContentKind::Prose), back.factor(ContentKind::Logs)),
            (c.factor(ContentKind::Prose), c.factor(ContentKind::Logs))
        );
        assert_eq!(Calibration::from_json(&serde_json::json!({"prose": 99.0})), Calibration::default());
    }
}
