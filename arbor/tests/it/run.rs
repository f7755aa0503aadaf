//! `arbor::run::run` in-process against the built-in emulator: the run
//! directory, the observer's hooks, and how a run's end is told (the
//! error's kind), with no binary spawned.

use arbor::options::{InputOptions, PolicyOptions, RunOptions};
use arbor::{Kind, Quiet};

use crate::util::{identical_trees, read, scratch, Kept};

/// Four trees of three turns, no gaps, against a fast emulator.
fn fast_run(name: &str) -> (RunOptions, std::path::PathBuf) {
    let dir = scratch(name);
    let trees = identical_trees(&dir, 4);
    let out = dir.join("out");
    let options = RunOptions {
        input: InputOptions {
            inputs: vec![trees],
            ..InputOptions::default()
        },
        policy: PolicyOptions {
            tool_time: Some(arbor::engine::policy::GapTransform::Zero),
            ..PolicyOptions::default()
        },
        emulator: crate::util::emulator(1_000_000, 100_000),
        out: Some(out.clone()),
        ..RunOptions::default()
    };
    (options, out)
}

#[test]
fn a_run_writes_its_directory_and_tells_the_observer() {
    let (options, out) = fast_run("run-in-process");
    let kept = Kept::default();
    arbor::run::run(&options, &kept).unwrap();
    let summary = read(&out.join("summary.json"));
    assert_eq!(summary["counts"]["ok"], 12, "{summary:#}");
    assert_eq!(summary["complete"], true);
    for file in [
        "run.json",
        "end.json",
        "records.jsonl",
        "trees.jsonl",
        "report.html",
    ] {
        assert!(out.join(file).is_file(), "{file}");
    }
    assert_eq!(*kept.finished.lock().unwrap(), 1);
    let outputs = kept.outputs();
    assert!(
        outputs.iter().any(|l| l.contains("report.html")),
        "the page's line goes to the observer's output: {outputs:?}"
    );
    assert!(
        kept.notices()
            .iter()
            .any(|l| l.starts_with("arbor run: about 1 s planned")),
        "{:?}",
        kept.notices()
    );
}

/// A run's summary says where its time went: its observed critical path in
/// classes that sum to its makespan, beside its plan's (issue 28, item 2).
#[test]
fn a_run_says_where_its_time_went_beside_its_plan() {
    let (options, out) = fast_run("run-time-breakdown");
    arbor::run::run(&options, &Kept::default()).unwrap();
    let summary = read(&out.join("summary.json"));
    let sum = |b: &serde_json::Value| -> (i64, i64) {
        let classes = b["classes"].as_array().expect("classes");
        let total = classes.iter().map(|c| c["ns"].as_i64().unwrap()).sum();
        let service = classes
            .iter()
            .find(|c| c["class"] == "service")
            .map(|c| c["ns"].as_i64().unwrap())
            .unwrap();
        (total, service)
    };
    let observed = &summary["time_breakdown"]["observed"];
    let planned = &summary["time_breakdown"]["planned"];
    let (total, service) = sum(observed);
    assert_eq!(
        total,
        observed["makespan_ns"].as_i64().unwrap(),
        "{observed:#}"
    );
    // Three turns of 1 ms TTFT and a few 0.1 ms tokens back to back: the
    // path is served, at least the three first tokens' time.
    assert!(service >= 3_000_000, "{observed:#}");
    assert!(observed["path_requests"].as_u64().unwrap() >= 3);
    let (total, _) = sum(planned);
    assert_eq!(
        total,
        planned["makespan_ns"].as_i64().unwrap(),
        "{planned:#}"
    );
}

/// `--slo`: the finished run is judged, the verdict written beside the
/// records and handed to the console; a miss is the run's exit, a pass
/// is none (issue 28, item 1).
#[test]
fn a_run_with_an_slo_is_judged_and_a_miss_is_its_exit() {
    let (mut options, out) = fast_run("run-slo-miss");
    // 24 requests: a verdict needs 20 that succeeded.
    options.policy.copies = Some(2);
    // A 1 ms TTFT cannot be under a tenth of it.
    options.slo = Some("ttft_p50<=0.1ms".to_string());
    let kept = Kept::default();
    let error = arbor::run::run(&options, &kept).unwrap_err();
    assert_eq!(error.kind, Kind::SloMissed, "{}", error.message);
    assert!(
        error.message.contains("missed ttft_p50"),
        "{}",
        error.message
    );
    let verdict = read(&out.join("slo.json"));
    assert_eq!(verdict["pass"], false);
    assert_eq!(verdict["bounds"][0]["metric"], "ttft_p50");
    assert_eq!(verdict["bounds"][0]["pass"], false);
    assert!(
        out.join("report.html").is_file(),
        "the page is written first"
    );

    let (mut options, out) = fast_run("run-slo-pass");
    options.policy.copies = Some(2);
    options.slo = Some("ttft_p99<=10s,job_p90<=60s".to_string());
    arbor::run::run(&options, &Kept::default()).unwrap();
    let verdict = read(&out.join("slo.json"));
    assert_eq!(verdict["pass"], true, "{verdict:#}");
    assert_eq!(verdict["job_goodput"], 1.0, "{verdict:#}");
}

#[test]
fn a_bad_slo_is_bad_input_before_anything_runs() {
    let (mut options, out) = fast_run("run-slo-bad");
    options.slo = Some("ttft_p99<2s".to_string());
    let error = arbor::run::run(&options, &Kept::default()).unwrap_err();
    assert_eq!(error.kind, Kind::Input);
    assert!(error.message.starts_with("--slo "), "{}", error.message);
    assert!(!out.exists());
}

#[test]
fn emulator_options_with_an_endpoint_are_bad_input() {
    let (mut options, _) = fast_run("run-emulator-options");
    options.request.endpoint = Some("http://127.0.0.1:9".into());
    let e = arbor::run::run(&options, &Quiet).unwrap_err();
    assert_eq!(e.kind, Kind::Input, "{e:?}");
    assert!(
        e.message
            .contains("--ttft-ms, --itl-ms are the built-in emulator's"),
        "{}",
        e.message
    );
}

#[test]
fn an_output_directory_in_use_is_refused_before_loading() {
    let (options, out) = fast_run("run-out-in-use");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "x").unwrap();
    let e = arbor::run::run(&options, &Quiet).unwrap_err();
    assert_eq!(e.kind, Kind::Input, "{e:?}");
}

#[test]
fn a_repeat_writes_each_run_and_the_aggregate() {
    let (mut options, out) = fast_run("run-repeat");
    options.repeat = Some(2);
    let kept = Kept::default();
    arbor::run::run(&options, &kept).unwrap();
    assert_eq!(*kept.finished.lock().unwrap(), 2);
    for k in [1, 2] {
        let run = read(&out.join(format!("run-{k}")).join("run.json"));
        assert_eq!(
            run["config"]["seed"],
            k - 1,
            "run {k} has seed SEED + k - 1"
        );
    }
    assert!(out.join("aggregate.json").is_file());
}

#[test]
fn a_run_none_of_whose_requests_succeeded_measured_nothing_and_says_what_failed() {
    let (mut options, out) = fast_run("run-all-failed");
    // Every request answered with the emulator's injected error, and no
    // circuit breaker (the test below has it).
    options.emulator.flags.fail_rate = Some(1.0);
    options.request.failures.abort_after = 0;
    let kept = Kept::default();
    let e = arbor::run::run(&options, &kept).expect_err("nothing was measured");
    assert_eq!(e.kind, Kind::FailedTooOften, "{e:?}");
    for words in [
        "none of the 12 measured requests succeeded",
        "the first: HTTP 5",
    ] {
        assert!(e.message.contains(words), "{words}: {}", e.message);
    }
    // The run's files are written all the same, a record per request.
    let summary = read(&out.join("summary.json"));
    assert_eq!(summary["counts"]["ok"], 0, "{summary:#}");
    assert_eq!(summary["counts"]["failed"], 12, "{summary:#}");
    let records = std::fs::read_to_string(out.join("records.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 12);
    // The summary leads with the failures in the server's own words.
    let first = summary["warnings"][0].as_str().unwrap_or_default();
    assert!(
        first.starts_with("12 of 12 measured requests failed: http_status 12 (the first: HTTP 500: injected server error"),
        "{summary:#}"
    );
    // The same run with one success in it is a measurement (exit 0) when
    // the error rate is allowed.
    options.emulator.flags.fail_rate = Some(0.5);
    options.request.failures.max_error_rate = 1.0;
    options.force = true;
    arbor::run::run(&options, &Quiet).expect("some succeeded");
}

#[test]
fn short_outputs_and_another_models_answers_are_warned_about_first() {
    // A server that stops every stream after 4 of the 10 planned tokens,
    // and answers under another model's name than the one asked for.
    let (mut options, out) = fast_run("run-short-outputs");
    options.emulator.flags.eos_after = Some(4);
    options.emulator.flags.answer_as = Some("router-other".into());
    arbor::run::run(&options, &Quiet).expect("a measurement, with warnings");
    let summary = read(&out.join("summary.json"));
    let tokens = &summary["tokens"];
    assert_eq!(tokens["short_outputs"], 12, "{summary:#}");
    assert_eq!(tokens["planned_output_tokens"], 120, "{summary:#}");
    assert_eq!(tokens["received_output_tokens"], 48, "{summary:#}");
    assert_eq!(
        summary["answered_models"]["router-other"], 12,
        "{summary:#}"
    );
    let warnings: Vec<&str> = summary["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("12 of 12 measured outputs were shorter than planned"),
        "{}",
        warnings[0]
    );
    assert!(warnings[1].contains("`router-other` 12"), "{}", warnings[1]);
    // Each record says which model answered.
    let records = std::fs::read_to_string(out.join("records.jsonl")).unwrap();
    assert_eq!(
        records
            .matches(r#""answered_model":"router-other""#)
            .count(),
        12
    );
}

#[test]
fn more_failures_than_the_max_error_rate_fail_the_run_naming_the_share() {
    let (mut options, out) = fast_run("run-error-rate");
    options.emulator.flags.fail_rate = Some(0.5);
    options.request.failures.abort_after = 0;
    options.request.failures.max_error_rate = 0.1;
    let e = arbor::run::run(&options, &Quiet).expect_err("over the rate");
    assert_eq!(e.kind, Kind::FailedTooOften, "{e:?}");
    let summary = read(&out.join("summary.json"));
    let (ok, failed) = (
        summary["counts"]["ok"].as_u64().unwrap(),
        summary["counts"]["failed"].as_u64().unwrap(),
    );
    assert!(ok > 0 && failed * 10 > ok + failed, "{summary:#}");
    for words in [
        format!("{failed} of {} measured requests failed", ok + failed),
        "over --max-error-rate 0.1".to_string(),
        format!("describe only the {ok} that succeeded"),
    ] {
        assert!(e.message.contains(&words), "{words}: {}", e.message);
    }
}

#[test]
fn the_circuit_breaker_stops_a_run_failing_the_same_way_and_says_so() {
    let (mut options, out) = fast_run("run-breaker");
    options.emulator.flags.fail_rate = Some(1.0);
    options.request.failures.abort_after = 3;
    let kept = Kept::default();
    let e = arbor::run::run(&options, &kept).expect_err("stopped");
    assert_eq!(e.kind, Kind::FailedTooOften, "{e:?}");
    assert!(
        e.message
            .contains("stopped after 3 requests in a row failed with HTTP 5xx (--abort-after 3"),
        "{}",
        e.message
    );
    let summary = read(&out.join("summary.json"));
    assert_eq!(summary["stopped_by"], "abort_after", "{summary:#}");
    assert!(
        summary["notes"][0]
            .as_str()
            .unwrap()
            .contains("failed with HTTP 5xx"),
        "{summary:#}"
    );
    // Four trees of three turns, their first turns in flight together:
    // the turns after the trip were never sent, and every request sent
    // has its record.
    let records = std::fs::read_to_string(out.join("records.jsonl")).unwrap();
    let sent = records.lines().count() as u64;
    assert_eq!(summary["counts"]["dispatched"], sent);
    assert!(sent < 12, "{sent} records");
    assert!(
        kept.notices()
            .iter()
            .any(|n| n.contains("stopped after 3 requests")),
        "{:?}",
        kept.notices()
    );
}

/// The recipe (2 lanes, the bundled sample: a pinned corpus) with an
/// `--extra-body` of `body`, settled (nothing run).
fn recipe_settled(body: &str, unsafe_override: bool) -> Result<arbor::run::Settled, arbor::Error> {
    let options = RunOptions {
        policy: PolicyOptions {
            sessions: Some(2),
            seed: Some(7),
            ..PolicyOptions::default()
        },
        scenario: arbor::ScenarioOptions {
            scenario: Some("agentx-mvp".into()),
            unsafe_override,
            ..arbor::ScenarioOptions::default()
        },
        request: arbor::options::RequestOptions {
            extra_body: Some(serde_json::from_str(body).unwrap()),
            ..arbor::options::RequestOptions::default()
        },
        ..RunOptions::default()
    };
    arbor::run::settle(&options, &Quiet)
}

#[test]
fn the_recipe_refuses_an_extra_body_that_sets_the_workloads_fields() {
    for field in [
        "max_tokens",
        "ignore_eos",
        "messages",
        "truncate_prompt_tokens",
        "stop",
    ] {
        let body = format!(r#"{{"temperature": 0, "{field}": 1}}"#);
        let e = recipe_settled(&body, false).err().unwrap();
        assert!(e.is_input(), "{field}: {e:?}");
        assert!(
            e.message.contains(&format!("--extra-body sets {field}:")),
            "{field}: {}",
            e.message
        );
        let settled = recipe_settled(&body, true).unwrap();
        assert_eq!(
            settled.applied.unwrap().invalid_reasons(),
            vec!["unsafe_override"],
            "{field}"
        );
    }
    // A field the recipe does not write is the user's.
    let settled = recipe_settled(r#"{"temperature": 0}"#, false).unwrap();
    assert!(settled.applied.unwrap().invalid_reasons().is_empty());
}

#[test]
fn an_overridden_max_context_runs_and_is_stamped_invalid_naming_the_flag() {
    let dir = scratch("run-recipe-max-context");
    let out = dir.join("out");
    let mut options = crate::util::agentx_short(&out);
    options.input.fit.max_context = Some(4_096);
    arbor::run::run(&options, &Quiet).unwrap();
    let summary = read(&out.join("summary.json"));
    assert_eq!(summary["submission_valid"], false, "{summary:#}");
    assert_eq!(
        summary["submission_invalid_reasons"],
        serde_json::json!(["unsafe_override"])
    );
    let run = read(&out.join("run.json"));
    let overridden = run.to_string();
    assert!(
        overridden.contains("--max-context 4096: prompts are sent as recorded"),
        "{run:#}"
    );
}

#[test]
fn a_run_of_a_subset_plays_it_and_records_what_was_taken() {
    let (mut options, out) = fast_run("run-subset");
    options.input.subset = arbor::options::SubsetOptions {
        max_requests: Some(7),
        ..arbor::options::SubsetOptions::default()
    };
    arbor::run::run(&options, &Quiet).unwrap();
    let summary = read(&out.join("summary.json"));
    // Two whole trees of three turns: a third would pass 7 requests.
    assert_eq!(summary["counts"]["ok"], 6, "{summary:#}");
    let inputs = summary["config"]["inputs"].as_str().unwrap_or_default();
    assert!(
        inputs.contains("subset (--max-requests 7): 2 of 4 trees, 6 requests"),
        "{inputs}"
    );
}
