//! Server metrics at the process: the console's line about the scrapes
//! and the flags' checks. What a run scrapes, writes and sums up is
//! in-process (`arbor/tests/it/metrics.rs`).

use crate::util::*;

#[test]
fn the_console_says_what_the_servers_metrics_said_when_scraped() {
    let trace = fixture("trace_0187.json");
    for (name, extra) in [
        ("metrics-console", None),
        ("metrics-console-off", Some("--no-metrics")),
    ] {
        let out = scratch(name).join("out");
        let mut args = vec![trace.to_str().unwrap(), "--ttft-ms", "300", "--itl-ms", "1"];
        args.extend(FAST);
        args.extend(extra);
        let console = stdout(&run_into(&out, &args));
        let line = console
            .lines()
            .find(|l| l.starts_with("  server metrics  "));
        if extra.is_some() {
            assert!(line.is_none(), "{console}");
        } else {
            assert!(line.is_some_and(|l| l.contains("scrapes ok")), "{console}");
        }
    }
}

#[test]
fn metrics_flags_are_checked_at_parse_time() {
    expect_exit_2(
        &["run", "--metrics-url", "ftp://h/metrics"],
        &["--metrics-url", "http:// or https://"],
    );
    expect_exit_2(&["run", "--metrics-url", "not a url"], &["--metrics-url"]);
    expect_exit_2(
        &["run", "--metrics-url", "http://h/metrics", "--no-metrics"],
        &["--no-metrics"],
    );
    expect_exit_2(&["run", "--metrics-interval", "0"], &["--metrics-interval"]);
}
