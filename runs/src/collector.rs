//! The measured side of `summary.json`: what the records of a live run add
//! up to.
//!
//! Owns the metric definitions of docs/run.md. [`Collector`] takes each
//! [`RequestRecord`] as it is written and keeps bounded memory whatever
//! the run's length: each latency's values by [`crate::latency`]'s rule
//! (exact up to 100,000, then an HDR histogram; inter-token latencies in
//! the histogram from the first), and a play only while it is open (a play
//! with all its tree's turns recorded is folded into `job_time`);
//! [`Collector::finish`] turns them into [`Measured`]. The collector reads a record through [`Facts`],
//! a borrowed view that `arbor run` takes of a [`RequestRecord`] in memory
//! and `arbor summarize` of a line parsed back from `records.jsonl`: both
//! feed the same numbers (every time is a whole number of nanoseconds over
//! 1e9, which JSON carries exactly; TPOT, a quotient, is recomputed here
//! from the stamps as the record computed it), so both add up to the same
//! summary. Failed and cancelled requests are counted but
//! kept out of the server latency distributions (TTFT, ITL, TPOT, E2E);
//! lateness and queue wait describe the client's schedule and cover every
//! request that has the stamp.

use std::collections::BTreeMap;

use crate::record::{secs_ns as ns, ErrorCategory, RequestRecord, Status, TokenSource};
use arbor_engine::time::nanos_to_secs;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::reuse::{ReuseSummary, ReuseTally};
use crate::work::Work;

/// What the collector reads of one record (one line of `records.jsonl`).
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub tree_index: u32,
    pub agent: &'a str,
    pub turn: u32,
    pub lane: Option<u32>,
    pub play: u32,
    pub warmup: bool,
    pub status: Status,
    /// The error's category, when the request failed.
    pub error_category: Option<ErrorCategory>,
    /// Times the request was sent again because it provably never left.
    pub resends: u32,
    /// Times it was tried again after a `--retry-on` refusal.
    pub retries: u32,
    pub dispatched_s: f64,
    pub sent_s: Option<f64>,
    pub first_content_s: Option<f64>,
    pub done_s: Option<f64>,
    pub queue_wait_s: f64,
    pub lateness_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub e2e_s: Option<f64>,
    pub itl_s: &'a [f64],
    pub planned_input_tokens: u32,
    pub planned_output_tokens: u32,
    pub input_tokens: u64,
    pub input_tokens_source: TokenSource,
    pub output_tokens: u64,
    pub output_tokens_source: TokenSource,
    pub cached_tokens: Option<u64>,
    /// What the server said when the request failed.
    pub error: Option<ErrorSeen<'a>>,
    /// The model the server answered with, when not the one asked for.
    pub answered_model: Option<&'a str>,
    /// The replica it was sent to (absent with one endpoint).
    pub replica: Option<u32>,
    /// The plan's prefix reuse of the request (`crate::reuse`).
    pub reuse_best_tokens: Option<u64>,
    pub reuse_predicted_tokens: Option<u64>,
    pub reuse_gap_s: Option<f64>,
}

/// A failed request's status and the server's (or the client's) words.
#[derive(Debug, Clone, Copy)]
pub struct ErrorSeen<'a> {
    pub http_status: Option<u16>,
    pub message: &'a str,
}

impl<'a> From<&'a RequestRecord> for Facts<'a> {
    fn from(r: &'a RequestRecord) -> Facts<'a> {
        Facts {
            tree_index: r.tree_index,
            agent: &r.agent,
            turn: r.turn,
            lane: r.lane,
            play: r.play,
            warmup: r.warmup,
            status: Status::of(r.error.as_ref()),
            error_category: r.error.as_ref().map(|e| e.category),
            resends: r.resends,
            retries: r.retries,
            dispatched_s: r.dispatched_s,
            sent_s: r.sent_s,
            first_content_s: r.first_content_s,
            done_s: r.done_s,
            queue_wait_s: r.queue_wait_s,
            lateness_s: r.lateness_s,
            ttft_s: r.ttft_s,
            e2e_s: r.e2e_s,
            itl_s: &r.itl_s,
            planned_input_tokens: r.planned_input_tokens,
            planned_output_tokens: r.planned_output_tokens,
            input_tokens: r.input_tokens,
            input_tokens_source: r.input_tokens_source,
            output_tokens: r.output_tokens,
            output_tokens_source: r.output_tokens_source,
            cached_tokens: r.cached_tokens,
            error: r.error.as_ref().map(|e| ErrorSeen {
                http_status: e.http_status.or(r.http_status),
                message: &e.message,
            }),
            answered_model: r.answered_model.as_deref(),
            replica: r.replica,
            reuse_best_tokens: r.reuse_best_tokens,
            reuse_predicted_tokens: r.reuse_predicted_tokens,
            reuse_gap_s: r.reuse_gap_s,
        }
    }
}

impl Facts<'_> {
    /// TPOT in nanoseconds, computed from the stamps exactly as the record
    /// computes `tpot_s` (whose 17-digit text may not read back to the same
    /// bits).
    fn tpot_ns(&self) -> Option<u64> {
        let first = ns(self.first_content_s?);
        let done = ns(self.done_s?);
        (self.output_tokens > 1 && done >= first)
            .then(|| ns(nanos_to_secs(done - first) / (self.output_tokens - 1) as f64))
    }
}

pub use crate::latency::Latency;
use crate::latency::Values;

/// Requests by outcome (from the records).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RequestCounts {
    /// Records written: every request the scheduler dispatched.
    pub dispatched: u64,
    pub ok: u64,
    /// Ended in an error (see `errors`).
    pub failed: u64,
    /// Cancelled at the end of the grace period.
    pub cancelled: u64,
    /// Warmup requests (the AgentX start window): recorded in
    /// records.jsonl but in no other figure, `dispatched` included.
    pub warmups: u64,
    /// Requests sent again because they provably never left the client
    /// (over every record, warmups included).
    pub resends: u64,
    /// Tries again after a `--retry-on` refusal (over every record).
    pub retries: u64,
}

/// The latency distributions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latencies {
    pub ttft: Latency,
    pub itl: Latency,
    pub tpot: Latency,
    pub e2e: Latency,
    pub lateness: Latency,
    pub queue_wait: Latency,
    pub job_time: Latency,
}

/// Work done over the run's wall window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Throughput {
    /// First `sent` (or the profiling start, when earlier) to last `done`
    /// over every measured record, in seconds.
    pub window_s: f64,
    /// Successful requests, their input and output tokens, and the rates.
    #[serde(flatten)]
    pub work: Work,
}

/// What the server said about its prefix cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheReport {
    /// `cached_tokens / input_tokens` over the requests below; null when
    /// no request reported cached tokens.
    pub hit_ratio: Option<f64>,
    /// Requests whose usage reported `prompt_tokens_details.cached_tokens`.
    pub requests: u64,
    pub cached_tokens: u64,
    pub input_tokens: u64,
}

/// How many records took a token count from each source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceCounts {
    pub usage: u64,
    pub counted: u64,
    pub planned: u64,
}

impl SourceCounts {
    fn add(&mut self, source: TokenSource) {
        match source {
            TokenSource::Usage => self.usage += 1,
            TokenSource::Counted => self.counted += 1,
            TokenSource::Planned => self.planned += 1,
        }
    }
}

/// Where token counts came from, and planned against reported prompts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokenReport {
    pub output_source: SourceCounts,
    pub input_source: SourceCounts,
    /// Over requests whose usage gave prompt tokens: what the plan
    /// estimated and what the server counted.
    pub planned_input_tokens: u64,
    pub reported_input_tokens: u64,
    /// Over ok requests whose output was measured (reported in usage or
    /// counted from chunks, not taken from the plan): the output tokens
    /// planned, the tokens received, and the requests that received fewer
    /// than planned (a server that ignores `max_tokens` or `ignore_eos`
    /// shrinks the workload; docs/run.md). Absent from summaries before
    /// arbor checked (0).
    #[serde(default)]
    pub planned_output_tokens: u64,
    #[serde(default)]
    pub received_output_tokens: u64,
    #[serde(default)]
    pub short_outputs: u64,
}

impl TokenReport {
    /// Ok requests whose output was measured (usage or counted).
    pub fn measured_outputs(&self) -> u64 {
        self.output_source.usage + self.output_source.counted
    }

    /// The share of measured outputs shorter than planned (0 with none).
    pub fn short_output_share(&self) -> f64 {
        match self.measured_outputs() {
            0 => 0.0,
            n => self.short_outputs as f64 / n as f64,
        }
    }
}

/// The first failure of one error class, in its own words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorSample {
    pub http_status: Option<u16>,
    /// The server's message (or the client's) in words: the message of a
    /// JSON error body, whitespace folded, at most 200 characters
    /// ([`crate::record::in_words`]).
    pub message: String,
}

/// The most distinct model names a summary lists as answered instead of
/// the one asked for; the rest are counted under [`OTHER_MODELS`].
pub const ANSWERED_MODEL_NAMES: usize = 8;
pub const OTHER_MODELS: &str = "(other names)";

/// Everything the records add up to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    pub requests: RequestCounts,
    pub latency: Latencies,
    pub throughput: Throughput,
    pub cache: CacheReport,
    /// Failed requests by error category.
    pub errors: BTreeMap<String, u64>,
    /// The first failure of each error category.
    pub error_samples: BTreeMap<String, ErrorSample>,
    /// Measured requests the server answered under another model's name,
    /// by the name it gave.
    pub answered_models: BTreeMap<String, u64>,
    pub tokens: TokenReport,
    /// Plays counted in `job_time`, and plays left out (a cancelled
    /// request, or fewer records than turns).
    pub plays_complete: u64,
    pub plays_incomplete: u64,
    /// The same figures per replica (records with a `replica`), job
    /// time and plays aside; empty with one endpoint.
    #[serde(skip)]
    pub replicas: BTreeMap<u32, Measured>,
    /// Prefix reuse, best against predicted against achieved; `None`
    /// when no record had the plan's figures.
    pub reuse: Option<ReuseSummary>,
}

/// What the records so far add up to, for a live display
/// ([`Collector::so_far`]): the server latencies a dashboard shows, the
/// requests by outcome, the ok requests' output tokens, the errors by
/// class.
#[derive(Debug, Clone, PartialEq)]
pub struct SoFar {
    pub requests: RequestCounts,
    pub ttft: Latency,
    pub itl: Latency,
    pub e2e: Latency,
    pub output_tokens: u64,
    pub errors: BTreeMap<String, u64>,
}

/// Per play: what the records said so far.
#[derive(Debug, Clone, Copy, Default)]
struct PlaySpan {
    tree_index: u32,
    first_sent: Option<u64>,
    last_done: Option<u64>,
    records: u32,
    cancelled: bool,
}

/// A lane's first tree and its warm turns by agent (turn in agent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmTurns {
    pub tree_index: u32,
    pub turns: BTreeMap<String, Vec<u32>>,
}

/// Which records are warmups: those marked `"warmup": true`, and, from
/// the scheduler's plan, the warm turns (agent, turn in agent) of each
/// lane's first play (its first play is the play of the lane's first
/// record: a lane's next play starts only once the first one drained).
/// Serialized in `run.json` as the list of lanes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Warmups {
    /// Per lane: the tree of its first play and its warm turns.
    lanes: Vec<Option<WarmTurns>>,
}

impl Warmups {
    /// Warm turns of each lane's first play, from a scheduler that planned
    /// a start window (none otherwise).
    pub fn of(scheduler: &arbor_engine::scheduler::Scheduler) -> Warmups {
        let trees = scheduler.trees();
        let lanes: Vec<_> = scheduler
            .lanes()
            .iter()
            .map(|lane| {
                let t_star = lane.t_star?;
                let &(tree_index, _) = lane.share.first()?;
                let tree = trees.get(tree_index as usize)?;
                let mid = arbor_engine::start::mid_start(tree, t_star);
                let mut turns: BTreeMap<String, Vec<u32>> = BTreeMap::new();
                for &(warm, _) in &mid.warm {
                    let w = warm as usize;
                    let agent = tree.agent_ids[tree.agent_of[w] as usize].clone();
                    turns.entry(agent).or_default().push(tree.index_in_agent[w]);
                }
                Some(WarmTurns { tree_index, turns })
            })
            .collect();
        Warmups { lanes }
    }

    /// `first_play[lane]`: the play of the lane's first record, set here.
    fn is_warmup(&self, first_play: &mut Vec<Option<u32>>, r: &Facts) -> bool {
        let Some(lane) = r.lane.map(|l| l as usize) else {
            return false;
        };
        let Some(Some(warm)) = self.lanes.get(lane) else {
            return false;
        };
        if first_play.len() <= lane {
            first_play.resize(lane + 1, None);
        }
        let first = *first_play[lane].get_or_insert(r.play);
        first == r.play
            && warm.tree_index == r.tree_index
            && warm.turns.get(r.agent).is_some_and(|t| t.contains(&r.turn))
    }
}

/// Takes records as they are written; keeps compact values.
pub struct Collector {
    warmups: Warmups,
    /// Per lane: the play of its first record.
    first_play: Vec<Option<u32>>,
    /// Measurement starts here at the latest (ns since the run epoch).
    window_start: Option<u64>,
    counts: RequestCounts,
    ttft: Values,
    tpot: Values,
    e2e: Values,
    lateness: Values,
    queue_wait: Values,
    itl: Values,
    job: Values,
    first_sent: Option<u64>,
    last_done: Option<u64>,
    ok_input_tokens: u64,
    ok_output_tokens: u64,
    cache: CacheReport,
    errors: BTreeMap<String, u64>,
    error_samples: BTreeMap<String, ErrorSample>,
    answered_models: BTreeMap<String, u64>,
    tokens: TokenReport,
    /// Turns of each tree (`run.json`'s), to know when a play is whole.
    tree_turns: Vec<u32>,
    /// Plays not yet whole.
    plays: BTreeMap<u32, PlaySpan>,
    /// Whole plays left out of `job_time` (a cancelled request, or a stamp
    /// missing).
    plays_incomplete: u64,
    /// False in a replica's collector: a play spans replicas, so job
    /// time is the whole run's alone (no play is kept), and a replica's
    /// records are not split again.
    whole_run: bool,
    /// Per replica (a record's `replica`): the same figures over its
    /// measured records (`crate::replicas`).
    replicas: BTreeMap<u32, Collector>,
    /// The records' prefix reuse.
    reuse: ReuseTally,
}

impl Default for Collector {
    fn default() -> Self {
        Collector::new()
    }
}

impl Collector {
    pub fn new() -> Collector {
        Collector {
            warmups: Warmups::default(),
            first_play: Vec::new(),
            window_start: None,
            counts: RequestCounts::default(),
            ttft: Values::default(),
            tpot: Values::default(),
            e2e: Values::default(),
            lateness: Values::default(),
            queue_wait: Values::default(),
            itl: Values::folded(),
            job: Values::default(),
            first_sent: None,
            last_done: None,
            ok_input_tokens: 0,
            ok_output_tokens: 0,
            cache: CacheReport {
                hit_ratio: None,
                requests: 0,
                cached_tokens: 0,
                input_tokens: 0,
            },
            errors: BTreeMap::new(),
            error_samples: BTreeMap::new(),
            answered_models: BTreeMap::new(),
            tokens: TokenReport::default(),
            tree_turns: Vec::new(),
            plays: BTreeMap::new(),
            plays_incomplete: 0,
            whole_run: true,
            replicas: BTreeMap::new(),
            reuse: ReuseTally::default(),
        }
    }

    /// The collector of one replica's records: every record it is given
    /// is measured (the run's collector has judged warmups), its window
    /// starts where the run's does, and it keeps no plays.
    fn for_replica(window_start: Option<u64>) -> Collector {
        Collector {
            window_start,
            whole_run: false,
            ..Collector::new()
        }
    }

    /// The turns of each tree (`run.json`'s `tree_turns`): a play with as
    /// many records as its tree's turns is whole, and folded into
    /// `job_time` at once. Without it (or for a tree beyond the list) a
    /// play is judged by its records alone at [`Collector::finish`].
    pub fn with_tree_turns(mut self, tree_turns: Vec<u32>) -> Collector {
        self.tree_turns = tree_turns;
        self
    }

    /// A collector that leaves `warmups` out of every figure and whose
    /// throughput window starts at `window_start` at the latest (the
    /// profiling start).
    pub fn with_warmups(warmups: Warmups, window_start: Option<u64>) -> Collector {
        Collector {
            warmups,
            window_start,
            ..Collector::new()
        }
    }

    /// One record; a warmup (marked `"warmup": true`, or a warm turn of
    /// the plan) is counted and measured nowhere.
    pub fn add(&mut self, r: &Facts) {
        // Every record passes through here, so the lane's first play is
        // seen even when the record is marked.
        let planned_warmup = self.warmups.is_warmup(&mut self.first_play, r);
        self.counts.resends += u64::from(r.resends);
        self.counts.retries += u64::from(r.retries);
        if r.warmup || planned_warmup {
            self.counts.warmups += 1;
            return;
        }
        self.counts.dispatched += 1;
        if let Some(replica) = r.replica.filter(|_| self.whole_run) {
            let window_start = self.window_start;
            self.replicas
                .entry(replica)
                .or_insert_with(|| Collector::for_replica(window_start))
                .add(r);
        }
        let sent = r.sent_s.map(ns);
        let done = r.done_s.map(ns);
        if let Some(s) = sent {
            self.first_sent = Some(self.first_sent.map_or(s, |f| f.min(s)));
            if let Some(d) = done {
                self.last_done = Some(self.last_done.map_or(d, |l| l.max(d)));
            }
        }
        self.queue_wait.push(ns(r.queue_wait_s));
        if let Some(l) = r.lateness_s {
            self.lateness.push(ns(l));
        }
        if let Some(model) = r.answered_model {
            self.answered(model);
        }

        if self.whole_run {
            let span = self.plays.entry(r.play).or_default();
            span.tree_index = r.tree_index;
            span.records += 1;
            if let Some(s) = sent {
                span.first_sent = Some(span.first_sent.map_or(s, |f| f.min(s)));
            }
            if let Some(d) = done {
                span.last_done = Some(span.last_done.map_or(d, |l| l.max(d)));
            }
            if r.status == Status::Cancelled {
                span.cancelled = true;
            }
        }

        match r.status {
            Status::Ok => {
                self.counts.ok += 1;
                self.fold_if_whole(r.play);
            }
            Status::Cancelled => {
                self.counts.cancelled += 1;
                self.fold_if_whole(r.play);
                return;
            }
            Status::Error => {
                self.fold_if_whole(r.play);
                self.counts.failed += 1;
                let category = r.error_category.map_or("unknown", ErrorCategory::as_str);
                *self.errors.entry(category.to_string()).or_insert(0) += 1;
                if let Some(seen) = r.error {
                    if !self.error_samples.contains_key(category) {
                        self.error_samples.insert(
                            category.to_string(),
                            ErrorSample {
                                http_status: seen.http_status,
                                message: crate::record::in_words(None, seen.message),
                            },
                        );
                    }
                }
                return;
            }
        }

        // Successful requests only from here on.
        self.reuse.add(
            r.input_tokens,
            r.reuse_best_tokens,
            r.reuse_predicted_tokens,
            r.reuse_gap_s,
            r.cached_tokens,
        );
        if let Some(v) = r.ttft_s {
            self.ttft.push(ns(v));
        }
        if let Some(v) = r.tpot_ns() {
            self.tpot.push(v);
        }
        if let Some(v) = r.e2e_s {
            self.e2e.push(ns(v));
        }
        for &gap in r.itl_s {
            self.itl.push(ns(gap));
        }
        self.ok_input_tokens = self.ok_input_tokens.saturating_add(r.input_tokens);
        self.ok_output_tokens = self.ok_output_tokens.saturating_add(r.output_tokens);
        self.tokens.output_source.add(r.output_tokens_source);
        if r.output_tokens_source != TokenSource::Planned {
            let planned = u64::from(r.planned_output_tokens);
            self.tokens.planned_output_tokens =
                self.tokens.planned_output_tokens.saturating_add(planned);
            self.tokens.received_output_tokens = self
                .tokens
                .received_output_tokens
                .saturating_add(r.output_tokens);
            if r.output_tokens < planned {
                self.tokens.short_outputs += 1;
            }
        }
        self.tokens.input_source.add(r.input_tokens_source);
        if r.input_tokens_source == TokenSource::Usage {
            self.tokens.planned_input_tokens = self
                .tokens
                .planned_input_tokens
                .saturating_add(u64::from(r.planned_input_tokens));
            self.tokens.reported_input_tokens = self
                .tokens
                .reported_input_tokens
                .saturating_add(r.input_tokens);
            if let Some(cached) = r.cached_tokens {
                self.cache.requests += 1;
                self.cache.cached_tokens = self.cache.cached_tokens.saturating_add(cached);
                self.cache.input_tokens = self.cache.input_tokens.saturating_add(r.input_tokens);
            }
        }
    }

    /// Counts a request answered under `model`'s name; past
    /// [`ANSWERED_MODEL_NAMES`] distinct names, under [`OTHER_MODELS`].
    fn answered(&mut self, model: &str) {
        if let Some(n) = self.answered_models.get_mut(model) {
            *n += 1;
            return;
        }
        let key = if self.answered_models.len() < ANSWERED_MODEL_NAMES {
            model
        } else {
            OTHER_MODELS
        };
        *self.answered_models.entry(key.to_string()).or_insert(0) += 1;
    }

    /// `play`, when it has all its tree's records, folded into
    /// `job_time` (or counted incomplete) and forgotten.
    fn fold_if_whole(&mut self, play: u32) {
        let Some(span) = self.plays.get(&play) else {
            return;
        };
        let whole = self
            .tree_turns
            .get(span.tree_index as usize)
            .is_some_and(|&t| span.records >= t);
        if whole {
            let span = *span;
            self.plays.remove(&play);
            self.judge(&span);
        }
    }

    /// A play done with: its job time, or counted incomplete.
    fn judge(&mut self, span: &PlaySpan) {
        let all_there = self
            .tree_turns
            .get(span.tree_index as usize)
            .is_none_or(|&t| span.records >= t);
        match (span.first_sent, span.last_done) {
            (Some(s), Some(d)) if all_there && !span.cancelled && d >= s => self.job.push(d - s),
            _ => self.plays_incomplete += 1,
        }
    }

    /// What the records so far add up to, without ending the collection
    /// (the percentiles follow [`crate::latency`]'s rule, as the summary's
    /// will).
    pub fn so_far(&mut self) -> SoFar {
        SoFar {
            requests: self.counts.clone(),
            ttft: self.ttft.latency(),
            itl: self.itl.latency(),
            e2e: self.e2e.latency(),
            output_tokens: self.ok_output_tokens,
            errors: self.errors.clone(),
        }
    }

    /// The summary. A play with fewer records than its tree's turns
    /// (turns skipped) or a cancelled request is left out of `job_time`;
    /// plays of trees beyond `tree_turns` are judged by their records
    /// alone.
    pub fn finish(mut self) -> Measured {
        for span in std::mem::take(&mut self.plays).into_values() {
            if span.records > 0 {
                self.judge(&span);
            }
        }
        let job_time = self.job.latency();
        let start = match (self.first_sent, self.window_start) {
            (Some(s), Some(w)) => Some(s.min(w)),
            (s, _) => s,
        };
        let window = match (start, self.last_done) {
            (Some(s), Some(d)) if d > s => d - s,
            _ => 0,
        };
        if self.cache.requests > 0 && self.cache.input_tokens > 0 {
            self.cache.hit_ratio =
                Some(self.cache.cached_tokens as f64 / self.cache.input_tokens as f64);
        }
        let replicas = std::mem::take(&mut self.replicas)
            .into_iter()
            .map(|(replica, collector)| (replica, collector.finish()))
            .collect();
        Measured {
            replicas,
            latency: Latencies {
                ttft: self.ttft.latency(),
                itl: self.itl.latency(),
                tpot: self.tpot.latency(),
                e2e: self.e2e.latency(),
                lateness: self.lateness.latency(),
                queue_wait: self.queue_wait.latency(),
                job_time,
            },
            throughput: Throughput {
                window_s: window as f64 / 1e9,
                work: Work::over(
                    window,
                    self.counts.ok,
                    self.ok_input_tokens,
                    self.ok_output_tokens,
                ),
            },
            requests: self.counts,
            cache: self.cache,
            errors: self.errors,
            error_samples: self.error_samples,
            answered_models: self.answered_models,
            tokens: self.tokens,
            plays_complete: job_time.count,
            plays_incomplete: self.plays_incomplete,
            reuse: self.reuse.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ErrorCategory, RequestError, RequestIdentity, Response, Stamps};

    const MS: u64 = 1_000_000;

    /// A response sent at `sent_ms`, with content chunks at the given
    /// times (ms) and done at `done_ms`.
    fn record(sent_ms: u64, chunks: &[u64], done_ms: u64) -> Response {
        Response {
            stamps: Stamps {
                sent: Some(sent_ms * MS),
                headers: Some(sent_ms * MS),
                first_byte: chunks.first().map(|c| c * MS),
                first_content: chunks.first().map(|c| c * MS),
                content: chunks.iter().map(|c| c * MS).collect(),
                done: Some(done_ms * MS),
            },
            http_status: Some(200),
            ..Response::default()
        }
    }

    fn identity(request: u64, play: u32, eligible_ms: u64, dispatched_ms: u64) -> RequestIdentity {
        RequestIdentity {
            request,
            tree: "t".into(),
            tree_index: play,
            agent: "a".into(),
            turn: request as u32,
            copy: 0,
            lane: None,
            play,
            eligible: eligible_ms * MS,
            dispatched: dispatched_ms * MS,
            queue_wait: (dispatched_ms - eligible_ms) * MS,
            warmup: false,
            planned_input_tokens: 100,
            planned_output_tokens: 3,
            replica: None,
            session_key: None,
        }
    }

    fn with_usage(mut r: Response, prompt: u64, completion: u64, cached: Option<u64>) -> Response {
        r.prompt_tokens = Some(prompt);
        r.completion_tokens = Some(completion);
        r.cached_tokens = cached;
        r
    }

    fn failed(mut r: Response, category: ErrorCategory) -> Response {
        r.error = Some(RequestError {
            category,
            message: "x".into(),
            http_status: None,
            retry_after_s: None,
        });
        r
    }

    /// Play `p` is a play of tree `p`: `tree_turns` gives each play's turns.
    fn collect(items: Vec<(RequestIdentity, Response)>, tree_turns: &[u32]) -> Measured {
        let mut c = Collector::new().with_tree_turns(tree_turns.to_vec());
        for (id, r) in items {
            c.add(&Facts::from(&RequestRecord::new(id, &r)));
        }
        c.finish()
    }

    #[test]
    fn outputs_shorter_than_planned_are_counted_when_measured() {
        // Planned 3 output tokens each: usage says 1 (short), 3 (full);
        // counted chunks 2 (short); a failed request is not judged.
        let m = collect(
            vec![
                (
                    identity(0, 0, 1000, 1000),
                    with_usage(record(1000, &[1100], 1200), 10, 1, None),
                ),
                (
                    identity(1, 0, 1000, 1000),
                    with_usage(record(1000, &[1100, 1150, 1200], 1200), 10, 3, None),
                ),
                (
                    identity(2, 0, 1000, 1000),
                    record(1000, &[1100, 1200], 1200),
                ),
                (
                    identity(3, 0, 1000, 1000),
                    failed(record(1000, &[], 1200), ErrorCategory::HttpStatus),
                ),
            ],
            &[4],
        );
        let t = &m.tokens;
        assert_eq!(t.measured_outputs(), 3);
        assert_eq!(
            (
                t.short_outputs,
                t.planned_output_tokens,
                t.received_output_tokens
            ),
            (2, 9, 6)
        );
        assert!((t.short_output_share() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn the_first_failure_of_each_class_and_another_models_answers_are_kept() {
        let mut first = failed(record(1000, &[], 1200), ErrorCategory::HttpStatus);
        first.error.as_mut().unwrap().message = "The model m does not exist".into();
        first.http_status = Some(404);
        let mut answered = record(1000, &[1100], 1200);
        answered.answered_model = Some("other".into());
        let m = collect(
            vec![
                (identity(0, 0, 1000, 1000), first),
                (
                    identity(1, 0, 1000, 1000),
                    failed(record(1000, &[], 1200), ErrorCategory::HttpStatus),
                ),
                (identity(2, 0, 1000, 1000), answered.clone()),
                (identity(3, 0, 1000, 1000), answered),
            ],
            &[4],
        );
        assert_eq!(m.errors["http_status"], 2);
        assert_eq!(
            m.error_samples["http_status"],
            ErrorSample {
                http_status: Some(404),
                message: "The model m does not exist".into()
            }
        );
        assert_eq!(m.answered_models.get("other"), Some(&2));
    }

    #[test]
    fn answered_model_names_are_bounded() {
        let mut c = Collector::new();
        for i in 0..20 {
            c.answered(&format!("m{i}"));
        }
        let m = c.finish();
        assert_eq!(m.answered_models.len(), ANSWERED_MODEL_NAMES + 1);
        assert_eq!(
            m.answered_models[OTHER_MODELS],
            20 - ANSWERED_MODEL_NAMES as u64
        );
    }

    #[test]
    fn resends_add_up_over_the_records() {
        let mut resent = record(1000, &[1100], 1200);
        resent.attempts = 2;
        resent.resends = 1;
        let m = collect(
            vec![
                (identity(0, 0, 1000, 1000), resent),
                (identity(1, 0, 1000, 1000), record(1000, &[1100], 1200)),
            ],
            &[2],
        );
        assert_eq!((m.requests.dispatched, m.requests.resends), (2, 1));
    }

    #[test]
    fn latencies_throughput_and_cache_from_hand_made_records() {
        let m = collect(
            vec![
                // Play 0: two turns, 1000..1400 and 1500..2000 ms.
                (
                    identity(0, 0, 1000, 1000),
                    with_usage(record(1000, &[1100, 1200, 1300], 1400), 1000, 3, Some(400)),
                ),
                (
                    identity(1, 0, 1490, 1500),
                    with_usage(record(1500, &[1700, 1800, 1900], 2000), 1000, 3, Some(600)),
                ),
                // Play 1: one turn, no usage (counted), 1200..1600.
                (
                    identity(2, 1, 1200, 1200),
                    record(1210, &[1300, 1400, 1600], 1600),
                ),
            ],
            &[2, 1],
        );
        assert_eq!(
            m.requests,
            RequestCounts {
                dispatched: 3,
                ok: 3,
                failed: 0,
                cancelled: 0,
                warmups: 0,
                resends: 0,
                retries: 0,
            }
        );
        let l = &m.latency;
        // TTFT 100, 200, 90 ms: nearest-rank p50 is the 2nd = 100 ms.
        assert_eq!(l.ttft.count, 3);
        assert!((l.ttft.p50_s - 0.100).abs() < 1e-12);
        assert!((l.ttft.max_s - 0.200).abs() < 1e-12);
        assert!((l.ttft.mean_s - 0.130).abs() < 1e-12);
        // E2E 400, 500, 390 ms.
        assert!((l.e2e.max_s - 0.500).abs() < 1e-12);
        // ITL gaps: 100,100 | 100,100 | 100,200 ms.
        assert_eq!(l.itl.count, 6);
        assert!((l.itl.max_s - 0.200).abs() < 1e-12);
        assert!((l.itl.p50_s - 0.100).abs() < 0.0005, "{}", l.itl.p50_s);
        assert!((l.itl.mean_s - 0.700 / 6.0).abs() < 1e-12);
        // TPOT = (done - first content) / (tokens - 1): 150, 150, 150 ms.
        assert!((l.tpot.p99_s - 0.150).abs() < 1e-12);
        // Lateness sent - eligible: 0, 10, 10 ms; queue wait 0, 10, 0 ms.
        assert!((l.lateness.max_s - 0.010).abs() < 1e-12);
        assert!((l.queue_wait.p50_s - 0.0).abs() < 1e-12);
        assert!((l.queue_wait.max_s - 0.010).abs() < 1e-12);
        // Job time: play 0 is 1000..2000, play 1 is 1210..1600.
        assert_eq!(l.job_time.count, 2);
        assert!((l.job_time.max_s - 1.0).abs() < 1e-12);
        assert!((l.job_time.p50_s - 0.390).abs() < 1e-12);
        assert_eq!((m.plays_complete, m.plays_incomplete), (2, 0));
        // Window 1000..2000 ms: 3 requests/s; tokens 1000+1000+100 in, 9 out.
        assert!((m.throughput.window_s - 1.0).abs() < 1e-12);
        let t = &m.throughput.work;
        assert!((t.requests_per_s - 3.0).abs() < 1e-9);
        assert_eq!((t.input_tokens, t.output_tokens), (2100, 9));
        assert!((t.input_tokens_per_s - 2100.0).abs() < 1e-6);
        // Cache: (400 + 600) / 2000 over the two requests with usage.
        assert_eq!(m.cache.hit_ratio, Some(0.5));
        assert_eq!(m.cache.requests, 2);
        assert_eq!(m.tokens.output_source.usage, 2);
        assert_eq!(m.tokens.output_source.counted, 1);
        assert_eq!(m.tokens.input_source.planned, 1);
        assert_eq!(
            (
                m.tokens.planned_input_tokens,
                m.tokens.reported_input_tokens
            ),
            (200, 2000)
        );
        assert!(m.errors.is_empty());
    }

    #[test]
    fn failures_are_counted_by_category_and_kept_out_of_latencies() {
        let m = collect(
            vec![
                (identity(0, 0, 0, 0), record(0, &[100, 200, 300], 300)),
                (
                    identity(1, 1, 0, 0),
                    failed(record(0, &[], 50), ErrorCategory::HttpStatus),
                ),
                (
                    identity(2, 2, 0, 0),
                    failed(record(5, &[900], 5000), ErrorCategory::StreamCut),
                ),
                (
                    identity(3, 3, 0, 0),
                    failed(record(0, &[], 10), ErrorCategory::HttpStatus),
                ),
                (
                    identity(4, 4, 0, 0),
                    failed(record(0, &[], 10), ErrorCategory::Cancelled),
                ),
            ],
            &[],
        );
        assert_eq!(
            m.requests,
            RequestCounts {
                dispatched: 5,
                ok: 1,
                failed: 3,
                cancelled: 1,
                warmups: 0,
                resends: 0,
                retries: 0,
            }
        );
        assert_eq!(m.errors.get("http_status"), Some(&2));
        assert_eq!(m.errors.get("stream_cut"), Some(&1));
        assert_eq!(
            m.errors.get("cancelled"),
            None,
            "cancelled is its own count"
        );
        assert_eq!(m.latency.ttft.count, 1);
        assert_eq!(m.latency.e2e.count, 1);
        assert_eq!(m.latency.itl.count, 2);
        // Lateness and queue wait cover every request.
        assert_eq!(m.latency.lateness.count, 5);
        assert_eq!(m.latency.queue_wait.count, 5);
        // The window spans failed requests too: 0..5000 ms.
        assert!((m.throughput.window_s - 5.0).abs() < 1e-12);
        assert!((m.throughput.work.requests_per_s - 0.2).abs() < 1e-12);
        // No usage anywhere: no cache ratio.
        assert_eq!(m.cache.hit_ratio, None);
        // The cancelled play has no job time; failed plays finished.
        assert_eq!((m.plays_complete, m.plays_incomplete), (4, 1));
    }

    #[test]
    fn plays_missing_turns_have_no_job_time() {
        let m = collect(
            vec![(identity(0, 0, 0, 0), record(0, &[100, 200], 300))],
            &[2],
        );
        assert_eq!(m.latency.job_time.count, 0);
        assert_eq!((m.plays_complete, m.plays_incomplete), (0, 1));
    }

    #[test]
    fn itl_percentiles_from_the_histogram_are_close_to_exact() {
        let mut c = Collector::new();
        // 1..=1000 ms gaps in one record.
        let chunks: Vec<u64> = (0..=1000u64)
            .scan(0, |t, i| {
                *t += i;
                Some(*t)
            })
            .collect();
        let done = *chunks.last().unwrap();
        c.add(&Facts::from(&RequestRecord::new(
            identity(0, 0, 0, 0),
            &record(0, &chunks, done),
        )));
        let m = c.finish();
        let itl = m.latency.itl;
        assert_eq!(itl.count, 1000);
        assert!((itl.p50_s - 0.500).abs() / 0.5 < 0.002, "{}", itl.p50_s);
        assert!((itl.p99_s - 0.990).abs() / 0.99 < 0.002, "{}", itl.p99_s);
        assert!((itl.max_s - 1.0).abs() < 1e-12);
        assert!((itl.mean_s - 0.5005).abs() < 1e-9);
    }

    #[test]
    fn marked_warmups_are_counted_and_measured_nowhere() {
        let mut c = Collector::with_warmups(Warmups::default(), Some(500 * MS));
        let mut warm = identity(0, 0, 0, 0);
        warm.warmup = true;
        let warm = RequestRecord::new(warm, &record(0, &[100, 200], 300));
        c.add(&Facts::from(&warm));
        let r = RequestRecord::new(identity(1, 0, 900, 900), &record(1000, &[1100, 1200], 1500));
        c.add(&Facts::from(&r));
        let m = c.finish();
        assert_eq!((m.requests.dispatched, m.requests.warmups), (1, 1));
        assert_eq!(m.latency.ttft.count, 1);
        assert_eq!(m.latency.queue_wait.count, 1);
        // The window starts at the profiling start (500 ms), not at 0.
        assert!((m.throughput.window_s - 1.0).abs() < 1e-12);
    }

    #[test]
    fn an_empty_run_is_all_zeros_and_nulls() {
        let m = Collector::new().finish();
        assert_eq!(m.requests.dispatched, 0);
        assert_eq!(m.latency.itl.count, 0);
        assert_eq!(m.throughput.work.requests_per_s, 0.0);
        assert_eq!(m.cache.hit_ratio, None);
    }
}
