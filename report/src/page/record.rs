//! One line of `records.jsonl` as the report reads it: the fields the page
//! draws, borrowed from the line where they can be (no allocation per
//! record), and the line's ITL gaps scanned in place ([`for_each_itl`])
//! instead of parsed into a vector. Knows nothing of what is drawn.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The fields of a record the report uses (docs/run.md lists them all).
#[derive(Debug, Deserialize)]
pub struct Record<'a> {
    pub request: u64,
    #[serde(borrow)]
    pub tree: Cow<'a, str>,
    #[serde(borrow)]
    pub agent: Cow<'a, str>,
    pub turn: u32,
    #[serde(default)]
    pub copy: u32,
    pub lane: Option<u32>,
    pub play: u32,
    #[serde(default)]
    pub warmup: bool,
    #[serde(borrow)]
    pub status: Cow<'a, str>,
    pub eligible_s: Option<f64>,
    pub dispatched_s: Option<f64>,
    pub sent_s: Option<f64>,
    pub first_content_s: Option<f64>,
    pub done_s: Option<f64>,
    pub queue_wait_s: Option<f64>,
    pub lateness_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub e2e_s: Option<f64>,
    pub tpot_s: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    #[serde(borrow)]
    pub error: Option<RecordError<'a>>,
}

/// A failed request's error object.
#[derive(Debug, Deserialize)]
pub struct RecordError<'a> {
    #[serde(borrow)]
    pub category: Cow<'a, str>,
    #[serde(borrow, default)]
    pub message: Cow<'a, str>,
}

/// What became of a request, as the page colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Error,
    Cancelled,
    Warmup,
}

/// A record reduced to what the time series and the swim lanes need:
/// integer nanoseconds from the run's epoch.
#[derive(Debug, Clone)]
pub struct Turn {
    pub request: u64,
    pub turn: u32,
    pub status: Status,
    pub eligible: u64,
    pub sent: u64,
    /// `None` when no content arrived.
    pub first: Option<u64>,
    pub done: u64,
    pub queue_wait: u64,
    pub ttft: Option<u64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: Option<u64>,
    /// Index of the failed request's error in the run's error list (set
    /// by the reader).
    pub error: Option<u32>,
}

impl Turn {
    /// A stamp never reached falls back on the one before it, so every
    /// turn has `eligible <= sent <= done`.
    pub fn of(r: &Record) -> Turn {
        let eligible = r.eligible_s.map_or(0, secs_to_ns);
        let sent = r
            .sent_s
            .or(r.dispatched_s)
            .map_or(eligible, secs_to_ns)
            .max(eligible);
        let first = r.first_content_s.map(secs_to_ns).map(|f| f.max(sent));
        let done = r
            .done_s
            .map_or(first.unwrap_or(sent), secs_to_ns)
            .max(first.unwrap_or(sent));
        let status = if r.warmup {
            Status::Warmup
        } else {
            match r.status.as_ref() {
                "ok" => Status::Ok,
                "cancelled" => Status::Cancelled,
                _ => Status::Error,
            }
        };
        Turn {
            request: r.request,
            turn: r.turn,
            status,
            eligible,
            sent,
            first,
            done,
            queue_wait: r.queue_wait_s.map_or(0, secs_to_ns),
            ttft: r.ttft_s.map(secs_to_ns),
            input_tokens: r.input_tokens.unwrap_or(0),
            output_tokens: r.output_tokens.unwrap_or(0),
            cached_tokens: r.cached_tokens,
            error: None,
        }
    }
}

/// Calls `f` with every gap of the line's `itl_s` array, in seconds.
/// Returns false when the line has no readable `itl_s` array (then `f`
/// was not called for any value that did not parse).
pub fn for_each_itl(line: &str, mut f: impl FnMut(f64)) -> bool {
    const KEY: &str = "\"itl_s\":[";
    let Some(start) = line.find(KEY) else {
        return false;
    };
    let rest = &line[start + KEY.len()..];
    let Some(end) = rest.find(']') else {
        return false;
    };
    for value in rest[..end].split(',') {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        match value.parse::<f64>() {
            Ok(v) => f(v),
            Err(_) => return false,
        }
    }
    true
}

/// Seconds to integer nanoseconds (negative and non-finite values are 0).
pub fn secs_to_ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e9).round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itl_values_are_scanned_from_the_line() {
        let mut seen = Vec::new();
        assert!(for_each_itl(
            r#"{"a":1,"itl_s":[0.5, 1e-3,2],"b":[3]}"#,
            |v| seen.push(v)
        ));
        assert_eq!(seen, vec![0.5, 0.001, 2.0]);
        let mut none = 0;
        assert!(for_each_itl(r#"{"itl_s":[]}"#, |_| none += 1));
        assert_eq!(none, 0);
        assert!(!for_each_itl(r#"{"itl_s":null}"#, |_| none += 1));
    }
}
