//! What the AIPerf export takes from a run's `summary.json` beyond the
//! typed [`Summary`] itself: the run epoch's wall-clock time, from
//! `started_at` (AIPerf's records carry Unix timestamps; arbor's are
//! relative to the epoch).

use arbor_runs::output::Summary;

/// The run epoch of `summary` in nanoseconds since the Unix epoch, from
/// `started_at` (`YYYY-mm-ddTHH:MM:SSZ`, so to the second); `None` when it
/// does not read.
pub fn epoch_unix_ns(summary: &Summary) -> Option<u64> {
    unix_secs(&summary.started_at).map(|s| s.saturating_mul(1_000_000_000))
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
