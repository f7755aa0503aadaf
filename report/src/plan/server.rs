//! What `arbor plan --service server:PROFILE.toml` adds to the plan
//! report: the batching server model's predictions (docs/plan.md,
//! "Predictions of the server model").
//!
//! Owns the `server` object of `plan --json` (per-turn TTFT, ITL and E2E,
//! job time per play, their distributions, the server's gauges over time
//! in about 200 bins, peaks) and its console lines. Built from the
//! virtual clock's [`Predicted`] requests and the gauges sampled while
//! the model ran; reads nothing else.

use std::io::{self, Write};

use arbor_backends::virtual_clock::Predicted;
use arbor_engine::scheduler::{Scheduler, TurnState};
use arbor_engine::stats::{Distribution, Seconds};
use arbor_engine::time::{nanos_to_secs, Nanos, NANOS_PER_MS};
use arbor_sim::server::{Gauges, Profile};

use super::intervals::{Figures, Interval, PredictionIntervals, RankIntervals};
use schemars::JsonSchema;
use serde::Serialize;

/// About this many bins in the series.
const TARGET_BINS: u64 = 200;

/// The model's gauges at a time (taken after every change).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Nanos,
    pub gauges: Gauges,
}

/// One turn as the model served it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PredictedTurn {
    pub request: u64,
    /// Index of the tree in the workload, the play and the flat turn.
    pub tree: u32,
    pub play: u32,
    pub turn: u32,
    pub warmup: bool,
    pub sent_s: f64,
    pub ttft_s: f64,
    /// Mean gap between output tokens (null with one output token).
    pub itl_s: Option<f64>,
    pub e2e_s: f64,
    pub isl: u32,
    pub osl: u32,
    pub cached_tokens: u32,
}

/// The server's gauges over time, binned.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerSeries {
    pub bin_s: f64,
    /// Start of each bin, seconds on the plan's clock.
    pub t_s: Vec<f64>,
    /// Most requests waiting (received, not running) within the bin.
    pub waiting_max: Vec<u32>,
    /// Most requests running (in the batch) within the bin.
    pub running_max: Vec<u32>,
    /// Most KV blocks in use within the bin.
    pub kv_blocks_used_max: Vec<u32>,
    /// Prompt tokens served from the prefix cache by the requests
    /// admitted within the bin.
    pub prefix_hit_tokens: Vec<u64>,
}

/// The `server` object of `plan --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerPrediction {
    /// The profile's label and origin (fitted, roofline, example).
    pub profile: String,
    pub origin: String,
    /// Measured requests (warmups left out), with these distributions.
    pub ttft: Distribution<Seconds>,
    pub itl: Distribution<Seconds>,
    pub e2e: Distribution<Seconds>,
    /// Per play: its first send to its last end.
    pub job: Distribution<Seconds>,
    pub prompt_tokens: u64,
    pub prefix_hit_tokens: u64,
    pub preemptions: u64,
    /// Requests whose prompt and output never fit the KV pool.
    pub rejected: u64,
    pub steps: u64,
    pub peak_waiting: u32,
    pub peak_running: u32,
    pub peak_kv_blocks_used: u32,
    pub kv_blocks_total: u32,
    pub series: ServerSeries,
    pub turns: Vec<PredictedTurn>,
    /// Each predicted percentile's interval (docs/capacity.md,
    /// "Uncertainty: intervals on predictions"); absent under
    /// `--intervals off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<PredictionIntervals>,
}

impl ServerPrediction {
    /// The predictions of a finished plan.
    pub fn new(
        profile: &Profile,
        scheduler: &Scheduler,
        predicted: &[Predicted],
        samples: &[Sample],
    ) -> ServerPrediction {
        let mut sorted: Vec<&Predicted> = predicted.iter().collect();
        sorted.sort_by_key(|p| p.id);
        let Figures {
            ttft,
            itl,
            e2e,
            job,
            ..
        } = figures(scheduler, predicted);
        let last = samples.last().map(|s| s.gauges).unwrap_or_default();
        let peak = |f: fn(&Gauges) -> u32| samples.iter().map(|s| f(&s.gauges)).max().unwrap_or(0);
        ServerPrediction {
            profile: profile.label.clone(),
            origin: profile.origin.to_string(),
            ttft: Distribution::of_sorted(&ttft),
            itl: Distribution::of_sorted(&itl),
            e2e: Distribution::of_sorted(&e2e),
            job: Distribution::of_sorted(&job),
            prompt_tokens: last.prompt_tokens,
            prefix_hit_tokens: last.prefix_hit_tokens,
            preemptions: last.preemptions,
            rejected: last.rejected,
            steps: last.steps,
            peak_waiting: peak(|g| g.waiting),
            peak_running: peak(|g| g.running),
            peak_kv_blocks_used: peak(|g| g.kv_blocks_used),
            kv_blocks_total: profile.engine.num_gpu_blocks,
            series: series(samples),
            turns: sorted.iter().map(|p| turn(p)).collect(),
            intervals: None,
        }
    }

    /// The turns by request id (for the timeline).
    pub fn by_request(&self) -> Vec<Option<PredictedTurn>> {
        let mut out = vec![None; self.turns.last().map_or(0, |t| t.request as usize + 1)];
        for t in &self.turns {
            out[t.request as usize] = Some(t.clone());
        }
        out
    }

    /// The console lines (after the plan's own).
    pub fn print_human(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "  server model    {} ({})", self.profile, self.origin)?;
        let intervals = self.intervals.as_ref();
        for (name, d, ranks) in [
            ("ttft", &self.ttft, intervals.map(|i| &i.ttft)),
            ("itl", &self.itl, intervals.map(|i| &i.itl)),
            ("e2e", &self.e2e, intervals.map(|i| &i.e2e)),
            ("job", &self.job, intervals.map(|i| &i.job)),
        ] {
            let within = |i: fn(&RankIntervals) -> &Interval| {
                ranks.map_or(String::new(), |r| {
                    let i = i(r);
                    format!(" [{:.3}, {:.3}]", i.lo_s, i.hi_s)
                })
            };
            writeln!(
                out,
                "    {name:<13} p50 {:.3} s{}, p90 {:.3} s{}, p99 {:.3} s{}, max {:.3} s ({} values)",
                d.shown(d.p50),
                within(|r| &r.p50),
                d.shown(d.p90),
                within(|r| &r.p90),
                d.shown(d.p99),
                within(|r| &r.p99),
                d.shown(d.max),
                d.count
            )?;
        }
        if let Some(i) = intervals {
            writeln!(out, "    intervals     {}", i.describe())?;
            if let Some(m) = &i.makespan {
                writeln!(
                    out,
                    "    makespan      [{:.3}, {:.3}] s over the draws",
                    m.lo_s, m.hi_s
                )?;
            }
        }
        let share = if self.prompt_tokens == 0 {
            0.0
        } else {
            100.0 * self.prefix_hit_tokens as f64 / self.prompt_tokens as f64
        };
        writeln!(
            out,
            "    prefix cache  {} of {} prompt tokens hit ({share:.1} %)",
            self.prefix_hit_tokens, self.prompt_tokens
        )?;
        writeln!(
            out,
            "    queue         peak {} waiting, peak {} running, KV peak {} of {} blocks, {} preemptions, {} refused, {} steps",
            self.peak_waiting,
            self.peak_running,
            self.peak_kv_blocks_used,
            self.kv_blocks_total,
            self.preemptions,
            self.rejected,
            self.steps
        )
    }
}

/// A finished plan's predicted values, sorted (what its distributions and
/// intervals are read from): the measured requests' TTFT, gap and E2E,
/// each finished play's job time, the last end.
pub fn figures(scheduler: &Scheduler, predicted: &[Predicted]) -> Figures {
    let mut f = Figures::default();
    for p in predicted.iter().filter(|p| !p.warmup) {
        f.ttft.push(p.first_token.saturating_sub(p.sent));
        f.e2e.push(p.done.saturating_sub(p.sent));
        if let Some(gap) = gap(p) {
            f.itl.push(gap);
        }
    }
    f.job = scheduler
        .plays()
        .iter()
        .filter_map(|play| Some(play.done?.saturating_sub(play.started?)))
        .collect();
    // As the plan's makespan: the last end of a turn that ran.
    f.makespan = scheduler
        .slots()
        .iter()
        .filter(|s| {
            matches!(
                s.state,
                TurnState::Done | TurnState::Failed | TurnState::Cancelled
            )
        })
        .map(|s| s.end)
        .max()
        .unwrap_or(0);
    f.sorted()
}

/// Mean gap between output tokens; none with one output token.
fn gap(p: &Predicted) -> Option<Nanos> {
    (p.osl > 1).then(|| p.done.saturating_sub(p.first_token) / u64::from(p.osl - 1))
}

fn turn(p: &Predicted) -> PredictedTurn {
    PredictedTurn {
        request: p.id,
        tree: p.tree,
        play: p.play,
        turn: p.turn,
        warmup: p.warmup,
        sent_s: nanos_to_secs(p.sent),
        ttft_s: nanos_to_secs(p.first_token.saturating_sub(p.sent)),
        itl_s: gap(p).map(nanos_to_secs),
        e2e_s: nanos_to_secs(p.done.saturating_sub(p.sent)),
        isl: p.isl,
        osl: p.osl,
        cached_tokens: p.cached_tokens,
    }
}

/// A round bin width (1, 2 or 5 times a power of ten, at least 1 ms) that
/// cuts `span` into about [`TARGET_BINS`] bins (the page's rule).
fn bin_width(span: Nanos) -> Nanos {
    let want = (span / TARGET_BINS).max(NANOS_PER_MS);
    let mut unit = NANOS_PER_MS;
    loop {
        for m in [1, 2, 5] {
            if unit * m >= want {
                return unit * m;
            }
        }
        unit *= 10;
    }
}

/// The samples binned: a gauge holds its value until the next sample, so
/// a bin with none carries the last one in.
fn series(samples: &[Sample]) -> ServerSeries {
    let span = samples.last().map_or(0, |s| s.at);
    let width = bin_width(span);
    let count = (span / width + 1) as usize;
    let mut s = ServerSeries {
        bin_s: nanos_to_secs(width),
        t_s: (0..count as u64)
            .map(|i| nanos_to_secs(i * width))
            .collect(),
        waiting_max: vec![0; count],
        running_max: vec![0; count],
        kv_blocks_used_max: vec![0; count],
        prefix_hit_tokens: vec![0; count],
    };
    let mut last = Gauges::default();
    let mut next = 0;
    for bin in 0..count {
        let end = (bin as u64 + 1) * width;
        let (mut waiting, mut running, mut kv) = (last.waiting, last.running, last.kv_blocks_used);
        let before = last.prefix_hit_tokens;
        while let Some(sample) = samples.get(next).filter(|s| s.at < end) {
            let g = sample.gauges;
            waiting = waiting.max(g.waiting);
            running = running.max(g.running);
            kv = kv.max(g.kv_blocks_used);
            last = g;
            next += 1;
        }
        s.waiting_max[bin] = waiting;
        s.running_max[bin] = running;
        s.kv_blocks_used_max[bin] = kv;
        s.prefix_hit_tokens[bin] = last.prefix_hit_tokens.saturating_sub(before);
    }
    s
}
