//! Where the time goes (issue 11, item 8), in-process: the plan's
//! breakdown of the makespan into classes, the option that scales each,
//! and the gap scale with the per-class gap options. (The console's
//! table and the flags' parsing stay in `cli/tests/it/gaps.rs`.)

use arbor::engine::policy::GapTransform;
use arbor::options::{PlanOptions, PolicyOptions, RunOptions, ScenarioOptions};
use arbor::Kind;
use serde_json::Value;

use crate::util::*;

/// The three Weka fixtures with subagents (the fourth is one long tool
/// gap).
const WEKA: [&str; 3] = ["trace_0187.json", "trace_0277.json", "trace_0291.json"];

/// The plan of the Weka fixtures under `policy`, as `plan --json` shows it.
fn plan(policy: PolicyOptions, service: Option<&str>) -> Value {
    let paths: Vec<_> = WEKA.iter().map(|n| fixture(n)).collect();
    plan_json(&PlanOptions {
        input: inputs(&paths),
        policy,
        service: service.map(|s| s.parse().unwrap()),
        ..PlanOptions::default()
    })
}

fn t(text: &str) -> Option<GapTransform> {
    Some(text.parse().unwrap())
}

fn scale(f: &str) -> PolicyOptions {
    PolicyOptions {
        gap_scale: Some(f.parse().unwrap()),
        ..PolicyOptions::default()
    }
}

/// `class -> ns` of a plan's breakdown, checked to sum to its makespan.
fn classes(plan: &Value) -> Vec<(String, i64)> {
    let b = &plan["time_breakdown"];
    let makespan = b["makespan_ns"].as_i64().expect("makespan_ns");
    assert_eq!(makespan as u64, secs_to_ns(&plan["makespan_s"]));
    let classes: Vec<(String, i64)> = b["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .map(|c| {
            assert!(c["scaled_by"].as_str().expect("a flag").contains("--"));
            (
                c["class"].as_str().unwrap().to_string(),
                c["ns"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(classes.iter().map(|c| c.1).sum::<i64>(), makespan, "{b}");
    classes
}

fn get(classes: &[(String, i64)], name: &str) -> i64 {
    classes
        .iter()
        .find(|c| c.0 == name)
        .unwrap_or_else(|| panic!("no class {name}"))
        .1
}

const GAP_CLASSES: [&str; 6] = ["tool", "think", "other", "spawn", "join", "concurrent"];

#[test]
fn gap_scale_zero_leaves_only_service_and_the_breakdown_says_so() {
    let recorded = plan(PolicyOptions::default(), None);
    let r = classes(&recorded);
    assert!(get(&r, "tool") > 0 && get(&r, "think") > 0, "{r:?}");

    let no_gaps = plan(
        PolicyOptions {
            tool_time: t("zero"),
            think_time_pct: Some(arbor::engine::policy::Policy::think_pct("0").unwrap()),
            ..scale("0")
        },
        None,
    );
    let n = classes(&no_gaps);
    for class in GAP_CLASSES {
        assert_eq!(get(&n, class), 0, "{class}: {n:?}");
    }
    let makespan = no_gaps["time_breakdown"]["makespan_ns"].as_i64().unwrap();
    assert_eq!(
        makespan,
        get(&n, "service") + get(&n, "queue") + get(&n, "arrival") + get(&n, "idle_skipped"),
        "{n:?}"
    );
    assert!(
        makespan < recorded["time_breakdown"]["makespan_ns"].as_i64().unwrap(),
        "the makespan shrinks"
    );
    // Every request on the critical path is service time: nothing else is left.
    assert_eq!(get(&n, "service"), makespan, "{n:?}");
    // A gap scale of 0 alone reaches the same plan.
    let scaled = plan(scale("0"), None);
    assert_eq!(scaled["makespan_s"], no_gaps["makespan_s"]);
    // With a zero-time server nothing at all is left.
    let instant = plan(scale("0"), Some("fixed:0:0"));
    assert_eq!(instant["time_breakdown"]["makespan_ns"], 0);
}

#[test]
fn every_gap_option_shrinks_its_class_and_is_recorded_in_the_policy() {
    let recorded = classes(&plan(PolicyOptions::default(), None));
    let half = plan(scale("0.5"), None);
    let h = classes(&half);
    assert_eq!(half["policy"]["gap_scale"], 0.5);
    for class in ["tool", "think", "spawn", "join"] {
        let (full, halved) = (get(&recorded, class), get(&h, class));
        assert!(halved < full, "{class}: {halved} of {full}");
    }
    let joined = plan(
        PolicyOptions {
            join_time: t("zero"),
            spawn_time: t("pct:50"),
            other_time: t("max:5"),
            ..PolicyOptions::default()
        },
        None,
    );
    let j = classes(&joined);
    assert_eq!(get(&j, "join"), 0, "{j:?}");
    let p = &joined["policy"];
    assert_eq!(
        (
            &p["join_time"],
            &p["spawn_time"],
            &p["other_time"],
            &p["gap_scale"]
        ),
        (
            &Value::from("zero"),
            &Value::from("pct:50"),
            &Value::from("max:5"),
            &Value::from(1.0)
        )
    );
}

#[test]
fn the_agentx_recipe_refuses_gap_options() {
    let e = arbor::plan::plan(
        &PlanOptions {
            input: inputs(&[fixture("")]),
            policy: PolicyOptions {
                sessions: Some(2),
                join_time: t("zero"),
                ..scale("0.5")
            },
            scenario: ScenarioOptions {
                scenario: Some("agentx-mvp".into()),
                ..ScenarioOptions::default()
            },
            ..PlanOptions::default()
        },
        &arbor::Quiet,
    )
    .unwrap_err();
    assert_eq!(e.kind, Kind::Input, "{e:?}");
    for needle in ["--gap-scale 0.5", "--join-time zero", "--unsafe-override"] {
        assert!(e.message.contains(needle), "`{needle}` in {}", e.message);
    }
}

#[test]
fn a_run_records_the_gap_policies_in_its_summary() {
    let dir = scratch("gap-summary");
    let out = dir.join("run");
    let options = RunOptions {
        input: inputs(&[fixture("trace_0187.json")]),
        policy: PolicyOptions {
            gap_scale: Some("0.25".parse().unwrap()),
            spawn_time: t("zero"),
            ..fast()
        },
        out: Some(out.clone()),
        ..RunOptions::default()
    };
    arbor::run::run(&options, &arbor::Quiet).unwrap();
    let summary = read(&out.join("summary.json"));
    let policy = &summary["config"]["policy"];
    assert_eq!(policy["gap_scale"], 0.25, "{policy}");
    assert_eq!(policy["spawn_time"], "zero", "{policy}");
    assert_eq!(policy["other_time"], "recorded", "{policy}");
}

/// Capped idle gaps make `idle_skipped` negative; the shares are of the
/// path as replayed, so the other classes' add up to 100 % and none is
/// above it, and the caps' cut is its own share (issue 28, item 2: a plan
/// page showed 345.8 % and -362.8 %).
#[test]
fn shares_are_of_the_replayed_path_and_the_caps_cut_is_its_own() {
    let capped = plan(
        PolicyOptions {
            idle_gap_cap: Some(5_000_000_000),
            ..PolicyOptions::default()
        },
        None,
    );
    let b = &capped["time_breakdown"];
    let classes = b["classes"].as_array().unwrap();
    let share = |c: &Value| c["share"].as_f64().unwrap();
    let skipped = classes
        .iter()
        .find(|c| c["class"] == "idle_skipped")
        .unwrap();
    assert!(skipped["ns"].as_i64().unwrap() < 0, "{b:#}");
    let rest: Vec<&Value> = classes
        .iter()
        .filter(|c| c["class"] != "idle_skipped")
        .collect();
    let sum: f64 = rest.iter().map(|c| share(c)).sum();
    assert!((sum - 1.0).abs() < 1e-9, "{sum} {b:#}");
    assert!(
        rest.iter().all(|c| (0.0..=1.0).contains(&share(c))),
        "{b:#}"
    );
    assert!((-1.0..0.0).contains(&share(skipped)), "{b:#}");
    let replayed = b["replayed_ns"].as_i64().unwrap();
    assert_eq!(
        replayed + skipped["ns"].as_i64().unwrap(),
        b["makespan_ns"].as_i64().unwrap()
    );
}
