//! The intervals of virtual readings under the server model: each holds
//! its reading, says whether the fit's share is in, is the same on one
//! worker or many, and is absent under a formula model.

use std::path::{Path, PathBuf};

use arbor_capacity::predict::{Bench, VirtualProbe};
use arbor_capacity::{sweep, Knob, Point, Reading, Slo, Space};
use arbor_engine::dag;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::model::{Agent, AgentKind, InputKind, Tree, Turn};
use arbor_engine::policy::{Arrival, Policy};
use arbor_engine::Workload;
use arbor_sim::Service;

const MS: u64 = 1_000_000;

/// 8 trees of one agent, three turns 200 ms apart as recorded, of 1000
/// to 1700 tokens in and 20 to 90 out (so requests differ).
fn trees() -> Workload {
    let turn = |i: u64, k: u64| Turn {
        start: k * 200 * MS,
        duration: Some(200 * MS),
        isl: 1000 + 100 * ((i * 3 + k) % 8) as u32,
        osl: 20 + 10 * ((i + k) % 8) as u32,
        model: Some(0),
        input_kind: InputKind::ToolResult,
        tokens_estimated: true,
        ..Turn::default()
    };
    let tree = |i: u64| Tree {
        id: format!("t{i}"),
        source: format!("varied:{i}"),
        agents: vec![Agent {
            id: "root".into(),
            parent: None,
            kind: AgentKind::Root,
            recorded_end: None,
            turns: (0..3).map(|k| turn(i, k)).collect(),
        }],
        models: vec!["m".into()],
        block_size: 16,
        ..Tree::default()
    };
    Workload {
        trees: (0..8).map(tree).collect(),
    }
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn bench(service: &str) -> Bench {
    let workload = trees();
    let policy = Policy {
        arrival: Arrival::Immediate,
        ..Policy::default()
    };
    let compiled =
        dag::compile(&workload, &policy, &DeriveOptions::default()).expect("the trees compile");
    let service: Service = service.parse().expect("a service");
    Bench::new(compiled, workload, None, policy, service)
}

fn points(bench: &Bench, name: &str, workers: usize) -> Vec<Point> {
    let dir = std::env::temp_dir().join(format!(
        "arbor-capacity-it-{}-intervals-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let space = Space {
        knob: Knob::Sessions,
        lo: 1,
        hi: 4,
        start: 1,
        step: 1,
    };
    let slo = Slo::parse("ttft_p90<=10s,e2e_p50<=60s,job_p90<=600s").expect("an SLO");
    let probe = VirtualProbe::new(bench, space.knob, &dir);
    sweep(&probe, &space, &slo, workers).points
}

fn server(profile: &str) -> String {
    format!("server:{}", repo(profile).display())
}

#[test]
fn every_virtual_reading_under_the_server_model_has_an_interval_holding_it() {
    let bench = bench(&server("testdata/profiles/example-draws.toml"));
    let many = points(&bench, "draws", 4);
    for p in &many {
        for b in &p.verdict.bounds {
            let Reading::Value(v) = b.reading else {
                panic!("{b:?}")
            };
            let i = b.interval.as_ref().unwrap_or_else(|| panic!("{b:?}"));
            assert!(i.lo_ns <= v && i.hi_ns.is_some_and(|hi| v <= hi), "{b:?}");
            assert!(i.fit_known && i.level == 0.9, "{i:?}");
        }
    }
    let one: Vec<_> = points(&bench, "draws-one", 1);
    let intervals = |ps: &[Point]| -> Vec<_> {
        ps.iter()
            .flat_map(|p| p.verdict.bounds.iter().map(|b| b.interval.clone()))
            .collect()
    };
    assert_eq!(intervals(&one), intervals(&many));
}

#[test]
fn without_draws_the_interval_says_the_fit_is_unknown_and_formulas_have_none() {
    let bench = bench(&server("profiles/example.toml"));
    let p = &points(&bench, "no-draws", 2)[0];
    let i = p.verdict.bounds[0].interval.as_ref().expect("an interval");
    assert!(!i.fit_known);
    assert_eq!(i.method, "resamples (fit unknown)");
    let fixed = bench_fixed();
    for p in points(&fixed, "fixed", 2) {
        assert!(p.verdict.bounds.iter().all(|b| b.interval.is_none()));
    }
}

fn bench_fixed() -> Bench {
    bench("fixed:100:10")
}
