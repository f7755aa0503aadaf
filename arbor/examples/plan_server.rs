//! Plans a workload on the virtual clock under the batching server model
//! of a profile, from Rust, through the `arbor` facade alone, and prints
//! the predicted latencies: what `arbor plan --service server:PROFILE`
//! reports, as typed values.
//!
//! ```sh
//! cargo run -p arbor --example plan_server -- PROFILE.toml [TRACE...]
//! ```
//!
//! With no trace, the bundled sample is planned. The test suite runs it on
//! the calibration fixture's profile (`arbor/tests/it/examples.rs`).

use std::path::PathBuf;
use std::process::ExitCode;

use arbor::engine::policy::GapTransform;
use arbor::options::{InputOptions, PlanOptions, PolicyOptions};
use arbor::report::plan::server::ServerPrediction;
use arbor::{Error, Quiet};

/// The plan of `traces` (none: the bundled sample) under the server model
/// of the profile at `profile`: its predictions.
pub fn predict(profile: &str, traces: Vec<PathBuf>) -> Result<ServerPrediction, Error> {
    let service = format!("server:{profile}")
        .parse()
        .map_err(|e| Error::input(format!("{profile}: {e}")))?;
    let options = PlanOptions {
        input: InputOptions {
            inputs: traces,
            ..InputOptions::default()
        },
        // Tool and think gaps at 1 %, so the server sees the load at once.
        policy: PolicyOptions {
            tool_time: Some(GapTransform::Scale { ppm: 10_000 }),
            think_time_pct: Some(GapTransform::Scale { ppm: 10_000 }),
            ..PolicyOptions::default()
        },
        service: Some(service),
        ..PlanOptions::default()
    };
    let report = arbor::plan::plan(&options, &Quiet)?;
    report
        .server
        .ok_or_else(|| Error::other("the plan has no server prediction"))
}

/// The predictions as a person reads them.
pub fn lines(server: &ServerPrediction) -> Vec<String> {
    let ms = |ns: u64| ns as f64 / 1e6;
    vec![
        format!("profile: {}", server.profile),
        format!("requests: {}", server.ttft.count),
        format!(
            "ttft p50 {:.1} ms, p99 {:.1} ms",
            ms(server.ttft.p50),
            ms(server.ttft.p99)
        ),
        format!(
            "itl p50 {:.2} ms, p99 {:.2} ms",
            ms(server.itl.p50),
            ms(server.itl.p99)
        ),
        format!(
            "e2e p50 {:.1} ms, p99 {:.1} ms",
            ms(server.e2e.p50),
            ms(server.e2e.p99)
        ),
        format!(
            "prefix cache: {} of {} prompt tokens hit",
            server.prefix_hit_tokens, server.prompt_tokens
        ),
    ]
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(profile) = args.next() else {
        eprintln!("usage: plan_server PROFILE.toml [TRACE...]");
        return ExitCode::from(2);
    };
    match predict(&profile, args.map(PathBuf::from).collect()) {
        Ok(server) => {
            for line in lines(&server) {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(if e.is_input() { 2 } else { 1 })
        }
    }
}
