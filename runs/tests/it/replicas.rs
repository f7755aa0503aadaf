//! The per-replica breakdown (`runs::replicas`): the collector's figures
//! per replica add up to the run's, every named replica appears (one that
//! got nothing included), and the imbalance says how uneven it was.

use arbor_runs::collector::{Collector, Facts};
use arbor_runs::record::{
    ErrorCategory, RequestError, RequestIdentity, RequestRecord, Response, Stamps,
};
use arbor_runs::replicas::ReplicaReport;

const MS: u64 = 1_000_000;

fn record(request: u64, replica: Option<u32>, input: u64, cached: u64, ok: bool) -> RequestRecord {
    let id = RequestIdentity {
        request,
        tree: "t".into(),
        tree_index: 0,
        agent: "a".into(),
        turn: request as u32,
        copy: 0,
        lane: None,
        play: 0,
        eligible: request * 10 * MS,
        dispatched: request * 10 * MS,
        queue_wait: 0,
        warmup: false,
        planned_input_tokens: input as u32,
        planned_output_tokens: 2,
        replica,
        session_key: Some("arbor-0-0".into()),
    };
    let sent = request * 10 * MS;
    let response = Response {
        stamps: Stamps {
            sent: Some(sent),
            headers: Some(sent + MS),
            first_byte: Some(sent + 2 * MS),
            first_content: Some(sent + 2 * MS),
            content: vec![sent + 2 * MS, sent + 3 * MS],
            done: Some(sent + 4 * MS),
        },
        http_status: Some(if ok { 200 } else { 500 }),
        prompt_tokens: Some(input),
        completion_tokens: Some(2),
        cached_tokens: Some(cached),
        error: (!ok).then(|| RequestError {
            category: ErrorCategory::ServerError,
            message: "boom".into(),
            http_status: Some(500),
            retry_after_s: None,
        }),
        attempts: 1,
        ..Response::default()
    };
    RequestRecord::new(id, &response)
}

fn endpoints(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("http://127.0.0.1:{}", 9000 + i))
        .collect()
}

#[test]
fn per_replica_figures_add_up_to_the_run_and_name_every_replica() {
    let records = [
        record(0, Some(0), 1000, 0, true),
        record(1, Some(0), 1000, 900, true),
        record(2, Some(0), 1000, 900, true),
        record(3, Some(1), 500, 0, true),
        record(4, Some(1), 500, 0, false),
    ];
    let mut collector = Collector::new();
    for r in &records {
        collector.add(&Facts::from(r));
    }
    let measured = collector.finish();
    let report = ReplicaReport::build(&measured.replicas, &endpoints(3)).expect("a report");

    assert_eq!(
        report.replicas.len(),
        3,
        "replica 2 got nothing and is listed"
    );
    let third = &report.replicas[2];
    assert_eq!((third.requests, third.share), (0, 0.0));
    assert_eq!(third.endpoint.as_deref(), Some("http://127.0.0.1:9002"));

    let sum = |f: fn(&arbor_runs::replicas::ReplicaFigures) -> u64| -> u64 {
        report.replicas.iter().map(f).sum()
    };
    assert_eq!(sum(|r| r.requests), measured.requests.dispatched);
    assert_eq!(sum(|r| r.ok), measured.requests.ok);
    assert_eq!(sum(|r| r.failed), measured.requests.failed);
    assert_eq!(sum(|r| r.cache.cached_tokens), measured.cache.cached_tokens);
    assert_eq!(sum(|r| r.cache.input_tokens), measured.cache.input_tokens);
    assert_eq!(
        sum(|r| r.throughput.work.output_tokens),
        measured.throughput.work.output_tokens
    );
    let shares: f64 = report.replicas.iter().map(|r| r.share).sum();
    assert!((shares - 1.0).abs() < 1e-12, "{shares}");

    let first = &report.replicas[0];
    assert_eq!(first.requests, 3);
    assert_eq!(first.cache.hit_ratio, Some(1800.0 / 3000.0));
    assert_eq!(report.replicas[1].errors.get("server_error"), Some(&1));

    // 3 of 5 requests on one of three replicas: 3 / (5 / 3) = 1.8.
    let i = &report.imbalance;
    assert!((i.requests_max_over_mean - 1.8).abs() < 1e-12, "{i:?}");
    assert_eq!((i.busiest, i.least_busy), (0, 2));
    assert_eq!(i.hit_ratio_spread, Some(0.6));
}

#[test]
fn one_endpoint_and_no_replica_gives_no_report() {
    let mut collector = Collector::new();
    collector.add(&Facts::from(&record(0, None, 100, 0, true)));
    let measured = collector.finish();
    assert!(measured.replicas.is_empty());
    assert_eq!(
        ReplicaReport::build(&measured.replicas, &endpoints(1)),
        None
    );
}

#[test]
fn warmups_are_in_no_replica_figure() {
    let mut warm = record(0, Some(1), 100, 0, true);
    warm.warmup = true;
    let mut collector = Collector::new();
    collector.add(&Facts::from(&warm));
    collector.add(&Facts::from(&record(1, Some(0), 100, 0, true)));
    let measured = collector.finish();
    let report = ReplicaReport::build(&measured.replicas, &endpoints(2)).expect("a report");
    assert_eq!(report.replicas[0].requests, 1);
    assert_eq!(
        report.replicas[1].requests, 0,
        "the warmup is counted nowhere"
    );
}
