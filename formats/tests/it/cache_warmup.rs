//! The accelerated cache warmup on a recorded Weka trace, read through the
//! loader (the hand-built cases are the engine's, `engine/tests/it`).

use std::collections::BTreeSet;
use std::path::Path;

use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::model::Workload;
use arbor_engine::policy::{Policy, StartWindow};
use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler};
use arbor_engine::time::NANOS_PER_SEC;
use arbor_engine::Nanos;
use arbor_formats::load::load_path;

const S: Nanos = NANOS_PER_SEC;

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

fn accelerated_turns(s: &Scheduler, lane: u32) -> Vec<u32> {
    s.slots()
        .iter()
        .filter(|slot| slot.accelerated && s.plays()[slot.play as usize].lane == Some(lane))
        .map(|slot| slot.turn)
        .collect()
}

#[test]
fn on_a_recorded_trace_each_lane_warms_k_and_profiling_follows_them_all() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/weka-kv-cache-tester/trace_0277.json"
    );
    let workload = Workload {
        trees: load_path(Path::new(path), None).unwrap().trees,
    };
    let mut p = policy(3, 0, 10);
    p.start_window = Some("0.25:0.75".parse().unwrap());
    p.seed = 42;
    let s = drive(scheduler(&workload, p), one_second);
    let profiling = s.profiling_start();
    for lane in 0..3 {
        // K, or every live turn when fewer remain after t*.
        let live = s
            .slots()
            .iter()
            .filter(|slot| {
                let play = s.plays()[slot.play as usize];
                play.lane == Some(lane)
                    && play.lane_play == 0
                    && slot.state.as_str() != "history"
                    && (slot.accelerated || !slot.warmup)
            })
            .count();
        assert_eq!(
            accelerated_turns(&s, lane).len(),
            live.min(10),
            "lane {lane}"
        );
        assert!(live > 0);
    }
    assert!((0..3).any(|lane| accelerated_turns(&s, lane).len() == 10));
    for slot in s.slots() {
        if slot.warmup {
            assert!(slot.end <= profiling);
        } else if slot.state.as_str() == "ok" {
            assert!(slot.sent >= profiling);
        }
    }
    // Every accelerated request went after its tree's predecessors: a
    // join after its children's ends.
    for (id, slot) in s.slots().iter().enumerate() {
        if !slot.accelerated {
            continue;
        }
        let (tree, play, turn) = s.request_tree(id as RequestId).unwrap();
        for from in 0..tree.turn_count() {
            for e in tree.out(from) {
                let pred = s.slot(play.request(from).unwrap()).unwrap();
                if e.to == turn && pred.state.as_str() == "ok" {
                    assert!(pred.sent <= slot.sent);
                }
            }
        }
    }
}
