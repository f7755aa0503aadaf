//! `arbor::plan::plan`: the bundled sample and a recipe, on the virtual
//! clock.

use arbor::options::{PlanOptions, PolicyOptions, ScenarioOptions};
use arbor::Quiet;

#[test]
fn the_bundled_sample_plans_its_91_turns() {
    let report = arbor::plan::plan(&PlanOptions::default(), &Quiet).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["turns"], 91, "{json:#}");
    assert_eq!(json["dispatched"], 91, "{json:#}");
}

#[test]
fn a_recipe_without_sessions_is_bad_input() {
    let options = PlanOptions {
        scenario: ScenarioOptions {
            scenario: Some("agentx-mvp".into()),
            ..ScenarioOptions::default()
        },
        ..PlanOptions::default()
    };
    let e = arbor::plan::plan(&options, &Quiet).unwrap_err();
    assert!(e.is_input(), "{e:?}");
    assert!(
        e.message.contains("--sessions N is required"),
        "{}",
        e.message
    );
}

#[test]
fn a_given_option_at_its_default_still_conflicts_with_nothing() {
    // `copies: Some(1)` equals the lock: not a conflict.
    let options = PlanOptions {
        policy: PolicyOptions {
            sessions: Some(2),
            copies: Some(1),
            seed: Some(7),
            ..PolicyOptions::default()
        },
        scenario: ScenarioOptions {
            scenario: Some("agentx-mvp".into()),
            ..ScenarioOptions::default()
        },
        ..PlanOptions::default()
    };
    let report = arbor::plan::plan(&options, &Quiet).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["seed"], 7, "{json:#}");
}

/// The recipe with `sessions` 2, seed 7, and `change` applied to the
/// options: each case below changes the workload's tokens or structure.
fn recipe_with(change: &dyn Fn(&mut PlanOptions), unsafe_override: bool) -> PlanOptions {
    let mut options = PlanOptions {
        policy: PolicyOptions {
            sessions: Some(2),
            seed: Some(7),
            ..PolicyOptions::default()
        },
        scenario: ScenarioOptions {
            scenario: Some("agentx-mvp".into()),
            unsafe_override,
            ..ScenarioOptions::default()
        },
        ..PlanOptions::default()
    };
    change(&mut options);
    options
}

type Change = (&'static str, fn(&mut PlanOptions));

/// Every flag that changes the workload's tokens or structure, as an
/// option set.
const WORKLOAD_CHANGES: [Change; 5] = [
    ("--max-context", |o| o.input.fit.max_context = Some(32_768)),
    ("--isl-scale", |o| o.input.fit.isl_scale = Some(0.5)),
    ("--gap-scale", |o| {
        o.policy.gap_scale = Some("0.5".parse().unwrap())
    }),
    ("--overlap-tolerance", |o| {
        o.input.overlap_tolerance = 5_000_000_000
    }),
    ("--think-time-pct", |o| {
        o.policy.think_time_pct = Some(arbor::engine::policy::GapTransform::Scale { ppm: 0 })
    }),
];

#[test]
fn the_recipe_refuses_each_flag_that_changes_the_workload() {
    for (flag, change) in WORKLOAD_CHANGES {
        let e = arbor::plan::plan(&recipe_with(&change, false), &Quiet).unwrap_err();
        assert!(e.is_input(), "{flag}: {e:?}");
        assert!(
            e.message.contains("1 flag conflicts") && e.message.contains(&format!("\n  {flag} ")),
            "{flag}: {}",
            e.message
        );
        assert!(e.message.contains("--unsafe-override"), "{}", e.message);
    }
}

#[test]
fn an_overridden_workload_change_is_planned_invalid_with_unsafe_override() {
    for (flag, change) in WORKLOAD_CHANGES {
        let report = arbor::plan::plan(&recipe_with(&change, true), &Quiet)
            .unwrap_or_else(|e| panic!("{flag}: {e:?}"));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["submission"],
            serde_json::json!({"valid_if_completed": false, "invalid_reasons": ["unsafe_override"]}),
            "{flag}"
        );
    }
    // The same recipe with nothing changed is valid: the reason above is
    // the flag's.
    let report = arbor::plan::plan(&recipe_with(&|_| {}, true), &Quiet).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["submission"]["valid_if_completed"], true, "{json:#}");
}

#[test]
fn an_isl_scale_of_one_changes_nothing_and_is_no_conflict() {
    let options = recipe_with(&|o| o.input.fit.isl_scale = Some(1.0), false);
    assert!(arbor::plan::plan(&options, &Quiet).is_ok());
}
