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

/// Each percentile with its interval in brackets, and how they were made;
/// `--intervals off` prints none; a bad level exits 2 naming the flag.
#[test]
fn the_console_shows_each_percentiles_interval() {
    let draws =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/profiles/example-draws.toml");
    let service = format!("server:{}", draws.display());
    let args = [
        "plan",
        "--synthetic",
        "trees=6,turns=3",
        "--service",
        &service,
    ];
    let out = arbor(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let ttft = text
        .lines()
        .find(|l| l.starts_with("    ttft          p50 "))
        .unwrap_or_else(|| panic!("{text}"));
    // `p50 0.041 s [0.038, 0.044], p90 ...`
    assert_eq!(ttft.matches(" s [").count(), 3, "{ttft}");
    assert!(
        text.contains("    intervals     90 %: fit over 21 draws x 1000 resamples"),
        "{text}"
    );
    assert!(
        stderr(&out).contains("planning again under 21 draws"),
        "{}",
        stderr(&out)
    );

    let off = arbor(&[&args[..], &["--intervals", "off"]].concat());
    assert!(off.status.success(), "{}", stderr(&off));
    assert!(!stdout(&off).contains(" s ["), "{}", stdout(&off));
    assert!(!stdout(&off).contains("    intervals "), "{}", stdout(&off));

    expect_exit_2(
        &[&args[..], &["--intervals", "0.9"]].concat(),
        &["--intervals", "50 to 99.9"],
    );
}

/// A profile without draws: the sample's share, and the console says the
/// fit's share is unknown.
#[test]
fn without_draws_the_console_says_the_fits_share_is_unknown() {
    let service = format!("server:{}", profile("example.toml").display());
    let out = arbor(&[
        "plan",
        "--synthetic",
        "trees=6,turns=3",
        "--service",
        &service,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("the fit's share is unknown (the profile has no uncertainty draws)"),
        "{}",
        stdout(&out)
    );
}
