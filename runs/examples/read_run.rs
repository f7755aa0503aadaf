//! A run directory read back, typed, with `arbor-runs` alone: from its
//! records, how many requests it holds, how many succeeded and their
//! median time to first token; from its summary, whether it ended
//! cleanly, its p50 TTFT and its output-token rate, named through the
//! metric vocabulary rather than a JSON path.
//!
//! `cargo run -p arbor-runs --example read_run -- RUN_DIR`
//! (the test suite runs [`first_tokens`] and [`headline`] on a fixture
//! run: `cargo test -p arbor-runs --test it read_run`).

use std::path::Path;

use arbor_error::Error;
use arbor_runs::metric::{Latency, Rate, Stat};
use arbor_runs::output::Summary;
use arbor_runs::record::Status;
use arbor_runs::record_line::{read, RecordLine};
use arbor_runs::records_file::RECORDS_FILE;

/// What a run's records say of its first tokens.
#[derive(Debug, PartialEq)]
pub struct FirstTokens {
    pub records: u64,
    pub ok: u64,
    /// The median TTFT of the successful requests, in seconds.
    pub median_ttft_s: Option<f64>,
}

/// Reads `dir/records.jsonl` (a torn last line is skipped, any other bad
/// line is an error naming it).
pub fn first_tokens(dir: &Path) -> Result<FirstTokens, Error> {
    let mut ttfts = Vec::new();
    let mut ok = 0;
    let lines = read(&dir.join(RECORDS_FILE), |line: &RecordLine, _| {
        if line.status == Status::Ok {
            ok += 1;
            ttfts.extend(line.ttft_s);
        }
        Ok(())
    })?;
    ttfts.sort_by(f64::total_cmp);
    Ok(FirstTokens {
        records: lines.records,
        ok,
        median_ttft_s: ttfts.get(ttfts.len() / 2).copied(),
    })
}

/// What a run's summary says of it.
#[derive(Debug, PartialEq)]
pub struct Headline {
    /// False when the run did not end cleanly (its summary was rebuilt).
    pub complete: bool,
    /// `None` over no successful request.
    pub ttft_p50_s: Option<f64>,
    pub output_tokens_per_s: Option<f64>,
}

/// Reads `dir/summary.json` (missing, or not a summary, is an error
/// naming the file).
pub fn headline(dir: &Path) -> Result<Headline, Error> {
    let summary = Summary::read(dir)?;
    Ok(Headline {
        complete: summary.complete,
        ttft_p50_s: Latency::Ttft.stat(&summary, Stat::P50),
        output_tokens_per_s: Rate::OutputTokens.of(&summary),
    })
}

#[allow(dead_code)] // the test suite includes this file for its functions
fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: read_run RUN_DIR");
        std::process::exit(2);
    };
    let ms = |s: Option<f64>| s.map_or_else(|| "-".to_string(), |s| format!("{:.1} ms", s * 1e3));
    let read =
        first_tokens(Path::new(&dir)).and_then(|seen| Ok((seen, headline(Path::new(&dir))?)));
    match read {
        Ok((seen, summary)) => {
            println!(
                "{} records, {} ok, median TTFT {}",
                seen.records,
                seen.ok,
                ms(seen.median_ttft_s)
            );
            println!(
                "summary: {}, p50 TTFT {}, {} output tokens/s",
                if summary.complete {
                    "complete"
                } else {
                    "incomplete"
                },
                ms(summary.ttft_p50_s),
                summary
                    .output_tokens_per_s
                    .map_or_else(|| "-".to_string(), |r| format!("{r:.1}"))
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(if e.is_input() { 2 } else { 1 });
        }
    }
}
