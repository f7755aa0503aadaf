//! The facade's compiled examples, run in-process on the repository's
//! fixtures.

#[path = "../../examples/plan_server.rs"]
#[allow(dead_code)]
mod plan_server;

use std::path::Path;

fn fixture(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
        .display()
        .to_string()
}

#[test]
fn plan_server_predicts_the_samples_latencies_under_a_fitted_profile() {
    let profile = fixture("testdata/calibrate/two-sessions.fitted.toml");
    let server = plan_server::predict(&profile, Vec::new()).unwrap();
    // The bundled sample: 91 requests, every one predicted.
    assert_eq!(server.ttft.count, 91);
    assert_eq!(server.turns.len(), 91);
    assert!(server.ttft.p50 > 0 && server.ttft.p50 <= server.ttft.p99);
    assert!(server.e2e.p50 >= server.ttft.p50);
    assert!(server.prefix_hit_tokens <= server.prompt_tokens);
    let lines = plan_server::lines(&server);
    assert!(
        lines[0].starts_with("profile: fitted here by arbor calibrate"),
        "{lines:?}"
    );
    assert_eq!(lines[1], "requests: 91");
}

#[test]
fn plan_server_refuses_a_missing_profile_as_bad_input() {
    let e = plan_server::predict("no/such/profile.toml", Vec::new()).unwrap_err();
    assert!(e.is_input(), "{e:?}");
    assert!(e.message.contains("no/such/profile.toml"), "{}", e.message);
}
