//! `arbor::capacity::capacity` live, in-process: probes that are runs of
//! one compiled workload against the built-in emulator.

use arbor::capacity::CapacityOptions;
use arbor::capacity_search::{AnswerKind, Reading};
use arbor::engine::policy::Arrival;
use arbor::engine::time::NANOS_PER_MS;
use arbor::options::{InputOptions, PolicyOptions, RunOptions};

use crate::util::{identical_trees, read, scratch, Kept};

/// A live search against the built-in emulator at 50 ms TTFT and 5 ms
/// ITL (about 95 ms a request) with at most 2 requests in flight, under
/// `job_p50<=400ms`, searched at a step of 2 sessions: two sessions never
/// wait (jobs of about 300 ms), four always do (about 500 ms): the knee is
/// between 2 and 4. (Three sessions wait a request or two in a mix that
/// changes from run to run, jobs of 300, 400 or 500 ms: a bound there is
/// honestly unresolved, so the step skips it.) The 100 ms either side of
/// the bound is what a loaded machine may add to a job of three requests
/// without changing the verdict. Every probe
/// measures the whole workload, 12 trees of 3 requests (36, over the
/// default minimum of 20); each probe is judged on the 95 % interval of
/// the median of its 12 jobs (the 3rd to the 10th), extended when that
/// interval straddles the bound.
fn live_search(
    name: &str,
    search: &str,
    service: Option<&str>,
) -> (CapacityOptions, std::path::PathBuf) {
    let dir = scratch(name);
    let trees = identical_trees(&dir, 12);
    let out = dir.join("out");
    let options = CapacityOptions {
        slo: "job_p50<=400ms".into(),
        search: Some(search.into()),
        step: Some("2".into()),
        live: true,
        run: RunOptions {
            input: InputOptions {
                inputs: vec![trees],
                ..InputOptions::default()
            },
            policy: PolicyOptions {
                max_inflight: Some(2),
                arrival: Some(Arrival::Immediate),
                duration: Some(20_000 * NANOS_PER_MS),
                ..PolicyOptions::default()
            },
            service: service.map(|s| s.parse().unwrap()),
            emulator: crate::util::emulator(50 * NANOS_PER_MS, 5 * NANOS_PER_MS),
            out: Some(out.clone()),
            ..RunOptions::default()
        },
        ..CapacityOptions::default()
    };
    (options, out)
}

/// With enough requests a live search brackets the known knee: 2
/// sessions pass on the whole interval, 4 fail on it, and the
/// confirmation run at 2 passes again.
#[test]
fn a_live_search_against_the_emulator_brackets_the_known_knee() {
    let (mut options, out) = live_search("capacity-live", "sessions:2..8", None);
    // Not the emulator's exact id: the pre-flight says which it asks for.
    options.run.request.model = Some("emulator".into());
    let kept = Kept::default();
    let found = arbor::capacity::capacity(&options, &kept).unwrap();
    assert_eq!(found.answer.passing, Some(2.0), "{:?}", kept.notices());
    let c = &found.conclusion;
    assert_eq!(c.kind, AnswerKind::Point, "{:?}", kept.notices());
    assert_eq!((c.passing, c.failing), (Some(2.0), Some(4.0)));
    let confirmation = c.confirmation.expect("a confirmation run");
    assert!(confirmation.held, "{:?}", kept.notices());
    assert_eq!(confirmation.load, 2.0);
    let passing = c.passing_by.as_ref().expect("the passing reading");
    assert_eq!(passing.probe, confirmation.probe);
    assert_eq!(passing.measured, 36);
    let interval = passing.bounds[0].confidence.expect("an interval");
    assert_eq!((interval.ranks, interval.of), ([3, 10], 12));
    assert!(matches!(interval.hi, Some(Reading::Value(v)) if v <= 400 * NANOS_PER_MS));
    let failing = c.failing_by.as_ref().expect("the failing reading");
    let interval = failing.bounds[0].confidence.expect("an interval");
    assert!(matches!(interval.lo, Some(Reading::Value(v)) if v > 400 * NANOS_PER_MS));
    let report = read(&out.join("capacity.json"));
    assert_eq!(report["mode"], "live");
    assert_eq!(report["answer"]["kind"], "point");
    assert_eq!(report["answer"]["confirmation"]["held"], true);
    let probes = report["probes"].as_array().expect("probes");
    // 2, 4, and the confirmation at 2.
    assert_eq!(probes.len(), 3);
    assert_eq!(probes[2]["confirmation"], true);
    assert_eq!(probes[2]["load"], 2.0);
    let mut runs = 0;
    for p in probes {
        // A real run directory per probe, and per extension.
        let probe = out.join(p["dir"].as_str().unwrap());
        assert!(probe.join("summary.json").is_file(), "{}", probe.display());
        assert!(probe.join("records.jsonl").is_file());
        let extensions = p["extensions"].as_array().expect("extensions");
        for e in extensions {
            assert!(out
                .join(e.as_str().unwrap())
                .join("records.jsonl")
                .is_file());
        }
        runs += 1 + extensions.len() as u32;
    }
    // Each probe and extension is a run (its table hook called), of the
    // workload loaded once.
    assert_eq!(*kept.finished.lock().unwrap(), runs);
    let probe_lines = kept
        .notices()
        .iter()
        .filter(|l| l.starts_with("arbor capacity: probe ") && !l.contains("unresolved"))
        .count();
    assert_eq!(probe_lines, 3);
    // The pre-flight is asked once, by the first probe, not per probe.
    let preflights = kept
        .notices()
        .iter()
        .filter(|l| l.contains("asking for arbor-emulator"))
        .count();
    assert_eq!(preflights, 1, "{:?}", kept.notices());
    for p in probes {
        let runs = 1 + p["extensions"].as_array().expect("extensions").len() as u64;
        assert_eq!(p["measured"], 36 * runs, "{p}");
        assert_eq!(p["too_small"], false, "{p}");
        assert_ne!(p["decision"], "unresolved", "{p}");
    }
    assert!(report["stopped"].is_null(), "{report}");
}

#[test]
fn a_live_search_bisects_around_the_prediction() {
    let (mut options, out) = live_search("capacity-predicted", "sessions:2..8", Some("fixed:50:5"));
    options.run.request.cache_bust = true;
    options.run.request.cache_bust_salt = 10;
    let kept = Kept::default();
    let found = arbor::capacity::capacity(&options, &kept).unwrap();
    assert!(
        kept.notices().iter().any(|l| l.contains(
            "predicted on the virtual clock (fixed:50:5): largest load meeting every SLO: sessions=2"
        )),
        "{:?}",
        kept.notices()
    );
    assert_eq!(found.answer.passing, Some(2.0));
    let report = read(&out.join("capacity.json"));
    assert_eq!(report["predicted"]["passing"], 2.0);
    let loads: Vec<f64> = report["probes"]
        .as_array()
        .expect("probes")
        .iter()
        .map(|p| p["load"].as_f64().unwrap())
        .collect();
    // Around the prediction (2 - 2 is below the range: 2 itself, then
    // 2 + 2), then the confirmation at 2.
    assert_eq!(loads, [2.0, 4.0, 2.0]);
    // Each probe salts its cache-bust markers with its number, so no probe
    // hits the prompts an earlier one left in the server's prefix cache.
    for p in report["probes"].as_array().expect("probes") {
        let run = read(&out.join(p["dir"].as_str().expect("dir")).join("run.json"));
        let k = p["probe"].as_u64().expect("probe number");
        assert_eq!(run["config"]["cache_bust_salt"], 10 + k, "{p}");
    }
    let predicted = read(&out.join("predicted").join("capacity.json"));
    assert_eq!(predicted["mode"], "virtual");
}
