//! A run directory's records read back, typed, with `arbor-runs` alone:
//! how many requests it holds, how many succeeded, and their median time
//! to first token.
//!
//! `cargo run -p arbor-runs --example read_run -- RUN_DIR`
//! (the test suite runs [`first_tokens`] on a fixture run:
//! `cargo test -p arbor-runs --test it read_run`).

use std::path::Path;

use arbor_error::Error;
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

#[allow(dead_code)] // the test suite includes this file for `first_tokens`
fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: read_run RUN_DIR");
        std::process::exit(2);
    };
    match first_tokens(Path::new(&dir)) {
        Ok(seen) => println!(
            "{} records, {} ok, median TTFT {}",
            seen.records,
            seen.ok,
            seen.median_ttft_s
                .map_or_else(|| "-".to_string(), |s| format!("{:.1} ms", s * 1e3))
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(if e.is_input() { 2 } else { 1 });
        }
    }
}
