//! Invariant 3: the identity property (docs/model.md, "The identity
//! property"), on generated workloads (built directly and by the synthetic
//! generator) and on every fixture trace in `testdata/`.

use arbor_engine::policy::Policy;
use arbor_engine::scheduler::{Scheduler, TurnState};
use arbor_engine::Workload;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_proptests::gen::{self, MEDIUM};
use arbor_proptests::{fixtures, plan, show, Service};
use arbor_sim::ServiceModel;
use proptest::prelude::*;

/// Every turn was sent exactly at its tree's arrival plus its recorded
/// start; `Err` names the first that was not.
fn sent_as_recorded(w: &Workload, s: &Scheduler) -> Result<(), String> {
    if s.slots().len() != w.turn_count() {
        return Err(format!(
            "{} slots for {} turns",
            s.slots().len(),
            w.turn_count()
        ));
    }
    for play in s.plays() {
        let tree = &w.trees[play.tree as usize];
        let mut flat = 0;
        for agent in &tree.agents {
            for (i, turn) in agent.turns.iter().enumerate() {
                let x = s.slot(play.request(flat).unwrap()).unwrap();
                if x.state != TurnState::Done || x.sent != tree.arrival + turn.start {
                    return Err(format!(
                        "tree {} agent {} turn {}: recorded start {} ns, sent at {} ns ({:?})\n{}",
                        tree.id,
                        agent.id,
                        i,
                        tree.arrival + turn.start,
                        x.sent,
                        x.state,
                        show::short(s)
                    ));
                }
                flat += 1;
            }
        }
    }
    Ok(())
}

fn spec() -> impl Strategy<Value = SyntheticSpec> {
    (
        1u32..6,
        1u32..12,
        0u32..4,
        0.0..0.8f64,
        1u32..6,
        0.0..1.0f64,
        0.0..0.5f64,
        0.0..0.5f64,
        any::<u64>(),
    )
        .prop_map(
            |(trees, turns, depth, spawn, fanout, background, overlap, unknown, seed)| {
                SyntheticSpec {
                    trees,
                    turns,
                    child_turns: turns.max(2) / 2,
                    depth,
                    spawn,
                    fanout,
                    background,
                    overlap,
                    unknown,
                    zero_gap: 0.3,
                    arrival_s: 2.0,
                    seed,
                    ..SyntheticSpec::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(arbor_proptests::config(1000, "identity"))]

    /// **Identity: a plain replay is the recording.** With the `recorded`
    /// service model, recorded arrival, no gap transforms, no caps and
    /// overlap tolerance 0, every turn of every tree is sent exactly at its
    /// recorded start, to the nanosecond: nested, blocking and background
    /// subagents, overlaps, unknown durations, zero gaps and equal
    /// timestamps included.
    #[test]
    fn plain_replay_sends_every_turn_at_its_recorded_start(w in gen::workload(MEDIUM)) {
        let s = plan(&w, Policy::default(), &ServiceModel::Recorded);
        let ctx = show::case(&w, &Policy::default(), &Service::Model(ServiceModel::Recorded));
        if let Err(e) = sent_as_recorded(&w, &s) {
            prop_assert!(false, "{}{}", e, ctx);
        }
    }

    /// The identity property on workloads of the synthetic generator
    /// (realistic times and token counts).
    #[test]
    fn plain_replay_of_synthetic_workloads_is_the_recording(spec in spec()) {
        let w = spec.generate();
        let s = plan(&w, Policy::default(), &ServiceModel::Recorded);
        if let Err(e) = sent_as_recorded(&w, &s) {
            prop_assert!(false, "{}\nspec: {}", e, spec.to_spec_string());
        }
    }
}

/// The identity property on every fixture trace shipped in `testdata/`,
/// whatever its format.
#[test]
fn plain_replay_of_every_fixture_is_the_recording() {
    let mut checked = 0;
    for (file, w) in fixtures() {
        let s = plan(&w, Policy::default(), &ServiceModel::Recorded);
        if let Err(e) = sent_as_recorded(&w, &s) {
            panic!("{}: {e}", file.display());
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} fixtures found");
}
