//! `--scenario`: named benchmark recipes and their locks (docs/agentx.md).
//!
//! Owns applying a recipe to the flags (closed loop, start window,
//! idle-gap cap, duration, grace, seed, `ignore_eos`, cache-bust) and
//! which explicitly given flags conflict with it; the recipe's values and
//! the validity stamp a run carries are `arbor_runs::recipe`'s. Works on
//! the parsed flags before they become a policy, so `plan` and `run` read a
//! recipe the same way. Whether a flag was given is read from clap's value
//! sources ([`Explicit`]), never guessed from its value.

use std::collections::BTreeSet;

use arbor_engine::policy::GapTransform;
use clap::parser::ValueSource;
use clap::ArgMatches;

use crate::args::values::seconds_text;
use crate::args::{InputArgs, PolicyArgs, ScenarioArgs};
use arbor_error::Error;
use arbor_runs::recipe::{
    Applied, AGENTX_MVP, DEFAULT_DURATION, GRACE, IDLE_GAP_CAP, MIN_DURATION, START_WINDOW,
    UNPINNED_TEXT,
};

/// Argument ids the user gave on the command line (or in the
/// environment), as opposed to defaults.
#[derive(Debug, Clone, Default)]
pub struct Explicit(BTreeSet<String>);

impl Explicit {
    /// The explicit arguments of the subcommand in `matches`.
    pub fn of_subcommand(matches: &ArgMatches) -> Explicit {
        matches
            .subcommand()
            .map_or_else(Explicit::default, |(_, m)| Explicit::of(m))
    }

    pub fn of(matches: &ArgMatches) -> Explicit {
        Explicit(
            matches
                .ids()
                .filter(|id| {
                    matches!(
                        matches.value_source(id.as_str()),
                        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
                    )
                })
                .map(|id| id.as_str().to_string())
                .collect(),
        )
    }

    pub fn has(&self, id: &str) -> bool {
        self.0.contains(id)
    }

    /// These arguments and `id`, as if the user had given it (`--repeat`
    /// sets each run's seed).
    pub fn with(&self, id: &str) -> Explicit {
        let mut ids = self.0.clone();
        ids.insert(id.to_string());
        Explicit(ids)
    }
}

/// One conflict: the flag as given, why the recipe refuses it, and
/// whether `--unsafe-override` can let it through.
struct Conflict {
    text: String,
    overridable: bool,
}

/// `--think-time-pct P` as the user gave it.
fn percent_text(transform: GapTransform) -> String {
    match transform {
        GapTransform::Scale { ppm } => (ppm as f64 / 10_000.0).to_string(),
        other => other.to_string(),
    }
}

/// Applies `--scenario` (if any) to the flags: sets the recipe's values
/// where the user gave none, checks every explicit flag against the locks
/// and reports all conflicts in one exit-2 error, unless
/// `--unsafe-override` (the synthetic-dataset conflict is never
/// overridable). `None` without a scenario.
pub fn apply(
    scenario: &mut ScenarioArgs,
    input: &InputArgs,
    policy: &mut PolicyArgs,
    explicit: &Explicit,
) -> Result<Option<Applied>, Error> {
    let Some(name) = scenario.scenario.clone() else {
        if scenario.unsafe_override {
            return Err(Error::input(
                "--unsafe-override: applies only with --scenario NAME",
            ));
        }
        return Ok(None);
    };
    if name != AGENTX_MVP {
        return Err(Error::input(format!(
            "--scenario: unknown recipe `{name}` (known: {AGENTX_MVP})"
        )));
    }
    let mut conflicts = Vec::new();
    let mut conflict =
        |text: String, overridable: bool| conflicts.push(Conflict { text, overridable });
    if policy.sessions.is_none() {
        conflict(
            "--sessions N is required: the recipe is a closed loop of N lanes".into(),
            false,
        );
    }
    if input.synthetic.is_some() {
        conflict(
            "--synthetic: the recipe replays recorded traces; a synthetic dataset can never be overridden"
                .into(),
            false,
        );
    }
    if input.synthetic.is_none() {
        if let Some(why) = arbor_formats::data::unpinned(&input.inputs)? {
            conflict(format!("{UNPINNED_TEXT}{why}"), true);
        }
    }
    if explicit.has("tool_time") && policy.tool_time != GapTransform::Recorded {
        conflict(
            format!(
                "--tool-time {}: tool gaps are replayed as recorded",
                policy.tool_time
            ),
            true,
        );
    }
    if let Some(p) = policy
        .think_time_pct
        .filter(|_| explicit.has("think_time_pct"))
    {
        conflict(
            format!(
                "--think-time-pct {}: think gaps are replayed as recorded",
                percent_text(p)
            ),
            true,
        );
    }
    for (id, flag, transform) in [
        ("other_time", "--other-time", policy.other_time),
        ("spawn_time", "--spawn-time", policy.spawn_time),
        ("join_time", "--join-time", policy.join_time),
    ] {
        if explicit.has(id) && !transform.is_identity() {
            conflict(
                format!("{flag} {transform}: every gap is replayed as recorded"),
                true,
            );
        }
    }
    if explicit.has("gap_scale") && !policy.gap_scale.is_identity() {
        conflict(
            format!(
                "--gap-scale {}: every gap is replayed as recorded",
                policy.gap_scale
            ),
            true,
        );
    }
    if let Some(cap) = policy.idle_gap_cap.filter(|_| explicit.has("idle_gap_cap")) {
        if cap != IDLE_GAP_CAP {
            conflict(
                format!(
                    "--idle-gap-cap {}: the idle-gap cap is locked at {} s",
                    seconds_text(cap),
                    seconds_text(IDLE_GAP_CAP)
                ),
                true,
            );
        }
    }
    if let Some(d) = policy.duration.filter(|_| explicit.has("duration")) {
        if d < MIN_DURATION {
            conflict(
                format!(
                    "--duration {}: the duration must be at least {} s",
                    seconds_text(d),
                    seconds_text(MIN_DURATION)
                ),
                true,
            );
        }
    }
    if explicit.has("grace") && policy.grace != GRACE {
        conflict(
            format!(
                "--grace {}: the grace is locked at {} s",
                seconds_text(policy.grace),
                seconds_text(GRACE)
            ),
            true,
        );
    }
    if explicit.has("arrival") {
        conflict(
            format!(
                "--arrival {}: lanes start together at their t* (no arrival process)",
                policy.arrival
            ),
            true,
        );
    }
    if explicit.has("copies") && policy.copies != 1 {
        conflict(
            format!(
                "--copies {}: each tree is played once per lane sequence",
                policy.copies
            ),
            true,
        );
    }
    if let Some(m) = policy.max_inflight.filter(|_| explicit.has("max_inflight")) {
        conflict(
            format!("--max-inflight {m}: concurrency is the number of lanes (no request cap)"),
            true,
        );
    }
    if explicit.has("stagger") {
        conflict(
            format!(
                "--stagger {}: lanes start together at their t*",
                policy.stagger
            ),
            true,
        );
    }

    let refused: Vec<&Conflict> = if scenario.unsafe_override {
        conflicts.iter().filter(|c| !c.overridable).collect()
    } else {
        conflicts.iter().collect()
    };
    if !refused.is_empty() {
        let mut message = format!(
            "--scenario {name}: {} flag{} conflict{} with the recipe",
            refused.len(),
            if refused.len() == 1 { "" } else { "s" },
            if refused.len() == 1 { "s" } else { "" },
        );
        if refused.iter().all(|c| c.overridable) {
            message.push_str(" (--unsafe-override runs anyway and stamps the run invalid)");
        }
        for c in &refused {
            message.push_str("\n  ");
            message.push_str(&c.text);
        }
        return Err(Error::input(message));
    }
    let overridden: Vec<String> = conflicts.into_iter().map(|c| c.text).collect();
    for text in &overridden {
        eprintln!("warning: --unsafe-override: {text} (the run is stamped invalid)");
    }

    // The recipe's values where the user gave none.
    policy.loop_lanes = true;
    if scenario.start_window.is_none() {
        scenario.start_window = Some(START_WINDOW);
    }
    if policy.idle_gap_cap.is_none() {
        policy.idle_gap_cap = Some(IDLE_GAP_CAP);
    }
    if policy.duration.is_none() {
        policy.duration = Some(DEFAULT_DURATION);
    }
    if !explicit.has("grace") {
        policy.grace = GRACE;
    }
    if !explicit.has("seed") {
        policy.seed = generated_seed();
        eprintln!(
            "arbor: --scenario {name}: seed {} (generated; pass --seed {} to repeat)",
            policy.seed, policy.seed
        );
    }
    Ok(Some(Applied {
        name: AGENTX_MVP,
        overridden,
    }))
}

/// Lanes each need a tree: with more lanes than trees, the recipe deals
/// the corpus more than once (each copy is a fresh play with its own t*
/// and cache-bust marker), as AIPerf's sequential sampler wraps.
pub fn copies_for_lanes(sessions: u32, trees: usize) -> u32 {
    if trees == 0 {
        return 1;
    }
    (sessions as usize).div_ceil(trees).max(1) as u32
}

/// [`copies_for_lanes`] applied to a policy (never fewer copies than
/// asked for).
pub fn fit_lanes(policy: &mut arbor_engine::policy::Policy, trees: usize) {
    if let Some(n) = policy.sessions {
        policy.copies = policy.copies.max(copies_for_lanes(n, trees));
    }
}

/// A 63-bit seed from the clock and the process id (the CLI is the edge;
/// the engine never reads a clock). SplitMix64 mixes the bits.
pub fn generated_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = nanos ^ (u64::from(std::process::id()) << 32);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) >> 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::time::NANOS_PER_SEC;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        policy: PolicyArgs,
        #[command(flatten)]
        scenario: ScenarioArgs,
    }

    fn applied(args: &[&str]) -> Result<(Option<Applied>, PolicyArgs, ScenarioArgs), Error> {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Flags::command()
            .try_get_matches_from(std::iter::once("x").chain(args.iter().copied()))
            .unwrap();
        let mut flags = Flags::from_arg_matches(&matches).unwrap();
        let explicit = Explicit::of(&matches);
        let a = apply(
            &mut flags.scenario,
            &flags.input,
            &mut flags.policy,
            &explicit,
        )?;
        Ok((a, flags.policy, flags.scenario))
    }

    #[test]
    fn the_recipe_fills_in_its_values() {
        let (a, p, s) = applied(&["--scenario", "agentx-mvp", "--sessions", "4", "--seed", "0"])
            .ok()
            .unwrap();
        let a = a.unwrap();
        assert!(a.overridden.is_empty());
        assert!(p.loop_lanes);
        assert_eq!(p.seed, 0, "an explicit --seed 0 is kept");
        assert_eq!(s.start_window, Some("0:1".parse().unwrap()));
        assert_eq!(p.idle_gap_cap, Some(10 * NANOS_PER_SEC));
        assert_eq!(p.duration, Some(1800 * NANOS_PER_SEC));
        assert_eq!(p.grace, 30 * NANOS_PER_SEC);
    }

    #[test]
    fn values_equal_to_the_locks_are_not_conflicts() {
        let (a, p, s) = applied(&[
            "--scenario",
            "agentx-mvp",
            "--sessions",
            "4",
            "--idle-gap-cap",
            "10s",
            "--grace",
            "30",
            "--duration",
            "900",
            "--copies",
            "1",
            "--tool-time",
            "recorded",
            "--start-window",
            "0.25:0.75",
        ])
        .ok()
        .unwrap();
        assert!(a.unwrap().overridden.is_empty());
        assert_ne!(p.seed, 0, "a seed is generated");
        assert_eq!(s.start_window, Some("0.25:0.75".parse().unwrap()));
    }

    #[test]
    fn every_conflict_is_named_at_once() {
        let failure = applied(&[
            "--scenario",
            "agentx-mvp",
            "--sessions",
            "4",
            "--tool-time",
            "zero",
            "--think-time-pct",
            "50",
            "--idle-gap-cap",
            "1",
            "--duration",
            "10",
            "--grace",
            "0",
            "--arrival",
            "immediate",
            "--copies",
            "2",
            "--max-inflight",
            "3",
        ])
        .err()
        .unwrap();
        assert_eq!(crate::exit::code(&failure), 2);
        for flag in [
            "--tool-time",
            "--think-time-pct",
            "--idle-gap-cap",
            "--duration",
            "--grace",
            "--arrival",
            "--copies",
            "--max-inflight",
        ] {
            assert!(
                failure.message.contains(flag),
                "{flag}: {}",
                failure.message
            );
        }
        assert!(failure.message.contains("8 flags conflict"));
    }

    #[test]
    fn lanes_get_enough_copies() {
        assert_eq!(copies_for_lanes(8, 4), 2);
        assert_eq!(copies_for_lanes(3, 4), 1);
        assert_eq!(copies_for_lanes(9, 4), 3);
    }
}
