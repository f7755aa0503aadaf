//! The start window's planning ([`arbor_engine::start`]) on a recorded
//! Weka trace.

use std::path::Path;

use arbor_engine::dag::{compile, CompiledTree};
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::{Policy, StartWindow};
use arbor_engine::start::{mid_start, t_star};
use arbor_engine::Workload;
use arbor_formats::load::load_path;

fn trace_0277() -> CompiledTree {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/weka-kv-cache-tester/trace_0277.json"
    );
    let loaded = load_path(Path::new(path), None).unwrap();
    assert_eq!(loaded.trees.len(), 1);
    let workload = Workload {
        trees: loaded.trees,
    };
    compile(&workload, &Policy::default(), &DeriveOptions::default())
        .unwrap()
        .trees
        .remove(0)
}

#[test]
fn t_star_is_seeded_per_lane_and_inside_the_window() {
    let tree = trace_0277();
    let window = StartWindow {
        min_ppm: 250_000,
        max_ppm: 750_000,
    };
    let last = *tree.start.iter().max().unwrap();
    let a = t_star(&tree, window, 42, 0, 0);
    assert_eq!(a, t_star(&tree, window, 42, 0, 0));
    assert_ne!(a, t_star(&tree, window, 42, 0, 1));
    for lane in 0..50 {
        let t = t_star(&tree, window, 7, 0, lane);
        assert!(t >= last / 4 && t <= last * 3 / 4 + 1, "{t}");
    }
}

#[test]
fn agents_alive_at_t_star_warm_their_last_turn_before_it() {
    let tree = trace_0277();
    // 30 s: the root has sent turn 0 (0 s) only; the three Explore
    // agents (spawned at 19.47 s) are part way through.
    let mid = mid_start(&tree, 30_000_000_000);
    let warm_agents: Vec<u32> = mid
        .warm
        .iter()
        .map(|&(w, _)| tree.agent_of[w as usize])
        .collect();
    assert_eq!(warm_agents, vec![0, 1, 2, 3]);
    for &(w, next) in &mid.warm {
        assert!(mid.history[w as usize] && !mid.history[next as usize]);
        assert_eq!(next, w + 1);
        assert!(
            tree.start[w as usize] < 30_000_000_000 && tree.start[next as usize] >= 30_000_000_000
        );
    }
    // The Plan agent (spawned at 385.6 s) has not started: no warmup.
    assert!(!warm_agents.contains(&4));
    assert!(mid.max_lead(&tree) <= 30_000_000_000);
}
