//! `--isl-scale` and `--max-context` (engine `fit`): on the real Weka
//! fixture, in `plan`, `run` and `inspect`, and their bad values.

use serde_json::Value;

use crate::util::*;

fn weka_dir() -> String {
    fixture("trace_0187.json")
        .parent()
        .expect("the fixture directory")
        .display()
        .to_string()
}

fn plan_json(extra: &[&str]) -> Value {
    let dir = weka_dir();
    let mut args = vec!["plan", dir.as_str(), "--json"];
    args.extend_from_slice(extra);
    let out = arbor(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("one JSON object")
}

#[test]
fn max_context_caps_every_prompt_of_the_weka_fixture_and_the_plan_says_so() {
    let timeline = scratch("fit-timeline").join("timeline.jsonl");
    let plain = plan_json(&[]);
    assert!(plain.get("fit").is_none(), "no fit without the flags");
    let capped = plan_json(&[
        "--max-context",
        "8192",
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    let rows = jsonl(&timeline);
    assert_eq!(rows.len() as u64, capped["turns"].as_u64().unwrap());
    for row in &rows {
        assert!(row["isl"].as_u64().unwrap() <= 8192, "{row}");
    }
    let fit = &capped["fit"];
    assert_eq!(fit["max_context"], 8192);
    assert_eq!(fit["isl_scale"], Value::Null);
    assert!(fit["turns_capped"].as_u64().unwrap() > 0, "{fit}");
    assert!(fit["tokens_dropped"].as_u64().unwrap() > 0, "{fit}");
    assert!(fit["largest_prompt_before"].as_u64().unwrap() > 8192);
    assert_eq!(fit["largest_prompt_after"], 8192);
    // The tree, its turns and its times are kept: the same plays, turns
    // and makespan (the recorded service model).
    for key in ["trees", "agents", "turns", "makespan_s", "dispatched"] {
        assert_eq!(capped[key], plain[key], "{key}");
    }
    assert!(capped["demand"]["input_tokens"].as_u64() < plain["demand"]["input_tokens"].as_u64());

    let dir = weka_dir();
    let human = arbor(&["plan", &dir, "--max-context", "8192", "--isl-scale", "0.5"]);
    let text = stdout(&human);
    assert!(
        text.contains("prompts fitted (--isl-scale 0.5, --max-context 8192)"),
        "{text}"
    );
}

#[test]
fn isl_scale_scales_the_demand_and_keeps_the_tree() {
    let plain = plan_json(&[]);
    let half = plan_json(&["--isl-scale", "0.5"]);
    assert_eq!(half["fit"]["isl_scale"], 0.5);
    assert_eq!(half["fit"]["turns_capped"], 0);
    for key in ["trees", "agents", "turns", "makespan_s"] {
        assert_eq!(half[key], plain[key], "{key}");
    }
    let before = plain["demand"]["input_tokens"].as_f64().unwrap();
    let after = half["demand"]["input_tokens"].as_f64().unwrap();
    assert!((after / before - 0.5).abs() < 0.01, "{before} -> {after}");
}

#[test]
fn inspect_shows_the_fitted_prompts() {
    let dir = weka_dir();
    let out = arbor(&["inspect", &dir, "--max-context", "4096", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("prompts fitted (--max-context 4096)"));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let text = report.to_string();
    assert!(text.contains("4096"), "{text}");
}

#[test]
fn a_run_records_the_fit_in_its_summary() {
    let out = scratch("fit-run");
    let mut args = vec![
        "--synthetic",
        "trees=1,turns=3,depth=0,isl=3000,isl_growth=500,osl=4,seed=2",
        "--max-context",
        "2000",
    ];
    args.extend(FAST);
    let result = run_into(&out, &args);
    assert!(stderr(&result).contains("prompts fitted (--max-context 2000)"));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let fit = &summary["config"]["fit"];
    assert_eq!(fit["max_context"], 2000, "{summary:#}");
    assert_eq!(fit["turns_capped"], 3);
    for record in jsonl(&out.join("records.jsonl")) {
        assert_eq!(record["status"], "ok", "{record}");
    }
}

#[test]
fn bad_fit_values_exit_2_naming_the_flag() {
    for command in ["plan", "inspect", "run"] {
        let dir = weka_dir();
        for bad in ["0", "-1", "nan", "big"] {
            let flag = format!("--isl-scale={bad}");
            expect_exit_2(&[command, &dir, &flag], &["--isl-scale", "above 0"]);
        }
        for bad in ["0", "1.5", "-3"] {
            let flag = format!("--max-context={bad}");
            expect_exit_2(&[command, &dir, &flag], &["--max-context", "at least 1"]);
        }
    }
}
