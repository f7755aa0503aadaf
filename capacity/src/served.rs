//! One request as a virtual load point served it, whichever model decided
//! its times: the shape every arm of [`crate::predict`] produces, the
//! observations judged from it, and the record line a virtual probe
//! directory holds for it. Integer nanoseconds from the point's time 0.
//!
//! The line ([`Line`]) is a second writer of `records.jsonl`, beside
//! `arbor run`'s `RequestRecord`: a predicted request has no headers or
//! first byte, no token sources, no attempts, so it writes only the fields
//! `arbor report` draws (and `export` and `compare` read), `null` where
//! the model has no value. The one reader
//! (`arbor_runs::record_line::RecordLine`) takes every field it leaves out
//! as absent; a test here reads a line back through it.

use std::collections::BTreeMap;

use arbor_engine::time::{nanos_to_secs, Nanos};
use serde::Serialize;

use crate::observed::{Flight, Gaps, Observed, RequestSeen};

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
        let s = nanos_to_secs;
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

/// The observations of served requests: each request, every play as it
/// flew ([`Flight`]: its first send to its last done, and each agent's,
/// `agent_of` saying which agent of its tree sent a request), and the
/// job time of each play that ran every turn (`complete(play)`).
pub fn observe(
    served: &[Served],
    complete: impl Fn(u32) -> bool,
    agent_of: impl Fn(&Served) -> u32,
) -> Observed {
    let mut plays: BTreeMap<u32, BTreeMap<u32, (Nanos, Nanos)>> = BTreeMap::new();
    for s in served {
        let span = plays
            .entry(s.play)
            .or_default()
            .entry(agent_of(s))
            .or_insert((s.sent, s.done));
        span.0 = span.0.min(s.sent);
        span.1 = span.1.max(s.done);
    }
    let mut jobs = Vec::new();
    let mut flights = Vec::with_capacity(plays.len());
    for (play, agents) in plays {
        let start = agents.values().map(|a| a.0).min().unwrap_or(0);
        let end = agents.values().map(|a| a.1).max().unwrap_or(0);
        if complete(play) {
            jobs.push(end - start);
        }
        flights.push(Flight {
            start,
            end,
            agents: agents.into_values().collect(),
        });
    }
    Observed {
        requests: served.iter().map(Served::seen).collect(),
        jobs,
        flights,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_runs::record::Status;
    use arbor_runs::record_line::RecordLine;

    fn served(first: Option<Nanos>) -> Served {
        Served {
            request: 4,
            tree: 1,
            play: 2,
            turn: 3,
            copy: 0,
            lane: Some(1),
            eligible: 1_000_000,
            dispatched: 1_500_000,
            queue_wait: 500_000,
            sent: 2_000_000,
            first,
            done: 9_000_000,
            gap: first.map(|_| 1_000_000),
            isl: 100,
            osl: 5,
            cached: None,
        }
    }

    #[test]
    fn a_virtual_probes_line_reads_back_through_the_one_reader() {
        let line = serde_json::to_string(&served(Some(3_000_000)).line("t", "a")).unwrap();
        assert_eq!(
            line,
            r#"{"request":4,"tree":"t","tree_index":1,"agent":"a","turn":3,"copy":0,"lane":1,"play":2,"warmup":false,"status":"ok","eligible_s":0.001,"dispatched_s":0.0015,"sent_s":0.002,"first_content_s":0.003,"done_s":0.009,"queue_wait_s":0.0005,"ttft_s":0.001,"e2e_s":0.007,"tpot_s":0.001,"input_tokens":100,"output_tokens":5,"cached_tokens":null}"#,
            "the bytes a virtual probe writes"
        );
        let Ok(r) = RecordLine::parse(&line) else {
            panic!("the line reads")
        };
        assert_eq!(
            (r.request, r.tree.as_deref(), r.play),
            (Some(4), Some("t"), Some(2))
        );
        assert_eq!((r.status, r.is_warmup()), (Status::Ok, false));
        assert_eq!(
            (r.ttft_s, r.e2e_s, r.tpot_s),
            (Some(0.001), Some(0.007), Some(0.001))
        );
        assert!(!r.itl_s.is_listed() && r.error.is_none() && r.resends.is_none());

        let none = serde_json::to_string(&served(None).line("t", "a")).unwrap();
        let Ok(r) = RecordLine::parse(&none) else {
            panic!("the line reads")
        };
        assert_eq!((r.first_content_s, r.ttft_s, r.tpot_s), (None, None, None));
    }
}
