//! Who rank 0's barrier lets in, over loopback TCP in-process: the hello
//! of this protocol with the token and an index not taken, lines within
//! the cap, connections within the cap and the greeting time; and what a
//! shard does with a hostile rank 0.
//!
//! Every read of the raw clients is bounded by [`PATIENCE`]; no test
//! depends on something happening within a short window.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::*;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
/// How long a client waits for rank 0's answer: far more than a loaded
/// 2-core machine needs to answer on loopback; only a failing test waits
/// this long.
const PATIENCE: Duration = Duration::from_secs(30);
/// Rank 0's barrier timeout: longer than any test, which never waits
/// for it.
const TIMEOUT: Nanos = 120 * NANOS_PER_SEC;

/// Rank 0 of `size` shards on a free loopback port, with `token`, giving
/// each connection `greet`.
fn rank0(
    size: u32,
    token: Option<&str>,
    greet: Duration,
) -> (SocketAddr, JoinHandle<Result<Met, Error>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let lead = Lead {
        size,
        timeout: TIMEOUT,
        token: token.map(|t| Token::new(t).expect("token")),
        greet,
    };
    (
        addr,
        thread::spawn(move || lead.run(listener, &crate::Quiet)),
    )
}

/// A raw client of rank 0.
struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn to(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        stream.set_write_timeout(Some(PATIENCE)).expect("timeout");
        Client {
            writer: stream.try_clone().expect("clone"),
            reader: BufReader::new(stream),
        }
    }

    fn say(&mut self, lines: &[&str]) {
        for line in lines {
            writeln!(self.writer, "{line}").expect("write");
        }
    }

    /// The next line rank 0 says; `None` when it closed the connection.
    /// Panics when it says nothing within [`PATIENCE`].
    fn hear(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(line.trim_end().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
            Err(e) => panic!("rank 0 said nothing within {PATIENCE:?}: {e}"),
        }
    }

    /// Rank 0's `refused WHY`, and that it closes the connection after.
    fn refused(&mut self) -> String {
        let line = self.hear().expect("an answer");
        let why = line
            .strip_prefix("refused ")
            .unwrap_or_else(|| panic!("not refused: {line}"))
            .to_string();
        assert_eq!(self.hear(), None, "open after `refused {why}`");
        why
    }
}

fn hello(index: u32, count: u32, token: Option<&str>) -> String {
    Line::Hello {
        index,
        count,
        token,
    }
    .render()
}

#[test]
fn the_old_three_word_protocol_is_not_a_shard() {
    for token in [None, Some(TOKEN)] {
        let (addr, _lead) = rank0(2, token, GREET);
        let mut client = Client::to(addr);
        client.say(&["arbor-barrier 1", "ping", "ready"]);
        let why = client.refused();
        assert!(why.contains("version `1`"), "{why}");
    }
}

#[test]
fn a_shard_without_the_token_or_with_another_is_refused() {
    let (addr, _lead) = rank0(2, Some(TOKEN), GREET);
    let cases = [
        (None, "no token"),
        (
            Some("0123456789abcdef0123456789abcdeX"),
            "not this barrier's",
        ),
        (Some("0123456789abcdef"), "not this barrier's"),
    ];
    for (token, expected) in cases {
        let mut client = Client::to(addr);
        client.say(&[&hello(1, 2, token), "ping"]);
        let why = client.refused();
        assert!(why.contains(expected), "{why}");
    }
    // Rank 0 without a token refuses a shard that has one: their flags
    // differ.
    let (addr, _lead) = rank0(2, None, GREET);
    let mut client = Client::to(addr);
    client.say(&[&hello(1, 2, Some(TOKEN)), "ping"]);
    assert!(client.refused().contains("has none"));
}

#[test]
fn each_index_is_let_in_once_and_only_indexes_of_the_barrier() {
    let (addr, lead) = rank0(3, Some(TOKEN), GREET);
    let mut first = Client::to(addr);
    first.say(&[&hello(1, 3, Some(TOKEN)), "ping"]);
    assert!(first.hear().expect("pong").starts_with("pong "));
    first.say(&["ready"]);
    for (hello, expected) in [
        (
            hello(1, 3, Some(TOKEN)),
            "shard 1/3 is at the barrier already",
        ),
        (hello(0, 3, Some(TOKEN)), "is rank 0"),
        (hello(2, 4, Some(TOKEN)), "this barrier is for 3 shards"),
    ] {
        let mut other = Client::to(addr);
        other.say(&[&hello, "ping"]);
        let why = other.refused();
        assert!(why.contains(expected), "{why}");
    }
    let mut second = Client::to(addr);
    second.say(&[&hello(2, 3, Some(TOKEN)), "ready"]);
    let start = first.hear().expect("start");
    assert!(start.starts_with("start "), "{start}");
    assert_eq!(second.hear(), Some(start));
    let met = lead.join().expect("rank 0").expect("met");
    assert_eq!(met.record.size, Some(3));
}

#[test]
fn more_pings_than_the_protocol_has_are_refused() {
    let (addr, _lead) = rank0(2, None, GREET);
    let mut client = Client::to(addr);
    client.say(&[&hello(1, 2, None)]);
    for _ in 0..PINGS {
        client.say(&["ping"]);
        assert!(client.hear().expect("pong").starts_with("pong "));
    }
    client.say(&["ping"]);
    assert!(client.refused().contains("more than 8 pings"));
}

#[test]
fn a_line_past_the_cap_is_refused_and_not_read_on() {
    let (addr, _lead) = rank0(2, None, GREET);
    let client = Client::to(addr);
    let mut writer = &client.writer;
    let chunk = vec![b'a'; 1 << 20];
    // Rank 0 stops reading at 512 bytes and closes; the sockets' buffers
    // on loopback hold a few MiB, so the writes fail well before 256 MiB
    // (before the fix rank 0 took all of them, 1.34 GB in 6 s).
    let sent = (0..256)
        .take_while(|_| writer.write_all(&chunk).is_ok())
        .count();
    assert!(sent < 256, "rank 0 read {sent} MiB of one line");
}

#[test]
fn connections_past_the_cap_are_refused_at_once() {
    // One other shard: 1 + SPARE connections at once.
    let (addr, _lead) = rank0(2, None, GREET);
    let held: Vec<Client> = (0..=SPARE).map(|_| Client::to(addr)).collect();
    let mut extra = Client::to(addr);
    let why = extra.refused();
    assert!(why.contains("5 connections are open already"), "{why}");
    drop(held);
}

#[test]
fn a_connection_that_sends_nothing_or_trickles_is_closed_after_the_greeting_time() {
    // A greeting time of 1 s (GREET is 10 s) so the test is short: the
    // assertion is that the connection is closed, not how soon.
    let (addr, _lead) = rank0(2, None, Duration::from_secs(1));
    let mut idle = Client::to(addr);
    let why = idle.refused();
    assert!(
        why.contains("no hello, pings and `ready` within 1 s"),
        "{why}"
    );
    // One byte every 100 ms, never a newline: every read is within the
    // greeting time, the line is not.
    let mut trickle = Client::to(addr);
    let mut closed = false;
    for _ in 0..300 {
        if trickle.writer.write_all(b"a").is_err() {
            closed = true;
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    assert!(closed || trickle.hear().is_some_and(|l| l.starts_with("refused ")));
}

#[test]
fn shards_with_the_token_meet() {
    let (addr, lead) = rank0(3, Some(TOKEN), GREET);
    let token = Some(Token::new(TOKEN).expect("token"));
    let peers: Vec<_> = (1..3)
        .map(|index| {
            let together = Together::Join {
                addr: addr.to_string(),
                index,
                count: 3,
                timeout: TIMEOUT,
                token: token.clone(),
            };
            thread::spawn(move || meet(&together, &crate::Quiet))
        })
        .collect();
    let lead = lead.join().expect("rank 0").expect("met");
    for peer in peers {
        let met = peer.join().expect("peer").expect("met").expect("a start");
        assert_eq!(met.record.role, "peer");
        assert_eq!(met.record.start_at, lead.record.start_at);
    }
}

#[test]
fn a_refused_shard_fails_saying_why_and_never_the_token() {
    let (addr, _lead) = rank0(2, Some(TOKEN), GREET);
    let wrong = "fedcba9876543210fedcba9876543210";
    let together = Together::Join {
        addr: addr.to_string(),
        index: 1,
        count: 2,
        timeout: TIMEOUT,
        token: Some(Token::new(wrong).expect("token")),
    };
    let e = meet(&together, &crate::Quiet).unwrap_err();
    assert!(e.message.contains("refused this shard"), "{}", e.message);
    assert!(e.message.contains("not this barrier's"), "{}", e.message);
    assert!(!e.message.contains(wrong) && !e.message.contains(TOKEN));
    assert!(!format!("{together:?}").contains(wrong));
}

#[test]
fn a_shard_reads_no_more_than_a_line_of_a_hostile_rank_0() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let chunk = vec![b'7'; 1 << 16];
            while stream.write_all(&chunk).is_ok() {}
        }
    });
    let together = Together::Join {
        addr: addr.to_string(),
        index: 1,
        count: 2,
        timeout: TIMEOUT,
        token: None,
    };
    let e = meet(&together, &crate::Quiet).unwrap_err();
    assert!(e.message.contains("longer than 512 bytes"), "{}", e.message);
}

/// The flags, as the CLI gives them.
fn start(listen: Option<&str>, join: Option<&str>, token: Option<&Path>) -> StartOptions {
    StartOptions {
        barrier_listen: listen.map(|a| a.parse().expect("addr")),
        barrier_size: listen.map(|_| 3),
        barrier: join.map(str::to_string),
        barrier_token_file: token.map(Path::to_path_buf),
        ..StartOptions::default()
    }
}

const fn shard(index: u32) -> Option<Shard> {
    Some(Shard { index, count: 3 })
}

#[test]
fn a_barrier_beyond_loopback_needs_a_token_and_every_barrier_an_index() {
    let dir = std::env::temp_dir().join(format!("arbor-barrier-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).expect("write");
    let input = |args: &StartOptions, shard: Option<Shard>| {
        let e = Together::of(args, shard).unwrap_err();
        assert!(e.is_input(), "{}", e.message);
        e.message
    };
    // Fail closed: not loopback, no token.
    let e = input(&start(Some("0.0.0.0:7700"), None, None), shard(0));
    assert!(e.contains("needs --barrier-token-file"), "{e}");
    let lead = Together::of(&start(Some("0.0.0.0:7700"), None, Some(&file)), shard(0));
    assert!(matches!(lead, Ok(Together::Lead { token: Some(_), .. })));
    assert!(!format!("{lead:?}").contains(TOKEN));
    let lead = Together::of(&start(Some("127.0.0.1:7700"), None, None), shard(0));
    assert!(matches!(lead, Ok(Together::Lead { token: None, .. })));
    // The index.
    assert!(input(&start(Some("127.0.0.1:7700"), None, None), None).contains("--shard 0/3"));
    assert!(input(&start(Some("127.0.0.1:7700"), None, None), shard(1)).contains("not --shard 1/3"));
    assert!(input(&start(None, Some("h:1"), None), None).contains("I ≥ 1"));
    assert!(input(&start(None, Some("h:1"), None), shard(0)).contains("I ≥ 1"));
    assert!(matches!(
        Together::of(&start(None, Some("h:1"), Some(&file)), shard(2)),
        Ok(Together::Join {
            index: 2,
            count: 3,
            token: Some(_),
            ..
        })
    ));
    // A token file without a barrier, or not a token: refused, its text
    // never shown.
    assert!(input(&start(None, None, Some(&file)), None).contains("for the start barrier"));
    std::fs::write(&file, "short secret\n").expect("write");
    let e = input(&start(None, Some("h:1"), Some(&file)), shard(1));
    assert!(
        e.contains("visible ASCII") && !e.contains("short secret"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
