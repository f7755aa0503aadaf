//! One line of `records.jsonl` as the report reads it: the one reader's
//! [`Record`] (`arbor_runs::record_line`, strings borrowed from the line,
//! no allocation per record), the fields the page cannot draw without
//! ([`check`]), the line reduced to a [`Turn`], and the line's ITL gaps
//! scanned in place ([`for_each_itl`]) instead of parsed into a vector.
//! Knows nothing of what is drawn.

use serde::Serialize;

use arbor_runs::record::{secs_ns, Status as Outcome};
use arbor_runs::record_line::{need, RecordLine};

/// A record as the report reads it (docs/run.md lists the fields).
pub type Record<'a> = RecordLine<'a>;

/// The line's fields a page draws a turn by: a line without one of them
/// is not a record the page can place.
pub fn check(r: &Record) -> Result<(), String> {
    need(r.request, "request")?;
    need(r.tree.as_ref(), "tree")?;
    need(r.agent.as_ref(), "agent")?;
    need(r.turn, "turn")?;
    need(r.play, "play")?;
    Ok(())
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
    /// turn has `eligible <= sent <= done`. (A field [`check`] needs that
    /// the line lacks counts as 0.)
    pub fn of(r: &Record) -> Turn {
        let eligible = r.eligible_s.map_or(0, secs_ns);
        let sent = r
            .sent_s
            .or(r.dispatched_s)
            .map_or(eligible, secs_ns)
            .max(eligible);
        let first = r.first_content_s.map(secs_ns).map(|f| f.max(sent));
        let done = r
            .done_s
            .map_or(first.unwrap_or(sent), secs_ns)
            .max(first.unwrap_or(sent));
        let status = if r.is_warmup() {
            Status::Warmup
        } else {
            match r.status {
                Outcome::Ok => Status::Ok,
                Outcome::Cancelled => Status::Cancelled,
                Outcome::Error => Status::Error,
            }
        };
        Turn {
            request: r.request.unwrap_or(0),
            turn: r.turn.unwrap_or(0),
            status,
            eligible,
            sent,
            first,
            done,
            queue_wait: r.queue_wait_s.map_or(0, secs_ns),
            ttft: r.ttft_s.map(secs_ns),
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
