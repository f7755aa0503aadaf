//! The live probe: a load point as one run of the workload, loaded and
//! compiled once for the whole search ([`crate::run::compile`]), with the
//! knob set, its own run directory and its own cache-bust salt, against
//! the endpoint or the in-process emulator; read back by the search
//! library ([`arbor_capacity::run_dir::read`]). An implementation of the
//! library's [`Probe`], whose points are samples (judged on 95 %
//! intervals) that need `--min-requests` successful requests to decide;
//! an unresolved point is extended up to `--max-extensions` times, each
//! extension a run of twice the previous one's `--duration` into its own
//! directory with its own salt. The pre-flight is asked once, by the first probe's
//! run, and handed to the later ones (a refusal ends the search there,
//! before any measured request). Tells the observer of each probe before
//! it runs; never changes how a run runs.

use std::path::Path;

use arbor_backends::preflight::Ready;
use arbor_capacity::output::{extension_dir, probe_dir};
use arbor_capacity::{run_dir, Knob, Observed, Probe};
use arbor_error::Error;

use crate::options::RunOptions;
use crate::run::{self, Settled};
use crate::{inputs, Observer};

/// Probes that are runs of one compiled workload with the knob set, each
/// in its own directory under `out`.
pub struct LiveProbe<'a> {
    settled: Settled,
    compiled: inputs::Compiled,
    knob: Knob,
    /// The fewest successful requests a probe needs (`--min-requests`).
    min_requests: u64,
    /// How many times an unresolved probe is measured again, longer
    /// (`--max-extensions`).
    max_extensions: u32,
    /// The pre-flight the first probe's run passed, for the later ones.
    ready: Option<Ready>,
    out: &'a Path,
    observer: &'a dyn Observer,
}

impl<'a> LiveProbe<'a> {
    /// Settles `run` (the demo's defaults, the emulator) and loads and
    /// compiles its workload, once.
    pub fn new(
        run: &RunOptions,
        knob: Knob,
        min_requests: u64,
        max_extensions: u32,
        out: &'a Path,
        observer: &'a dyn Observer,
    ) -> Result<LiveProbe<'a>, Error> {
        let settled = run::settle(run, observer)?;
        let compiled = run::compile(&settled.args, settled.applied.is_some(), observer)?;
        Ok(LiveProbe {
            settled,
            compiled,
            knob,
            min_requests,
            max_extensions,
            ready: None,
            out,
            observer,
        })
    }
}

impl Probe for LiveProbe<'_> {
    /// Runs probe `k`, the point `knob = value`, into its directory and
    /// reads it back. Its cache-bust markers are salted with `k` (added to
    /// `--cache-bust-salt`): a probe's prompts never hit what an earlier
    /// probe left in the server's prefix cache. A run that fails (its
    /// pre-flight refused, the server failed too many of its requests, the
    /// breaker stopped it), is stopped, or whose client failed requests
    /// ends the search with its error (and its kind).
    fn measure(&mut self, k: usize, value: u64) -> Result<Observed, Error> {
        let dir = self.out.join(probe_dir(k, self.knob, value));
        self.observer.notice(&format!(
            "arbor capacity: probe {k}: {}={} live, in {}",
            self.knob.name(),
            self.knob.show(value),
            dir.display()
        ));
        self.run(value, &dir, k as u64, 1)
    }

    fn min_measured(&self) -> u64 {
        self.min_requests
    }

    fn sampled(&self) -> bool {
        true
    }

    /// Runs probe `k`'s `round`-th extension: the same load for 2^round
    /// times `--duration`, into its own directory, its cache-bust markers
    /// salted with `k + round * 2^20` (never a probe's own salt).
    fn extend(&mut self, k: usize, value: u64, round: u32) -> Result<Option<Observed>, Error> {
        if round > self.max_extensions {
            return Ok(None);
        }
        let dir = self.out.join(extension_dir(k, self.knob, value, round));
        let scale = 1u64 << round.min(20);
        self.observer.notice(&format!(
            "arbor capacity: probe {k} unresolved: extension {round} of {}, {}={} for {}x              --duration, in {}",
            self.max_extensions,
            self.knob.name(),
            self.knob.show(value),
            scale,
            dir.display()
        ));
        let salt = (k as u64).wrapping_add(u64::from(round) << 20);
        self.run(value, &dir, salt, scale).map(Some)
    }
}

impl LiveProbe<'_> {
    /// One run at `value` into `dir`, its salt moved by `salt` and its
    /// `--duration` times `scale`, read back.
    fn run(&mut self, value: u64, dir: &Path, salt: u64, scale: u64) -> Result<Observed, Error> {
        let dir = dir.to_path_buf();
        let mut one = self.settled.args.clone();
        let mut arrival = one.policy.arrival();
        self.knob.set(value, &mut one.policy.sessions, &mut arrival);
        one.policy.arrival = Some(arrival);
        one.request.cache_bust_salt = one.request.cache_bust_salt.wrapping_add(salt);
        one.policy.duration = one.policy.duration.map(|d| d.saturating_mul(scale));
        one.out = Some(dir.clone());
        // The compiled workload again, under the point's policy (checked
        // as a run's is).
        let mut compiled = self.compiled.clone();
        compiled.policy = inputs::policy(&one.policy, &one.scenario)?;
        let ready = run::run_compiled(
            &self.settled,
            &one,
            compiled,
            self.ready.clone(),
            self.observer,
        )?;
        self.ready = Some(ready);
        run_dir::read(&dir)
    }
}
