//! Where the time goes (issue 11, item 8): the plan's breakdown of the
//! makespan into classes, the flag that scales each, and `--gap-scale`
//! with the per-class gap flags.

use serde_json::Value;

use crate::util::*;

/// The three Weka fixtures with subagents (the fourth is one long tool
/// gap).
const WEKA: [&str; 3] = ["trace_0187.json", "trace_0277.json", "trace_0291.json"];

/// `plan --json` of the Weka fixtures with `flags`.
fn plan(flags: &[&str]) -> Value {
    let paths: Vec<String> = WEKA
        .iter()
        .map(|n| fixture(n).to_str().expect("UTF-8 path").to_string())
        .collect();
    let mut args = vec!["plan", "--json"];
    args.extend_from_slice(flags);
    args.extend(paths.iter().map(String::as_str));
    let out = arbor(&args);
    assert!(out.status.success(), "{flags:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("plan --json is JSON")
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
    let recorded = plan(&[]);
    let r = classes(&recorded);
    assert!(get(&r, "tool") > 0 && get(&r, "think") > 0, "{r:?}");

    let no_gaps = plan(&[
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--gap-scale",
        "0",
    ]);
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
    // --gap-scale 0 alone reaches the same plan.
    let scaled = plan(&["--gap-scale", "0"]);
    assert_eq!(scaled["makespan_s"], no_gaps["makespan_s"]);
    // With a zero-time server nothing at all is left.
    let instant = plan(&["--gap-scale", "0", "--service", "fixed:0:0"]);
    assert_eq!(instant["time_breakdown"]["makespan_ns"], 0);
}

#[test]
fn every_gap_flag_shrinks_its_class_and_is_recorded_in_the_policy() {
    let recorded = classes(&plan(&[]));
    let half = plan(&["--gap-scale", "0.5"]);
    let h = classes(&half);
    assert_eq!(half["policy"]["gap_scale"], 0.5);
    for class in ["tool", "think", "spawn", "join"] {
        let (full, halved) = (get(&recorded, class), get(&h, class));
        assert!(halved < full, "{class}: {halved} of {full}");
    }
    let joined = plan(&[
        "--join-time",
        "zero",
        "--spawn-time",
        "pct:50",
        "--other-time",
        "max:5",
    ]);
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
fn the_human_plan_says_where_the_time_goes() {
    let out = arbor(&[
        "plan",
        "--tool-time",
        "zero",
        fixture("trace_0291.json").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("where the time goes"), "{text}");
    let think = text
        .lines()
        .find(|l| l.trim_start().starts_with("think"))
        .unwrap_or_else(|| panic!("no think row:\n{text}"));
    assert!(think.contains("--think-time-pct, --gap-scale"), "{think}");
    assert!(think.contains('%'), "{think}");
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("tool ")),
        "tool gaps are zero, so no tool row:\n{text}"
    );
}

#[test]
fn bad_gap_flags_exit_2_naming_the_flag() {
    for bad in ["-1", "x", "nan", "inf"] {
        let arg = format!("--gap-scale={bad}");
        expect_exit_2(&["plan", &arg], &["--gap-scale", "factor"]);
    }
    for flag in ["--other-time", "--spawn-time", "--join-time"] {
        expect_exit_2(&["plan", flag, "bogus"], &[flag, "recorded, zero"]);
    }
}

#[test]
fn the_agentx_recipe_refuses_gap_flags() {
    let weka = fixture("").to_str().unwrap().to_string();
    expect_exit_2(
        &[
            "plan",
            "--scenario",
            "agentx-mvp",
            "--sessions",
            "2",
            "--gap-scale",
            "0.5",
            "--join-time",
            "zero",
            &weka,
        ],
        &["--gap-scale 0.5", "--join-time zero", "--unsafe-override"],
    );
}

#[test]
fn a_run_records_the_gap_policies_in_its_summary() {
    let dir = scratch("gap-summary");
    let out_dir = dir.join("run");
    run_into(
        &out_dir,
        &[
            &FAST[..],
            &[
                "--gap-scale",
                "0.25",
                "--spawn-time",
                "zero",
                fixture("trace_0187.json").to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    let policy = &summary["config"]["policy"];
    assert_eq!(policy["gap_scale"], 0.25, "{policy}");
    assert_eq!(policy["spawn_time"], "zero", "{policy}");
    assert_eq!(policy["other_time"], "recorded", "{policy}");
}
