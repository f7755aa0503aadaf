//! What a search concludes from its judged points: a point (the largest
//! passing load and the smallest failing one, one step apart, every load
//! probed between them decided), or, when a probe stayed unresolved after
//! its extensions, only a bound ("at least L", "below H", the bracket
//! [L, H] with the unresolved loads inside, or nothing decided at all),
//! and what a confirmation run at the answer did to it. Reports the
//! readings that decided each end: the probe, how many requests, and each
//! bound's interval. Owns the rule from points to an answer and its
//! words; the order of probes is [`crate::search`]'s, the judging
//! [`crate::observed`]'s (docs/capacity.md, "Unresolved probes and
//! bounds").

use serde::Serialize;

use crate::knob::Knob;
use crate::observed::{Decision, Judged, Verdict};
use crate::search::Knee;

/// What kind of answer a search gave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// Every probed load decided: the knee to the search's step (or a
    /// range end: the top passes, or the bottom fails).
    #[default]
    Point,
    /// A passing load, and an unresolved one above it with no failing
    /// load decided: at least L.
    LowerBound,
    /// A failing load, and an unresolved one below it with no passing
    /// load decided: below H.
    UpperBound,
    /// A passing and a failing load with unresolved ones between them.
    Bracket,
    /// No load decided.
    Unresolved,
}

impl AnswerKind {
    /// `point`, `lower_bound`, ... as `capacity.json` says it.
    pub fn name(self) -> &'static str {
        match self {
            AnswerKind::Point => "point",
            AnswerKind::LowerBound => "lower_bound",
            AnswerKind::UpperBound => "upper_bound",
            AnswerKind::Bracket => "bracket",
            AnswerKind::Unresolved => "unresolved",
        }
    }
}

/// A search's answer as `capacity.json`'s `answer` holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Conclusion {
    /// The largest load that passed (knob units).
    pub passing: Option<f64>,
    /// The smallest load above it that failed.
    pub failing: Option<f64>,
    pub kind: AnswerKind,
    /// Loads probed between `passing` and `failing` whose verdict stayed
    /// unresolved (after every extension, or a confirmation that did not
    /// hold), in load order.
    pub unresolved: Vec<f64>,
    /// The reading that decided `passing` (the last probe that passed at
    /// that load).
    pub passing_by: Option<Deciding>,
    /// The reading that decided `failing`.
    pub failing_by: Option<Deciding>,
    /// The confirmation run at `passing` (`None`: none was made).
    pub confirmation: Option<Confirmation>,
}

/// The probe that decided one end of the answer: how many requests
/// decided it and each bound's reading and interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deciding {
    pub probe: usize,
    pub load: f64,
    pub requests: u64,
    /// Successful requests, what the percentiles rest on.
    pub measured: u64,
    pub jobs: u64,
    pub bounds: Vec<Judged>,
    pub request_goodput: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_goodput_interval: Option<[f64; 2]>,
    pub job_goodput: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_goodput_interval: Option<[f64; 2]>,
}

/// The passing load measured once more after the search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Confirmation {
    pub probe: usize,
    pub load: f64,
    pub decision: Decision,
    /// It passed again; otherwise the answer was downgraded.
    pub held: bool,
}

/// A probe as the conclusion sees it: its number, its load in the knob's
/// units and its verdict.
#[derive(Debug, Clone, Copy)]
pub struct Probed<'a> {
    pub probe: usize,
    pub value: u64,
    pub verdict: &'a Verdict,
}

impl Conclusion {
    /// A point: the search's knee, every load it probed decided.
    pub fn point(knob: Knob, knee: Knee, probed: &[Probed]) -> Conclusion {
        Conclusion {
            passing: knee.passing.map(|v| knob.number(v)),
            failing: knee.failing.map(|v| knob.number(v)),
            kind: AnswerKind::Point,
            unresolved: Vec::new(),
            passing_by: knee
                .passing
                .and_then(|v| deciding(knob, probed, v, Decision::Pass)),
            failing_by: knee
                .failing
                .and_then(|v| deciding(knob, probed, v, Decision::Fail)),
            confirmation: None,
        }
    }

    /// What the probes decided, with no knee to trust: a load passes when
    /// every probe of it passed, fails when every probe failed, and is
    /// unresolved otherwise (left open, or a pass and a failure).
    /// `passing` is the largest passing load, `failing` the smallest
    /// failing one above it; an unresolved load between them makes the
    /// answer a bound. Also the knee: `(passing, failing)` in the knob's
    /// units.
    pub fn of_probes(knob: Knob, probed: &[Probed]) -> (Conclusion, Knee) {
        let mut loads: Vec<u64> = probed.iter().map(|p| p.value).collect();
        loads.sort_unstable();
        loads.dedup();
        let decided = |value: u64| {
            let mut of = probed
                .iter()
                .filter(|p| p.value == value)
                .map(|p| p.verdict.decision);
            let first = of.next().unwrap_or(Decision::Unresolved);
            if of.all(|d| d == first) {
                first
            } else {
                Decision::Unresolved
            }
        };
        let passing = loads
            .iter()
            .copied()
            .filter(|&v| decided(v) == Decision::Pass)
            .max();
        let failing = loads
            .iter()
            .copied()
            .filter(|&v| decided(v) == Decision::Fail && passing.is_none_or(|p| v > p))
            .min();
        let unresolved: Vec<u64> = loads
            .iter()
            .copied()
            .filter(|&v| {
                decided(v) == Decision::Unresolved
                    && passing.is_none_or(|p| v > p)
                    && failing.is_none_or(|f| v < f)
            })
            .collect();
        let knee = Knee { passing, failing };
        let mut conclusion = Conclusion::point(knob, knee, probed);
        conclusion.kind = match (unresolved.is_empty(), passing, failing) {
            (true, _, _) => AnswerKind::Point,
            (false, Some(_), Some(_)) => AnswerKind::Bracket,
            (false, Some(_), None) => AnswerKind::LowerBound,
            (false, None, Some(_)) => AnswerKind::UpperBound,
            (false, None, None) => AnswerKind::Unresolved,
        };
        conclusion.unresolved = unresolved.iter().map(|&v| knob.number(v)).collect();
        (conclusion, knee)
    }

    /// The answer in one sentence when it is not a point (a point's is
    /// [`crate::Answer::sentence`]): what holds, what stayed unresolved,
    /// and what to do about it.
    pub fn bound_sentence(&self, knob: Knob, slo_text: &str) -> Option<String> {
        let at = |v: f64| format!("{}={}", knob.name(), knob.show_number(v));
        let open: Vec<String> = self.unresolved.iter().map(|&v| at(v)).collect();
        let open = open.join(", ");
        let remedy = "lengthen each probe (--duration, or --loop with more trees), raise \
                      --max-extensions, or, knowingly, lower --min-requests or the percentile";
        let said = match (self.kind, self.passing, self.failing) {
            (AnswerKind::Point, ..) => return None,
            (AnswerKind::Bracket, Some(p), Some(f)) => format!(
                "the answer is only a bracket: {} passes and {} fails (SLO {slo_text}), but {open} \
                 between them stayed unresolved",
                at(p),
                at(f)
            ),
            (AnswerKind::LowerBound, Some(p), _) => format!(
                "the answer is only a lower bound: at least {} (SLO {slo_text}); {open} above it \
                 stayed unresolved and no failing load was decided",
                at(p)
            ),
            (AnswerKind::UpperBound, _, Some(f)) => format!(
                "the answer is only an upper bound: below {} (it fails; SLO {slo_text}); {open} \
                 below it stayed unresolved and no passing load was decided",
                at(f)
            ),
            _ => {
                format!("no answer: no load was decided (SLO {slo_text}); {open} stayed unresolved")
            }
        };
        let confirmed = match self.confirmation {
            Some(c) if !c.held => format!(
                " ({} passed in the search but its confirmation, probe {}, {})",
                at(c.load),
                c.probe,
                match c.decision {
                    Decision::Fail => "failed",
                    _ => "was unresolved",
                }
            ),
            _ => String::new(),
        };
        Some(format!("UNRESOLVED: {said}{confirmed}: {remedy}"))
    }
}

/// The last probe at `value` that decided `decision`, as the answer
/// reports it.
fn deciding(knob: Knob, probed: &[Probed], value: u64, decision: Decision) -> Option<Deciding> {
    let p = probed
        .iter()
        .rev()
        .find(|p| p.value == value && p.verdict.decision == decision)?;
    let v = p.verdict;
    Some(Deciding {
        probe: p.probe,
        load: knob.number(value),
        requests: v.requests,
        measured: v.measured,
        jobs: v.jobs,
        bounds: v.bounds.clone(),
        request_goodput: v.request_goodput,
        request_goodput_interval: v.request_goodput_interval,
        job_goodput: v.job_goodput,
        job_goodput_interval: v.job_goodput_interval,
    })
}
