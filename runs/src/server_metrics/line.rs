//! A line of `metrics.jsonl`: one sample of a scrape (time, name, labels,
//! value), or, under arbor's own name [`SCRAPE`], the outcome of a scrape
//! (written after its samples: value 1 when it succeeded, 0 with an
//! `error` label when it failed). Every line has the same fields. Times
//! are integer nanoseconds on the run's clock, like the records'.
//!
//! Owns the file's name and the shape of its lines, and reading it back
//! (a torn last line, cut off when a run was killed, is skipped). Writes
//! nothing: the scraper does.
//!
//! ```text
//! {"time_ns":1002003,"name":"vllm:num_requests_running","labels":{"model_name":"m"},"value":3.0,"metric":"running"}
//! {"time_ns":1002003,"name":"arbor:scrape","value":1.0}
//! {"time_ns":2001500,"name":"arbor:scrape","labels":{"error":"connect: connection refused"},"value":0.0}
//! ```

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use arbor_engine::time::Nanos;
use serde::{Deserialize, Serialize};

use arbor_error::Error;

pub const METRICS_FILE: &str = "metrics.jsonl";

/// The name of a scrape's outcome line (no server uses arbor's prefix).
pub const SCRAPE: &str = "arbor:scrape";

/// One line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// When the scrape's answer had arrived (or the scrape failed).
    pub time_ns: Nanos,
    /// The server's name for the value, or [`SCRAPE`].
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    /// The common name, when arbor recognises the metric (see `names`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// With several endpoints: the replica scraped (its index in
    /// `config.endpoints`); absent with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
}

/// How a scrape went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
}

impl Line {
    /// The outcome line of a scrape at `time_ns`: failed with `error`.
    pub fn scrape(time_ns: Nanos, error: Option<String>) -> Line {
        Line {
            time_ns,
            name: SCRAPE.to_string(),
            value: if error.is_some() { 0.0 } else { 1.0 },
            labels: error
                .map(|e| BTreeMap::from([("error".to_string(), e)]))
                .unwrap_or_default(),
            metric: None,
            replica: None,
        }
    }

    /// The scrape's outcome, when this is an outcome line.
    pub fn outcome(&self) -> Option<Outcome> {
        (self.name == SCRAPE).then_some(if self.value > 0.0 {
            Outcome::Ok
        } else {
            Outcome::Failed
        })
    }
}

/// Calls `f` with every line of `dir/metrics.jsonl`, in order. `Ok(false)`
/// when there is no such file (the run scraped nothing).
pub fn read(dir: &Path, mut f: impl FnMut(Line)) -> Result<bool, Error> {
    let path = dir.join(METRICS_FILE);
    let cannot = |e: std::io::Error| Error::input(format!("{}: cannot read: {e}", path.display()));
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(cannot(e)),
    };
    let mut reader = BufReader::new(file);
    let mut raw = String::new();
    for number in 1u64.. {
        raw.clear();
        if reader.read_line(&mut raw).map_err(cannot)? == 0 {
            break;
        }
        // Only the last line can be torn (a run killed mid-write): it has
        // no newline after it.
        if !raw.ends_with('\n') || raw.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&raw).map_err(|e| {
            Error::input(format!(
                "{} line {number}: not a metrics line: {e}",
                path.display()
            ))
        })?;
        f(line);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_as_written() {
        let lines = [
            Line {
                time_ns: 5,
                name: "vllm:num_requests_running".into(),
                labels: [("model_name".to_string(), "m".to_string())].into(),
                value: 0.1 + 0.2,
                metric: Some("running".into()),
                replica: Some(2),
            },
            Line {
                time_ns: 5,
                name: "other".into(),
                labels: BTreeMap::new(),
                value: 1e-300,
                metric: None,
                replica: None,
            },
            Line::scrape(5, None),
            Line::scrape(9, Some("connect".into())),
        ];
        assert_eq!(lines[1].outcome(), None);
        assert_eq!(lines[2].outcome(), Some(Outcome::Ok));
        assert_eq!(lines[3].outcome(), Some(Outcome::Failed));
        let dir = std::env::temp_dir().join(format!("arbor-metrics-line-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for l in &lines {
            text.push_str(&serde_json::to_string(l).unwrap());
            text.push('\n');
        }
        // A torn last line is skipped.
        text.push_str("{\"time_ns\":12,\"sc");
        std::fs::write(dir.join(METRICS_FILE), text).unwrap();
        let mut back = Vec::new();
        assert!(matches!(read(&dir, |l| back.push(l)), Ok(true)));
        assert_eq!(back, lines);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(read(&dir, |_| {}), Ok(false)));
    }
}
