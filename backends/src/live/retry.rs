//! Opt-in retries of refused requests (`--retry-on 429,503 --retries N`):
//! which answers may be retried, and how long to wait before the next try.
//! Pure: no clock, no randomness; the jitter is a hash of the request and
//! the try, so the same run waits the same way.
//!
//! Only an answer that refused the request with a status listed in
//! `--retry-on`, before any response content, is retried: the server
//! answered, so it has the request and said it did not run it. A request
//! that may have reached the server without an answer is never sent again
//! (the resend rule of `exchange`). Nothing is retried by default.

use std::time::Duration;

/// The longest wait a `Retry-After` may ask for; a longer one is cut to
/// this (a server asking for minutes would stall the run's schedule).
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);

/// The first backoff without `Retry-After`; each next try doubles it, up
/// to [`BACKOFF_CAP`], and the jitter takes it down by up to half.
pub const BACKOFF_BASE: Duration = Duration::from_millis(500);
pub const BACKOFF_CAP: Duration = Duration::from_secs(8);

/// The statuses `--retry-on` accepts: refusals a server sends before it
/// runs the request (408 timeout, 425 too early, 429 rate limit, 500, 502,
/// 503, 504, 529 overloaded).
pub const RETRYABLE: [u16; 8] = [408, 425, 429, 500, 502, 503, 504, 529];

/// Whether an answer with `status`, after `done` retries, may be tried
/// again: `on` lists the statuses retried (`--retry-on`; empty retries
/// nothing), `retries` how many tries a request may have beyond its first
/// (`--retries`).
pub fn retries_status(on: &[u16], retries: u32, status: u16, done: u32) -> bool {
    done < retries && on.contains(&status)
}

/// The wait before retry number `retry` (1 for the first) of request
/// `request`: the server's `Retry-After` (capped at [`RETRY_AFTER_CAP`]),
/// else an exponential backoff from [`BACKOFF_BASE`] with jitter (between
/// half and all of it).
pub fn wait(retry_after_s: Option<f64>, retry: u32, request: u64) -> Duration {
    if let Some(s) = retry_after_s.filter(|s| s.is_finite() && *s >= 0.0) {
        return Duration::from_secs_f64(s.min(RETRY_AFTER_CAP.as_secs_f64()));
    }
    let doublings = retry.saturating_sub(1).min(16);
    let full = BACKOFF_BASE.saturating_mul(1 << doublings).min(BACKOFF_CAP);
    // A share in [0.5, 1) from the request and the try.
    let hash = splitmix64(request ^ u64::from(retry).rotate_left(32));
    let share = 0.5 + (hash >> 11) as f64 / (1u64 << 53) as f64 / 2.0;
    full.mul_f64(share)
}

/// `--retry-on`'s value: statuses separated by commas, each one of
/// [`RETRYABLE`].
pub fn parse_statuses(text: &str) -> Result<Vec<u16>, String> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let status: u16 = part.parse().map_err(|_| {
            format!("expected HTTP statuses separated by commas (429,503), got `{part}`")
        })?;
        if !RETRYABLE.contains(&status) {
            return Err(format!(
                "{status} is not a refusal a server sends before running a request; \
                 retryable: {}",
                RETRYABLE.map(|s| s.to_string()).join(", ")
            ));
        }
        if !out.contains(&status) {
            out.push(status);
        }
    }
    Ok(out)
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_retried_by_default_and_only_listed_statuses_up_to_the_count() {
        assert!(!retries_status(&[], 3, 429, 0));
        let on = [429, 503];
        assert!(retries_status(&on, 2, 429, 0) && retries_status(&on, 2, 503, 1));
        assert!(
            !retries_status(&on, 2, 429, 2),
            "two retries done: no third"
        );
        assert!(!retries_status(&on, 2, 500, 0), "500 is not listed");
    }

    #[test]
    fn retry_after_is_honoured_up_to_its_cap() {
        assert_eq!(wait(Some(2.0), 1, 7), Duration::from_secs(2));
        assert_eq!(wait(Some(3600.0), 1, 7), RETRY_AFTER_CAP);
        // A nonsense value falls back to the backoff.
        assert!(wait(Some(f64::NAN), 1, 7) <= BACKOFF_BASE);
    }

    #[test]
    fn the_backoff_doubles_with_jitter_and_is_the_same_for_the_same_request() {
        for request in 0..200u64 {
            for retry in 1..8 {
                let full = BACKOFF_BASE
                    .saturating_mul(1 << (retry - 1))
                    .min(BACKOFF_CAP);
                let w = wait(None, retry, request);
                assert!(
                    w >= full / 2 && w < full,
                    "{request} {retry}: {w:?} of {full:?}"
                );
                assert_eq!(w, wait(None, retry, request));
            }
        }
        // Jitter spreads requests: not every request waits the same.
        let firsts: std::collections::BTreeSet<_> = (0..50).map(|r| wait(None, 1, r)).collect();
        assert!(firsts.len() > 40, "{}", firsts.len());
    }

    #[test]
    fn retry_on_takes_refusal_statuses_only() {
        assert_eq!(parse_statuses("429, 503,429").unwrap(), vec![429, 503]);
        assert!(parse_statuses("404")
            .unwrap_err()
            .contains("retryable: 408"));
        assert!(parse_statuses("429,x").unwrap_err().contains("`x`"));
        assert!(parse_statuses("").is_err());
    }
}
