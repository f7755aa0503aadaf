//! One request as a virtual load point served it, whichever model decided
//! its times: the shape every arm of [`crate::predict`] produces, the
//! observations judged from it, and the record line a virtual probe
//! directory holds for it (the fields `arbor report` reads of a
//! `records.jsonl` line). Integer nanoseconds from the point's time 0.

use std::collections::BTreeMap;

use arbor_engine::time::Nanos;
use serde::Serialize;

use crate::observed::{Gaps, Observed, RequestSeen};

/// One request served on the virtual clock (warmups left out).
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub request: u64,
    pub tree: u32,
    pub play: u32,
    pub turn: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    pub eligible: Nanos,
    pub dispatched: Nanos,
    pub queue_wait: Nanos,
    pub sent: Nanos,
    /// `None` when the model has no first-token time (recorded).
    pub first: Option<Nanos>,
    pub done: Nanos,
    /// The inter-token gap (`None`: unknown, as `first`).
    pub gap: Option<Nanos>,
    pub isl: u32,
    pub osl: u32,
    pub cached: Option<u32>,
}

impl Served {
    fn seen(&self) -> RequestSeen {
        let gaps = u64::from(self.osl.saturating_sub(1));
        RequestSeen {
            ok: true,
            ttft: self.first.map(|f| f.saturating_sub(self.sent)),
            e2e: self.done.saturating_sub(self.sent),
            tpot: self.gap.filter(|_| gaps > 0),
            gaps: match self.gap {
                Some(gap) => Gaps::Even { gap, count: gaps },
                None => Gaps::Listed(Vec::new()),
            },
        }
    }

    /// The line of a virtual probe's `records.jsonl`.
    pub fn line<'a>(&self, tree: &'a str, agent: &'a str) -> Line<'a> {
        let s = |ns: Nanos| ns as f64 / 1e9;
        let seen = self.seen();
        Line {
            request: self.request,
            tree,
            tree_index: self.tree,
            agent,
            turn: self.turn,
            copy: self.copy,
            lane: self.lane,
            play: self.play,
            warmup: false,
            status: "ok",
            eligible_s: s(self.eligible),
            dispatched_s: s(self.dispatched),
            sent_s: s(self.sent),
            first_content_s: self.first.map(s),
            done_s: s(self.done),
            queue_wait_s: s(self.queue_wait),
            ttft_s: seen.ttft.map(s),
            e2e_s: s(seen.e2e),
            tpot_s: seen.tpot.map(s),
            input_tokens: self.isl,
            output_tokens: self.osl,
            cached_tokens: self.cached,
        }
    }
}

/// A predicted request as `records.jsonl` words it.
#[derive(Debug, Serialize)]
pub struct Line<'a> {
    pub request: u64,
    pub tree: &'a str,
    pub tree_index: u32,
    pub agent: &'a str,
    pub turn: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    pub play: u32,
    pub warmup: bool,
    pub status: &'static str,
    pub eligible_s: f64,
    pub dispatched_s: f64,
    pub sent_s: f64,
    pub first_content_s: Option<f64>,
    pub done_s: f64,
    pub queue_wait_s: f64,
    pub ttft_s: Option<f64>,
    pub e2e_s: f64,
    pub tpot_s: Option<f64>,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub cached_tokens: Option<u32>,
}

/// The observations of served requests; `complete(play)` says whether a
/// play ran every turn (only those have a job time).
pub fn observe(served: &[Served], complete: impl Fn(u32) -> bool) -> Observed {
    let mut spans: BTreeMap<u32, (Nanos, Nanos)> = BTreeMap::new();
    for s in served {
        let span = spans.entry(s.play).or_insert((s.sent, s.done));
        span.0 = span.0.min(s.sent);
        span.1 = span.1.max(s.done);
    }
    Observed {
        requests: served.iter().map(Served::seen).collect(),
        jobs: spans
            .into_iter()
            .filter(|(play, _)| complete(*play))
            .map(|(_, (first, last))| last - first)
            .collect(),
    }
}
