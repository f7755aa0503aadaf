//! Virtual searches and sweeps in process, on a workload whose knee is
//! known by hand, and what they write; a probe's error mid-search; a
//! policy the knob makes invalid, worded by the caller.

use std::path::{Path, PathBuf};

use arbor_capacity::predict::{Bench, VirtualProbe};
use arbor_capacity::{
    output, search, sweep, About, Knee, Knob, Mode, Observed, Point, Probe, Reading, Slo, Space,
    Start,
};
use arbor_engine::dag;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::model::{Agent, AgentKind, InputKind, Tree, Turn};
use arbor_engine::policy::{Arrival, Policy, Stagger};
use arbor_engine::Workload;
use arbor_error::Error;
use arbor_sim::Service;
use serde_json::Value;

const MS: u64 = 1_000_000;

/// `trees` identical trees: one agent, three turns back to back (gap 0),
/// 200 ms each as recorded, 100 tokens in and 10 out each.
fn identical_trees(trees: usize) -> Workload {
    let turn = |k: u64| Turn {
        start: k * 200 * MS,
        duration: Some(200 * MS),
        isl: 100,
        osl: 10,
        model: Some(0),
        input_kind: InputKind::ToolResult,
        tokens_estimated: true,
        ..Turn::default()
    };
    let tree = |i: usize| Tree {
        id: format!("t{i}"),
        source: format!("identical:{i}"),
        agents: vec![Agent {
            id: "root".into(),
            parent: None,
            kind: AgentKind::Root,
            recorded_end: None,
            turns: (0..3).map(turn).collect(),
        }],
        models: vec!["m".into()],
        block_size: 64,
        ..Tree::default()
    };
    Workload {
        trees: (0..trees).map(tree).collect(),
    }
}

/// 12 identical trees under `policy` and `fixed:100:10`: 200 ms a turn,
/// TTFT 100 ms, gaps of 10 ms.
fn bench(policy: Policy) -> Bench {
    let workload = identical_trees(12);
    let compiled =
        dag::compile(&workload, &policy, &DeriveOptions::default()).expect("the trees compile");
    let service: Service = "fixed:100:10".parse().expect("a service");
    Bench::new(compiled, workload, None, policy, service)
}

/// At most 4 requests in flight, every tree at once: up to 4 sessions no
/// request waits and every job takes exactly 600 ms; at 5 one waits. The
/// knee is 4.
fn capped(max_inflight: u32) -> Policy {
    Policy {
        max_inflight: Some(max_inflight),
        arrival: Arrival::Immediate,
        ..Policy::default()
    }
}

fn sessions(lo: u64, hi: u64) -> Space {
    Space {
        knob: Knob::Sessions,
        lo,
        hi,
        start: lo,
        step: 1,
    }
}

/// A fresh directory of this test binary's.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arbor-capacity-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn about<'a>(space: &'a Space, slo: &'a Slo) -> About<'a> {
    About {
        mode: Mode::Virtual,
        space,
        slo,
        service: "fixed:100:10",
        predicted: None,
        replicas: 1,
    }
}

fn loads(points: &[Point]) -> Vec<f64> {
    points.iter().map(|p| p.load).collect()
}

#[test]
fn a_virtual_search_finds_the_knee_by_hand() {
    let dir = scratch("search");
    let bench = bench(capped(4));
    let slo = Slo::parse("ttft_p99<=100ms,itl_p50<=10ms,job_p99<=600ms").expect("an SLO");
    let space = sessions(1, 64);
    let mut probe = VirtualProbe::new(&bench, space.knob, &dir);
    let outcome = search(&mut probe, &space, Start::At(space.start), &slo);
    let (knee, points) = outcome.finish(&dir, about(&space, &slo)).expect("a knee");
    assert_eq!(
        knee,
        Knee {
            passing: Some(4),
            failing: Some(5)
        }
    );
    assert_eq!(loads(&points), [1.0, 2.0, 4.0, 8.0, 6.0, 5.0]);
    for p in &points {
        let pass = p.load <= 4.0;
        assert_eq!(p.verdict.pass, pass, "{p:?}");
        // TTFT and ITL are the model's, at every load.
        assert_eq!(p.verdict.bounds[0].reading, Reading::Value(100 * MS));
        assert_eq!(p.verdict.bounds[1].reading, Reading::Value(10 * MS));
        if pass {
            assert_eq!(p.verdict.bounds[2].reading, Reading::Value(600 * MS));
            assert_eq!(p.verdict.job_goodput, Some(1.0));
        }
        let probe_dir = dir.join(&p.dir);
        let summary = read(&probe_dir.join("summary.json"));
        assert_eq!(summary["latency"]["job_time"]["count"], 12);
        assert_eq!(summary["verdict"]["pass"], pass);
        let records = std::fs::read_to_string(probe_dir.join("records.jsonl")).expect("records");
        assert_eq!(records.lines().count(), 36);
    }
    let report = read(&dir.join(output::CAPACITY_FILE));
    assert_eq!(report["schema_version"], "arbor.capacity/1");
    assert_eq!(report["mode"], "virtual");
    assert_eq!(report["complete"], true);
    assert_eq!(report["answer"]["passing"], 4.0);
    assert_eq!(report["answer"]["failing"], 5.0);
    assert_eq!(report["probes"].as_array().map(Vec::len), Some(6));
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// Every file under `dir`, by its path below it, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("a directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("a file");
                found.push((path.strip_prefix(dir).expect("below").to_path_buf(), bytes));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_sweep_is_the_same_on_one_worker_or_many_and_agrees_with_the_search() {
    let dir = scratch("sweep");
    let bench = bench(capped(4));
    let slo = Slo::parse("ttft_p99<=100ms,itl_p50<=10ms,job_p99<=600ms").expect("an SLO");
    let space = sessions(1, 8);
    let mut swept = Vec::new();
    for workers in [1, 3] {
        let out = dir.join(format!("workers-{workers}"));
        std::fs::create_dir_all(&out).expect("out");
        let probe = VirtualProbe::new(&bench, space.knob, &out);
        let outcome = sweep(&probe, &space, &slo, workers);
        let (knee, points) = outcome.finish(&out, about(&space, &slo)).expect("a knee");
        assert_eq!(
            knee,
            Knee {
                passing: Some(4),
                failing: Some(5)
            }
        );
        assert_eq!(loads(&points), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        for (k, p) in points.iter().enumerate() {
            assert_eq!((p.probe, p.verdict.pass), (k + 1, k < 4), "{p:?}");
        }
        swept.push(files(&out));
    }
    assert_eq!(swept[0].len(), 1 + 8 * 2, "capacity.json and 8 probes");
    assert!(swept[0] == swept[1], "one worker and three wrote the same");
    // A load both probed is the same prediction, file for file.
    let searched = dir.join("search");
    std::fs::create_dir_all(&searched).expect("out");
    let mut probe = VirtualProbe::new(&bench, space.knob, &searched);
    let found = search(&mut probe, &space, Start::At(1), &slo).found;
    assert!(found.is_ok());
    for (in_search, in_sweep) in [
        ("probe-3-sessions-4", "probe-4-sessions-4"),
        ("probe-6-sessions-5", "probe-5-sessions-5"),
    ] {
        for file in ["summary.json", "records.jsonl"] {
            let a = std::fs::read(searched.join(in_search).join(file)).expect("search probe");
            let b = std::fs::read(dir.join("workers-3").join(in_sweep).join(file))
                .expect("sweep probe");
            assert!(a == b, "{in_search} and {in_sweep} differ in {file}");
        }
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// The open loop: identical 600 ms trees arriving evenly, at most 3
/// requests (so 3 trees) in flight. A tree never waits while trees arrive
/// no faster than one every 200 ms: the knee is 3 / 0.6 s = 5 trees/s.
#[test]
fn a_virtual_rate_search_finds_the_knee_by_hand() {
    let dir = scratch("rate");
    let bench = bench(Policy {
        max_inflight: Some(3),
        ..Policy::default()
    });
    let slo = Slo::parse("job_p99<=600ms").expect("an SLO");
    let space = Space::of(Some("rate:0.1..20"), None, None, Arrival::Recorded).expect("a space");
    let mut probe = VirtualProbe::new(&bench, space.knob, &dir);
    let outcome = search(&mut probe, &space, Start::At(space.start), &slo);
    assert_eq!(
        outcome.found.expect("a knee"),
        Knee {
            passing: Some(5_000),
            failing: Some(5_100)
        }
    );
    assert_eq!(outcome.points[0].dir, "probe-1-rate-0.1");
    assert!(dir.join("probe-1-rate-0.1").join("summary.json").is_file());
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// A probe that fails at its third point.
struct FailsThird;

impl Probe for FailsThird {
    fn measure(&mut self, k: usize, _value: u64) -> Result<Observed, Error> {
        if k == 3 {
            return Err(Error::other("the server went away"));
        }
        Ok(Observed::default())
    }
}

#[test]
fn a_probe_error_ends_the_search_and_keeps_the_points_before_it() {
    let dir = scratch("error");
    let slo = Slo::parse("e2e_p50<=1s").expect("an SLO");
    let space = sessions(1, 64);
    // Nothing observed never passes: the search halves down from 8.
    let outcome = search(&mut FailsThird, &space, Start::At(8), &slo);
    assert_eq!(loads(&outcome.points), [8.0, 4.0]);
    let error = outcome
        .finish(&dir, about(&space, &slo))
        .expect_err("the third probe fails");
    assert_eq!(
        error.to_string(),
        "probe 3 (sessions=2) failed, and the search stopped without an answer: the server \
         went away"
    );
    let report = read(&dir.join(output::CAPACITY_FILE));
    assert_eq!(report["complete"], false);
    assert_eq!(report["stopped"]["probe"], 3);
    assert_eq!(report["stopped"]["cause"], "failed");
    assert_eq!(report["stopped"]["message"], "the server went away");
    assert_eq!(report["answer"]["passing"], Value::Null);
    assert_eq!(report["probes"].as_array().map(Vec::len), Some(2));
    std::fs::remove_dir_all(&dir).expect("clean up");
}

fn flag_words(_: arbor_engine::error::PolicyError) -> Error {
    Error::input("--stagger: in the caller's words")
}

#[test]
fn a_policy_the_knob_breaks_is_worded_by_the_caller() {
    // Staggered copies are an open-loop setting: the sessions knob makes
    // the policy invalid at every point.
    let policy = Policy {
        stagger: Stagger::Even { span: 1_000 * MS },
        ..Policy::default()
    };
    let bench = bench(policy);
    let error = bench.point(Knob::Sessions, 2).err().expect("refused");
    assert!(error.is_input());
    assert!(
        error
            .to_string()
            .contains("stagger applies to open-loop runs"),
        "{error}"
    );
    let bench = bench.with_policy_error(flag_words);
    let error = bench.point(Knob::Sessions, 2).err().expect("refused");
    assert_eq!(error.to_string(), "--stagger: in the caller's words");
}
