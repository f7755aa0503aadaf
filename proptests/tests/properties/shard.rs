//! Invariant 15: sharding is exact.

use arbor_engine::error::{PolicyConflict, PolicyError};
use arbor_engine::policy::{Policy, Shard, StartWindow};
use arbor_engine::scheduler::Scheduler;
use arbor_engine::shard::{self, Block};
use arbor_proptests::gen::{self, MEDIUM};
use arbor_proptests::{compile_exact, plan, show};
use arbor_sim::ServiceModel;
use proptest::prelude::*;

/// Every timeline line of a finished plan, as `arbor plan --timeline`
/// writes them (the fields it reads: the play's tree, copy and lane; the
/// turn; its times, wait, state and warmup), in slot order.
fn lines(s: &Scheduler) -> Vec<String> {
    s.slots()
        .iter()
        .map(|x| {
            let p = s.plays()[x.play as usize];
            format!(
                "tree{} copy{} lane{:?} t{} {} elig={} sent={} end={} wait={} warm={}",
                p.tree,
                p.copy,
                p.lane,
                x.turn,
                x.state.as_str(),
                x.eligible,
                x.sent,
                x.end,
                x.queue_wait,
                x.warmup
            )
        })
        .collect()
}

/// The shards' lines interleaved by [`shard::merge`], and the count of
/// play starts shared across shards.
fn merged(shards: &[Scheduler]) -> (Vec<String>, u64) {
    let blocks: Vec<Vec<Block>> = shards.iter().map(shard::blocks).collect();
    let each: Vec<Vec<String>> = shards.iter().map(lines).collect();
    // Each block's first line in its shard.
    let firsts: Vec<Vec<usize>> = blocks
        .iter()
        .map(|b| {
            b.iter()
                .scan(0usize, |at, b| {
                    let first = *at;
                    *at += b.turns as usize;
                    Some(first)
                })
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    let merged = shard::merge(&blocks).expect("shards merge");
    for &(s, b) in &merged.order {
        let first = firsts[s][b];
        out.extend_from_slice(&each[s][first..first + blocks[s][b].turns as usize]);
    }
    (out, merged.ties)
}

/// Policies with no global state: open or closed loop, every arrival,
/// copies, stagger, with or without a duration.
fn splittable() -> impl Strategy<Value = Policy> {
    prop_oneof![gen::policy(), gen::timed_policy()].prop_map(|p| Policy {
        idle_gap_cap: None,
        max_inflight: None,
        ..p
    })
}

fn model() -> impl Strategy<Value = ServiceModel> {
    prop_oneof![
        2 => Just(ServiceModel::Recorded),
        1 => (0u64..3, 0u64..2).prop_map(|(t, i)| ServiceModel::Fixed { ttft: t * 1_000_000, itl: i * 1_000_000 }),
        1 => (1u64..5, 1u64..5).prop_map(|(p, d)| ServiceModel::Throughput {
            prefill_mtok_s: p * 10_000_000,
            decode_mtok_s: d * 1_000_000,
        }),
    ]
}

proptest! {
    #![proptest_config(arbor_proptests::config(96, "shard"))]

    /// **N shards play exactly what one process plays.** For N = 2, 3 and
    /// 7, the plans of `--shard 0/N` .. `--shard N-1/N` merged by
    /// `arbor merge` are the unsharded plan, line for line: every play
    /// once, at the same times, under `--sessions`, every arrival
    /// (poisson included), `--copies` and `--stagger`. Where plays of two
    /// shards start at the same nanosecond (`ties`, which `arbor merge`
    /// reports), the lines are the same but may be in another order.
    #[test]
    fn merged_shards_are_the_unsharded_plan(
        w in gen::any_workload(MEDIUM),
        p in splittable(),
        model in model(),
    ) {
        let whole = lines(&plan(&w, p.clone(), &model));
        for count in [2u32, 3, 7] {
            let shards: Vec<Scheduler> = (0..count)
                .map(|index| plan(&w, Policy { shard: Some(Shard { index, count }), ..p.clone() }, &model))
                .collect();
            let total: usize = shards.iter().map(|s| s.slots().len()).sum();
            prop_assert_eq!(total, whole.len(), "N = {}{}", count, show::workload(&w));
            let (lines, ties) = merged(&shards);
            if ties == 0 {
                prop_assert_eq!(lines, whole.clone(), "N = {} {:?}{}", count, p, show::workload(&w));
            } else {
                let (mut a, mut b) = (lines, whole.clone());
                a.sort();
                b.sort();
                prop_assert_eq!(a, b, "N = {}", count);
            }
        }
    }

    /// **Global policies that cannot be split are refused.** With a shard,
    /// the global idle-gap cap and the start window are a `PolicyConflict`;
    /// `--max-inflight` is accepted and applies per shard.
    #[test]
    fn global_policies_are_refused_or_per_shard(
        w in gen::any_workload(MEDIUM),
        p in gen::closed_policy(),
        cap in 1u64..5,
    ) {
        let shard = Some(Shard { index: 0, count: 2 });
        let idle = Policy { idle_gap_cap: Some(cap * 1_000_000), shard, ..p.clone() };
        let refused = Scheduler::new(compile_exact(&w, &idle), idle.clone()).err();
        prop_assert_eq!(refused, Some(PolicyError::Conflict(PolicyConflict::IdleCapWithShard)));
        let window = Policy {
            idle_gap_cap: None,
            start_window: Some(StartWindow { min_ppm: 0, max_ppm: 1_000_000 }),
            shard,
            ..p.clone()
        };
        let refused = Scheduler::new(compile_exact(&w, &window), window.clone()).err();
        prop_assert_eq!(refused, Some(PolicyError::Conflict(PolicyConflict::StartWindowWithShard)));
        let capped = Policy { idle_gap_cap: None, max_inflight: Some(2), shard, ..p };
        prop_assert!(Scheduler::new(compile_exact(&w, &capped), capped.clone()).is_ok());
    }
}
