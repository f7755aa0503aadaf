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
