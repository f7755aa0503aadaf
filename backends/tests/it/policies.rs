//! Each policy against a schedule computed by hand.

use arbor_engine::policy::{Arrival, GapTransform, Policy, Stagger};
use arbor_engine::scheduler::TurnState;
use arbor_engine::AgentKind;
use arbor_sim::ServiceModel;

use crate::build::*;

/// Parent [0,10) then a tool-result turn at 100; three blocking children
/// spawned at 12 ending at 30, 60 and 90; a background child spawned at 12
/// running until 500.
fn fan_out_tree() -> arbor_engine::Tree {
    tree(
        "fan",
        0,
        vec![
            root(vec![user(0, 10), tool(100, 10)]),
            agent("a", Some(0), AgentKind::Blocking, vec![user(12, 18)]),
            agent("b", Some(0), AgentKind::Blocking, vec![user(12, 48)]),
            agent("c", Some(0), AgentKind::Blocking, vec![user(12, 78)]),
            agent("bg", Some(0), AgentKind::Background, vec![user(12, 488)]),
        ],
    )
}

#[test]
fn identity_replays_every_turn_at_its_recorded_start() {
    let s = run(vec![fan_out_tree()], Policy::default());
    assert_eq!(sends(&s, 0), vec![0.0, 100.0, 12.0, 12.0, 12.0, 12.0]);
    assert_eq!(s.plays()[0].done, Some(500 * S));
}

#[test]
fn join_waits_for_all_three_children_while_background_runs_on() {
    // Tool time zero removes the residual join gaps (70, 40, 10 s) and the
    // parent's own gap: the join turn goes when the last blocking child
    // (c, ending at 90) is done, not earlier, and not at the background
    // child's end.
    let policy = Policy {
        tool_time: GapTransform::Zero,
        ..Policy::default()
    };
    let s = run(vec![fan_out_tree()], policy);
    let join = slot(&s, 0, 1);
    assert_eq!(join.sent, 90 * S);
    let background = slot(&s, 0, 5);
    assert_eq!(background.end, 500 * S);
    assert!(background.end > join.end);
    assert_eq!(
        s.plays()[0].done,
        Some(500 * S),
        "the tree is live until its background child ends"
    );

    // Make child c slower by a service model: the join follows it.
    let s = run_with(
        vec![fan_out_tree()],
        Policy {
            tool_time: GapTransform::Zero,
            ..Policy::default()
        },
        ServiceModel::Fixed {
            ttft: 200 * S,
            itl: 0,
        },
    );
    // Every turn takes 200 s: P0 [0,200), children spawn at 202 (2 s think
    // gap kept) and end at 402; join at 402.
    assert_eq!(slot(&s, 0, 1).sent, 402 * S);
}

#[test]
fn the_join_keeps_its_residual_gap() {
    // Every turn takes 100 s: P0 [0,100); children spawn at 102 (gap 2)
    // and all end at 202. Each join edge keeps its recorded residual gap
    // (a: 70, b: 40, c: 10 s), so the join goes at 202 + 70 = 272; the
    // parent's own edge gives only 100 + 90 = 190. A tool that dropped the
    // join turn's gap would send it at 202.
    let s = run_with(
        vec![fan_out_tree()],
        Policy::default(),
        ServiceModel::Fixed {
            ttft: 100 * S,
            itl: 0,
        },
    );
    assert_eq!(slot(&s, 0, 1).sent, 272 * S);
}

#[test]
fn tool_and_think_transforms_apply_by_input_kind() {
    let t = || {
        tree(
            "t",
            0,
            vec![root(vec![
                user(0, 1),
                tool(11, 1),
                user(22, 1),
                tool(43, 1),
            ])],
        )
    };
    // Gaps: 10 (tool), 10 (think), 20 (tool).
    let cases = [
        (
            GapTransform::Zero,
            GapTransform::Recorded,
            vec![0.0, 1.0, 12.0, 13.0],
        ),
        (
            GapTransform::Fixed(2 * S),
            GapTransform::Recorded,
            vec![0.0, 3.0, 14.0, 17.0],
        ),
        (
            GapTransform::Max(5 * S),
            GapTransform::Recorded,
            vec![0.0, 6.0, 17.0, 23.0],
        ),
        (
            GapTransform::Scale { ppm: 500_000 },
            GapTransform::Scale { ppm: 2_000_000 },
            vec![0.0, 6.0, 27.0, 38.0],
        ),
    ];
    for (tool_time, think_time, expected) in cases {
        let policy = Policy {
            tool_time,
            think_time,
            ..Policy::default()
        };
        let s = run(vec![t()], policy);
        assert_eq!(
            sends(&s, 0),
            expected,
            "tool {tool_time} think {think_time}"
        );
    }
}

fn one_turn_trees(arrivals: &[u64], duration: u64) -> Vec<arbor_engine::Tree> {
    arrivals
        .iter()
        .enumerate()
        .map(|(i, &a)| tree(&format!("t{i}"), a, vec![root(vec![user(0, duration)])]))
        .collect()
}

#[test]
fn idle_gap_cap_shifts_all_pending_timers_by_one_offset() {
    // Arrivals at 100, 105, 130; 1 s turns; cap 10 s. At 0 the system is
    // idle with three timers pending: all move by 90 (to 10, 15, 40), the
    // 5 s spacing kept. After the second tree ends at 16, the next timer
    // (40) is more than 10 s away: it moves to 26.
    let policy = Policy {
        idle_gap_cap: Some(10 * S),
        ..Policy::default()
    };
    let s = run(one_turn_trees(&[100, 105, 130], 1), policy);
    let starts: Vec<f64> = (0..3).map(|p| sends(&s, p)[0]).collect();
    assert_eq!(starts, vec![10.0, 15.0, 26.0]);
    assert_eq!(s.stats().idle_shifts, 2);
    assert_eq!(s.stats().idle_skipped, 104 * S);
    // The shift credited to each turn is visible in its record.
    assert_eq!(slot(&s, 2, 0).shift_at_eligible, 104 * S);
}

#[test]
fn idle_gap_cap_shifts_gaps_inside_a_tree() {
    // One agent: [0,1) then a 3058 s think gap (as in trace_0504).
    let t = tree("t", 0, vec![root(vec![user(0, 1), user(3059, 1)])]);
    let policy = Policy {
        idle_gap_cap: Some(10 * S),
        ..Policy::default()
    };
    let s = run(vec![t], policy);
    assert_eq!(sends(&s, 0), vec![0.0, 11.0]);
    assert_eq!(s.stats().idle_skipped, 3048 * S);
}

#[test]
fn max_inflight_queues_fifo_and_records_the_wait() {
    let policy = Policy {
        arrival: Arrival::Immediate,
        max_inflight: Some(2),
        ..Policy::default()
    };
    let s = run(one_turn_trees(&[0, 0, 0, 0, 0], 10), policy);
    let starts: Vec<f64> = (0..5).map(|p| sends(&s, p)[0]).collect();
    assert_eq!(starts, vec![0.0, 0.0, 10.0, 10.0, 20.0]);
    let waits: Vec<u64> = (0..5)
        .map(|p| {
            let x = slot(&s, p, 0);
            (x.dispatched - x.eligible) / S
        })
        .collect();
    assert_eq!(waits, vec![0, 0, 10, 10, 20]);
    assert_eq!(s.stats().peak_inflight, 2);
}

#[test]
fn arrival_processes() {
    let trees = || one_turn_trees(&[7, 3, 9], 1);
    let at = |policy: Policy| -> Vec<f64> {
        let s = run(trees(), policy);
        (0..3)
            .map(|p| s.plays()[p].started.unwrap() as f64 / S as f64)
            .collect()
    };
    assert_eq!(at(Policy::default()), vec![7.0, 3.0, 9.0]);
    assert_eq!(
        at(Policy {
            arrival: Arrival::Immediate,
            ..Policy::default()
        }),
        vec![0.0, 0.0, 0.0]
    );
    assert_eq!(
        at(Policy {
            arrival: Arrival::Rate(2.0),
            ..Policy::default()
        }),
        vec![0.0, 0.5, 1.0]
    );
    let poisson = |seed| {
        at(Policy {
            arrival: Arrival::Poisson(1.0),
            seed,
            ..Policy::default()
        })
    };
    assert_eq!(poisson(1), poisson(1));
    assert_ne!(poisson(1), poisson(2));
    let p = poisson(1);
    assert!(p[0] == 0.0 && p[1] > 0.0 && p[2] > p[1], "{p:?}");
}

#[test]
fn copies_with_even_and_random_stagger() {
    let policy = Policy {
        copies: 4,
        stagger: Stagger::Even { span: 8 * S },
        ..Policy::default()
    };
    let s = run(one_turn_trees(&[0], 1), policy);
    let starts: Vec<f64> = (0..4).map(|p| sends(&s, p)[0]).collect();
    assert_eq!(starts, vec![0.0, 2.0, 4.0, 6.0]);
    assert_eq!(
        (0..4).map(|p| s.plays()[p].copy).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );

    let random = |seed| {
        let policy = Policy {
            copies: 3,
            stagger: Stagger::Random { span: 5 * S },
            seed,
            ..Policy::default()
        };
        let s = run(one_turn_trees(&[0], 1), policy);
        (0..3).map(|p| slot(&s, p, 0).sent).collect::<Vec<_>>()
    };
    let a = random(9);
    assert_eq!(a, random(9));
    assert_eq!(a[0], 0);
    assert!(a[1..].iter().all(|&t| t < 5 * S));
    assert_ne!(a, random(10));
}

#[test]
fn closed_loop_lanes_run_one_tree_at_a_time_from_a_seeded_share() {
    // Five trees with a background child that outlives the root.
    let trees: Vec<_> = (0..5)
        .map(|i| {
            tree(
                &format!("t{i}"),
                0,
                vec![
                    root(vec![user(0, 2), tool(3, 1)]),
                    agent("bg", Some(0), AgentKind::Background, vec![user(3, 10 + i)]),
                ],
            )
        })
        .collect();
    let policy = Policy {
        sessions: Some(2),
        seed: 5,
        ..Policy::default()
    };
    let s = run(trees.clone(), policy.clone());
    assert_eq!(s.lanes().len(), 2);
    let dealt: usize = s.lanes().iter().map(|l| l.share.len()).sum();
    assert_eq!(dealt, 5);
    for (lane_index, lane) in s.lanes().iter().enumerate() {
        let plays: Vec<_> = s
            .plays()
            .iter()
            .filter(|p| p.lane == Some(lane_index as u32))
            .collect();
        // Plays exactly its share, in order.
        let played: Vec<(u32, u32)> = plays.iter().map(|p| (p.tree, p.copy)).collect();
        assert_eq!(played, lane.share);
        // One at a time: each starts exactly when the previous is done
        // (background child included).
        for pair in plays.windows(2) {
            assert_eq!(pair[1].started, pair[0].done);
        }
        assert_eq!(lane.dry_at, plays.last().and_then(|p| p.done));
    }
    assert_eq!(s.stats().peak_live_trees, 2);
    // The share does not depend on timing: a different service model deals
    // the same trees to the same lanes.
    let other = run_with(
        trees,
        policy,
        ServiceModel::Fixed {
            ttft: 7 * S,
            itl: 0,
        },
    );
    let shares = |s: &arbor_engine::scheduler::Scheduler| {
        s.lanes()
            .iter()
            .map(|l| l.share.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(shares(&s), shares(&other));
}

#[test]
fn looping_lanes_cycle_until_the_duration_and_grace_cancels() {
    let trees = one_turn_trees(&[0, 0], 4);
    let policy = Policy {
        sessions: Some(1),
        loop_lanes: true,
        duration: Some(10 * S),
        grace: S,
        ..Policy::default()
    };
    let s = run(trees, policy);
    // 4 s trees back to back: starts at 0, 4, 8; the third is in flight at
    // the 10 s deadline and is cancelled after the 1 s grace.
    let starts: Vec<u64> = s.plays().iter().map(|p| p.started.unwrap() / S).collect();
    assert_eq!(starts, vec![0, 4, 8]);
    let last = slot(&s, 2, 0);
    assert_eq!(last.state, TurnState::Cancelled);
    assert_eq!(last.end, 11 * S);
    assert_eq!(s.stats().cancelled, 1);
    assert_eq!(s.lanes()[0].plays, 3);
}

#[test]
fn duration_skips_turns_not_yet_sent() {
    let t = tree(
        "t",
        0,
        vec![root(vec![user(0, 1), tool(5, 1), tool(20, 1)])],
    );
    let late = tree("late", 50, vec![root(vec![user(0, 1)])]);
    let policy = Policy {
        duration: Some(10 * S),
        ..Policy::default()
    };
    let s = run(vec![t, late], policy);
    assert_eq!(slot(&s, 0, 2).state, TurnState::Skipped);
    assert_eq!(s.stats().skipped, 1);
    assert_eq!(s.stats().plays_not_started, 1);
    assert_eq!(s.stats().dispatched, 2);
}

#[test]
fn recorded_overlap_replays_concurrently() {
    // Turn 1 was sent 5 s into turn 0 (a 10 s request): a Start edge.
    let t = tree(
        "t",
        0,
        vec![root(vec![user(0, 10), tool(5, 2), tool(12, 1)])],
    );
    let s = run_with(
        vec![t],
        Policy::default(),
        ServiceModel::Fixed {
            ttft: 20 * S,
            itl: 0,
        },
    );
    // Turn 1 still starts 5 s after turn 0 although turn 0 now takes 20 s;
    // turn 2 waits for both ends (0: 20 + gap 2; 1: 25 + gap 5) -> 30.
    assert_eq!(sends(&s, 0), vec![0.0, 5.0, 30.0]);
    assert_eq!(s.stats().peak_inflight, 2);
}

#[test]
fn a_looping_lane_of_zero_time_trees_stops_instead_of_spinning() {
    // Every turn takes no time: without a guard the lane would replay the
    // tree forever at t = 0 and never reach the deadline.
    let t = tree("t", 0, vec![root(vec![user(0, 0)])]);
    let policy = Policy {
        sessions: Some(1),
        loop_lanes: true,
        duration: Some(S / 100),
        ..Policy::default()
    };
    let s = run(vec![t], policy);
    let lane = &s.lanes()[0];
    assert!(lane.stalled);
    assert_eq!(lane.dry_at, Some(0));
    assert_eq!(
        lane.plays, 2,
        "one cycle, then one more that took no time either"
    );
}

#[test]
fn the_tree_idle_watchdog_shortens_one_trees_long_wait() {
    // Tree a waits 100 s between its turns while tree b keeps the system
    // busy (so the global idle-gap cap never applies): with a 10 s tree
    // idle cap, a's second turn goes 10 s after its first ends.
    let a = tree("a", 0, vec![root(vec![user(0, 1), user(101, 1)])]);
    let b = tree("b", 0, vec![root(vec![user(0, 200)])]);
    let policy = Policy {
        tree_idle_cap: Some(10 * S),
        idle_gap_cap: Some(10 * S),
        ..Policy::default()
    };
    let s = run(vec![a.clone(), b.clone()], policy);
    assert_eq!(sends(&s, 0), vec![0.0, 11.0]);
    assert_eq!(s.stats().tree_idle_shifts, 1);
    assert_eq!(s.stats().idle_shifts, 0, "b was in flight throughout");
    // Without the watchdog the recorded wait stands.
    let s = run(vec![a, b], Policy::default());
    assert_eq!(sends(&s, 0), vec![0.0, 101.0]);
}
