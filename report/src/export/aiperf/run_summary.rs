//! The `summary.json` of a run as the AIPerf export reads it: the validity
//! stamp, the run's end, the throughput window and its rates (copied, not
//! recomputed), the epoch's wall-clock time, and the whole document (its
//! arbor-only parts go into the `arbor` extension).
//!
//! Owns reading the file and what a missing or bad one says (exit 2, naming
//! it); fields a later arbor adds are ignored.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use arbor_error::Error;
use arbor_runs::output::SUMMARY_FILE;

/// What the export reads of `summary.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct RunSummary {
    #[serde(default = "complete_by_default")]
    pub complete: bool,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub scenario: Option<String>,
    #[serde(default)]
    pub submission_valid: Option<bool>,
    #[serde(default)]
    pub submission_invalid_reasons: Option<Vec<String>>,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub cancelled: bool,
    pub counts: Counts,
    pub throughput: Throughput,
    /// The document as written.
    #[serde(skip)]
    pub document: Value,
}

fn complete_by_default() -> bool {
    true
}

/// `counts` of `summary.json`.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Counts {
    pub ok: u64,
    pub failed: u64,
}

/// `throughput` of `summary.json`.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Throughput {
    pub window_s: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
}

impl RunSummary {
    /// Reads `dir/summary.json`: missing or not a summary is an input
    /// error (exit 2) naming the file.
    pub fn read(dir: &Path) -> Result<RunSummary, Error> {
        let path = dir.join(SUMMARY_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::input(format!(
                "{}: cannot read ({e}); --aiperf needs the summary.json `arbor run` writes \
                 (`arbor summarize {}` rebuilds it)",
                path.display(),
                dir.display()
            ))
        })?;
        let bad = |e: serde_json::Error| {
            Error::input(format!(
                "{}: expected the summary.json of `arbor run` (docs/run.md): {e}",
                path.display()
            ))
        };
        let document: Value = serde_json::from_str(&text).map_err(bad)?;
        let mut summary: RunSummary = serde_json::from_value(document.clone()).map_err(bad)?;
        summary.document = document;
        Ok(summary)
    }

    /// The run epoch in nanoseconds since the Unix epoch, from `started_at`
    /// (`YYYY-mm-ddTHH:MM:SSZ`, so to the second); `None` when it does not
    /// read.
    pub fn epoch_unix_ns(&self) -> Option<u64> {
        unix_secs(&self.started_at).map(|s| s.saturating_mul(1_000_000_000))
    }
}

/// Seconds since 1970 of a `YYYY-mm-ddTHH:MM:SSZ` stamp in UTC.
fn unix_secs(stamp: &str) -> Option<u64> {
    let bytes = stamp.as_bytes();
    if bytes.len() != 20 || bytes[19] != b'Z' || bytes[10] != b'T' {
        return None;
    }
    let num = |from: usize, to: usize| stamp.get(from..to)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, s) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    u64::try_from(secs).ok()
}

/// Days since 1970-01-01 of a Gregorian date (Howard Hinnant's algorithm,
/// the inverse of the one `run::output::utc_stamps` uses).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_back_by_hand() {
        assert_eq!(unix_secs("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_secs("2024-02-29T13:45:07Z"), Some(1_709_214_307));
        assert_eq!(unix_secs("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(unix_secs("2024-02-29 13:45:07"), None);
        assert_eq!(unix_secs("2024-13-29T13:45:07Z"), None);
        assert_eq!(unix_secs(""), None);
    }
}
