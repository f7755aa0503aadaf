//! The `reuse` section of `summary.json`: prefix reuse, best possible
//! against predicted against achieved (docs/run.md, "Prefix reuse").
//!
//! Each record of a run planned with reuse carries the plan's figures
//! (`reuse_best_tokens`, `reuse_predicted_tokens`, `reuse_gap_s`); the
//! server's `cached_tokens` is the achieved one. [`ReuseTally`] adds up the
//! measured, successful requests that have a best figure: their prompt
//! tokens (`input_tokens`), best, predicted and achieved tokens, in total
//! and binned by the gap since the agent's previous turn ended
//! ([`GAP_BINS`]: where a long tool gap lets a cache evict).
//! [`ReuseTally::finish`] gives [`ReuseSummary`], `None` when no record had
//! the figures (a run from before, or `arbor summarize` of one).
//!
//! Must not: compute a figure the plan computes (`arbor_backends::reuse`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The gap bins, by their upper bound in seconds (exclusive; the last has
/// none), after the bin of agents' first turns ([`FIRST_TURN`]).
pub const GAP_BINS: [(&str, Option<f64>); 4] = [
    ("<1 s", Some(1.0)),
    ("1-10 s", Some(10.0)),
    ("10-60 s", Some(60.0)),
    (">60 s", None),
];

/// The bin of an agent's first turn (no previous turn, no gap).
pub const FIRST_TURN: &str = "first turn";

/// Prompt tokens and their reuse over some requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReuseFigures {
    /// Measured, successful requests with the plan's figures.
    pub requests: u64,
    /// Their prompt tokens (`input_tokens`).
    pub prompt_tokens: u64,
    /// Reusable at best: an infinite cache, token by token, in the plan's
    /// dispatch order, the previous answer counted.
    pub best_tokens: u64,
    /// What the plan's server model predicted; `null` without a server
    /// model (no prediction).
    pub predicted_tokens: Option<u64>,
    /// What the server reported (`cached_tokens`; 0 where it said none).
    pub achieved_tokens: u64,
    /// Requests whose server reported no cached tokens at all.
    pub unreported: u64,
    /// Each over `prompt_tokens`; `achieved_of_best` is achieved over
    /// best. `null` over 0.
    pub best_ratio: Option<f64>,
    pub predicted_ratio: Option<f64>,
    pub achieved_ratio: Option<f64>,
    pub achieved_of_best: Option<f64>,
}

/// The figures of one gap bin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReuseBin {
    /// `first turn`, `<1 s`, `1-10 s`, `10-60 s` or `>60 s`.
    pub gap: String,
    #[serde(flatten)]
    pub figures: ReuseFigures,
}

/// `summary.json`'s `reuse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReuseSummary {
    #[serde(flatten)]
    pub total: ReuseFigures,
    /// By the gap since the agent's previous turn ended (the plan's);
    /// every bin, empty ones included.
    pub by_gap: Vec<ReuseBin>,
}

impl ReuseSummary {
    /// One line: the three figures as shares of the prompt tokens.
    pub fn in_words(&self) -> String {
        let t = &self.total;
        let pct = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.1} %", r * 100.0));
        let predicted = match t.predicted_ratio {
            Some(r) => format!("predicted {}", pct(Some(r))),
            None => "no server model: no prediction".to_string(),
        };
        format!(
            "best possible {}, {predicted}, achieved {} of {} prompt tokens ({} of best)",
            pct(t.best_ratio),
            pct(t.achieved_ratio),
            t.prompt_tokens,
            pct(t.achieved_of_best),
        )
    }
}

/// Sums of one bin.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    requests: u64,
    prompt: u64,
    best: u64,
    predicted: u64,
    predicted_seen: u64,
    achieved: u64,
    unreported: u64,
}

impl Sums {
    /// The figures; `predicted`: the run has predictions (an empty bin's
    /// is then 0, not `null`).
    fn figures(&self, predicted: bool) -> ReuseFigures {
        let over = |n: u64, d: u64| (d > 0).then(|| n as f64 / d as f64);
        let predicted = predicted.then_some(self.predicted);
        ReuseFigures {
            requests: self.requests,
            prompt_tokens: self.prompt,
            best_tokens: self.best,
            predicted_tokens: predicted,
            achieved_tokens: self.achieved,
            unreported: self.unreported,
            best_ratio: over(self.best, self.prompt),
            predicted_ratio: predicted.and_then(|p| over(p, self.prompt)),
            achieved_ratio: over(self.achieved, self.prompt),
            achieved_of_best: over(self.achieved, self.best),
        }
    }
}

/// The records' reuse figures as they come (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct ReuseTally {
    total: Sums,
    /// [`FIRST_TURN`], then [`GAP_BINS`].
    bins: [Sums; 5],
}

impl ReuseTally {
    /// One measured, successful request (the caller leaves out the
    /// others) of `prompt` tokens with the plan's figures (`best`,
    /// `predicted`, `gap_s`) and the server's `cached` tokens; nothing
    /// without a best figure.
    pub fn add(
        &mut self,
        prompt: u64,
        best: Option<u64>,
        predicted: Option<u64>,
        gap_s: Option<f64>,
        cached: Option<u64>,
    ) {
        let Some(best) = best else {
            return;
        };
        let bin = match gap_s {
            None => 0,
            Some(gap) => {
                1 + GAP_BINS
                    .iter()
                    .position(|(_, upper)| upper.is_none_or(|u| gap < u))
                    .unwrap_or(GAP_BINS.len() - 1)
            }
        };
        for sums in [&mut self.total, &mut self.bins[bin]] {
            sums.requests += 1;
            sums.prompt = sums.prompt.saturating_add(prompt);
            sums.best = sums.best.saturating_add(best);
            if let Some(p) = predicted {
                sums.predicted = sums.predicted.saturating_add(p);
                sums.predicted_seen += 1;
            }
            match cached {
                Some(c) => sums.achieved = sums.achieved.saturating_add(c),
                None => sums.unreported += 1,
            }
        }
    }

    /// The section; `None` when no record had the figures.
    pub fn finish(&self) -> Option<ReuseSummary> {
        if self.total.requests == 0 {
            return None;
        }
        let names = std::iter::once(FIRST_TURN).chain(GAP_BINS.iter().map(|(name, _)| *name));
        let predicted = self.total.predicted_seen > 0;
        Some(ReuseSummary {
            total: self.total.figures(predicted),
            by_gap: names
                .zip(&self.bins)
                .map(|(gap, sums)| ReuseBin {
                    gap: gap.to_string(),
                    figures: sums.figures(predicted),
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_fall_in_their_gap_bins_and_add_up_to_the_total() {
        let mut tally = ReuseTally::default();
        assert_eq!(tally.finish(), None, "no figures, no section");
        tally.add(100, None, None, None, Some(50));
        assert_eq!(tally.finish(), None, "a record without the plan's figures");
        // (prompt, best, predicted, gap, cached)
        for (prompt, best, gap, cached) in [
            (100, 0, None, Some(0)),
            (200, 150, Some(0.2), Some(144)),
            (300, 290, Some(1.0), Some(288)),
            (400, 390, Some(59.9), None),
            (500, 495, Some(3600.0), Some(0)),
        ] {
            tally.add(prompt, Some(best), Some(best / 2), gap, cached);
        }
        let s = tally.finish().expect("a section");
        let t = &s.total;
        assert_eq!(
            (t.requests, t.prompt_tokens, t.best_tokens),
            (5, 1500, 1325)
        );
        assert_eq!(
            (t.predicted_tokens, t.achieved_tokens, t.unreported),
            (Some(662), 432, 1)
        );
        assert_eq!(t.achieved_of_best, Some(432.0 / 1325.0));
        let gaps: Vec<(&str, u64, u64)> = s
            .by_gap
            .iter()
            .map(|b| (b.gap.as_str(), b.figures.requests, b.figures.best_tokens))
            .collect();
        assert_eq!(
            gaps,
            [
                ("first turn", 1, 0),
                ("<1 s", 1, 150),
                ("1-10 s", 1, 290),
                ("10-60 s", 1, 390),
                (">60 s", 1, 495)
            ]
        );
        assert_eq!(s.by_gap[0].figures.achieved_of_best, None, "over 0");
        assert!(
            s.in_words().contains("predicted 44.1 %"),
            "{}",
            s.in_words()
        );
        // Without a server model: no prediction, said so.
        let mut plain = ReuseTally::default();
        plain.add(10, Some(5), None, None, Some(4));
        let s = plain.finish().unwrap();
        assert_eq!(s.total.predicted_tokens, None);
        assert!(s.in_words().contains("no server model: no prediction"));
    }
}
