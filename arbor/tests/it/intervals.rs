//! Intervals on the server model's predictions in-process
//! ([`arbor::PlanOptions::intervals`]): they hold the central values,
//! widen with the draws' spread, are the sample's share alone when the
//! draws do not differ (and say the fit's share is unknown without
//! draws), and the same seed gives the same intervals.

use std::path::{Path, PathBuf};

use arbor::options::{IntervalOptions, PlanOptions};
use arbor::sim::server::profile::{Draw, Uncertainty};
use arbor::sim::server::Profile;
use serde_json::Value;

use crate::util::*;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// The example profile with draws scaled by `factors`, written in `dir`.
fn with_draws(dir: &Path, name: &str, factors: &[f64]) -> PathBuf {
    let mut profile = Profile::from_toml_path(&repo("profiles/example.toml")).unwrap();
    let draws = factors
        .iter()
        .map(|&f| {
            let mut step = profile.step.clone();
            for c in [
                &mut step.constant_ns,
                &mut step.per_seq_ns,
                &mut step.per_token_ns,
                &mut step.per_token_above_knee_ns,
                &mut step.per_decode_context_token_ns,
                &mut step.per_prefill_attention_ns,
            ] {
                *c *= f;
            }
            Draw {
                step,
                overhead: profile.overhead,
            }
        })
        .collect();
    profile.uncertainty = Some(Uncertainty {
        method: format!("scaled by {factors:?}"),
        draws,
    });
    let path = dir.join(name);
    std::fs::write(&path, profile.to_toml()).unwrap();
    path
}

/// The plan of 20 synthetic trees under `profile`, its `server` object.
fn server(profile: &Path, intervals: IntervalOptions, seed: u64) -> Value {
    let mut policy = fast();
    policy.seed = Some(seed);
    let plan = plan_json(&PlanOptions {
        input: arbor::InputOptions {
            synthetic: Some("trees=20,turns=4".into()),
            ..arbor::InputOptions::default()
        },
        policy,
        service: Some(format!("server:{}", profile.display()).parse().unwrap()),
        intervals,
        ..PlanOptions::default()
    });
    plan["server"].clone()
}

fn at_90() -> IntervalOptions {
    IntervalOptions::default()
}

/// `(lo, central, hi)` of every interval: the four distributions' p50,
/// p90 and p99.
fn triples(server: &Value) -> Vec<(String, f64, f64, f64)> {
    let mut out = Vec::new();
    for figure in ["ttft", "itl", "e2e", "job"] {
        for rank in ["p50", "p90", "p99"] {
            let i = &server["intervals"][figure][rank];
            out.push((
                format!("{figure} {rank}"),
                i["lo_s"].as_f64().unwrap(),
                server[figure][format!("{rank}_s")].as_f64().unwrap(),
                i["hi_s"].as_f64().unwrap(),
            ));
        }
    }
    out
}

fn width(server: &Value, figure: &str, rank: &str) -> f64 {
    let i = &server["intervals"][figure][rank];
    i["hi_s"].as_f64().unwrap() - i["lo_s"].as_f64().unwrap()
}

#[test]
fn every_predicted_percentile_has_an_interval_holding_it() {
    let s = server(&repo("testdata/profiles/example-draws.toml"), at_90(), 1);
    let intervals = &s["intervals"];
    assert_eq!(intervals["level"], 0.9);
    assert_eq!(intervals["draws"], 21);
    assert_eq!(intervals["fit_known"], true);
    for (name, lo, central, hi) in triples(&s) {
        assert!(
            lo <= central && central <= hi,
            "{name}: {lo} {central} {hi}"
        );
    }
    assert!(width(&s, "ttft", "p50") > 0.0);
    let p50 = &intervals["e2e"]["p50"];
    assert_eq!(p50["method"], "draws x resamples");
    assert!(p50["fit"]["lo_s"].as_f64() < p50["fit"]["hi_s"].as_f64());
    let makespan = &intervals["makespan"];
    assert!(makespan["lo_s"].as_f64() <= makespan["hi_s"].as_f64());
}

#[test]
fn a_wider_spread_of_draws_gives_wider_intervals() {
    let dir = scratch("intervals-spread");
    let narrow = with_draws(&dir, "narrow.toml", &[0.98, 0.99, 1.0, 1.01, 1.02]);
    let wide = with_draws(&dir, "wide.toml", &[0.6, 0.8, 1.0, 1.2, 1.4]);
    let (narrow, wide) = (server(&narrow, at_90(), 1), server(&wide, at_90(), 1));
    for (figure, rank) in [("ttft", "p50"), ("e2e", "p50"), ("e2e", "p90")] {
        assert!(
            width(&wide, figure, rank) > width(&narrow, figure, rank),
            "{figure} {rank}: {} vs {}",
            width(&wide, figure, rank),
            width(&narrow, figure, rank)
        );
    }
}

#[test]
fn draws_without_spread_give_the_sample_share_alone_and_no_draws_say_so() {
    let dir = scratch("intervals-zero");
    let same = with_draws(&dir, "same.toml", &[1.0, 1.0, 1.0]);
    let with = server(&same, at_90(), 1);
    let without = server(&repo("profiles/example.toml"), at_90(), 1);
    assert_eq!(triples(&with), triples(&without));
    let (w, wo) = (&with["intervals"], &without["intervals"]);
    assert_eq!(w["fit_known"], true);
    assert_eq!(
        w["ttft"]["p90"]["fit"]["lo_s"],
        w["ttft"]["p90"]["fit"]["hi_s"]
    );
    // Without draws: the fit's share is unknown, not zero.
    assert_eq!(wo["fit_known"], false);
    assert_eq!(wo["draws"], 0);
    assert_eq!(wo["ttft"]["p50"]["fit"], Value::Null);
    assert_eq!(wo["makespan"], Value::Null);
    assert_eq!(wo["ttft"]["p50"]["method"], "resamples (fit unknown)");
    assert!(wo["method"].as_str().unwrap().contains("unknown"));
}

#[test]
fn the_same_seed_gives_the_same_intervals_and_off_gives_none() {
    let draws = repo("testdata/profiles/example-draws.toml");
    let a = server(&draws, at_90(), 3);
    assert_eq!(a["intervals"], server(&draws, at_90(), 3)["intervals"]);
    let few = server(
        &draws,
        IntervalOptions {
            draws: Some(4),
            ..at_90()
        },
        3,
    );
    assert_eq!(few["intervals"]["draws"], 4);
    assert_eq!(few["intervals"]["draws_in_profile"], 21);
    let wider = server(
        &draws,
        IntervalOptions {
            level: Some(0.99),
            ..at_90()
        },
        3,
    );
    assert!(width(&wider, "e2e", "p50") >= width(&a, "e2e", "p50"));
    let off = server(
        &draws,
        IntervalOptions {
            level: None,
            ..at_90()
        },
        3,
    );
    assert_eq!(off.get("intervals"), None);
    assert_eq!(off["ttft"], a["ttft"], "the central plan is the same");
}

#[test]
fn interval_levels_parse_from_percent_or_off() {
    assert_eq!(IntervalOptions::parse_level("off"), Ok(None));
    assert_eq!(IntervalOptions::parse_level("90"), Ok(Some(0.9)));
    assert_eq!(IntervalOptions::parse_level("95%"), Ok(Some(0.95)));
    for bad in ["0.9", "100", "ninety", ""] {
        let e = IntervalOptions::parse_level(bad).unwrap_err();
        assert!(e.contains("50 to 99.9"), "{e}");
    }
}
