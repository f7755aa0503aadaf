//! The shards' `records.jsonl` merged into one, streaming: one reader per
//! shard and a heap of their next lines, keyed by the time each request
//! ended (its `done_s`, else its last stamp), ties by shard index. A shard
//! writes its records as its driver handles their ends, so each file is
//! in that order (to within the microseconds two ends on different
//! connections can swap) and the merge is too; never more than one line
//! per shard is held.
//!
//! Owns the merged file's ids: a shard numbers its requests and plays from
//! 0, so two shards' ids collide. Request `r` and play `p` of shard `I` of
//! `N` become `r·N + I` and `p·N + I`: unique, and for open-loop plays
//! (kept by their index `k ≡ I (mod N)` in the unsharded plan, in order)
//! `p·N + I` is the play's index in the unsharded plan. Each line is
//! otherwise copied as the shard wrote it: its times stay on the shard's
//! own clock, whose start the barrier agreed (`config.shard.shards[].barrier`
//! says how closely). Every line read is handed to a
//! [`Derived`](crate::summarize::Derived) (the peaks of the union) with its
//! merged play.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::record::secs_ns as ns;
use crate::record_line::{need, RecordLine};
use crate::records_file::{Lines, Reader, RECORDS_FILE};
use crate::seen::{PlayRecords, RequestIds};
use crate::summarize::Derived;
use arbor_error::Error;

/// A shard's position and the shard count: how its ids become global.
#[derive(Debug, Clone, Copy)]
struct Stripe {
    index: u32,
    count: u32,
}

impl Stripe {
    /// The merged id of local id `local`; `None` when it would not fit in
    /// 64 bits (an id no run numbers, but a records file may hold).
    fn global(self, local: u64) -> Option<u64> {
        local
            .checked_mul(u64::from(self.count))?
            .checked_add(u64::from(self.index))
    }
}

/// The ids a line is rewritten by.
struct Ids {
    request: u64,
    play: u32,
}

/// A line read, rewritten, with its merge key.
struct Next {
    ended: u64,
    text: String,
}

/// Merges the records of `dirs` (shard `i` of `dirs.len()` at position
/// `i`) into `out`, feeding `derived`; returns what each reader found.
/// `tree_turns` is `run.json`'s: a play with more records than its tree's
/// turns, or a request id twice, is refused naming the shard's line.
pub fn merge(
    dirs: &[&Path],
    out: &Path,
    tree_turns: &[u32],
    derived: &mut Derived,
) -> Result<Vec<Lines>, Error> {
    let count = dirs.len() as u32;
    let mut seen = Seen {
        requests: RequestIds::default(),
        plays: PlayRecords::new(tree_turns),
    };
    let mut readers = Vec::with_capacity(dirs.len());
    for dir in dirs {
        readers.push(Reader::open(&dir.join(RECORDS_FILE))?);
    }
    let file = File::create(out)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", out.display())))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let write_err =
        |e: std::io::Error| Error::other(format!("{}: cannot write: {e}", out.display()));
    let mut pending: Vec<Option<String>> = vec![None; dirs.len()];
    let mut heap = BinaryHeap::with_capacity(dirs.len());
    let mut pull = |shard: usize,
                    readers: &mut Vec<Reader>,
                    pending: &mut Vec<Option<String>>,
                    heap: &mut BinaryHeap<Reverse<(u64, usize)>>|
     -> Result<(), Error> {
        let stripe = Stripe {
            index: shard as u32,
            count,
        };
        if let Some(next) = readers[shard].next(|_, text| read(text, stripe, &mut seen, derived))? {
            heap.push(Reverse((next.ended, shard)));
            pending[shard] = Some(next.text);
        }
        Ok(())
    };
    for shard in 0..dirs.len() {
        pull(shard, &mut readers, &mut pending, &mut heap)?;
    }
    while let Some(Reverse((_, shard))) = heap.pop() {
        if let Some(text) = pending[shard].take() {
            writer.write_all(text.as_bytes()).map_err(write_err)?;
            writer.write_all(b"\n").map_err(write_err)?;
        }
        pull(shard, &mut readers, &mut pending, &mut heap)?;
    }
    writer.flush().map_err(write_err)?;
    Ok(readers.into_iter().map(|r| r.found).collect())
}

/// The merged ids seen so far.
struct Seen {
    requests: RequestIds,
    plays: PlayRecords,
}

/// A shard's line with its ids made global (checked against those `seen`),
/// its key, and the line as the summary sees it handed to `derived`.
fn read(
    text: &str,
    stripe: Stripe,
    seen: &mut Seen,
    derived: &mut Derived,
) -> Result<Next, String> {
    let line = RecordLine::parse(text)?;
    let itl = line.itl_s.values()?;
    let mut facts = line.facts(&itl)?;
    let ids = Ids {
        request: need(line.request, "request")?,
        play: facts.play,
    };
    let request = stripe.global(ids.request).ok_or_else(|| {
        format!(
            "request {} is too large to merge (times {} shards it passes 64 bits)",
            ids.request, stripe.count
        )
    })?;
    let play = stripe
        .global(u64::from(ids.play))
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| format!("play {} is too large to merge", ids.play))?;
    seen.requests.add(Some(request))?;
    if !facts.warmup {
        seen.plays.add(play, facts.tree_index)?;
    }
    let text = rewrite(text, &ids, request, play)?;
    let dispatched = ns(facts.dispatched_s);
    let ended = line
        .done_s
        .or(line.sent_s)
        .map_or(dispatched, ns)
        .max(dispatched);
    facts.play = play;
    derived.add(&facts);
    Ok(Next { ended, text })
}

/// `text` with its `request` and `play` replaced, the rest as the shard
/// wrote it (spaces included: a record re-serialized by another program
/// reads as every other reader reads it). Each is the number of a key of
/// the line's top-level object, checked against the parsed `ids` before
/// anything is replaced.
fn rewrite(text: &str, ids: &Ids, request: u64, play: u32) -> Result<String, String> {
    let unexpected = || {
        "expected a record of `arbor run`: an object with one top-level \"request\": N and \
         \"play\": N"
            .to_string()
    };
    let at_request = top_level_value(text, "request").ok_or_else(unexpected)?;
    let at_play = top_level_value(text, "play").ok_or_else(unexpected)?;
    if text[at_request.clone()] != ids.request.to_string()
        || text[at_play.clone()] != ids.play.to_string()
    {
        return Err(unexpected());
    }
    let mut spans = [
        (at_request, request.to_string()),
        (at_play, play.to_string()),
    ];
    spans.sort_by_key(|(span, _)| span.start);
    let mut out = String::with_capacity(text.len() + 16);
    let mut from = 0;
    for (span, value) in spans {
        out.push_str(&text[from..span.start]);
        out.push_str(&value);
        from = span.end;
    }
    out.push_str(&text[from..]);
    Ok(out)
}

/// Where the value of `key` in the top-level object of `text` is (its
/// text without the spaces around it), for a value that holds no object,
/// array or string (a number); `None` when the object has no such key.
fn top_level_value(text: &str, key: &str) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    // At depth 1, whether the next string is a key.
    let mut key_next = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let name = text.get(start..i)?;
                if depth == 1 && key_next && name == key {
                    let mut v = i + 1;
                    while v < bytes.len() && (bytes[v].is_ascii_whitespace() || bytes[v] == b':') {
                        v += 1;
                    }
                    let mut end = v;
                    while end < bytes.len() && !matches!(bytes[end], b',' | b'}') {
                        end += 1;
                    }
                    let value = text.get(v..end)?.trim_end();
                    return Some(v..v + value.len());
                }
                key_next = false;
            }
            b'{' | b'[' => {
                depth += 1;
                key_next = depth == 1 && bytes[i] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => key_next = true,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_rewritten_in_place_and_nothing_else() {
        let text = r#"{"request":3,"tree":"t,\"play\":9,","tree_index":0,"agent":"a","turn":0,"copy":0,"lane":null,"play":1,"warmup":false}"#;
        let ids = Ids {
            request: 3,
            play: 1,
        };
        let stripe = Stripe { index: 2, count: 3 };
        let (r, p) = (stripe.global(3).unwrap(), stripe.global(1).unwrap() as u32);
        assert_eq!((r, p), (11, 5));
        assert_eq!(
            rewrite(text, &ids, r, p).ok().as_deref(),
            Some(
                r#"{"request":11,"tree":"t,\"play\":9,","tree_index":0,"agent":"a","turn":0,"copy":0,"lane":null,"play":5,"warmup":false}"#
            )
        );
        // Spaced and reordered, as another program re-serializes a line.
        let spaced = r#"{ "tree": "t", "play" : 1 , "request": 3, "x": {"play": 1} }"#;
        assert_eq!(
            rewrite(spaced, &ids, r, p).ok().as_deref(),
            Some(r#"{ "tree": "t", "play" : 5 , "request": 11, "x": {"play": 1} }"#)
        );
        // A nested "request" is not the line's.
        let nested = r#"{"x":{"request":3},"play":1}"#;
        assert!(rewrite(nested, &ids, r, p).is_err());
    }

    #[test]
    fn stripes_make_every_shards_ids_distinct() {
        let mut seen = std::collections::BTreeSet::new();
        for index in 0..3 {
            for local in 0..50 {
                assert!(seen.insert(Stripe { index, count: 3 }.global(local).unwrap()));
            }
        }
        assert_eq!(seen.len(), 150);
        assert_eq!(seen.iter().next_back(), Some(&149));
    }

    #[test]
    fn an_id_too_large_to_renumber_is_refused_not_wrapped() {
        // 2^63 + 5 times 2 shards wrapped to 10: a duplicate of a real id.
        let stripe = Stripe { index: 0, count: 2 };
        assert_eq!(stripe.global((1 << 63) + 5), None);
        assert_eq!(
            Stripe { index: 1, count: 2 }.global(u64::MAX / 2),
            Some(u64::MAX)
        );
        let line = r#"{"request":0,"tree":"t","tree_index":0,"agent":"a","turn":0,"copy":0,"lane":null,"play":0,"warmup":false,"status":"ok","eligible_s":0.0,"dispatched_s":0.0,"sent_s":0.001,"headers_s":0.002,"first_byte_s":0.003,"first_content_s":0.003,"done_s":0.004,"queue_wait_s":0.0,"lateness_s":0.001,"ttft_s":0.002,"e2e_s":0.003,"tpot_s":null,"itl_s":[],"planned_input_tokens":10,"planned_output_tokens":1,"input_tokens":10,"input_tokens_source":"usage","output_tokens":1,"output_tokens_source":"usage","cached_tokens":0,"http_status":200,"attempts":1,"resends":0,"error":null}"#;
        let mut derived = Derived::default();
        let mut seen = Seen {
            requests: RequestIds::default(),
            plays: PlayRecords::new(&[]),
        };
        assert!(
            read(line, stripe, &mut seen, &mut derived).is_ok(),
            "the line reads"
        );
        let text = line.replacen(
            r#""request":0"#,
            &format!(r#""request":{}"#, (1u64 << 63) + 5),
            1,
        );
        let e = read(&text, stripe, &mut seen, &mut derived)
            .err()
            .unwrap_or_default();
        assert!(e.contains("is too large to merge"), "{e}");

        // Issue 27, item 2: a shard's line there twice is refused, and so
        // is a third record of a play whose tree has two turns.
        let mut seen = Seen {
            requests: RequestIds::default(),
            plays: PlayRecords::new(&[2]),
        };
        assert!(read(line, stripe, &mut seen, &mut derived).is_ok());
        let e = read(line, stripe, &mut seen, &mut derived)
            .err()
            .unwrap_or_default();
        assert!(e.contains("request 0 is recorded twice"), "{e}");
        let second = line.replacen(r#""request":0"#, r#""request":1"#, 1);
        let third = line.replacen(r#""request":0"#, r#""request":2"#, 1);
        assert!(read(&second, stripe, &mut seen, &mut derived).is_ok());
        let e = read(&third, stripe, &mut seen, &mut derived)
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("play 0 has more records than the 2 turns"),
            "{e}"
        );
    }
}
