//! Fuzz target: a run's `summary.json` (`arbor.summary/1`) as its readers
//! take it: `arbor_runs::output::Summary::parse` (the one typed reader:
//! the schema version checked first, then the fields), then what
//! `arbor aggregate` does with a summary: every headline metric
//! (`aggregate::metrics::LATENCIES` and `RATES`) read from it and
//! spread (`aggregate::stats::Spread`) over it and
//! `testdata/runs/small/summary.json`, as two runs of a repeat. The whole
//! input is the file. Besides never panicking: a summary that parses
//! serializes (`Summary::to_bytes`, the bytes `arbor summarize` writes),
//! reads back, and serializes again to the same bytes.

use std::path::Path;

use arbor_runs::aggregate::metrics::{LATENCIES, RATES};
use arbor_runs::aggregate::stats::Spread;
use arbor_runs::output::Summary;

const SMALL: &[u8] = include_bytes!("../../../testdata/runs/small/summary.json");

fn main() {
    let path = Path::new("summary.json");
    let small = Summary::parse(SMALL, path).expect("the fixture's summary parses");
    afl::fuzz!(|data: &[u8]| {
        let Ok(summary) = Summary::parse(data, path) else {
            return;
        };
        let bytes = summary.to_bytes().expect("a summary read serializes");
        let again = match Summary::parse(&bytes, path) {
            Ok(again) => again,
            Err(e) => panic!("a summary written does not read back: {}", e.message),
        };
        let twice = again.to_bytes().expect("a summary read back serializes");
        assert!(bytes == twice, "a summary written reads back as another");
        for headline in LATENCIES.iter().chain(RATES.iter()) {
            let values: Vec<f64> = [&summary, &small]
                .into_iter()
                .filter_map(|s| headline.value(s))
                .collect();
            let _ = Spread::of(&values);
        }
    });
}
