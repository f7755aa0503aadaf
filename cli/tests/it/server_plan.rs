//! `arbor plan --service server:PROFILE.toml` at the process: the
//! console's lines of the server model's predictions, and a bad profile's
//! exit 2, a profile with timing flags refused. The predictions themselves, the timeline and a run under a
//! profile are in-process (`arbor/tests/it/server_plan.rs`).

use std::path::{Path, PathBuf};

use crate::util::*;

fn profile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../profiles")
        .join(name)
}

#[test]
fn the_console_shows_the_server_models_percentiles() {
    let service = format!(
        "server:{}",
        profile("roofline-h100-sxm-llama-3.1-8b-bf16.toml").display()
    );
    let trace = fixture("trace_0277.json");
    let out = arbor(&["plan", trace.to_str().unwrap(), "--service", &service]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("server model    roofline: H100 SXM"),
        "{text}"
    );
    assert!(text.contains("    ttft          p50 "), "{text}");
}

#[test]
fn a_missing_profile_exits_2_naming_it() {
    let trace = fixture("trace_0187.json");
    expect_exit_2(
        &[
            "plan",
            trace.to_str().unwrap(),
            "--service",
            "server:/no/such.toml",
        ],
        &["/no/such.toml: cannot read"],
    );
}

/// `--profile` and the timing flags say different things: refused
/// together, at parse time.
#[test]
fn a_profile_with_timing_flags_exits_2() {
    let trace = fixture("trace_0187.json");
    let profile = profile("example.toml");
    let out = arbor(&[
        "run",
        trace.to_str().unwrap(),
        "--profile",
        profile.to_str().unwrap(),
        "--ttft-ms",
        "20",
        "--out",
        scratch("server-run-profile-conflict")
            .join("out")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
