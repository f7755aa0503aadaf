//! `--scenario`: named benchmark recipes and their locks (docs/agentx.md).
//!
//! Owns applying a recipe to the options (closed loop, start window,
//! idle-gap cap, duration, grace, seed, `ignore_eos`, cache-bust) and
//! which given options conflict with it: every option that changes the
//! workload's timing, tokens or structure (the gaps, the load, the
//! prompts' lengths, the trees' derivation, the body fields the recipe
//! writes); the recipe's values and the
//! validity stamp a run carries are `arbor_runs::recipe`'s. Works on the
//! options before they become a policy, so `plan` and `run` read a recipe
//! the same way. Whether an option was given is its `Option` being `Some`
//! ([`crate::options`]), never guessed from its value. Messages name the
//! CLI's flags, the recipe's vocabulary (docs/agentx.md).

use arbor_engine::policy::GapTransform;

use crate::options::{defaults, InputOptions, PolicyOptions, ScenarioOptions};
use crate::Observer;
use arbor_error::Error;
use arbor_runs::recipe::{
    Applied, AGENTX_MVP, DEFAULT_DURATION, GRACE, IDLE_GAP_CAP, LOCKED_BODY_FIELDS, MIN_DURATION,
    START_WINDOW, UNPINNED_TEXT,
};
use serde_json::{Map, Value};

/// Seconds as a flag shows them (`30`, `0.25`), for messages.
fn seconds_text(ns: arbor_engine::time::Nanos) -> String {
    arbor_engine::time::nanos_to_secs(ns).to_string()
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
/// overridable). `body` is `--extra-body` (`None` for a plan, which sends
/// nothing). `None` without a scenario.
pub fn apply(
    scenario: &mut ScenarioOptions,
    input: &InputOptions,
    policy: &mut PolicyOptions,
    body: Option<&Map<String, Value>>,
    observer: &dyn Observer,
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
    // The whole pinned corpus: a subset is another dataset.
    if !input.subset.is_whole() {
        let mut flags = Vec::new();
        if let Some(n) = input.subset.trees {
            flags.push(format!("--trees {n}"));
        }
        for name in &input.subset.names {
            flags.push(format!("--tree {name}"));
        }
        if let Some(n) = input.subset.max_requests {
            flags.push(format!("--max-requests {n}"));
        }
        conflict(
            format!(
                "{}: the recipe replays the whole pinned corpus (a subset is another dataset)",
                flags.join(" ")
            ),
            true,
        );
    }
    // The prompts as recorded: no client-side truncation or scaling.
    if let Some(n) = input.fit.max_context {
        conflict(
            format!("--max-context {n}: prompts are sent as recorded (no client-side truncation)"),
            true,
        );
    }
    if let Some(f) = input.fit.isl_scale.filter(|f| *f != 1.0) {
        conflict(
            format!("--isl-scale {f}: prompt lengths are sent as recorded"),
            true,
        );
    }
    if input.overlap_tolerance != defaults::OVERLAP_TOLERANCE {
        conflict(
            format!(
                "--overlap-tolerance {}: the trees are derived with the default {} s",
                seconds_text(input.overlap_tolerance),
                seconds_text(defaults::OVERLAP_TOLERANCE)
            ),
            true,
        );
    }
    let locked: Vec<&str> = body
        .into_iter()
        .flat_map(|b| b.keys())
        .map(String::as_str)
        .filter(|k| LOCKED_BODY_FIELDS.contains(k))
        .collect();
    if !locked.is_empty() {
        conflict(
            format!(
                "--extra-body sets {}: the recipe writes the prompt, the output length and \
                 `ignore_eos` itself, and nothing may shorten or multiply a request",
                locked.join(", ")
            ),
            true,
        );
    }
    if let Some(tool_time) = policy.tool_time.filter(|t| *t != GapTransform::Recorded) {
        conflict(
            format!("--tool-time {tool_time}: tool gaps are replayed as recorded"),
            true,
        );
    }
    if let Some(p) = policy.think_time_pct {
        conflict(
            format!(
                "--think-time-pct {}: think gaps are replayed as recorded",
                percent_text(p)
            ),
            true,
        );
    }
    for (flag, transform) in [
        ("--other-time", policy.other_time),
        ("--spawn-time", policy.spawn_time),
        ("--join-time", policy.join_time),
    ] {
        if let Some(transform) = transform.filter(|t| !t.is_identity()) {
            conflict(
                format!("{flag} {transform}: every gap is replayed as recorded"),
                true,
            );
        }
    }
    if let Some(scale) = policy.gap_scale.filter(|s| !s.is_identity()) {
        conflict(
            format!("--gap-scale {scale}: every gap is replayed as recorded"),
            true,
        );
    }
    if let Some(cap) = policy.idle_gap_cap {
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
    if let Some(d) = policy.duration {
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
    if let Some(grace) = policy.grace.filter(|g| *g != GRACE) {
        conflict(
            format!(
                "--grace {}: the grace is locked at {} s",
                seconds_text(grace),
                seconds_text(GRACE)
            ),
            true,
        );
    }
    if let Some(arrival) = policy.arrival {
        conflict(
            format!("--arrival {arrival}: lanes start together at their t* (no arrival process)"),
            true,
        );
    }
    if let Some(copies) = policy.copies.filter(|c| *c != 1) {
        conflict(
            format!("--copies {copies}: each tree is played once per lane sequence"),
            true,
        );
    }
    if let Some(m) = policy.max_inflight {
        conflict(
            format!("--max-inflight {m}: concurrency is the number of lanes (no request cap)"),
            true,
        );
    }
    if let Some(stagger) = policy.stagger {
        conflict(
            format!("--stagger {stagger}: lanes start together at their t*"),
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
        observer.notice(&format!(
            "warning: --unsafe-override: {text} (the run is stamped invalid)"
        ));
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
    if policy.grace.is_none() {
        policy.grace = Some(GRACE);
    }
    if policy.seed.is_none() {
        let seed = generated_seed();
        policy.seed = Some(seed);
        observer.notice(&format!(
            "arbor: --scenario {name}: seed {seed} (generated; pass --seed {seed} to repeat)"
        ));
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
    use crate::Quiet;
    use arbor_engine::policy::{Arrival, GapScale};
    use arbor_engine::time::NANOS_PER_SEC;

    const S: u64 = NANOS_PER_SEC;

    fn recipe(sessions: u32) -> (ScenarioOptions, PolicyOptions) {
        let scenario = ScenarioOptions {
            scenario: Some(AGENTX_MVP.to_string()),
            ..ScenarioOptions::default()
        };
        let policy = PolicyOptions {
            sessions: Some(sessions),
            ..PolicyOptions::default()
        };
        (scenario, policy)
    }

    fn applied(
        mut scenario: ScenarioOptions,
        mut policy: PolicyOptions,
    ) -> Result<(Option<Applied>, PolicyOptions, ScenarioOptions), Error> {
        // The bundled sample: no inputs, so no unpinned corpus.
        let a = apply(
            &mut scenario,
            &InputOptions::default(),
            &mut policy,
            None,
            &Quiet,
        )?;
        Ok((a, policy, scenario))
    }

    #[test]
    fn the_recipe_fills_in_its_values() {
        let (scenario, mut policy) = recipe(4);
        policy.seed = Some(0);
        let (a, p, s) = applied(scenario, policy).ok().unwrap();
        let a = a.unwrap();
        assert!(a.overridden.is_empty());
        assert!(p.loop_lanes);
        assert_eq!(p.seed, Some(0), "an explicit seed 0 is kept");
        assert_eq!(s.start_window, Some("0:1".parse().unwrap()));
        assert_eq!(p.idle_gap_cap, Some(10 * S));
        assert_eq!(p.duration, Some(1800 * S));
        assert_eq!(p.grace, Some(30 * S));
    }

    #[test]
    fn values_equal_to_the_locks_are_not_conflicts() {
        let (mut scenario, mut policy) = recipe(4);
        policy.idle_gap_cap = Some(10 * S);
        policy.grace = Some(30 * S);
        policy.duration = Some(900 * S);
        policy.copies = Some(1);
        policy.tool_time = Some(GapTransform::Recorded);
        policy.gap_scale = Some(GapScale::default());
        scenario.start_window = Some("0.25:0.75".parse().unwrap());
        let (a, p, s) = applied(scenario, policy).ok().unwrap();
        assert!(a.unwrap().overridden.is_empty());
        assert!(p.seed.is_some(), "a seed is generated");
        assert_eq!(s.start_window, Some("0.25:0.75".parse().unwrap()));
    }

    #[test]
    fn every_conflict_is_named_at_once() {
        let (scenario, mut policy) = recipe(4);
        policy.tool_time = Some(GapTransform::Zero);
        policy.think_time_pct = Some(GapTransform::Scale { ppm: 500_000 });
        policy.idle_gap_cap = Some(S);
        policy.duration = Some(10 * S);
        policy.grace = Some(0);
        policy.arrival = Some(Arrival::Immediate);
        policy.copies = Some(2);
        policy.max_inflight = Some(3);
        let failure = applied(scenario, policy).err().unwrap();
        assert!(failure.is_input());
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
    fn an_override_runs_and_lists_what_it_let_through() {
        let (mut scenario, mut policy) = recipe(4);
        scenario.unsafe_override = true;
        policy.copies = Some(2);
        let (a, _, _) = applied(scenario, policy).ok().unwrap();
        let overridden = a.unwrap().overridden;
        assert_eq!(overridden.len(), 1, "{overridden:?}");
        assert!(overridden[0].contains("--copies 2"), "{overridden:?}");
    }

    #[test]
    fn lanes_get_enough_copies() {
        assert_eq!(copies_for_lanes(8, 4), 2);
        assert_eq!(copies_for_lanes(3, 4), 1);
        assert_eq!(copies_for_lanes(9, 4), 3);
    }

    #[test]
    fn a_subset_of_the_corpus_conflicts_and_is_overridable() {
        use crate::options::SubsetOptions;
        let input = InputOptions {
            subset: SubsetOptions {
                trees: Some(2),
                max_requests: Some(50),
                ..SubsetOptions::default()
            },
            ..InputOptions::default()
        };
        let (mut scenario, mut policy) = recipe(4);
        let failure = apply(&mut scenario, &input, &mut policy, None, &Quiet)
            .err()
            .unwrap();
        assert!(failure.is_input());
        assert!(
            failure.message.contains(
                "--trees 2 --max-requests 50: the recipe replays the whole pinned corpus"
            ),
            "{}",
            failure.message
        );
        let (mut scenario, mut policy) = recipe(4);
        scenario.unsafe_override = true;
        let applied = apply(&mut scenario, &input, &mut policy, None, &Quiet)
            .ok()
            .flatten()
            .unwrap();
        assert_eq!(applied.overridden.len(), 1, "{:?}", applied.overridden);
    }
}
