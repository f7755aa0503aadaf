//! Starting the shards of a sharded run together (docs/scale-out.md,
//! "Starting together"): `--start-at`, or the start barrier over TCP.
//!
//! Owns the barrier's conversations (rank 0's listener and a shard's
//! connection), who is let in (the token, each index once, the caps on
//! connections and time), the clock-offset measurement and the wait for
//! the start instant; the lines themselves are [`wire`]'s. The run calls
//! [`meet`] before it warms its connection pool and [`Met::wait`] where
//! its clock starts; this module touches nothing else of the run.
//!
//! The conversation ([`wire`] has the lines' grammar):
//! - a shard connects to rank 0 and says `arbor-barrier 2 I/N [TOKEN]`:
//!   its `--shard I/N` (I ≥ 1; N = rank 0's `--barrier-size`) and the
//!   token of `--barrier-token-file`;
//! - [`PINGS`] times it says `ping` and rank 0 answers `pong T`, `T` its
//!   UTC clock in ns; the shard keeps the sample of least round trip and
//!   takes the offset NTP's way: `T − (sent + received) / 2` (rank 0's
//!   clock minus its own);
//! - it says `ready`; once `--barrier-size − 1` shards are ready, rank 0
//!   tells each `start T`, `T` = its clock now + [`MARGIN`]; a shard that
//!   connects after that is told `late T`.
//!
//! Rank 0 answers `refused WHY` and closes the connection when a hello is
//! not the protocol, its token is not rank 0's (compared in constant
//! time), its N is not `--barrier-size` or its index is another shard's
//! already; when a line is longer than [`wire::MAX_LINE`]; when the
//! hello, pings and `ready` take longer than [`GREET`]; and at once when
//! `size − 1 +` [`SPARE`] connections are open. A listen address that is
//! not loopback needs a token (fail closed: [`Together::of`] refuses it).
//!
//! A shard that misses the barrier fails its run and never starts late:
//! rank 0 when the others are not all there within `--barrier-timeout`; a
//! shard that cannot reach rank 0 within it, is refused or told `late`,
//! sees rank 0 close the connection, or receives an instant already past;
//! any of them when the instant has passed by the time its clock would
//! start.

#[cfg(test)]
mod admission_tests;
pub mod wire;

use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use arbor_engine::policy::Shard;
use arbor_engine::time::{nanos_to_secs, Nanos, NANOS_PER_MS, NANOS_PER_SEC};

use crate::options::{StartOptions, UtcNanos};
use crate::Observer;
use arbor_error::Error;

use arbor_runs::config::BarrierRecord;
use arbor_runs::output::utc_stamps;

use wire::Line;
pub use wire::PINGS;

/// Rank 0 announces the start this long ahead: the shards receive it and
/// warm their connection pools within it.
pub const MARGIN: Nanos = 2 * NANOS_PER_SEC;
/// How long rank 0 gives one connection for its hello, pings and `ready`.
/// A shard sends them back to back (a few round trips, milliseconds in a
/// cluster); 10 s is for a loaded machine, and bounds how long a
/// connection that is no shard holds one of the few places.
pub const GREET: Duration = Duration::from_secs(10);
/// Connections rank 0 holds open beyond one per other shard, so a stray
/// or hostile client cannot take every place.
pub const SPARE: usize = 4;
/// How often a shard retries reaching rank 0 (DNS, a refused connection).
const RETRY: Duration = Duration::from_millis(200);
/// How long rank 0 waits for a connection it answered `refused` or `late`
/// to hang up, reading and dropping at most [`DRAIN`] bytes (closing with
/// bytes unread would reset the connection before the answer is read).
const LINGER: Duration = Duration::from_secs(2);
const DRAIN: u64 = (wire::MAX_LINE * (PINGS + 2)) as u64;
/// Refused connections rank 0 tells of; later ones are counted only.
const SHOWN_REFUSALS: usize = 10;

/// The barrier's shared secret (`--barrier-token-file`). Never shown:
/// its `Debug` hides it, and no message holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token as the protocol takes it ([`wire::check_token`]).
    pub fn new(text: &str) -> Result<Token, String> {
        wire::check_token(text)?;
        Ok(Token(text.to_string()))
    }

    /// The first line of `path` (`--barrier-token-file`).
    pub fn from_file(path: &Path) -> Result<Token, Error> {
        const FLAG: &str = "--barrier-token-file";
        let text = arbor_backends::endpoint::secret_from_file(path, FLAG)?;
        Token::new(&text).map_err(|e| Error::input(format!("{FLAG} {}: {e}", path.display())))
    }

    fn matches(&self, given: &str) -> bool {
        wire::same_token(&self.0, given)
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<hidden>)")
    }
}

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
        token: Option<Token>,
    },
    /// `--barrier`: any other shard, `--shard index/count`.
    Join {
        addr: String,
        index: u32,
        count: u32,
        timeout: Nanos,
        token: Option<Token>,
    },
}

impl Together {
    /// The start `args` ask for, for a run of `shard`. Refused (an input
    /// error, exit 2): a barrier without `--shard` (rank 0 is `0/N` with N
    /// its `--barrier-size`, any other shard `I/N` with I ≥ 1); a token
    /// file without a barrier, or one that is unreadable or not a token;
    /// rank 0 on an address that is not loopback without a token.
    pub fn of(args: &StartOptions, shard: Option<Shard>) -> Result<Together, Error> {
        let timeout = args.barrier_timeout;
        let token = match &args.barrier_token_file {
            Some(path) => Some(Token::from_file(path)?),
            None => None,
        };
        let together = match (&args.start_at, &args.barrier_listen, &args.barrier) {
            (Some(at), _, _) => Together::At(*at),
            (_, Some(addr), _) => {
                let size = args.barrier_size.unwrap_or(1);
                if shard.is_none_or(|s| s.index != 0 || s.count != size) {
                    return Err(Error::input(format!(
                        "--barrier-listen is rank 0 of --barrier-size {size}: it needs --shard \
                         0/{size}{}",
                        given(shard)
                    )));
                }
                if token.is_none() && !addr.ip().is_loopback() {
                    return Err(Error::input(format!(
                        "--barrier-listen {addr} is not a loopback address: it needs \
                         --barrier-token-file (every shard given the same token) so that only \
                         the run's shards are let in; or listen on 127.0.0.1"
                    )));
                }
                Together::Lead {
                    addr: *addr,
                    size,
                    timeout,
                    token: token.clone(),
                }
            }
            (_, _, Some(addr)) => match shard {
                Some(Shard { index, count }) if index > 0 => Together::Join {
                    addr: addr.clone(),
                    index,
                    count,
                    timeout,
                    token: token.clone(),
                },
                _ => {
                    return Err(Error::input(format!(
                        "--barrier needs this shard's --shard I/N with I ≥ 1 (shard 0 is rank \
                         0, --barrier-listen){}",
                        given(shard)
                    )))
                }
            },
            _ => Together::Alone,
        };
        if token.is_some() && !matches!(together, Together::Lead { .. } | Together::Join { .. }) {
            return Err(Error::input(
                "--barrier-token-file is for the start barrier: give it with --barrier-listen or \
                 --barrier",
            ));
        }
        Ok(together)
    }
}

/// ", not --shard I/N" of what was given, for the errors of [`Together::of`].
fn given(shard: Option<Shard>) -> String {
    match shard {
        Some(s) => format!(", not --shard {}/{}", s.index, s.count),
        None => String::new(),
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
            token,
        } => {
            let listener = TcpListener::bind(addr)
                .map_err(|e| Error::other(format!("barrier: cannot listen on {addr}: {e}")))?;
            let lead = Lead {
                size: *size,
                timeout: *timeout,
                token: token.clone(),
                greet: GREET,
            };
            lead.run(listener, observer).map(Some)
        }
        Together::Join {
            addr,
            index,
            count,
            timeout,
            token,
        } => {
            let hello = Line::Hello {
                index: *index,
                count: *count,
                token: token.as_ref().map(|t| t.0.as_str()),
            };
            join(addr, &hello.render(), *timeout, observer).map(Some)
        }
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

/// Rank 0's barrier: `size` shards, this one included, within `timeout`;
/// `greet` is [`GREET`] (shorter in tests).
struct Lead {
    size: u32,
    timeout: Nanos,
    token: Option<Token>,
    greet: Duration,
}

/// The indexes of the shards at rank 0's barrier, each held once.
struct Seats(Mutex<Vec<bool>>);

/// Index `.1` held until this is dropped (its connection failed, or the
/// barrier is over).
struct Seat(Arc<Seats>, usize);

impl Seats {
    fn take(seats: &Arc<Seats>, index: u32) -> Option<Seat> {
        let index = usize::try_from(index).ok()?;
        let mut taken = seats.0.lock().unwrap_or_else(|e| e.into_inner());
        match taken.get_mut(index) {
            Some(slot @ false) => {
                *slot = true;
                Some(Seat(Arc::clone(seats), index))
            }
            _ => None,
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut taken = (self.0).0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = taken.get_mut(self.1) {
            *slot = false;
        }
    }
}

/// One of a bounded number of open connections, given back when dropped.
struct Place(Arc<AtomicUsize>);

impl Place {
    fn take(open: &Arc<AtomicUsize>, most: usize) -> Option<Place> {
        open.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < most).then_some(n + 1)
        })
        .ok()
        .map(|_| Place(Arc::clone(open)))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What came of one connection to rank 0.
enum Greeted {
    Ready(TcpStream, Seat, Place),
    Refused(SocketAddr, String),
}

impl Lead {
    /// Waits on `listener` for `size − 1` shards, then announces the
    /// start.
    fn run(self, listener: TcpListener, observer: &dyn Observer) -> Result<Met, Error> {
        let Lead {
            size,
            timeout,
            token,
            greet,
        } = self;
        let shown = listener
            .local_addr()
            .map_err(|e| Error::other(format!("barrier: {e}")))?;
        let others = size.saturating_sub(1) as usize;
        observer.notice(&format!(
            "arbor run: barrier: waiting at {shown} for {others} other shard{} (up to {} s{})",
            if others == 1 { "" } else { "s" },
            secs(timeout as i64),
            if token.is_some() {
                ", with a token"
            } else {
                ""
            }
        ));
        let deadline = Instant::now() + Duration::from_nanos(timeout);
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::other(format!("barrier: {shown}: {e}")))?;
        let seats = Arc::new(Seats(Mutex::new(vec![false; size as usize])));
        let open = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel::<Greeted>();
        let mut ready = Vec::new();
        let mut refusals = 0;
        while ready.len() < others {
            match listener.accept() {
                Ok((stream, peer)) => match Place::take(&open, others + SPARE) {
                    Some(place) => {
                        let (tx, seats, token) = (tx.clone(), Arc::clone(&seats), token.clone());
                        let given = Instant::now();
                        let until = deadline.min(given + greet);
                        thread::spawn(move || {
                            let admitted = admit(&stream, size, token.as_ref(), &seats, until);
                            let greeted = match admitted.map_err(|why| why.said(until - given)) {
                                Ok(seat) => Greeted::Ready(stream, seat, place),
                                Err(why) => {
                                    refuse(stream, &why);
                                    Greeted::Refused(peer, why)
                                }
                            };
                            let _ = tx.send(greeted);
                        });
                    }
                    None => {
                        let why = format!("{} connections are open already", others + SPARE);
                        refuse(stream, &why);
                        refusals += 1;
                        refused_notice(observer, refusals, peer, &why);
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(Error::other(format!("barrier: {shown}: {e}"))),
            }
            while let Ok(greeted) = rx.try_recv() {
                match greeted {
                    Greeted::Ready(stream, seat, place) => ready.push((stream, seat, place)),
                    Greeted::Refused(peer, why) => {
                        refusals += 1;
                        refused_notice(observer, refusals, peer, &why);
                    }
                }
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
        let announce = Line::Start(start).render();
        for (stream, _, _) in &mut ready {
            if let Err(e) = send(stream, &announce) {
                observer.notice(&format!(
                    "warning: barrier: a shard left before the start was announced: {e}"
                ));
            }
        }
        drop(ready);
        thread::spawn(move || tell_late(listener, start, others + SPARE));
        Ok(Met {
            start_local: start,
            record: record("rank0", 0, 0, start, Some(size)),
        })
    }
}

/// Rank 0's note of a refused connection: the first [`SHOWN_REFUSALS`],
/// then one line saying later ones are not shown.
fn refused_notice(observer: &dyn Observer, count: usize, peer: SocketAddr, why: &str) {
    if count <= SHOWN_REFUSALS {
        observer.notice(&format!(
            "warning: barrier: refused a connection from {peer}: {why}"
        ));
    } else if count == SHOWN_REFUSALS + 1 {
        observer.notice("warning: barrier: refusing more connections (not shown)");
    }
}

/// Why a connection was refused: its words, or that its time ran out.
enum Refusal {
    Said(String),
    TimeUp,
}

impl From<String> for Refusal {
    fn from(why: String) -> Refusal {
        Refusal::Said(why)
    }
}

impl From<&str> for Refusal {
    fn from(why: &str) -> Refusal {
        Refusal::Said(why.to_string())
    }
}

impl Refusal {
    /// The words of `refused WHY`, for a connection given `time`.
    fn said(self, time: Duration) -> String {
        match self {
            Refusal::Said(why) => why,
            Refusal::TimeUp => format!(
                "no hello, pings and `ready` within {} s",
                time.as_secs_f64().ceil()
            ),
        }
    }
}

/// One connection at rank 0, until it is ready (its seat held) or
/// refused: the hello of a shard of `size` with rank 0's token and an
/// index not taken, at most [`PINGS`] pings, then `ready`, all before
/// `until`.
fn admit(
    stream: &TcpStream,
    size: u32,
    token: Option<&Token>,
    seats: &Arc<Seats>,
    until: Instant,
) -> Result<Seat, Refusal> {
    let io = |e: std::io::Error| Refusal::Said(format!("the connection failed: {e}"));
    stream.set_nonblocking(false).map_err(io)?;
    let mut writer = stream.try_clone().map_err(io)?;
    let mut reader = BufReader::new(Timed {
        stream: stream.try_clone().map_err(io)?,
        until,
    });
    let mut next = || -> Result<Vec<u8>, Refusal> {
        let line = wire::read_line(&mut reader).map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Refusal::TimeUp,
            _ => Refusal::Said(e.to_string()),
        })?;
        line.ok_or_else(|| "it closed the connection".into())
    };
    let line = next()?;
    let Line::Hello {
        index,
        count,
        token: given,
    } = wire::parse(&line)?
    else {
        return Err("expected a hello `arbor-barrier 2 I/N [TOKEN]` first".into());
    };
    match (token, given) {
        (Some(token), Some(given)) if token.matches(given) => {}
        (Some(_), Some(_)) => return Err("the token is not this barrier's".into()),
        (Some(_), None) => {
            return Err("no token; this barrier needs one (--barrier-token-file)".into())
        }
        (None, Some(_)) => {
            return Err(
                "a token; this barrier has none (give rank 0 the same --barrier-token-file)".into(),
            )
        }
        (None, None) => {}
    }
    if count != size {
        return Err(format!(
            "shard {index}/{count}: this barrier is for {size} shards (--barrier-size)"
        )
        .into());
    }
    if index == 0 {
        return Err(format!("shard 0/{size} is rank 0, this barrier").into());
    }
    let seat = Seats::take(seats, index)
        .ok_or_else(|| format!("shard {index}/{count} is at the barrier already"))?;
    let mut pings = 0;
    loop {
        match wire::parse(&next()?)? {
            Line::Ping if pings < PINGS => {
                pings += 1;
                send(&mut writer, &Line::Pong(now_ns()).render()).map_err(io)?;
            }
            Line::Ping => return Err(format!("more than {PINGS} pings").into()),
            Line::Ready => return Ok(seat),
            _ => return Err("expected `ping` or `ready`".into()),
        }
    }
}

/// Sends `line` and its newline in one write (one segment: a `pong`'s
/// instant is not held back behind its first half).
fn send(writer: &mut impl Write, line: &str) -> std::io::Result<()> {
    writer.write_all(format!("{line}\n").as_bytes())
}

/// Tells a connection `refused WHY` (sanitized) and closes it.
fn refuse(stream: TcpStream, why: &str) {
    answer_and_close(stream, &Line::Refused(&wire::printable(why)).render());
}

/// Writes `line`, stops writing, and waits up to [`LINGER`] for the peer
/// to hang up, dropping at most [`DRAIN`] bytes it still sends.
fn answer_and_close(stream: TcpStream, line: &str) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(LINGER));
    if send(&mut &stream, line).is_err() {
        return;
    }
    let _ = stream.shutdown(Shutdown::Write);
    let drain = Timed {
        stream,
        until: Instant::now() + LINGER,
    };
    let _ = std::io::copy(&mut drain.take(DRAIN), &mut std::io::sink());
}

/// After the start: every shard that still arrives is told it is late
/// (whatever it says; at most `most` connections at once).
fn tell_late(listener: TcpListener, start: UtcNanos, most: usize) {
    if listener.set_nonblocking(false).is_err() {
        return;
    }
    let open = Arc::new(AtomicUsize::new(0));
    let late = Line::Late(start).render();
    for stream in listener.incoming().flatten() {
        let Some(place) = Place::take(&open, most) else {
            continue;
        };
        let late = late.clone();
        thread::spawn(move || {
            let _place = place;
            answer_and_close(stream, &late);
        });
    }
}

/// A connection whose every read ends by `until` (a read past it is
/// `TimedOut`), however the bytes trickle in.
struct Timed {
    stream: TcpStream,
    until: Instant,
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Any shard but rank 0: reaches rank 0, says `hello`, measures the
/// offset, waits for the start.
fn join(addr: &str, hello: &str, timeout: Nanos, observer: &dyn Observer) -> Result<Met, Error> {
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
    let lost = |e: String| {
        missed(format!(
            "the barrier connection to {addr} failed before the start was announced ({e}); rank \
             0 gave up (a shard missing, or its timeout) or stopped"
        ))
    };
    let io = |e: std::io::Error| lost(e.to_string());
    let mut writer = stream.try_clone().map_err(io)?;
    let mut reader = BufReader::new(Timed {
        stream,
        until: deadline,
    });
    // What rank 0 says next: `pong` while pinging, `start` at the end.
    let mut answer = |start: bool| -> Result<UtcNanos, Error> {
        let line = wire::read_line(&mut reader)
            .map_err(io)?
            .ok_or_else(|| lost("closed by rank 0".into()))?;
        match wire::parse(&line) {
            Ok(Line::Pong(t)) if !start => Ok(t),
            Ok(Line::Start(t)) if start => Ok(t),
            Ok(Line::Late(t)) => Err(late(t)),
            Ok(Line::Refused(why)) => Err(missed(format!(
                "rank 0 at {addr} refused this shard: {why}"
            ))),
            Ok(other) => Err(lost(format!("rank 0 said {other:?}, out of turn"))),
            Err(e) => Err(lost(format!("rank 0 said a line not of the protocol: {e}"))),
        }
    };
    send(&mut writer, hello).map_err(io)?;
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..PINGS {
        let sent = now_ns();
        send(&mut writer, &Line::Ping.render()).map_err(io)?;
        let theirs = answer(false)?;
        let received = now_ns();
        let rtt = (received - sent).max(0) as u64;
        let offset = theirs - (sent + (received - sent) / 2);
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    let (rtt, offset) = best.unwrap_or((0, 0));
    send(&mut writer, &Line::Ready.render()).map_err(io)?;
    let start = answer(true)?;
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
