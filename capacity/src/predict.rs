//! A virtual load point: the workload (compiled once) planned under the
//! policy with the knob set, on the virtual clock, and what each request
//! would have seen. [`Bench::point`] is the one place a service model is
//! chosen; each model is one arm:
//!
//! | `--service` | TTFT | inter-token gap |
//! |---|---|---|
//! | `fixed:TTFT:ITL` | TTFT | ITL |
//! | `throughput:P:D` | isl / P | 1 / D |
//! | `recorded` | none | none (only `e2e` and `job` bounds mean anything) |
//! | `server:PROFILE.toml` | the batching model's first token | (done − first token) / (osl − 1) |
//!
//! [`VirtualProbe`] is the search's probe of such points: each one
//! planned, then its directory written ([`crate::output`]) once judged.
//! Planning has no I/O and no clock: the same settings give the same
//! points on every machine.

use std::path::Path;
use std::sync::Arc;

use arbor_backends::side_by_side;
use arbor_backends::virtual_clock::{self, Prompts};
use arbor_engine::dag::CompiledWorkload;
use arbor_engine::error::PolicyError;
use arbor_engine::policy::Policy;
use arbor_engine::prompt::CacheBust;
use arbor_engine::scheduler::{Scheduler, TurnState};
use arbor_engine::Workload;
use arbor_error::Error;
use arbor_sim::{ServerModel, ServerService, Service, ServiceModel, ServiceRequest, WorkloadKeys};

use crate::interval::{self, Settings};
use crate::knob::Knob;
use crate::observed::{Observed, ReadingInterval};
use crate::output::{write_virtual_probe, Planned, Point};
use crate::probe::Probe;
use crate::search::Knee;
use crate::served::{self, Served};
use crate::slo::{Bound, Slo};

/// The most draws of a profile a virtual point is planned under.
pub const MAX_DRAWS: usize = 200;

/// The level of a virtual reading's interval.
pub const INTERVAL_LEVEL: f64 = 0.9;

/// What every virtual point shares.
pub struct Bench {
    pub compiled: CompiledWorkload,
    /// The trees as loaded (the server model's prompt block keys).
    pub workload: Workload,
    /// `--cache-bust`: each play's prompts share no prefix with another's.
    pub cache_bust: Option<CacheBust>,
    /// Every turn's block keys, computed once for every point (the
    /// server model without `--cache-bust`: [`Bench::new`]).
    pub keys: Option<WorkloadKeys>,
    /// The policy of every point, but for the knob's setting.
    pub policy: Policy,
    pub service: Service,
    /// How an error of the policy with the knob set is worded (a front end
    /// names its flags); by default, the engine's words as an input error.
    pub policy_error: fn(PolicyError) -> Error,
}

/// One virtual point, planned.
pub struct Prediction {
    /// The scheduler as the plan left it (trees, plays, slots).
    pub scheduler: Scheduler,
    pub served: Vec<Served>,
    pub observed: Observed,
}

impl Bench {
    /// What the points share; with the server model and no cache-bust
    /// marker, every turn's block keys computed once.
    pub fn new(
        compiled: CompiledWorkload,
        workload: Workload,
        cache_bust: Option<CacheBust>,
        policy: Policy,
        service: Service,
    ) -> Bench {
        let keys = match &service {
            Service::Server(server) if cache_bust.is_none() => Some(WorkloadKeys::new(
                &workload,
                server.profile.engine.block_size,
            )),
            _ => None,
        };
        Bench {
            compiled,
            workload,
            cache_bust,
            keys,
            policy,
            service,
            policy_error: Error::input,
        }
    }

    /// The bench with a policy's errors worded by `words`.
    pub fn with_policy_error(self, words: fn(PolicyError) -> Error) -> Bench {
        Bench {
            policy_error: words,
            ..self
        }
    }

    /// A note when the sessions found reach the workload's (tree, copy)
    /// plays: lanes beyond them hold nothing, so higher loads look the
    /// same.
    pub fn lanes_note(&self, knob: Knob, knee: Knee) -> Option<String> {
        let plays = self.compiled.trees.len() as u64 * u64::from(self.policy.copies);
        match (knob, knee.passing) {
            (Knob::Sessions, Some(sessions)) if sessions >= plays => Some(format!(
                "note: the workload has {plays} (tree, copy) plays to deal, so lanes beyond \
                 {plays} hold nothing: give more trees, --copies, or --loop with --duration \
                 to load it further"
            )),
            _ => None,
        }
    }

    /// Plans the point `knob = value`.
    pub fn point(&self, knob: Knob, value: u64) -> Result<Prediction, Error> {
        self.point_under(knob, value, &self.service)
    }

    /// What the point `knob = value` observed under each of the server
    /// profile's draws (at most [`MAX_DRAWS`]), side by side on every
    /// core: the fit's share of its readings' intervals. Empty with
    /// another model, or a profile without draws.
    pub fn point_under_draws(&self, knob: Knob, value: u64) -> Result<Vec<Observed>, Error> {
        let Service::Server(server) = &self.service else {
            return Ok(Vec::new());
        };
        let draws = server
            .profile
            .uncertainty
            .as_ref()
            .map_or(&[][..], |u| &u.draws[..u.draws.len().min(MAX_DRAWS)]);
        let planned = side_by_side::plan_each(draws.len(), side_by_side::cores(), |i| {
            let service = Service::Server(ServerService {
                path: server.path.clone(),
                profile: Arc::new(server.profile.with_draw(&draws[i])),
            });
            self.point_under(knob, value, &service).map(|p| p.observed)
        });
        planned.into_iter().collect()
    }

    /// Plans the point `knob = value` under `service`.
    fn point_under(&self, knob: Knob, value: u64, service: &Service) -> Result<Prediction, Error> {
        let mut policy = self.policy.clone();
        knob.apply(value, &mut policy);
        let mut scheduler =
            Scheduler::new(self.compiled.clone(), policy).map_err(self.policy_error)?;
        let served = match service {
            Service::Model(model) => by_formula(&mut scheduler, model)?,
            Service::Server(server) => self.by_server(&mut scheduler, server)?,
        };
        let complete = complete_plays(&scheduler);
        let trees = scheduler.trees();
        let observed = served::observe(
            &served,
            |play| complete.get(play as usize).copied().unwrap_or(false),
            |s| {
                trees
                    .get(s.tree as usize)
                    .and_then(|t| t.agent_of.get(s.turn as usize))
                    .copied()
                    .unwrap_or(0)
            },
        );
        Ok(Prediction {
            scheduler,
            served,
            observed,
        })
    }
}

impl Bench {
    /// The batching server model: its first token and last token per
    /// request, its prefix-cache hits.
    fn by_server(
        &self,
        scheduler: &mut Scheduler,
        server: &ServerService,
    ) -> Result<Vec<Served>, Error> {
        let mut model = ServerModel::new(&server.profile);
        let mut predicted = Vec::new();
        let prompts = Prompts {
            workload: &self.workload,
            cache_bust: self.cache_bust,
            keys: self.keys.as_ref(),
        };
        virtual_clock::run_server(scheduler, prompts, &mut model, &mut predicted)
            .map_err(|e| Error::other(format!("engine (capacity point): {e}")))?;
        let mut served = Vec::with_capacity(predicted.len());
        for p in predicted.iter().filter(|p| !p.warmup) {
            let (Some(slot), Some(play)) =
                (scheduler.slot(p.id), scheduler.plays().get(p.play as usize))
            else {
                continue;
            };
            let gaps = u64::from(p.osl.saturating_sub(1));
            served.push(Served {
                request: p.id,
                tree: p.tree,
                play: p.play,
                turn: p.turn,
                copy: play.copy,
                lane: play.lane,
                eligible: slot.eligible,
                dispatched: slot.dispatched,
                queue_wait: slot.queue_wait,
                sent: p.sent,
                first: Some(p.first_token),
                done: p.done,
                gap: (gaps > 0).then(|| p.done.saturating_sub(p.first_token) / gaps),
                isl: p.isl,
                osl: p.osl,
                cached: Some(p.cached_tokens),
            });
        }
        Ok(served)
    }
}

/// A shipped service-time model: the plan's completions, with TTFT and
/// the gap by the model's formula.
fn by_formula(scheduler: &mut Scheduler, model: &ServiceModel) -> Result<Vec<Served>, Error> {
    virtual_clock::run(scheduler, model)
        .map_err(|e| Error::other(format!("engine (capacity point): {e}")))?;
    let time = |isl, osl| {
        model.service_time(&ServiceRequest {
            isl,
            osl,
            recorded: 0,
        })
    };
    let gap = match model {
        ServiceModel::Recorded => None,
        _ => Some(time(0, 1).saturating_sub(time(0, 0))),
    };
    let mut served = Vec::new();
    for (id, slot) in scheduler.slots().iter().enumerate() {
        if slot.warmup || slot.state != TurnState::Done {
            continue;
        }
        let Some(play) = scheduler.plays().get(slot.play as usize) else {
            continue;
        };
        let Some(tree) = scheduler.trees().get(play.tree as usize) else {
            continue;
        };
        let turn = slot.turn as usize;
        let (isl, osl) = (tree.isl[turn], tree.osl[turn]);
        let first = gap.map(|_| slot.sent.saturating_add(time(isl, 0)));
        served.push(Served {
            request: id as u64,
            tree: play.tree,
            play: slot.play,
            turn: slot.turn,
            copy: play.copy,
            lane: play.lane,
            eligible: slot.eligible,
            dispatched: slot.dispatched,
            queue_wait: slot.queue_wait,
            sent: slot.sent,
            first,
            done: slot.end,
            gap,
            isl,
            osl,
            cached: None,
        });
    }
    Ok(served)
}

/// Whether every turn of each play ran (done or failed; none cancelled,
/// skipped or left before the start window), by play.
fn complete_plays(scheduler: &Scheduler) -> Vec<bool> {
    let mut complete = vec![true; scheduler.plays().len()];
    for slot in scheduler.slots().iter().filter(|s| !s.warmup) {
        if !matches!(slot.state, TurnState::Done | TurnState::Failed) {
            if let Some(c) = complete.get_mut(slot.play as usize) {
                *c = false;
            }
        }
    }
    complete
}

/// A recorded service time has no first token: TTFT, ITL and TPOT bounds
/// would judge nothing, so they are refused with it (naming the flags).
pub fn refuse_without_first_token(slo: &Slo, service: &Service) -> Result<(), Error> {
    if *service != Service::Model(ServiceModel::Recorded) {
        return Ok(());
    }
    match slo.bounds.iter().find(|b| b.metric.needs_first_token()) {
        None => Ok(()),
        Some(bound) => Err(Error::input(format!(
            "--slo {bound}: --service recorded predicts no first token, so only e2e and job \
             bounds mean anything; give --service fixed:TTFT_MS:ITL_MS or \
             throughput:PREFILL_TOK_S:DECODE_TOK_S, or drop {}",
            bound.name()
        ))),
    }
}

/// The search's probe of virtual points: each planned by the
/// [`Bench`], and once judged its directory written under `dir`
/// (`summary.json` with the verdict, `records.jsonl` of the predicted
/// requests). A copy is cheap (references), so a sweep gives one to each
/// worker.
pub struct VirtualProbe<'a> {
    bench: &'a Bench,
    knob: Knob,
    dir: &'a Path,
    /// `--service` as `summary.json`'s `config` names it.
    service: String,
    /// The plan of the point measured last, until it is kept.
    planned: Option<(Scheduler, Vec<Served>)>,
    /// The point measured last under each of the profile's draws.
    draws: Vec<Observed>,
}

impl<'a> VirtualProbe<'a> {
    /// Probes of `knob`'s points of `bench`, their directories under
    /// `dir`.
    pub fn new(bench: &'a Bench, knob: Knob, dir: &'a Path) -> VirtualProbe<'a> {
        VirtualProbe {
            bench,
            knob,
            dir,
            service: bench.service.to_string(),
            planned: None,
            draws: Vec::new(),
        }
    }
}

impl Clone for VirtualProbe<'_> {
    /// The same probe, without the point in hand.
    fn clone(&self) -> Self {
        VirtualProbe {
            service: self.service.clone(),
            planned: None,
            draws: Vec::new(),
            ..*self
        }
    }
}

impl Probe for VirtualProbe<'_> {
    fn measure(&mut self, _k: usize, value: u64) -> Result<Observed, Error> {
        let Prediction {
            scheduler,
            served,
            observed,
        } = self.bench.point(self.knob, value)?;
        self.planned = Some((scheduler, served));
        self.draws = self.bench.point_under_draws(self.knob, value)?;
        Ok(observed)
    }

    /// Under the server model, the reading's interval: its requests
    /// resampled, under the profile's draws when it has them.
    fn interval(&mut self, bound: &Bound, observed: &Observed) -> Option<ReadingInterval> {
        if !matches!(self.bench.service, Service::Server(_)) {
            return None;
        }
        let settings = Settings {
            level: INTERVAL_LEVEL,
            resamples: interval::RESAMPLES,
            seed: self.bench.policy.seed,
        };
        interval::reading_interval(bound, observed, &self.draws, settings)
    }

    fn keep(&mut self, point: &Point, observed: &Observed) -> Result<(), Error> {
        let Some((scheduler, served)) = self.planned.take() else {
            return Err(Error::other(format!(
                "capacity: probe {} was kept before it was planned",
                point.probe
            )));
        };
        let planned = Planned {
            scheduler: &scheduler,
            served: &served,
            jobs: &observed.jobs,
            service: &self.service,
            seed: self.bench.policy.seed,
        };
        write_virtual_probe(self.dir, point, self.knob, &planned)
    }
}
