//! The plan report: what `arbor plan` shows (its human lines, written
//! into the writer given, or `plan --json`'s object, [`PlanReport`]) and
//! the per-turn timeline it writes ([`write_timeline`]), with
//! `plan --json`'s schema version. Owns the numbers' definitions; computes
//! them from the finished scheduler, never from the wall clock, so the same
//! inputs and seed give the same bytes. The two parts `arbor run`'s
//! summary shares with it, [`PolicySummary`] and [`Work`], are
//! `arbor_runs`'. The batching server
//! model's predictions (`--service server:`) are [`server`]'s.

use std::io::{self, Write};

use arbor_engine::breakdown::breakdown;
use arbor_engine::dag::CompiledWorkload;
use arbor_engine::derive::Adjustments;
use arbor_engine::fit::FitReport;
use arbor_engine::scheduler::{Scheduler, TurnState};
use arbor_engine::stats::{Distribution, Seconds};
use arbor_engine::time::{nanos_to_secs, Nanos};
use arbor_engine::{AgentKind, Workload};
use arbor_formats::inspect::AdjustmentSummary;
use schemars::JsonSchema;
use serde::Serialize;

use arbor_runs::policy::PolicySummary;
use arbor_runs::work::Work;

use arbor_runs::time_breakdown::TimeBreakdown;

pub mod intervals;
pub mod server;

use server::ServerPrediction;

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentCounts {
    pub root: u64,
    pub blocking: u64,
    pub background: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LaneReport {
    pub lane: u32,
    pub share: usize,
    pub plays: u32,
    /// Plays after the first (the lane's tree drained and it started the
    /// next one at turn 0).
    pub recycles: u32,
    pub dry_at_s: Option<f64>,
    /// With a start window: where the lane entered its first tree, in
    /// recorded seconds of that tree.
    pub t_star_s: Option<f64>,
    /// Warmup requests of the lane's first play.
    pub warmups: u32,
    /// The lane looped through trees that take no time and was stopped.
    pub stalled: bool,
}

/// The schema of `arbor plan --json` (the title of
/// docs/schema/plan.schema.json).
pub const PLAN_SCHEMA: &str = "arbor.plan/1";

/// What `arbor plan` reports (`--json`: this object).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = PLAN_SCHEMA)]
pub struct PlanReport {
    #[schemars(extend("const" = PLAN_SCHEMA))]
    pub schema_version: &'static str,
    pub inputs: String,
    /// The recipe (`--scenario`), if any.
    pub scenario: Option<String>,
    pub seed: u64,
    pub service: String,
    pub policy: PolicySummary,
    /// Under `--shard I/N`: the stripe and the rule each global policy
    /// followed (the `config.shard` of a run's summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<arbor_runs::sharding::ShardConfig>,
    /// `--isl-scale`/`--max-context`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReport>,
    /// The trace inputs' identity (docs/data.md, "Manifest"): absent for a
    /// synthetic workload alone or a stream (stdin, a FIFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<arbor_formats::manifest::Corpus>,
    /// Under `--scenario`: the validity stamp a run of this plan gets if
    /// it completes (docs/agentx.md, "Validity").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission: Option<PlannedSubmission>,
    /// `--history live`: a run of this plan builds each next turn from the
    /// text the server generates; the plan's prompt lengths are the
    /// recorded ones (it cannot see that text). Absent under recorded
    /// history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<String>,
    pub trees: u64,
    pub agents: u64,
    pub agent_kinds: AgentCounts,
    pub turns: u64,
    pub plays: u64,
    pub makespan_s: f64,
    pub peak_inflight: u32,
    pub peak_inflight_at_s: f64,
    pub peak_live_trees: u32,
    pub peak_live_trees_at_s: f64,
    pub idle_shifts: u64,
    pub idle_skipped_s: f64,
    pub adjustments: AdjustmentSummary,
    pub dispatched: u64,
    pub completed: u64,
    pub cancelled: u64,
    pub skipped: u64,
    pub plays_not_started: u64,
    /// Where measurement starts (every lane reaches its t* together); 0
    /// without a start window. The duration counts from here.
    pub profiling_start_s: f64,
    /// Warmup requests (sent before the profiling start, not measured).
    pub warmups: u64,
    /// Turns recorded before a lane's t*: the conversation's past, never
    /// replayed.
    pub history_turns: u64,
    /// Wait for the request cap (JSON keys `count`, `mean_s`, `p50_s`,
    /// `p90_s`, `p95_s`, `p99_s`, `max_s`).
    pub queue_wait: Option<Distribution<Seconds>>,
    pub demand: Work,
    pub lanes: Option<Vec<LaneReport>>,
    /// The makespan by class along its critical path, with the flag that
    /// scales each class (docs/plan.md, "Where the time goes").
    pub time_breakdown: TimeBreakdown,
    /// The batching server model's predictions (`--service server:`
    /// only; docs/plan.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerPrediction>,
    /// Prefix reuse of the measured requests: the best possible (an
    /// infinite cache, token by token, in the plan's dispatch order) and,
    /// with the server model, its prediction (docs/plan.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<PlanReuse>,
}

/// The plan's prefix reuse, in total over its measured requests.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlanReuse {
    pub requests: u64,
    /// Prompt tokens as sent (the cache-bust marker included).
    pub prompt_tokens: u64,
    /// Reusable at best.
    pub best_tokens: u64,
    /// The server model's cached tokens; `null` without one.
    pub predicted_tokens: Option<u64>,
}

impl PlanReuse {
    /// The console line.
    pub fn print_human(&self, out: &mut impl Write) -> io::Result<()> {
        let pct = |n: u64| {
            if self.prompt_tokens == 0 {
                "-".to_string()
            } else {
                format!("{:.1} %", n as f64 * 100.0 / self.prompt_tokens as f64)
            }
        };
        let predicted = match self.predicted_tokens {
            Some(p) => format!("predicted {p} ({})", pct(p)),
            None => "no server model: no prediction".to_string(),
        };
        writeln!(
            out,
            "  prefix reuse    best possible {} of {} prompt tokens ({}); {predicted}",
            self.best_tokens,
            self.prompt_tokens,
            pct(self.best_tokens)
        )
    }
}

/// What a recipe's validity stamp will be if the planned run completes:
/// the reasons known before the run. A run can still add
/// `context_overflow_rate_exceeded` or `run_cancelled` (docs/agentx.md).
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlannedSubmission {
    pub valid_if_completed: bool,
    pub invalid_reasons: Vec<String>,
}

impl PlannedSubmission {
    pub fn of(applied: &arbor_runs::recipe::Applied) -> Self {
        let invalid_reasons = applied.invalid_reasons();
        PlannedSubmission {
            valid_if_completed: invalid_reasons.is_empty(),
            invalid_reasons,
        }
    }
}

/// One line: what `--isl-scale`/`--max-context` applied and what they
/// did (the plan's `prompts fitted` line; `run` and `inspect` print it on
/// stderr).
pub fn describe_fit(fit: &FitReport) -> String {
    let mut applied = Vec::new();
    if let Some(f) = fit.isl_scale {
        applied.push(format!("--isl-scale {f}"));
    }
    if let Some(n) = fit.max_context {
        applied.push(format!("--max-context {n}"));
    }
    format!(
        "prompts fitted ({}): {} turns capped, {} tokens dropped, largest prompt {} -> {} tokens",
        applied.join(", "),
        fit.turns_capped,
        fit.tokens_dropped,
        fit.largest_prompt_before,
        fit.largest_prompt_after
    )
}

fn agent_counts(workload: &Workload) -> AgentCounts {
    let mut counts = AgentCounts {
        root: 0,
        blocking: 0,
        background: 0,
    };
    for agent in workload.trees.iter().flat_map(|t| t.agents.iter()) {
        match agent.kind {
            AgentKind::Root => counts.root += 1,
            AgentKind::Blocking => counts.blocking += 1,
            AgentKind::Background => counts.background += 1,
        }
    }
    counts
}

impl PlanReport {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inputs: String,
        fit: Option<FitReport>,
        scenario: Option<String>,
        service: String,
        overlap_tolerance: Nanos,
        workload: &Workload,
        compiled_adjustments: &Adjustments,
        compiled: &CompiledWorkloadCounts,
        scheduler: &Scheduler,
    ) -> PlanReport {
        let policy = scheduler.policy();
        let stats = scheduler.stats();
        let mut waits = Vec::new();
        let (mut input_tokens, mut output_tokens, mut makespan) = (0u64, 0u64, 0);
        for slot in scheduler.slots() {
            if matches!(
                slot.state,
                TurnState::Done | TurnState::Failed | TurnState::Cancelled
            ) {
                let (tree, _, turn) = scheduler
                    .request_tree(slot_id(scheduler, slot))
                    .expect("slot of a play");
                input_tokens += tree.isl[turn as usize] as u64;
                output_tokens += tree.osl[turn as usize] as u64;
                waits.push(slot.queue_wait);
                makespan = makespan.max(slot.end);
            }
        }
        let lanes = policy.sessions.map(|_| {
            scheduler
                .lanes()
                .iter()
                .enumerate()
                .map(|(i, lane)| LaneReport {
                    lane: i as u32,
                    share: lane.share.len(),
                    plays: lane.plays,
                    recycles: lane.plays.saturating_sub(1),
                    dry_at_s: lane.dry_at.map(nanos_to_secs),
                    t_star_s: lane.t_star.map(nanos_to_secs),
                    warmups: lane.warmups,
                    stalled: lane.stalled,
                })
                .collect()
        });
        PlanReport {
            schema_version: PLAN_SCHEMA,
            inputs,
            scenario,
            seed: policy.seed,
            service,
            policy: PolicySummary::new(policy, overlap_tolerance),
            shard: arbor_runs::sharding::ShardConfig::of(policy, scheduler.trees()).map(|s| {
                // A turn waited for the cap (or still does).
                let waited = scheduler
                    .slots()
                    .iter()
                    .any(|s| s.state == TurnState::Queued || s.queue_wait > 0);
                s.ended(waited)
            }),
            fit,
            corpus: None,
            submission: None,
            history: None,
            trees: workload.trees.len() as u64,
            agents: compiled.agents,
            agent_kinds: agent_counts(workload),
            turns: compiled.turns,
            plays: stats.plays_started,
            makespan_s: nanos_to_secs(makespan),
            peak_inflight: stats.peak_inflight,
            peak_inflight_at_s: nanos_to_secs(stats.peak_inflight_at),
            peak_live_trees: stats.peak_live_trees,
            peak_live_trees_at_s: nanos_to_secs(stats.peak_live_trees_at),
            idle_shifts: stats.idle_shifts,
            idle_skipped_s: nanos_to_secs(stats.idle_skipped),
            adjustments: compiled_adjustments.into(),
            dispatched: stats.dispatched,
            completed: stats.completed,
            cancelled: stats.cancelled,
            skipped: stats.skipped,
            plays_not_started: stats.plays_not_started,
            profiling_start_s: nanos_to_secs(scheduler.profiling_start()),
            warmups: stats.warmups,
            history_turns: stats.history,
            queue_wait: policy.max_inflight.map(|_| Distribution::of(&mut waits)),
            demand: Work::over(makespan, stats.dispatched, input_tokens, output_tokens),
            lanes,
            time_breakdown: (&breakdown(scheduler)).into(),
            server: None,
            reuse: None,
        }
    }

    pub fn print_human(&self, out: &mut impl Write) -> io::Result<()> {
        let k = &self.agent_kinds;
        writeln!(out, "arbor plan: {}", self.inputs)?;
        if let Some(name) = &self.scenario {
            writeln!(out, "  scenario {name}")?;
        }
        writeln!(out, "  seed {}, service {}", self.seed, self.service)?;
        if let Some(history) = &self.history {
            writeln!(
                out,
                "  history {history}: prompt lengths are the recorded ones"
            )?;
        }
        if let Some(fit) = &self.fit {
            writeln!(out, "  {}", describe_fit(fit))?;
        }
        writeln!(
            out,
            "  workload        {} trees, {} agents ({} root, {} blocking, {} background), {} turns",
            self.trees, self.agents, k.root, k.blocking, k.background, self.turns
        )?;
        writeln!(
            out,
            "  plays           {} started, {} turns dispatched, {} skipped, {} cancelled",
            self.plays, self.dispatched, self.skipped, self.cancelled
        )?;
        writeln!(out, "  makespan        {:.3} s", self.makespan_s)?;
        writeln!(
            out,
            "  peak in flight  {} requests at {:.3} s",
            self.peak_inflight, self.peak_inflight_at_s
        )?;
        writeln!(
            out,
            "  peak live trees {} at {:.3} s",
            self.peak_live_trees, self.peak_live_trees_at_s
        )?;
        writeln!(
            out,
            "  idle-gap shifts {} ({:.3} s skipped)",
            self.idle_shifts, self.idle_skipped_s
        )?;
        let a = &self.adjustments;
        writeln!(
            out,
            "  adjustments     {} overlaps rounded ({:.3} s), {} overlaps kept concurrent, {} unknown durations, {} unjoined children",
            a.overlaps_rounded, a.overlap_rounded_s, a.overlaps_kept, a.unknown_durations, a.unjoined_children
        )?;
        let d = &self.demand;
        writeln!(
            out,
            "  demand          {:.3} req/s, {:.0} input tok/s, {:.0} output tok/s ({} in, {} out)",
            d.requests_per_s,
            d.input_tokens_per_s,
            d.output_tokens_per_s,
            d.input_tokens,
            d.output_tokens
        )?;
        if let Some(q) = &self.queue_wait {
            writeln!(
                out,
                "  queue wait      mean {:.3} s, p50 {:.3} s, p90 {:.3} s, p99 {:.3} s, max {:.3} s",
                q.mean_shown(),
                q.shown(q.p50),
                q.shown(q.p90),
                q.shown(q.p99),
                q.shown(q.max)
            )?;
        }
        if self.plays_not_started > 0 {
            writeln!(
                out,
                "  not started     {} plays (duration ended first)",
                self.plays_not_started
            )?;
        }
        if self.warmups > 0 || self.history_turns > 0 || self.profiling_start_s > 0.0 {
            writeln!(
                out,
                "  profiling start {:.3} s ({} warmup requests before it, {} history turns not replayed)",
                self.profiling_start_s, self.warmups, self.history_turns
            )?;
        }
        if let Some(lanes) = &self.lanes {
            for lane in lanes {
                if let Some(t) = lane.t_star_s {
                    writeln!(
                        out,
                        "  lane {:<10} t* {:.3} s, {} warmups, {} plays ({} recycles){}",
                        lane.lane,
                        t,
                        lane.warmups,
                        lane.plays,
                        lane.recycles,
                        if lane.stalled { ", stalled" } else { "" }
                    )?;
                    continue;
                }
                let dry = lane
                    .dry_at_s
                    .map_or("still playing at the end".to_string(), |t| {
                        format!("ran dry at {t:.3} s")
                    });
                writeln!(
                    out,
                    "  lane {:<10} {} plays of a {}-tree share, {}",
                    lane.lane, lane.plays, lane.share, dry
                )?;
            }
        }
        if let Some(server) = &self.server {
            server.print_human(out)?;
        }
        if let Some(reuse) = &self.reuse {
            reuse.print_human(out)?;
        }
        self.time_breakdown.print_human("where the time goes", out)
    }
}

/// Agent and turn totals of the compiled workload.
pub struct CompiledWorkloadCounts {
    pub agents: u64,
    pub turns: u64,
}

impl From<&CompiledWorkload> for CompiledWorkloadCounts {
    fn from(c: &CompiledWorkload) -> Self {
        CompiledWorkloadCounts {
            agents: c.agents,
            turns: c.turns,
        }
    }
}

fn slot_id(scheduler: &Scheduler, slot: &arbor_engine::scheduler::Slot) -> u64 {
    let play = scheduler.plays()[slot.play as usize];
    play.request(slot.turn).unwrap_or(0)
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn secs_or_null(value: Option<Nanos>) -> String {
    value.map_or("null".into(), |v| format!("{}", nanos_to_secs(v)))
}

/// Writes one JSON line per turn of every started play, in request order.
/// With the server model's predictions (indexed by request id), a turn
/// it served also has `ttft_s`, `itl_s` and `cached_tokens`.
pub fn write_timeline(
    scheduler: &Scheduler,
    predicted: Option<&[Option<server::PredictedTurn>]>,
    out: &mut impl Write,
) -> io::Result<()> {
    let trees = scheduler.trees();
    let tree_ids: Vec<String> = trees.iter().map(|t| json_string(&t.id)).collect();
    let agent_ids: Vec<Vec<String>> = trees
        .iter()
        .map(|t| t.agent_ids.iter().map(|a| json_string(a)).collect())
        .collect();
    for slot in scheduler.slots() {
        let play = scheduler.plays()[slot.play as usize];
        let tree = &trees[play.tree as usize];
        let t = slot.turn as usize;
        let agent = tree.agent_of[t] as usize;
        let reached_eligible = !matches!(slot.state, TurnState::Blocked | TurnState::History);
        let sent = !matches!(
            slot.state,
            TurnState::Blocked
                | TurnState::Timer
                | TurnState::Queued
                | TurnState::Skipped
                | TurnState::History
        );
        let ended = matches!(
            slot.state,
            TurnState::Done | TurnState::Failed | TurnState::Cancelled
        );
        let lane = play.lane.map_or("null".to_string(), |l| l.to_string());
        write!(
            out,
            "{{\"tree\":{},\"agent\":{},\"turn\":{},\"copy\":{},\"lane\":{},\"eligible_s\":{},\"start_s\":{},\"end_s\":{},\"queue_wait_s\":{},\"isl\":{},\"osl\":{},\"state\":\"{}\",\"warmup\":{}",
            tree_ids[play.tree as usize],
            agent_ids[play.tree as usize][agent],
            tree.index_in_agent[t],
            play.copy,
            lane,
            secs_or_null(reached_eligible.then_some(slot.eligible)),
            secs_or_null(sent.then_some(slot.sent)),
            secs_or_null(ended.then_some(slot.end)),
            secs_or_null(sent.then_some(slot.queue_wait)),
            tree.isl[t],
            tree.osl[t],
            slot.state.as_str(),
            slot.warmup,
        )?;
        if let Some(predicted) = predicted {
            let id = slot_id(scheduler, slot) as usize;
            if let Some(Some(p)) = predicted.get(id) {
                write!(
                    out,
                    ",\"ttft_s\":{},\"itl_s\":{},\"cached_tokens\":{}",
                    p.ttft_s,
                    p.itl_s.map_or("null".to_string(), |v| v.to_string()),
                    p.cached_tokens
                )?;
            }
        }
        writeln!(out, "}}")?;
    }
    Ok(())
}
