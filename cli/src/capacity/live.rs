//! The live probe: a load point as one real `arbor run` (the run
//! command's own entry point, [`crate::run::run`], against `--endpoint`
//! or the in-process emulator) with the knob set and its own run
//! directory (`--out`), read back by the library
//! ([`arbor_capacity::run_dir::read`]). An implementation of the library's
//! [`Probe`], kept in the binary for now because it re-runs the command
//! (workload reloaded and recompiled every point); it moves to the facade,
//! which runs the compiled workload again instead (issue 25, item 4).
//! Prints one line before each probe; never changes how a run runs.

use std::path::Path;

use arbor_capacity::output::probe_dir;
use arbor_capacity::{run_dir, Knob, Observed, Probe};
use arbor_error::Error;

use crate::args::CapacityArgs;
use crate::run::{self, Rebuild};
use crate::scenario::Explicit;

/// Probes that are runs of `args` with the knob set, each in its own
/// directory under `out`.
pub struct LiveProbe<'a> {
    pub args: &'a CapacityArgs,
    pub explicit: &'a Explicit,
    pub rebuild: Rebuild,
    pub knob: Knob,
    pub out: &'a Path,
}

impl Probe for LiveProbe<'_> {
    /// Runs probe `k`, the point `knob = value`, into its directory and
    /// reads it back. Its cache-bust markers are salted with `k` (added to
    /// `--cache-bust-salt`): a probe's prompts never hit what an earlier
    /// probe left in the server's prefix cache. A run that fails, is
    /// stopped, or whose client failed requests ends the search with its
    /// error (and exit code).
    fn measure(&mut self, k: usize, value: u64) -> Result<Observed, Error> {
        let dir = self.out.join(probe_dir(k, self.knob, value));
        eprintln!(
            "arbor capacity: probe {k}: {}={} live, in {}",
            self.knob.name(),
            self.knob.show(value),
            dir.display()
        );
        let mut one = self.args.run.clone();
        self.knob
            .set(value, &mut one.policy.sessions, &mut one.policy.arrival);
        one.request.cache_bust_salt = one.request.cache_bust_salt.wrapping_add(k as u64);
        one.out = Some(dir.clone());
        run::run(&one, self.explicit, self.rebuild)?;
        run_dir::read(&dir)
    }
}
