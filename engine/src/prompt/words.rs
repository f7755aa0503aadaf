//! The fast writer of synthesized words: the bytes of
//! [`super::push_block`]'s text, written straight into a byte buffer.
//!
//! Each word of [`VOCABULARY`] sits in a fixed 8-byte slot (zero padded)
//! with its length: a word is written by copying its whole slot and moving
//! on by its length, so the next word overwrites the padding. No per-word
//! length-dependent copy, no UTF-8 or escape checks: the vocabulary is
//! plain ASCII letters after a space (a test asserts it), which JSON carries
//! as is.

use super::{next, VOCABULARY};

/// Bytes of a slot; no word is longer (checked when the table is built).
const SLOT: usize = 8;

/// Words drawn from one SplitMix64 step: seven bits each.
const WORDS_PER_DRAW: usize = 9;

/// Every word of [`VOCABULARY`], zero padded to [`SLOT`] bytes.
const SLOTS: [[u8; SLOT]; 128] = slots();

/// The length in bytes of every word of [`VOCABULARY`].
const LENS: [u8; 128] = lens();

const fn slots() -> [[u8; SLOT]; 128] {
    let mut table = [[0u8; SLOT]; 128];
    let mut i = 0;
    while i < VOCABULARY.len() {
        let word = VOCABULARY[i].as_bytes();
        assert!(word.len() <= SLOT, "a word longer than its slot");
        let mut j = 0;
        while j < word.len() {
            table[i][j] = word[j];
            j += 1;
        }
        i += 1;
    }
    table
}

const fn lens() -> [u8; 128] {
    let mut table = [0u8; 128];
    let mut i = 0;
    while i < VOCABULARY.len() {
        table[i] = VOCABULARY[i].len() as u8;
        i += 1;
    }
    table
}

/// Room [`write_words`] needs for `words` words: a whole slot each.
pub(super) fn room(words: u32) -> usize {
    words as usize * SLOT
}

/// Appends the `words` words drawn from `seed` to `out`: the bytes that
/// `push_words(seed, words, ..)` appends to a `String`.
///
/// Grows `out` by [`room`]`(words)` zeros, writes whole slots into that
/// room and cuts off what the words did not use: with that much capacity
/// spare, `out` is not reallocated.
pub(super) fn write_words(seed: u64, words: u32, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + room(words), 0);
    let buf = &mut out[start..];
    let mut state = seed;
    let mut pos = 0;
    let mut left = words as usize;
    // Whole draws: nine words into a fixed window (the compiler unrolls
    // them). The window fits: `pos` is at most a slot per word written.
    while left >= WORDS_PER_DRAW {
        let mut bits = next(&mut state);
        let window = &mut buf[pos..pos + SLOT * WORDS_PER_DRAW];
        let mut at = 0;
        for _ in 0..WORDS_PER_DRAW {
            let word = (bits & 127) as usize;
            window[at..at + SLOT].copy_from_slice(&SLOTS[word]);
            at += usize::from(LENS[word]);
            bits >>= 7;
        }
        pos += at;
        left -= WORDS_PER_DRAW;
    }
    if left > 0 {
        let mut bits = next(&mut state);
        for _ in 0..left {
            let word = (bits & 127) as usize;
            buf[pos..pos + SLOT].copy_from_slice(&SLOTS[word]);
            pos += usize::from(LENS[word]);
            bits >>= 7;
        }
    }
    out.truncate(start + pos);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_fit_their_slots_and_need_no_json_escaping() {
        for word in VOCABULARY {
            assert!(word.len() <= SLOT, "{word:?}");
            assert!(word.starts_with(' '), "{word:?}");
            assert!(
                word[1..].bytes().all(|b| b.is_ascii_alphanumeric()),
                "{word:?} would need escaping or checking"
            );
            // What serde_json writes for it is the word in quotes.
            assert_eq!(serde_json::to_string(word).unwrap(), format!("\"{word}\""));
        }
    }

    #[test]
    fn the_writer_matches_push_words() {
        for seed in [0, 1, 7, u64::MAX, 0x1234_5678_9abc_def0] {
            for words in [0, 1, 8, 9, 10, 17, 18, 19, 64, 513] {
                let mut text = String::new();
                super::super::push_words(seed, words, &mut text);
                let mut bytes = Vec::with_capacity(4 + room(words));
                bytes.extend_from_slice(b"head");
                let capacity = bytes.capacity();
                write_words(seed, words, &mut bytes);
                assert_eq!(&bytes[..4], b"head");
                assert_eq!(&bytes[4..], text.as_bytes(), "seed {seed} words {words}");
                assert_eq!(bytes.capacity(), capacity, "no reallocation");
            }
        }
    }
}
