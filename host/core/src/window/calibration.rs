//! The estimate calibrated per kind of content from real counts.
//!
//! A model's tokenizer departs from the estimate's prior differently for each kind: Llama 3's
//! and OpenAI's count code and JSON below the prior and prose at it, GPT-2-like vocabularies
//! count logs and identifiers above it. One scale for every kind, learnt on a request of code,
//! would then miscount the next request of prose. So each real count (a server's counter, the
//! prompt size a server reports, the size a refusal names) updates one factor per kind — real
//! tokens per estimated token of that kind — in proportion to the kind's share of the counted
//! request, and a request's calibrated size is the sum of its kinds' estimates times their
//! factors. A request of one kind sets that kind's factor exactly; mixed requests spread the
//! correction over their kinds, and requests of different mixes tell the kinds apart.

use serde_json::{Map, Value};

use super::kinds::{ContentKind, characters_by_kind};

/// The range a factor is kept in: no tokenizer Seshat meets counts a kind at less than half or
/// more than three times the prior.
const FACTOR_RANGE: (f64, f64) = (0.5, super::MAX_CALIBRATION);

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

/// Real tokens per estimated token, one factor per kind of content, for one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    factors: [f64; 6],
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration { factors: [1.0; 6] }
    }
}

impl Calibration {
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

    /// Learns from a real count of a request of `tally`: each kind's factor moves toward what
    /// the count says in proportion to the kind's share of the request as believed so far, then
    /// the kinds in the request are scaled together so the request itself comes out at its count
    /// (the next request, of much the same mix, is then sized right).
    pub fn learn(&mut self, tally: &Tally, real: u64) {
        let believed = self.real(tally);
        if believed <= 0.0 || real == 0 {
            return;
        }
        let ratio = real as f64 / believed;
        let present: Vec<bool> = ContentKind::ALL.iter().map(|k| tally.tokens(*k) > 0.0).collect();
        for (i, kind) in ContentKind::ALL.iter().enumerate() {
            let share = tally.tokens(*kind) * self.factors[i] / believed;
            self.factors[i] *= 1.0 + (ratio - 1.0) * share;
        }
        let level = real as f64 / self.real(tally);
        for (f, present) in self.factors.iter_mut().zip(present) {
            if present {
                *f *= level;
            }
            *f = f.clamp(FACTOR_RANGE.0, FACTOR_RANGE.1);
        }
    }

    /// As stored with a session: `{"prose": 1.0, "code": 0.8, …}`.
    pub fn to_json(&self) -> Value {
        let map: Map<String, Value> =
            ContentKind::ALL.iter().zip(self.factors).map(|(k, f)| (k.as_str().to_string(), Value::from(f))).collect();
        Value::Object(map)
    }

    /// As stored (`to_json`); kinds missing or out of range read as 1.
    pub fn from_json(value: &Value) -> Calibration {
        let mut c = Calibration::default();
        for (i, kind) in ContentKind::ALL.iter().enumerate() {
            if let Some(f) = value[kind.as_str()].as_f64().filter(|f| (FACTOR_RANGE.0..=FACTOR_RANGE.1).contains(f)) {
                c.factors[i] = f;
            }
        }
        c
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
            prose.clone(),
            logs.clone(),
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
        // Stored and read back.
        assert_eq!(Calibration::from_json(&c.to_json()), c);
        assert_eq!(Calibration::from_json(&serde_json::json!({"prose": 99.0})), Calibration::default());
    }
}
