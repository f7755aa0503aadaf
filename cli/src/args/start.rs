//! `arbor run`'s flags for starting shards together (docs/scale-out.md,
//! "Starting together"): `--start-at`, or the start barrier
//! (`--barrier-listen`/`--barrier-size` on rank 0, `--barrier` on the
//! others), and the RFC 3339 parser of `--start-at`'s value. The barrier
//! itself is `crate::run::barrier`'s; this module holds no logic of it.

use std::net::SocketAddr;

use arbor_engine::time::Nanos;
use clap::Args;

use super::heading::LOAD;
use super::values;

/// Nanoseconds since the Unix epoch, UTC (a wall-clock instant).
pub type UtcNanos = i64;

/// When the clock starts: now (no flag), at an instant, or at the instant
/// rank 0's barrier announces.
#[derive(Debug, Args, Clone, Default)]
pub struct StartArgs {
    /// Start the clock at this UTC instant, RFC 3339
    /// (`2026-12-01T12:30:00Z`, `...T13:30:00.250+01:00`), for shards
    /// started by hand or by cron. A run that reaches it late fails
    /// (exit 1) instead of starting late.
    #[arg(long, value_name = "UTC_TIME", value_parser = utc_time, conflicts_with_all = ["barrier_listen", "barrier", "repeat"], help_heading = LOAD)]
    pub start_at: Option<UtcNanos>,

    /// Rank 0 of a sharded run: listen on ADDR:PORT for the other shards'
    /// `--barrier`, measure their clock offsets, and announce one start
    /// instant once --barrier-size shards (this one included) are there.
    #[arg(long, value_name = "ADDR:PORT", requires = "barrier_size", conflicts_with_all = ["barrier", "repeat"], help_heading = LOAD)]
    pub barrier_listen: Option<SocketAddr>,

    /// How many shards meet at the barrier, rank 0 included (N of
    /// `--shard I/N`).
    #[arg(long, value_name = "N", requires = "barrier_listen", value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = LOAD)]
    pub barrier_size: Option<u32>,

    /// A shard other than rank 0: meet rank 0's barrier at HOST:PORT
    /// (retried until it answers) and start at the instant it announces.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "repeat", help_heading = LOAD)]
    pub barrier: Option<String>,

    /// How long to wait at the barrier for the other shards (rank 0) or
    /// for rank 0 (the others); past it the run fails without starting.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = values::positive_duration, help_heading = LOAD)]
    pub barrier_timeout: Nanos,
}

/// An RFC 3339 UTC instant (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`) as
/// nanoseconds since the Unix epoch.
pub fn utc_time(text: &str) -> Result<UtcNanos, String> {
    let bad = || {
        format!(
            "expected an RFC 3339 time such as 2026-12-01T12:30:00Z or \
             2026-12-01T13:30:00.5+01:00, got `{text}`"
        )
    };
    let t = text.trim();
    let b = t.as_bytes();
    if !t.is_ascii()
        || b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
    {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let num = |from: usize, to: usize| -> Result<i64, String> {
        let part = t.get(from..to).ok_or_else(bad)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse::<i64>().map_err(|_| bad())
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let mut rest = &t[19..];
    let mut frac_ns = 0;
    if let Some(after) = rest.strip_prefix('.') {
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        // Nanoseconds: the first nine digits, the rest dropped.
        for (i, c) in after.bytes().take(9).take(digits).enumerate() {
            frac_ns += i64::from(c - b'0') * 10_i64.pow(8 - i as u32);
        }
        rest = &after[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(&zone[..1], "+" | "-") && &zone[3..4] == ":" => {
            let at = 19 + (t.len() - 19 - zone.len());
            let (h, m) = (num(at + 1, at + 3)?, num(at + 4, at + 6)?);
            if h > 23 || m > 59 {
                return Err(bad());
            }
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return Err(bad()),
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Ok(secs * 1_000_000_000 + frac_ns)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::utc_time;

    const S: i64 = 1_000_000_000;

    #[test]
    fn rfc_3339_instants() {
        assert_eq!(utc_time("1970-01-01T00:00:00Z"), Ok(0));
        // 2024-02-29T13:45:07Z, a leap day.
        assert_eq!(utc_time("2024-02-29T13:45:07Z"), Ok(1_709_214_307 * S));
        assert_eq!(
            utc_time("2024-02-29T14:45:07.25+01:00"),
            Ok(1_709_214_307 * S + 250_000_000)
        );
        assert_eq!(
            utc_time("2024-02-29T13:15:07.000000001-00:30"),
            Ok(1_709_214_307 * S + 1)
        );
        assert_eq!(utc_time("2000-03-01T00:00:00Z"), Ok(951_868_800 * S));
    }

    #[test]
    fn not_rfc_3339_is_refused_with_an_example() {
        for bad in [
            "",
            "now",
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-02-29T24:00:00Z",
            "2024-02-29T13:45:07",
            "2024-02-29T13:45:07.Z",
            "2024-02-29T13:45:07+0100",
            "2024-02-29 13:45:07 UTC",
            "２024-02-29T13:45:07Z",
        ] {
            let e = utc_time(bad).unwrap_err();
            assert!(e.contains("2026-12-01T12:30:00Z"), "{bad}: {e}");
        }
    }
}
