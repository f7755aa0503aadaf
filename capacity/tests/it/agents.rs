//! A point in agents and jobs per hour on small virtual workloads whose
//! figures are known by hand (fixed service times: every turn 200 ms),
//! with a subagent beside its parent; what `capacity.json` says of them
//! (each probe's `agents`, the answer in agents, the Pareto).

use std::path::PathBuf;

use arbor_capacity::agents::Agents;
use arbor_capacity::predict::{Bench, VirtualProbe};
use arbor_capacity::{output, sweep, About, Knob, Mode, Slo, Space};
use arbor_engine::dag;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::model::{Agent, AgentKind, InputKind, Tree, Turn};
use arbor_engine::policy::Policy;
use arbor_engine::Workload;
use arbor_sim::Service;
use serde_json::Value;

const MS: u64 = 1_000_000;

fn turn(start_ms: u64) -> Turn {
    Turn {
        start: start_ms * MS,
        duration: Some(200 * MS),
        isl: 100,
        osl: 10,
        model: Some(0),
        input_kind: InputKind::ToolResult,
        tokens_estimated: true,
        ..Turn::default()
    }
}

/// `trees` trees of a root agent with two turns back to back (0 and
/// 200 ms) and a background subagent spawned after its first turn, one
/// turn beside the root's second: the tree flies 400 ms, its subagent
/// 200 ms of it.
fn trees_with_a_subagent(trees: usize) -> Workload {
    let tree = |i: usize| Tree {
        id: format!("t{i}"),
        source: format!("sub:{i}"),
        agents: vec![
            Agent {
                id: "root".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns: vec![turn(0), turn(200)],
            },
            Agent {
                id: "sub".into(),
                parent: Some(0),
                kind: AgentKind::Background,
                recorded_end: None,
                turns: vec![turn(200)],
            },
        ],
        models: vec!["m".into()],
        block_size: 64,
        ..Tree::default()
    };
    Workload {
        trees: (0..trees).map(tree).collect(),
    }
}

/// The trees under `fixed:100:10` (every turn 200 ms: a first token at
/// 100 ms, then 10 gaps of 10 ms), closed loop, at most `max_inflight`
/// requests in flight.
fn bench(workload: Workload, max_inflight: Option<u32>) -> Bench {
    let policy = Policy {
        max_inflight,
        ..Policy::default()
    };
    let compiled =
        dag::compile(&workload, &policy, &DeriveOptions::default()).expect("the trees compile");
    let service: Service = "fixed:100:10".parse().expect("a service");
    Bench::new(compiled, workload, None, policy, service)
}

fn at(bench: &Bench, sessions: u64, slo: &Slo) -> Agents {
    let point = bench.point(Knob::Sessions, sessions).expect("a plan");
    let verdict = point.observed.judge(slo, 0);
    Agents::of(&point.observed, &verdict)
}

#[test]
fn trees_agents_and_jobs_per_hour_of_a_known_plan() {
    let bench = bench(trees_with_a_subagent(12), None);
    let slo = Slo::parse("job_p99<=400ms").expect("an SLO");
    // One lane plays the 12 trees one after another: 4.8 s, one tree
    // always in flight, its subagent half of it (1.5 agents, 2 at most),
    // 12 jobs of 400 ms: 9,000 jobs/h, and 9,000 jobs/h for one user.
    let a = at(&bench, 1, &slo);
    assert_eq!(a.window_s, 4.8);
    assert_eq!((a.trees_mean, a.trees_peak), (1.0, 1));
    assert_eq!((a.agents_mean, a.agents_peak), (1.5, 2));
    assert_eq!(a.jobs, 12);
    assert_close(a.jobs_per_hour, 9000.0);
    assert_close(a.good_jobs_per_hour, 9000.0);
    assert_close(a.job_time_mean_s, 0.4);
    assert_close(a.jobs_per_hour_per_user, 9000.0);
    // Three lanes: four trees each, 1.6 s; three times the jobs per hour,
    // the same for each user.
    let a = at(&bench, 3, &slo);
    assert_eq!(a.window_s, 1.6);
    assert_eq!((a.trees_mean, a.trees_peak), (3.0, 3));
    assert_eq!((a.agents_mean, a.agents_peak), (4.5, 6));
    assert_close(a.jobs_per_hour, 27_000.0);
    assert_close(a.jobs_per_hour_per_user, 9000.0);
}

/// At most 2 requests in flight: one lane (2 at most when its subagent
/// runs) never waits; more lanes queue, so each user's jobs slow down
/// while the server's jobs per hour cannot pass 2 requests every 200 ms
/// (3 requests a job: 12,000 jobs/h).
#[test]
fn a_sweep_answers_in_agents_and_marks_its_pareto() {
    let dir = scratch("sweep");
    let bench = bench(trees_with_a_subagent(12), Some(2));
    let slo = Slo::parse("job_p99<=400ms").expect("an SLO");
    let space = Space {
        knob: Knob::Sessions,
        lo: 1,
        hi: 6,
        start: 1,
        step: 1,
    };
    let probe = VirtualProbe::new(&bench, space.knob, &dir);
    let about = About {
        mode: Mode::Virtual,
        space: &space,
        slo: &slo,
        service: "fixed:100:10",
        predicted: None,
        replicas: 2,
    };
    let (knee, points) = sweep(&probe, &space, &slo, 1)
        .finish(&dir, about)
        .expect("a knee");
    assert_eq!(knee.passing, Some(1));
    for p in &points {
        let per_hour = p.agents.jobs_per_hour.expect("jobs per hour");
        assert!(per_hour <= 12_000.0 + 1e-6, "{p:?}");
    }
    let report = read(&dir.join(output::CAPACITY_FILE));
    let held = &report["answer_in_agents"];
    assert_eq!(held["load"], 1.0);
    assert_eq!(held["trees_mean"], 1.0);
    assert_eq!(held["agents_mean"], 1.5);
    assert_eq!(held["jobs_per_hour"], 9000.0);
    assert_eq!(report["probes"][0]["agents"]["agents_peak"], 2);

    let pareto = &report["pareto"];
    assert_eq!(pareto["replicas"], 2);
    let pts = pareto["points"].as_array().expect("points");
    assert_eq!(pts.len(), 6);
    let figure = |p: &Value, k: &str| p[k].as_f64().expect("a figure");
    // Per replica: half of the load's jobs per hour.
    assert_eq!(figure(&pts[0], "jobs_per_hour_per_replica"), 4500.0);
    // The frontier: no point beats a frontier point on both axes, and
    // each dominated point is beaten by one.
    let beats = |q: &Value, p: &Value| {
        let (qx, qy) = (
            figure(q, "jobs_per_hour_per_replica"),
            figure(q, "jobs_per_hour_per_user"),
        );
        let (px, py) = (
            figure(p, "jobs_per_hour_per_replica"),
            figure(p, "jobs_per_hour_per_user"),
        );
        qx >= px && qy >= py && (qx > px || qy > py)
    };
    for p in pts {
        let beaten = pts.iter().any(|q| beats(q, p));
        assert_eq!(p["dominated"], beaten, "{p}");
    }
    // One lane is the most interactive; some heavier load is dominated
    // (more waiting, no more jobs per hour).
    assert_eq!(pts[0]["dominated"], false);
    assert!(pts.iter().any(|p| p["dominated"] == true), "{pareto}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

fn assert_close(value: Option<f64>, expected: f64) {
    let v = value.expect("a value");
    assert!(
        (v - expected).abs() < 1e-6 * expected.max(1.0),
        "{v} != {expected}"
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "arbor-capacity-agents-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn read(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
