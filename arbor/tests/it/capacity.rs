//! `arbor::capacity::capacity` live, in-process: probes that are runs of
//! one compiled workload against the built-in emulator.

use arbor::capacity::CapacityOptions;
use arbor::engine::policy::Arrival;
use arbor::engine::time::NANOS_PER_MS;
use arbor::options::{InputOptions, PolicyOptions, RunOptions};

use crate::util::{identical_trees, read, scratch, Kept};

/// A live search against the built-in emulator at 50 ms TTFT and 5 ms
/// ITL (about 95 ms a request) with at most 2 requests in flight, under
/// `job_p99<=340ms`: one or two sessions never wait (jobs of about 290
/// ms), three or more do (a job waits a whole request, about 385 ms). The
/// 50 ms either side of the bound is what a loaded machine may add to a
/// job of three requests without changing the verdict. Every probe
/// measures the whole workload, 12 requests: that is the minimum asked
/// (below the default's 20).
fn live_search(
    name: &str,
    search: &str,
    service: Option<&str>,
) -> (CapacityOptions, std::path::PathBuf) {
    let dir = scratch(name);
    let trees = identical_trees(&dir, 4);
    let out = dir.join("out");
    let options = CapacityOptions {
        slo: "job_p99<=340ms".into(),
        search: Some(search.into()),
        live: true,
        min_requests: Some(12),
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

#[test]
fn a_live_search_against_the_emulator() {
    let (mut options, out) = live_search("capacity-live", "sessions:1..4", None);
    // Not the emulator's exact id: the pre-flight says which it asks for.
    options.run.request.model = Some("emulator".into());
    let kept = Kept::default();
    let found = arbor::capacity::capacity(&options, &kept).unwrap();
    assert_eq!(found.answer.passing, Some(2.0), "{:?}", kept.notices());
    assert_eq!(found.answer.failing, Some(3.0));
    let report = read(&out.join("capacity.json"));
    assert_eq!(report["mode"], "live");
    let probes = report["probes"].as_array().expect("probes");
    assert_eq!(probes.len(), 4);
    for p in probes {
        // A real run directory per probe.
        let probe = out.join(p["dir"].as_str().unwrap());
        assert!(probe.join("summary.json").is_file(), "{}", probe.display());
        assert!(probe.join("records.jsonl").is_file());
    }
    // Each probe is a run (its table hook called), of the workload
    // loaded once: the planned-duration notice comes once a probe, the
    // probe lines once each.
    assert_eq!(*kept.finished.lock().unwrap(), 4);
    let probe_lines = kept
        .notices()
        .iter()
        .filter(|l| l.starts_with("arbor capacity: probe "))
        .count();
    assert_eq!(probe_lines, 4);
    // The pre-flight is asked once, by the first probe, not per probe.
    let preflights = kept
        .notices()
        .iter()
        .filter(|l| l.contains("asking for arbor-emulator"))
        .count();
    assert_eq!(preflights, 1, "{:?}", kept.notices());
    for p in probes {
        assert_eq!(p["measured"], 12, "{p}");
        assert_eq!(p["too_small"], false, "{p}");
    }
    assert!(report["stopped"].is_null(), "{report}");
}

#[test]
fn a_live_search_bisects_around_the_prediction() {
    let (mut options, out) = live_search("capacity-predicted", "sessions:1..8", Some("fixed:50:5"));
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
    assert_eq!(loads, [1.0, 3.0, 2.0]);
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
