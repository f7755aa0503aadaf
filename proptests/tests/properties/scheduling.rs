//! First scheduling invariants, on synthetic workloads with nested
//! subagents, overlaps, unknown durations and zero gaps.

use arbor_engine::load::synthetic::SyntheticSpec;
use arbor_engine::policy::{Arrival, Policy};
use arbor_engine::scheduler::{Scheduler, TurnState};
use arbor_proptests::plan;
use arbor_sim::ServiceModel;
use proptest::prelude::*;

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

fn model() -> impl Strategy<Value = ServiceModel> {
    prop_oneof![
        Just(ServiceModel::Recorded),
        (0u64..2_000, 0u64..50).prop_map(|(ttft, itl)| ServiceModel::Fixed {
            ttft: ttft * 1_000_000,
            itl: itl * 1_000_000
        }),
    ]
}

fn all_done(s: &Scheduler) -> bool {
    s.slots().iter().all(|slot| slot.state == TurnState::Done)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: arbor_proptests::cases(64), ..ProptestConfig::default() })]

    /// Identity: with recorded service, recorded arrival, no transforms and
    /// no caps, every turn is sent exactly at its recorded start.
    #[test]
    fn identity_on_generated_workloads(spec in spec()) {
        let workload = spec.generate();
        let s = plan(&workload, Policy::default(), &ServiceModel::Recorded);
        prop_assert!(all_done(&s));
        for play in s.plays() {
            let tree = &workload.trees[play.tree as usize];
            let mut flat = 0;
            for agent in &tree.agents {
                for turn in &agent.turns {
                    let slot = s.slot(play.request(flat).unwrap()).unwrap();
                    prop_assert_eq!(slot.sent, tree.arrival + turn.start, "tree {} agent {}", tree.id, agent.id);
                    flat += 1;
                }
            }
        }
    }

    /// Every turn of every tree is dispatched exactly once and the request
    /// cap is never exceeded, whatever the service times.
    #[test]
    fn cap_holds_and_every_turn_runs_once(spec in spec(), cap in 1u32..6, model in model()) {
        let workload = spec.generate();
        let policy = Policy { max_inflight: Some(cap), arrival: Arrival::Immediate, ..Policy::default() };
        let s = plan(&workload, policy, &model);
        prop_assert!(s.stats().peak_inflight <= cap);
        prop_assert_eq!(s.stats().dispatched as usize, workload.turn_count());
        prop_assert!(all_done(&s));
        prop_assert_eq!(s.slots().len(), workload.turn_count());
    }

    /// Same inputs and seed, same timeline.
    #[test]
    fn same_seed_same_plan(spec in spec(), seed in any::<u64>(), model in model()) {
        let workload = spec.generate();
        let policy = Policy { arrival: Arrival::Poisson(0.5), sessions: Some(2), seed, ..Policy::default() };
        let a = plan(&workload, policy.clone(), &model);
        let b = plan(&workload, policy, &model);
        let times = |s: &Scheduler| s.slots().iter().map(|x| (x.eligible, x.sent, x.end)).collect::<Vec<_>>();
        prop_assert_eq!(times(&a), times(&b));
    }
}
