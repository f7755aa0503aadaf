//! The accelerated cache warmup (`--warmup-requests-per-lane K`): what it
//! takes out of the measurement, and when measurement starts.

use std::collections::BTreeSet;

use arbor_engine::policy::{Policy, StartWindow};
use arbor_engine::scheduler::{Scheduler, TurnState};
use arbor_engine::start::{accelerated, mid_start};
use arbor_proptests::gen::{self, MEDIUM};
use arbor_proptests::{run, show};
use proptest::prelude::*;

/// A request by what it replays: (lane, the lane's play, tree, copy, turn).
type Key = (u32, u32, u32, u32, u32);

fn key(s: &Scheduler, slot: &arbor_engine::scheduler::Slot) -> Key {
    let p = s.plays()[slot.play as usize];
    (
        p.lane.unwrap_or(u32::MAX),
        p.lane_play,
        p.tree,
        p.copy,
        slot.turn,
    )
}

/// The measured requests: sent, not warmups.
fn measured(s: &Scheduler) -> BTreeSet<Key> {
    s.slots()
        .iter()
        .filter(|x| !x.warmup && x.state != TurnState::History)
        .map(|x| key(s, x))
        .collect()
}

/// A closed-loop policy with a start window.
fn windowed() -> impl Strategy<Value = Policy> {
    (gen::closed_policy(), 0u32..=1_000_000, 0u32..=1_000_000).prop_map(|(p, a, b)| Policy {
        start_window: Some(StartWindow {
            min_ppm: a.min(b),
            max_ppm: a.max(b),
        }),
        ..p
    })
}

proptest! {
    #![proptest_config(arbor_proptests::config(200, "cache_warmup"))]

    /// **K per lane, and nothing else, leaves the measurement.** With
    /// `--warmup-requests-per-lane K` (no duration, no failures) the
    /// measured requests are exactly those of the same run without it,
    /// less each lane's first K live turns after `t*` in dependency order
    /// (all of them when fewer are left); a lane sends its boundary
    /// warmups and those, each one a warmup; every warmup has returned
    /// when profiling starts, and no measured request goes before it.
    #[test]
    fn k_per_lane_leave_the_measurement_and_profiling_follows_them(
        w in gen::any_workload(MEDIUM),
        p in windowed(),
        k in 1u32..6,
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (base, _) = run(&w, &p, &svc);
        let accelerated_policy = Policy { warmup_requests_per_lane: k, ..p.clone() };
        let (s, trace) = run(&w, &accelerated_policy, &svc);
        prop_assert!(!trace.livelock, "livelock{}", ctx);
        prop_assert!(s.slots().iter().all(|x| matches!(x.state, TurnState::Done | TurnState::History)), "not all done{}", ctx);

        let mut expected = measured(&base);
        for (lane, l) in (0u32..).zip(s.lanes()) {
            let (Some(t_star), Some(&(tree, copy))) = (l.t_star, l.share.first()) else { continue };
            let compiled = &s.trees()[tree as usize];
            let mid = mid_start(compiled, t_star);
            let set = accelerated(compiled, &mid, k);
            let live = mid.history.iter().filter(|h| !**h).count();
            let chosen = set.iter().filter(|a| **a).count();
            prop_assert_eq!(chosen, live.min(k as usize), "lane {}{}", lane, ctx);
            prop_assert_eq!(l.warmups as usize, mid.warm.len() + chosen, "lane {}{}", lane, ctx);
            for (turn, a) in (0u32..).zip(set) {
                if a {
                    prop_assert!(expected.remove(&(lane, 0, tree, copy, turn)), "lane {} turn {}{}", lane, turn, ctx);
                }
            }
            let sent = s.slots().iter().filter(|x| {
                let p = s.plays()[x.play as usize];
                x.warmup && p.lane == Some(lane) && p.lane_play == 0
            }).count();
            prop_assert_eq!(sent, l.warmups as usize, "lane {}{}", lane, ctx);
        }
        prop_assert_eq!(measured(&s), expected, "measured requests{}", ctx);

        let start = s.profiling_start();
        for x in s.slots().iter().filter(|x| x.state == TurnState::Done) {
            if x.warmup {
                prop_assert!(x.end <= start, "a warmup ended after the profiling start{}", ctx);
            } else {
                prop_assert!(x.sent >= start, "a measured request went before the profiling start{}", ctx);
            }
        }
    }
}
