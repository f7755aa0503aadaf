//! `arbor calibrate --probe` in process (`arbor::calibrate_probe`): the
//! designed experiment against the built-in emulator serving a known
//! profile (`testdata/calibrate/probe-known.toml`: every coefficient
//! nonzero, milliseconds a step, so a loaded machine's scheduling jitter
//! stays small beside them) recovers every coefficient within 5 % and
//! the knee exactly. The overhead is compared with the profile's plus
//! the emulator's lateness, measured on the probe's own short lone
//! requests (their end stamped later than the profile's plan of it, the
//! median): no client record tells the two apart (docs/capacity.md,
//! "Against the real-time emulator").

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use arbor::calibrate_probe::{self, ProbeOptions};
use arbor::options::RunOptions;
use arbor::sim::calibrate::probe::DECODE_TOKENS;
use arbor::sim::calibrate::GivenLimits;
use arbor::sim::server::{StepCoefficients, StepFeatures};
use arbor::sim::Profile;

use crate::util::{scratch, Kept};

fn known_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/calibrate/probe-known.toml")
}

/// The profile's plan of a lone request's whole time: its overhead, its
/// uncached prompt in chunks of the budget, then `osl − 1` decode steps.
fn planned_e2e(p: &Profile, isl: u32, cached: u32, osl: u32) -> f64 {
    let s: &StepCoefficients = &p.step;
    let budget = p.engine.max_num_batched_tokens;
    let mut total = (p.overhead.arrival_ns + p.overhead.departure_ns) as f64;
    let (mut before, mut left) = (cached, isl.saturating_sub(cached).max(1));
    while left > 0 {
        let chunk = left.min(budget);
        total += s.step_ns(&StepFeatures {
            seqs: 1,
            tokens: chunk,
            decode_context_tokens: 0,
            prefill_attention: f64::from(chunk) * (f64::from(before) + f64::from(chunk) / 2.0),
        }) as f64;
        before += chunk;
        left -= chunk;
    }
    for k in 1..osl {
        total += s.step_ns(&StepFeatures {
            seqs: 1,
            tokens: 1,
            decode_context_tokens: u64::from(isl + k),
            prefill_attention: 0.0,
        }) as f64;
    }
    total
}

/// The median of each short lone request's end less the profile's plan
/// of it. Short: a prompt of at most a quarter of the budget. The
/// lateness grows a little with the prompt (0.3 ms at 16 tokens, 0.55 ms
/// at 2600, on this machine), so only what a request of no prompt would
/// see, the lateness of the shortest, is the fit's overhead; the rest
/// goes with the per-token costs.
fn lateness_ns(known: &Profile, lone: &Path) -> f64 {
    let short = known.engine.max_num_batched_tokens / 4;
    let text = std::fs::read_to_string(lone.join("records.jsonl")).expect("lone records");
    let mut late: Vec<f64> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a record"))
        .filter(|r| r["status"] == "ok")
        .filter(|r| r["input_tokens"].as_u64().unwrap_or(0) <= u64::from(short))
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap_or(0) as u32;
            let e2e = (r["done_s"].as_f64().unwrap() - r["sent_s"].as_f64().unwrap()) * 1e9;
            e2e - planned_e2e(
                known,
                n("input_tokens"),
                n("cached_tokens"),
                n("output_tokens"),
            )
        })
        .collect();
    late.sort_by(f64::total_cmp);
    late[late.len() / 2]
}

#[test]
fn the_probe_recovers_every_coefficient_of_a_known_profile() {
    let known = Profile::from_toml_path(&known_path()).expect("the known profile");
    let dir = scratch("calibrate-probe");
    let mut run = RunOptions::default();
    run.emulator.profile = Some(known_path());
    let e = &known.engine;
    let options = ProbeOptions {
        run,
        limits: GivenLimits {
            max_num_seqs: Some(e.max_num_seqs),
            max_num_batched_tokens: Some(e.max_num_batched_tokens),
            block_size: Some(e.block_size),
            num_gpu_blocks: Some(e.num_gpu_blocks),
        },
        max_context: None,
        decode_tokens: DECODE_TOKENS,
        repeat: 2,
        out: dir.join("probe"),
        correction: false,
        resamples: 40,
        fitted_at: SystemTime::UNIX_EPOCH,
    };
    let kept = Kept::default();
    let probed = calibrate_probe::probe(&options, &kept).expect("the probe runs and fits");
    let names: Vec<&str> = probed.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.first(), Some(&"lone"));
    assert_eq!(names.last(), Some(&"mixed"));
    assert!(names.contains(&"decode-8-long"), "{names:?}");
    let lateness = lateness_ns(&known, &dir.join("probe/lone"));
    let (k, f) = (&known.step, &probed.calibration.profile.step);
    let overhead = |p: &Profile| (p.overhead.arrival_ns + p.overhead.departure_ns) as f64;
    let coefficients = [
        ("constant_ns", k.constant_ns, f.constant_ns),
        ("per_seq_ns", k.per_seq_ns, f.per_seq_ns),
        ("per_token_ns", k.per_token_ns, f.per_token_ns),
        (
            "per_token_above_knee_ns",
            k.per_token_above_knee_ns,
            f.per_token_above_knee_ns,
        ),
        (
            "per_decode_context_token_ns",
            k.per_decode_context_token_ns,
            f.per_decode_context_token_ns,
        ),
        (
            "per_prefill_attention_ns",
            k.per_prefill_attention_ns,
            f.per_prefill_attention_ns,
        ),
        (
            "overhead + lateness",
            overhead(&known) + lateness,
            overhead(&probed.calibration.profile),
        ),
    ];
    let mut table = format!(
        "probe: {:.1} s; lateness {:.0} us\n",
        probed.wall_s,
        lateness / 1e3
    );
    for (name, want, got) in coefficients {
        table.push_str(&format!(
            "| {name} | {want} | {got:.1} | {:+.1} % |\n",
            (got - want) / want * 100.0
        ));
    }
    eprintln!("{table}");
    assert_eq!(f.knee_tokens, k.knee_tokens, "{table}");
    for (name, want, got) in coefficients {
        assert!(
            ((got - want) / want).abs() <= 0.05,
            "{name}: fitted {got}, known {want}\n{table}"
        );
    }
    // Every coefficient's interval is drawn and none is called not
    // identified.
    let c = &probed.calibration;
    assert_eq!(c.spreads.len(), 8);
    assert!(c.spreads.iter().all(|s| s.identified()), "{:?}", c.spreads);
    assert!(
        c.profile
            .uncertainty
            .as_ref()
            .is_some_and(|u| u.draws.len() == 40),
        "the profile carries its draws"
    );
    assert!(kept
        .notices()
        .iter()
        .any(|n| n.contains("phase decode-1-short")));
}
