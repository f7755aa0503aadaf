//! Starting the shards of a sharded run together (docs/scale-out.md,
//! "Starting together"): `--start-at`, or the start barrier over TCP.
//!
//! Owns the barrier's wire protocol, the clock-offset measurement and the
//! wait for the start instant. The run calls [`meet`] before it warms its
//! connection pool and [`Met::wait`] where its clock starts; this module
//! touches nothing else of the run.
//!
//! The protocol is one text line at a time:
//! - a shard connects to rank 0 and says `arbor-barrier 1`;
//! - [`PINGS`] times it says `ping` and rank 0 answers `pong T`, `T` its
//!   UTC clock in ns; the shard keeps the sample of least round trip and
//!   takes the offset NTP's way: `T − (sent + received) / 2` (rank 0's
//!   clock minus its own);
//! - it says `ready`; once `--barrier-size − 1` shards are ready, rank 0
//!   tells each `start T`, `T` = its clock now + [`MARGIN`]; a shard that
//!   connects after that is told `late T`.
//!
//! A shard that misses the barrier fails its run and never starts late:
//! rank 0 when the others are not all there within `--barrier-timeout`; a
//! shard that cannot reach rank 0 within it, is told `late`, sees rank 0
//! close the connection, or receives an instant already past; any of them
//! when the instant has passed by the time its clock would start.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use arbor_engine::time::{nanos_to_secs, Nanos, NANOS_PER_MS, NANOS_PER_SEC};

use crate::options::{StartOptions, UtcNanos};
use crate::Observer;
use arbor_error::Error;

use arbor_runs::config::BarrierRecord;
use arbor_runs::output::utc_stamps;

/// Rank 0 announces the start this long ahead: the shards receive it and
/// warm their connection pools within it.
pub const MARGIN: Nanos = 2 * NANOS_PER_SEC;
/// Offset samples a shard takes.
pub const PINGS: usize = 8;
const HELLO: &str = "arbor-barrier 1";
/// How often a shard retries reaching rank 0 (DNS, a refused connection).
const RETRY: Duration = Duration::from_millis(200);

/// How this run's clock starts.
#[derive(Debug, Clone)]
pub enum Together {
    /// When the run is ready (no flag).
    Alone,
    /// `--start-at`.
    At(UtcNanos),
    /// `--barrier-listen`: rank 0.
    Lead {
        addr: SocketAddr,
        size: u32,
        timeout: Nanos,
    },
    /// `--barrier`: any other shard.
    Join { addr: String, timeout: Nanos },
}

impl Together {
    pub fn of(args: &StartOptions) -> Together {
        let timeout = args.barrier_timeout;
        match (&args.start_at, &args.barrier_listen, &args.barrier) {
            (Some(at), _, _) => Together::At(*at),
            (_, Some(addr), _) => Together::Lead {
                addr: *addr,
                size: args.barrier_size.unwrap_or(1),
                timeout,
            },
            (_, _, Some(addr)) => Together::Join {
                addr: addr.clone(),
                timeout,
            },
            _ => Together::Alone,
        }
    }
}

/// An agreed start: the instant on this shard's clock, and what the run
/// records of it.
#[derive(Debug)]
pub struct Met {
    start_local: UtcNanos,
    record: BarrierRecord,
}

/// Agrees on the start instant: at once for `--start-at` (refused if it
/// has passed), by the barrier otherwise; `None` for a run on its own.
/// Blocks until the barrier is met or missed.
pub fn meet(together: &Together, observer: &dyn Observer) -> Result<Option<Met>, Error> {
    match together {
        Together::Alone => Ok(None),
        Together::At(at) => {
            let now = now_ns();
            if now >= *at {
                return Err(missed(format!(
                    "--start-at {} passed {} s ago",
                    rfc3339(*at),
                    secs(now - at)
                )));
            }
            Ok(Some(Met {
                start_local: *at,
                record: record("start_at", 0, 0, *at, None),
            }))
        }
        Together::Lead {
            addr,
            size,
            timeout,
        } => lead(*addr, *size, *timeout, observer).map(Some),
        Together::Join { addr, timeout } => join(addr, *timeout, observer).map(Some),
    }
}

impl Met {
    /// Sleeps until the start instant and says how late the clock starts;
    /// fails if the instant has already passed (the pool's warming took
    /// longer than the margin).
    pub fn wait(self) -> Result<BarrierRecord, Error> {
        let Met {
            start_local,
            mut record,
        } = self;
        let now = now_ns();
        if now > start_local {
            return Err(missed(format!(
                "the start instant {} had passed {} s before this shard was ready (warming its \
                 connections took longer than the {} s margin)",
                record.start_at,
                secs(now - start_local),
                secs(MARGIN as i64)
            )));
        }
        // Sleep to a millisecond before, then yield to the instant.
        loop {
            let left = start_local - now_ns();
            if left <= 0 {
                break;
            }
            if left > NANOS_PER_MS as i64 {
                thread::sleep(Duration::from_nanos(left as u64 - NANOS_PER_MS));
            } else {
                thread::yield_now();
            }
        }
        record.late_ns = (now_ns() - start_local).max(0) as u64;
        Ok(record)
    }
}

/// Rank 0: waits for `size − 1` shards, then announces the start.
fn lead(
    addr: SocketAddr,
    size: u32,
    timeout: Nanos,
    observer: &dyn Observer,
) -> Result<Met, Error> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| Error::other(format!("barrier: cannot listen on {addr}: {e}")))?;
    let shown = listener.local_addr().map_or(addr, |a| a);
    let others = size.saturating_sub(1) as usize;
    observer.notice(&format!(
        "arbor run: barrier: waiting at {shown} for {others} other shard{} (up to {} s)",
        if others == 1 { "" } else { "s" },
        secs(timeout as i64)
    ));
    let deadline = Instant::now() + Duration::from_nanos(timeout);
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::other(format!("barrier: {shown}: {e}")))?;
    let (ready_tx, ready_rx) = mpsc::channel::<TcpStream>();
    let mut ready = Vec::new();
    while ready.len() < others {
        match listener.accept() {
            Ok((stream, _)) => {
                let tx = ready_tx.clone();
                thread::spawn(move || {
                    if let Ok(stream) = greet(stream, deadline) {
                        let _ = tx.send(stream);
                    }
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(Error::other(format!("barrier: {shown}: {e}"))),
        }
        while let Ok(stream) = ready_rx.try_recv() {
            ready.push(stream);
        }
        if ready.len() < others && Instant::now() >= deadline {
            return Err(missed(format!(
                "{} of the {others} other shards reached the barrier at {shown} within {} s \
                 (--barrier-timeout); no shard starts",
                ready.len(),
                secs(timeout as i64)
            )));
        }
    }
    let start = now_ns() + MARGIN as i64;
    for stream in &mut ready {
        if let Err(e) = writeln!(stream, "start {start}") {
            observer.notice(&format!(
                "warning: barrier: a shard left before the start was announced: {e}"
            ));
        }
    }
    thread::spawn(move || tell_late(listener, start));
    Ok(Met {
        start_local: start,
        record: record("rank0", 0, 0, start, Some(size)),
    })
}

/// One shard at rank 0: its hello and pings until it is ready.
fn greet(stream: TcpStream, deadline: Instant) -> std::io::Result<TcpStream> {
    stream.set_nonblocking(false)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut hello = true;
    loop {
        let line = read_line(&mut reader, deadline)?;
        match line.as_str() {
            HELLO if hello => hello = false,
            "ping" if !hello => writeln!(writer, "pong {}", now_ns())?,
            "ready" if !hello => return Ok(writer),
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not an arbor barrier",
                ))
            }
        }
    }
}

/// After the start: every shard that still arrives is told it is late.
fn tell_late(listener: TcpListener, start: UtcNanos) {
    if listener.set_nonblocking(false).is_err() {
        return;
    }
    for stream in listener.incoming().flatten() {
        thread::spawn(move || {
            // Its hello is read before the answer and the rest until it
            // hangs up: closing with its bytes unread would reset the
            // connection before it reads `late`.
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
            let Ok(mut writer) = stream.try_clone() else {
                return;
            };
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_ok() && writeln!(writer, "late {start}").is_ok() {
                while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {}
            }
        });
    }
}

/// Any shard but rank 0: reaches rank 0, measures the offset, waits for
/// the start.
fn join(addr: &str, timeout: Nanos, observer: &dyn Observer) -> Result<Met, Error> {
    let deadline = Instant::now() + Duration::from_nanos(timeout);
    observer.notice(&format!(
        "arbor run: barrier: meeting rank 0 at {addr} (up to {} s)",
        secs(timeout as i64)
    ));
    let unreachable = |e: String| {
        missed(format!(
            "rank 0's barrier at {addr} did not answer within {} s (--barrier-timeout): {e}",
            secs(timeout as i64)
        ))
    };
    let stream = loop {
        match connect(addr, deadline) {
            Ok(stream) => break stream,
            Err(e) if Instant::now() + RETRY >= deadline => return Err(unreachable(e)),
            Err(_) => thread::sleep(RETRY),
        }
    };
    let lost = |e: std::io::Error| {
        missed(format!(
            "the barrier connection to {addr} failed before the start was announced ({e}); rank \
             0 gave up (a shard missing, or its timeout) or stopped"
        ))
    };
    let mut writer = stream.try_clone().map_err(lost)?;
    let mut reader = BufReader::new(stream);
    writeln!(writer, "{HELLO}").map_err(lost)?;
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..PINGS {
        let sent = now_ns();
        writeln!(writer, "ping").map_err(lost)?;
        let line = read_line(&mut reader, deadline).map_err(lost)?;
        let received = now_ns();
        let theirs = match said(&line) {
            Said::Pong(t) => t,
            Said::Late(t) => return Err(late(t)),
            _ => return Err(lost(bad_line(&line))),
        };
        let rtt = (received - sent).max(0) as u64;
        let offset = theirs - (sent + (received - sent) / 2);
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    let (rtt, offset) = best.unwrap_or((0, 0));
    writeln!(writer, "ready").map_err(lost)?;
    let line = read_line(&mut reader, deadline).map_err(lost)?;
    let start = match said(&line) {
        Said::Start(t) => t,
        Said::Late(t) => return Err(late(t)),
        _ => return Err(lost(bad_line(&line))),
    };
    let start_local = start - offset;
    let now = now_ns();
    if now >= start_local {
        return Err(missed(format!(
            "the start instant {} had passed {} s when it arrived",
            rfc3339(start),
            secs(now - start_local)
        )));
    }
    Ok(Met {
        start_local,
        record: record("peer", offset, rtt, start, None),
    })
}

/// One connection attempt to `addr` (a name is resolved each time: a
/// pod's DNS record may appear late), bounded by the deadline.
fn connect(addr: &str, deadline: Instant) -> Result<TcpStream, String> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .collect();
    let mut last = format!("{addr} resolves to no address");
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&a, left) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(last)
}

/// A line, without its newline, read before the deadline; the end of the
/// connection is an error.
fn read_line(reader: &mut BufReader<TcpStream>, deadline: Instant) -> std::io::Result<String> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(std::io::ErrorKind::TimedOut.into());
    }
    reader.get_ref().set_read_timeout(Some(left))?;
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "closed by rank 0",
        ));
    }
    Ok(line.trim_end().to_string())
}

/// What rank 0 said.
enum Said {
    Pong(UtcNanos),
    Start(UtcNanos),
    Late(UtcNanos),
    Other,
}

fn said(line: &str) -> Said {
    let Some((word, value)) = line.split_once(' ') else {
        return Said::Other;
    };
    let Ok(t) = value.parse::<UtcNanos>() else {
        return Said::Other;
    };
    match word {
        "pong" => Said::Pong(t),
        "start" => Said::Start(t),
        "late" => Said::Late(t),
        _ => Said::Other,
    }
}

fn bad_line(line: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("rank 0 said `{line}`, not the barrier's protocol"),
    )
}

fn late(start: UtcNanos) -> Error {
    missed(format!(
        "this shard arrived after the others had started (at {})",
        rfc3339(start)
    ))
}

/// A missed start: the run fails (exit 1) and does not start.
fn missed(why: String) -> Error {
    Error::other(format!("barrier missed: {why}; this run does not start"))
}

fn record(
    role: &str,
    offset_ns: i64,
    rtt_ns: u64,
    start: UtcNanos,
    size: Option<u32>,
) -> BarrierRecord {
    BarrierRecord {
        role: role.to_string(),
        offset_ns,
        rtt_ns,
        start_at: rfc3339(start),
        size,
        late_ns: 0,
    }
}

/// This machine's UTC clock, ns since the epoch.
fn now_ns() -> UtcNanos {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// RFC 3339 in UTC with nanoseconds: `2026-12-01T12:30:00.000000000Z`.
fn rfc3339(t: UtcNanos) -> String {
    let t = t.max(0) as u64;
    let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(t / NANOS_PER_SEC);
    let stamp = utc_stamps(whole).1;
    let seconds = stamp.trim_end_matches('Z');
    format!("{seconds}.{:09}Z", t % NANOS_PER_SEC)
}

fn secs(ns: i64) -> f64 {
    nanos_to_secs(ns.max(0) as u64)
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
    use super::*;

    #[test]
    fn rfc3339_keeps_the_nanoseconds() {
        let t = 1_709_214_307 * NANOS_PER_SEC as i64 + 250_000_001;
        assert_eq!(rfc3339(t), "2024-02-29T13:45:07.250000001Z");
        assert_eq!(utc_time(&rfc3339(t)), Ok(t));
    }

    #[test]
    fn rank_0_says_only_what_the_protocol_has() {
        assert!(matches!(said("pong 12"), Said::Pong(12)));
        assert!(matches!(said("start -5"), Said::Start(-5)));
        assert!(matches!(said("late 7"), Said::Late(7)));
        for other in ["", "pong", "pong x", "hello 1", "start 1 2"] {
            assert!(matches!(said(other), Said::Other), "{other}");
        }
    }

    #[test]
    fn a_start_at_ahead_is_waited_for() {
        let at = now_ns() + 50 * NANOS_PER_MS as i64;
        let met = meet(&Together::At(at), &crate::Quiet).unwrap().unwrap();
        let record = met.wait().unwrap();
        assert!(now_ns() >= at);
        assert_eq!(record.role, "start_at");
        assert_eq!(record.start_at, rfc3339(at));
    }

    #[test]
    fn a_start_at_in_the_past_is_missed() {
        let e = meet(
            &Together::At(now_ns() - NANOS_PER_SEC as i64),
            &crate::Quiet,
        )
        .unwrap_err();
        assert_eq!(e.kind, arbor_error::Kind::Other);
        assert!(e.message.contains("passed"), "{}", e.message);
    }

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
