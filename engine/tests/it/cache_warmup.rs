//! The accelerated cache warmup (`warmup_requests_per_lane`,
//! `cache_warmup_duration`) driven on a virtual clock: which requests are
//! warmups, when they go, and the hand-off to profiling.

use std::collections::BTreeSet;

use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::error::{PolicyConflict, PolicyError};
use arbor_engine::model::{Agent, AgentKind, Tree, Turn, Workload};
use arbor_engine::policy::{Policy, StartWindow};
use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler, Slot};
use arbor_engine::time::NANOS_PER_SEC;
use arbor_engine::Nanos;

const S: Nanos = NANOS_PER_SEC;

/// An agent whose turns start at `starts` seconds, each one second long.
fn agent(id: &str, parent: Option<u32>, kind: AgentKind, starts: &[Nanos]) -> Agent {
    Agent {
        id: id.into(),
        parent,
        kind,
        recorded_end: None,
        turns: starts
            .iter()
            .map(|&start| Turn {
                start: start * S,
                duration: Some(S),
                ..Turn::default()
            })
            .collect(),
    }
}

/// A root sending at 0, 10, 20, 40 and 50 s; at 20 it spawns a blocking
/// subagent sending at 22 and 30 s, which its turn at 40 joins.
fn spawn_and_join() -> Workload {
    Workload {
        trees: vec![Tree {
            id: "t".into(),
            agents: vec![
                agent("root", None, AgentKind::Root, &[0, 10, 20, 40, 50]),
                agent("sub", Some(0), AgentKind::Blocking, &[22, 30]),
            ],
            ..Tree::default()
        }],
    }
}

/// A root alone, sending every 10 s from 0 to `last` s.
fn chain(last: Nanos) -> Workload {
    let starts: Vec<Nanos> = (0..=last / 10).map(|k| k * 10).collect();
    Workload {
        trees: vec![Tree {
            id: "c".into(),
            agents: vec![agent("root", None, AgentKind::Root, &starts)],
            ..Tree::default()
        }],
    }
}

/// `lanes` lanes, each entering `workload`'s tree at the fraction `at` of
/// its span, with the accelerated warmup `k` requests long.
fn policy(lanes: u32, at: u32, k: u32) -> Policy {
    Policy {
        sessions: Some(lanes),
        copies: lanes,
        start_window: Some(StartWindow {
            min_ppm: at,
            max_ppm: at,
        }),
        warmup_requests_per_lane: k,
        ..Policy::default()
    }
}

fn scheduler(workload: &Workload, policy: Policy) -> Scheduler {
    let compiled = compile(workload, &policy, &DeriveOptions::default()).unwrap();
    Scheduler::new(compiled, policy).unwrap()
}

/// Runs to the end on a virtual clock; request `id` takes `service(s, id)`.
fn drive(mut s: Scheduler, service: impl Fn(&Scheduler, RequestId) -> Nanos) -> Scheduler {
    let mut inflight: BTreeSet<(Nanos, RequestId)> = BTreeSet::new();
    let mut now = 0;
    loop {
        while let Some(command) = s.poll_command() {
            match command {
                Command::Dispatch(id) => {
                    s.handle_sent(now, id).unwrap();
                    inflight.insert((now + service(&s, id), id));
                }
                Command::Cancel(id) => {
                    inflight.retain(|&(_, i)| i != id);
                    s.handle_completion(now, id, Outcome::Cancelled).unwrap();
                }
            }
        }
        let done = inflight.first().copied();
        match (done, s.poll_timeout()) {
            (None, None) => return s,
            (Some((at, id)), timer) if timer.is_none_or(|t| at <= t) => {
                inflight.pop_first();
                now = at;
                s.handle_completion(at, id, Outcome::Ok).unwrap();
            }
            (_, Some(t)) => {
                now = t;
                s.handle_timeout(t).unwrap();
            }
            (Some(_), None) => unreachable!(),
        }
    }
}

/// Every request one second long.
fn one_second(_: &Scheduler, _: RequestId) -> Nanos {
    S
}

/// The slot of `turn` (flat) in the play of `lane`'s first tree.
fn slot_of(s: &Scheduler, lane: u32, turn: u32) -> Slot {
    let play = s
        .plays()
        .iter()
        .find(|p| p.lane == Some(lane) && p.lane_play == 0)
        .unwrap();
    *s.slot(play.request(turn).unwrap()).unwrap()
}

fn accelerated_turns(s: &Scheduler, lane: u32) -> Vec<u32> {
    s.slots()
        .iter()
        .filter(|slot| slot.accelerated && s.plays()[slot.play as usize].lane == Some(lane))
        .map(|slot| slot.turn)
        .collect()
}

#[test]
fn k_requests_per_lane_children_counted_and_the_join_waits_for_its_children() {
    // Flat turns: root 0..=4 (0, 10, 20, 40, 50 s), sub 5, 6 (22, 30 s).
    // t* = 15 s: the root warms turn 1; live are 2, 5, 6, 3, 4 in that
    // order.
    let s = drive(
        scheduler(&spawn_and_join(), policy(1, 300_000, 4)),
        one_second,
    );
    assert_eq!(accelerated_turns(&s, 0), vec![2, 3, 5, 6]);
    assert_eq!(s.stats().warmups, 5, "the boundary warmup and four");
    // Boundary warmup 0..1 s; every lane at t* at 5 s (its lead).
    let sent = |t| slot_of(&s, 0, t).sent / 1_000_000;
    assert_eq!(sent(1), 0);
    assert_eq!(sent(2), 5_000, "at the boundary instant, no gap");
    assert_eq!(sent(5), 6_000, "the spawn goes at its parent's end");
    assert_eq!(sent(6), 7_000, "no think gap");
    assert_eq!(sent(3), 8_000, "the join waits for its children");
    for t in [1, 2, 3, 5, 6] {
        assert!(slot_of(&s, 0, t).warmup, "turn {t}");
    }
    // Profiling starts when the last warmup returned (the join, 9 s); the
    // root's last turn keeps its recorded 9 s after the join's end.
    assert_eq!(s.profiling_start(), 9 * S);
    assert!(!slot_of(&s, 0, 4).warmup);
    assert_eq!(sent(4), 18_000);
}

#[test]
fn a_join_outside_the_count_goes_at_the_hand_off_with_its_residual() {
    // K = 3 takes the root's turn 2 and both child turns; the join (turn
    // 3) is measured. Its recorded constraint: the child's end plus the
    // 9 s it waited (31 -> 40 s) and the root's turn 2 end plus 19 s.
    let s = drive(
        scheduler(&spawn_and_join(), policy(1, 300_000, 3)),
        one_second,
    );
    assert_eq!(accelerated_turns(&s, 0), vec![2, 5, 6]);
    assert_eq!(s.profiling_start(), 8 * S);
    let join = slot_of(&s, 0, 3);
    assert!(!join.warmup);
    // max(profiling start 8, child end 8 + 9, root end 6 + 19) = 25 s.
    assert_eq!(join.sent, 25 * S);
}

/// Two lanes in the chain (0, 10, ..., 60 s) at t* = 15 s, K = 1; lane
/// 1's accelerated request takes `slow`, every other request 1 s.
fn two_lanes_one_slow(slow: Nanos) -> Scheduler {
    let service = move |s: &Scheduler, id: RequestId| {
        let slot = s.slot(id).unwrap();
        let lane = s.plays()[slot.play as usize].lane;
        if lane == Some(1) && slot.accelerated {
            slow
        } else {
            S
        }
    };
    drive(scheduler(&chain(60), policy(2, 250_000, 1)), service)
}

#[test]
fn the_hand_off_counts_the_drain_wait_toward_each_delay() {
    // Two lanes in the same chain (0, 10, ..., 60 s) at t* = 15 s
    // (0.25 of 60): each warms turn 1, then sends turn 2 (20 s) as its one
    // accelerated request at the boundary instant (5 s). Lane 1's takes
    // 7 s: profiling starts at 12 s. Lane 0's turn 2 ended at 6 s; its
    // turn 3 was recorded 9 s after turn 2's end, so it waits
    // max(0, 9 - (12 - 6)) = 3 s more: 15 s. Lane 1's turn 3 waits its
    // full 9 s after the hand-off: 21 s.
    let s = two_lanes_one_slow(7 * S);
    assert_eq!(accelerated_turns(&s, 0), vec![2]);
    assert_eq!(accelerated_turns(&s, 1), vec![2]);
    assert_eq!(s.profiling_start(), 12 * S);
    assert_eq!(slot_of(&s, 0, 2).sent, 5 * S);
    assert_eq!(slot_of(&s, 0, 3).sent, 15 * S);
    assert_eq!(slot_of(&s, 1, 3).sent, 21 * S);
}

#[test]
fn a_drain_wait_longer_than_the_delay_sends_at_the_hand_off() {
    let s = two_lanes_one_slow(30 * S);
    assert_eq!(s.profiling_start(), 35 * S);
    assert_eq!(slot_of(&s, 0, 3).sent, 35 * S);
}

#[test]
fn the_global_idle_cap_is_off_during_the_warmup_only() {
    // Idle cap 1 s. The boundary warmup ends at 1 s and the accelerated
    // request waits for the boundary instant (5 s): 4 s idle, not capped.
    // After the hand-off (6 s) turn 3's 9 s residual is capped to 1 s.
    let mut p = policy(1, 250_000, 1);
    p.idle_gap_cap = Some(S);
    let s = drive(scheduler(&chain(60), p), one_second);
    assert_eq!(slot_of(&s, 0, 2).sent, 5 * S);
    assert_eq!(s.profiling_start(), 6 * S);
    assert_eq!(slot_of(&s, 0, 3).sent, 7 * S);
    assert!(s.stats().idle_shifts > 0);
    // Without the accelerated warmup the same 4 s before the boundary are
    // capped: the profiling timer moves earlier.
    let mut p = policy(1, 250_000, 0);
    p.idle_gap_cap = Some(S);
    let s = drive(scheduler(&chain(60), p), one_second);
    assert_eq!(s.profiling_start(), 2 * S);
}

#[test]
fn the_duration_form_stops_releasing_when_the_duration_is_up() {
    // Every request takes 2 s; the chain's turn 2 goes at the boundary
    // (5 s), turn 3 at 7 s, turn 4 at 9 s; at 5 + 5 = 10 s the duration is
    // up: turn 5 (waiting for turn 4, in flight) is handed back to
    // profiling, which starts when turn 4 returns (11 s). Turn 5 keeps its
    // recorded 9 s after turn 4's end: 20 s.
    let mut p = policy(1, 250_000, 0);
    p.cache_warmup_duration = Some(5 * S);
    let s = drive(scheduler(&chain(60), p), |_, _| 2 * S);
    let warm: Vec<u32> = (2..=6)
        .filter(|&t| slot_of(&s, 0, t).warmup)
        .collect::<Vec<_>>();
    assert_eq!(warm, vec![2, 3, 4]);
    assert_eq!(s.profiling_start(), 11 * S);
    assert_eq!(slot_of(&s, 0, 5).sent, 20 * S);
}

#[test]
fn a_first_play_ended_by_the_warmup_starts_the_next_at_the_hand_off() {
    // Lane 0 holds two copies; K covers its first play's whole rest.
    let mut p = policy(1, 500_000, 10);
    p.copies = 2;
    let s = drive(scheduler(&chain(20), p), |_: &Scheduler, _: RequestId| S);
    let second = s.plays().iter().find(|p| p.lane_play == 1).unwrap();
    assert_eq!(second.started, Some(s.profiling_start()));
}

#[test]
fn the_duration_counts_from_the_hand_off() {
    let mut p = policy(1, 250_000, 2);
    p.duration = Some(S);
    let s = drive(scheduler(&chain(60), p), one_second);
    // Boundary 5 s; turns 2 and 3 at 5 and 6 s; profiling at 7 s; turn 4
    // is due 9 s after turn 3's end (16 s), after the 1 s duration.
    assert_eq!(s.profiling_start(), 7 * S);
    assert_eq!(s.stats().stopped_at, Some(8 * S));
    assert_eq!(s.stats().dispatched, 3);
}

#[test]
fn a_count_and_a_duration_conflict_and_both_need_a_start_window() {
    let mut p = policy(1, 250_000, 2);
    p.cache_warmup_duration = Some(S);
    assert_eq!(
        p.validate(),
        Err(PolicyError::Conflict(
            PolicyConflict::CacheWarmupCountAndDuration
        ))
    );
    let p = Policy {
        sessions: Some(1),
        warmup_requests_per_lane: 2,
        ..Policy::default()
    };
    assert_eq!(
        p.validate(),
        Err(PolicyError::Conflict(
            PolicyConflict::CacheWarmupWithoutStartWindow
        ))
    );
}
