//! The start barrier's wire format (docs/scale-out.md, "The barrier's
//! protocol"): one text line at a time, each at most [`MAX_LINE`] bytes
//! with its newline. Owns the lines' grammar, their parser and the
//! bounded line reader both ends use, and the token comparison; it does
//! no network I/O of its own (the fuzz target `barrier` feeds it bytes).
//!
//! A shard says:
//! - `arbor-barrier 2 I/N` or `arbor-barrier 2 I/N TOKEN`: its hello, its
//!   `--shard I/N` and rank 0's shared token when it has one;
//! - `ping` (at most [`PINGS`] times), then `ready`.
//!
//! Rank 0 says `pong T`, `start T` or `late T` (`T` its UTC clock in ns,
//! an integer), or `refused WHY` before it closes the connection.

use std::io::{self, BufRead, Read};

use crate::options::UtcNanos;

/// The protocol's version, the second word of a hello.
pub const VERSION: u32 = 2;
/// The longest line, its newline included. A hello with the longest
/// token (`MAX_TOKEN`) and index fits with room to spare.
pub const MAX_LINE: usize = 512;
/// A token's length in bytes, at least and at most.
pub const MIN_TOKEN: usize = 16;
pub const MAX_TOKEN: usize = 256;
/// Offset samples a shard takes: `ping` lines rank 0 answers.
pub const PINGS: usize = 8;

/// One line of the protocol, either way.
#[derive(Clone, PartialEq, Eq)]
pub enum Line<'a> {
    /// A shard's first line: its index `I` of `N` shards, and the token.
    Hello {
        index: u32,
        count: u32,
        token: Option<&'a str>,
    },
    Ping,
    Ready,
    Pong(UtcNanos),
    Start(UtcNanos),
    Late(UtcNanos),
    /// Rank 0 refuses the shard, and says why.
    Refused(&'a str),
}

/// Never shows a hello's token.
impl std::fmt::Debug for Line<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Line::Hello {
                index,
                count,
                token,
            } => write!(
                f,
                "Hello {{ index: {index}, count: {count}, token: {} }}",
                if token.is_some() { "<given>" } else { "none" }
            ),
            Line::Ping => write!(f, "Ping"),
            Line::Ready => write!(f, "Ready"),
            Line::Pong(t) => write!(f, "Pong({t})"),
            Line::Start(t) => write!(f, "Start({t})"),
            Line::Late(t) => write!(f, "Late({t})"),
            Line::Refused(why) => write!(f, "Refused({why:?})"),
        }
    }
}

impl Line<'_> {
    /// The line as sent, without its newline.
    pub fn render(&self) -> String {
        match self {
            Line::Hello {
                index,
                count,
                token: None,
            } => format!("arbor-barrier {VERSION} {index}/{count}"),
            Line::Hello {
                index,
                count,
                token: Some(token),
            } => format!("arbor-barrier {VERSION} {index}/{count} {token}"),
            Line::Ping => "ping".to_string(),
            Line::Ready => "ready".to_string(),
            Line::Pong(t) => format!("pong {t}"),
            Line::Start(t) => format!("start {t}"),
            Line::Late(t) => format!("late {t}"),
            Line::Refused(why) => format!("refused {why}"),
        }
    }
}

/// What the protocol has, for errors.
const EXPECTED: &str = "expected `arbor-barrier 2 I/N [TOKEN]`, `ping`, `ready`, `pong T`, \
                        `start T`, `late T` or `refused WHY`";

/// One line, without its newline (a `\r` before it is allowed). The
/// error says what was expected and never repeats the line (a hello may
/// hold a token).
pub fn parse(line: &[u8]) -> Result<Line<'_>, String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = std::str::from_utf8(line).map_err(|_| format!("not UTF-8 text; {EXPECTED}"))?;
    if let Some(why) = text.strip_prefix("refused ") {
        // Printable only, as rank 0 sends it: no terminal escapes, and a
        // `\r` kept would not survive rendering and parsing again.
        if !why.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
            return Err("a refusal's words are printable ASCII".to_string());
        }
        return Ok(Line::Refused(why));
    }
    let words: Vec<&str> = text.split(' ').collect();
    match words.as_slice() {
        ["ping"] => Ok(Line::Ping),
        ["ready"] => Ok(Line::Ready),
        ["pong", t] => instant(t).map(Line::Pong),
        ["start", t] => instant(t).map(Line::Start),
        ["late", t] => instant(t).map(Line::Late),
        ["arbor-barrier", version, rest @ ..] => hello(version, rest),
        _ => Err(EXPECTED.to_string()),
    }
}

/// A hello's words after `arbor-barrier`.
fn hello<'a>(version: &str, rest: &[&'a str]) -> Result<Line<'a>, String> {
    if *version != VERSION.to_string() {
        return Err(format!(
            "a hello of barrier protocol version `{}`; this arbor speaks version {VERSION} (give \
             every shard the same arbor)",
            printable(&version.chars().take(16).collect::<String>())
        ));
    }
    let (shard, token) = match rest {
        [shard] => (*shard, None),
        [shard, token] => (*shard, Some(*token)),
        _ => return Err("a hello: expected `arbor-barrier 2 I/N [TOKEN]`".to_string()),
    };
    let (index, count) = shard
        .split_once('/')
        .and_then(|(i, n)| Some((number(i)?, number(n)?)))
        .filter(|(i, n)| i < n)
        .ok_or("a hello: expected the shard as `I/N`, 0 ≤ I < N")?;
    if let Some(token) = token {
        check_token(token)?;
    }
    Ok(Line::Hello {
        index,
        count,
        token,
    })
}

/// A token is [`MIN_TOKEN`] to [`MAX_TOKEN`] visible ASCII characters
/// (no space). The error never shows it.
pub fn check_token(token: &str) -> Result<(), String> {
    let visible = token.bytes().all(|b| b.is_ascii_graphic());
    if !visible || !(MIN_TOKEN..=MAX_TOKEN).contains(&token.len()) {
        return Err(format!(
            "a token must be {MIN_TOKEN} to {MAX_TOKEN} visible ASCII characters without spaces \
             (`openssl rand -hex 32` makes one)"
        ));
    }
    Ok(())
}

/// Decimal digits only: no sign, no spaces.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `T`: an optional `-` and decimal digits, within an i64.
fn instant(text: &str) -> Result<UtcNanos, String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("expected an instant `T`: integer nanoseconds since the Unix epoch".into());
    }
    text.parse()
        .map_err(|_| "an instant `T` out of range (nanoseconds within an i64)".to_string())
}

/// The next line of `reader`, without its newline; `None` at the end of
/// the stream. Reads at most [`MAX_LINE`] bytes: a longer line (or an end
/// after bytes without a newline) is an error, and nothing past the cap
/// is read.
pub fn read_line<R: BufRead>(reader: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    reader
        .by_ref()
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.pop() != Some(b'\n') {
        let why = if line.len() + 1 >= MAX_LINE {
            format!("a line longer than {MAX_LINE} bytes")
        } else {
            "a line cut by the end of the connection".to_string()
        };
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    }
    Ok(Some(line))
}

/// Whether `given` is `expected`, in a time that depends only on
/// `expected`'s length (not on where they differ).
pub fn same_token(expected: &str, given: &str) -> bool {
    let given = given.as_bytes();
    let mut diff = u8::from(expected.len() != given.len());
    for (i, e) in expected.bytes().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

/// `text` with every character but visible ASCII and the space as `?`,
/// for a message that shows what a peer sent (no terminal escapes).
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef";

    #[test]
    fn every_line_renders_and_parses_back() {
        for line in [
            Line::Hello {
                index: 1,
                count: 4,
                token: Some(TOKEN),
            },
            Line::Hello {
                index: 0,
                count: 1,
                token: None,
            },
            Line::Ping,
            Line::Ready,
            Line::Pong(12),
            Line::Start(-5),
            Line::Late(i64::MAX),
            Line::Refused("shard 1/4 is already at the barrier"),
        ] {
            let text = line.render();
            assert_eq!(parse(text.as_bytes()), Ok(line.clone()), "{text}");
            assert_eq!(parse(format!("{text}\r").as_bytes()), Ok(line), "{text}");
        }
    }

    #[test]
    fn not_the_protocol_is_an_error_that_does_not_repeat_the_line() {
        for bad in [
            &b""[..],
            b"pong",
            b"pong x",
            b"pong +5",
            b"pong 99999999999999999999",
            b"start 1 2",
            b"hello 1",
            b"arbor-barrier 1",
            b"arbor-barrier 2",
            b"arbor-barrier 2 1/1",
            b"arbor-barrier 2 4/2",
            b"arbor-barrier 2 -1/2",
            b"arbor-barrier 2 1/2 short",
            b"arbor-barrier 2 1/2 0123456789abcdef extra",
            b"arbor-barrier 2 1/2  0123456789abcdef",
            b"\xff\xfe",
            b"refused shard 1/4 \r\r",
            b"refused \x1b[2Jgone",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(!e.contains(TOKEN), "{e}");
        }
        let e = parse(b"arbor-barrier 2 1/2 0123456789abcde\x7f").unwrap_err();
        assert!(e.contains("visible ASCII"), "{e}");
        assert!(
            format!("{:?}", parse(b"arbor-barrier 2 1/2 0123456789abcdef")).contains("<given>")
        );
        assert!(!format!("{:?}", parse(b"arbor-barrier 2 1/2 0123456789abcdef")).contains(TOKEN));
    }

    #[test]
    fn a_line_past_the_cap_is_refused_after_reading_only_the_cap() {
        let mut long = vec![b'a'; 10 * MAX_LINE];
        long.extend_from_slice(b"\nping\n");
        let mut reader = io::Cursor::new(&long);
        let e = read_line(&mut reader).unwrap_err();
        assert!(e.to_string().contains("longer than 512 bytes"), "{e}");
        assert_eq!(reader.position(), MAX_LINE as u64);
        // The longest line that fits is read whole.
        let mut fits = vec![b'a'; MAX_LINE - 1];
        fits.push(b'\n');
        let mut reader = io::Cursor::new(&fits);
        assert_eq!(read_line(&mut reader).unwrap().unwrap().len(), MAX_LINE - 1);
        assert_eq!(read_line(&mut reader).unwrap(), None);
        let e = read_line(&mut io::Cursor::new(b"ping")).unwrap_err();
        assert!(e.to_string().contains("cut by the end"), "{e}");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token(TOKEN, TOKEN));
        assert!(!same_token(TOKEN, "0123456789abcdeF"));
        assert!(!same_token(TOKEN, "0123456789abcde"));
        assert!(!same_token(TOKEN, "0123456789abcdef0"));
        assert!(!same_token(TOKEN, ""));
    }
}
