//! The token rule arbor estimates prompt text by, when no tokenizer is
//! given: a vocabulary word is one token, every other byte a quarter of
//! one.
//!
//! arbor synthesizes prompts from a fixed list of words, each with a
//! leading space and each one token in the BPE tokenizers of current
//! models ([`arbor_engine::prompt::VOCABULARY`]). A word here is a space
//! followed by a maximal run of ASCII lowercase letters; it is a
//! vocabulary word when the list has it (looked up packed as an integer
//! of at most eight bytes, so a scan is one pass with no allocation).
//! Everything else (recorded text, punctuation, a cache-bust marker) is
//! "other" bytes, four to a token.
//!
//! Owns the scan only: counting (`emulator/tokens.rs`) and block keys
//! (`server/keys.rs`) both walk text with [`scan`], so they cut the same
//! tokens. Must not: count or hash.

use std::sync::OnceLock;

use arbor_engine::prompt::VOCABULARY;

/// Longest word (leading space included) that can be a vocabulary word.
const MAX_WORD: usize = 8;

/// Bytes of other text per token.
pub const OTHER_BYTES_PER_TOKEN: u32 = 4;

/// The vocabulary, each word packed little-endian into a `u64`, sorted.
fn packed_vocabulary() -> &'static [u64] {
    static PACKED: OnceLock<Vec<u64>> = OnceLock::new();
    PACKED.get_or_init(|| {
        let mut words: Vec<u64> = VOCABULARY
            .iter()
            .filter(|w| w.len() <= MAX_WORD)
            .map(|w| pack(w.as_bytes()))
            .collect();
        words.sort_unstable();
        words
    })
}

fn pack(word: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes[..word.len()].copy_from_slice(word);
    u64::from_le_bytes(bytes)
}

/// A run of a scanned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run<'a> {
    /// One vocabulary word (one token).
    Word(&'a [u8]),
    /// Bytes outside vocabulary words (four to a token).
    Other(&'a [u8]),
}

/// Walks `text` in order, calling `f` for each vocabulary word and each
/// run of other bytes. Every byte is in exactly one run; runs are handed
/// over in order, so their bytes concatenate to `text`.
pub fn scan<'a>(text: &'a [u8], mut f: impl FnMut(Run<'a>)) {
    let vocabulary = packed_vocabulary();
    let mut i = 0;
    let mut other_from = 0;
    while i < text.len() {
        if text[i] != b' ' {
            i += 1;
            continue;
        }
        let end = text[i + 1..]
            .iter()
            .position(|b| !b.is_ascii_lowercase())
            .map_or(text.len(), |p| i + 1 + p);
        let word = &text[i..end];
        if word.len() > 1 && word.len() <= MAX_WORD && vocabulary.binary_search(&pack(word)).is_ok()
        {
            if other_from < i {
                f(Run::Other(&text[other_from..i]));
            }
            f(Run::Word(word));
            other_from = end;
        }
        i = end;
    }
    if other_from < text.len() {
        f(Run::Other(&text[other_from..]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(text: &str) -> Vec<Run<'_>> {
        let mut out = Vec::new();
        scan(text.as_bytes(), |r| out.push(r));
        out
    }

    #[test]
    fn words_and_other_runs_cover_the_text_in_order() {
        assert_eq!(
            runs("ab the theoretical of,"),
            [
                Run::Other(b"ab"),
                Run::Word(b" the"),
                Run::Other(b" theoretical"),
                Run::Word(b" of"),
                Run::Other(b","),
            ]
        );
        assert_eq!(runs(""), []);
        assert_eq!(runs(" "), [Run::Other(b" ")]);
        assert_eq!(runs(" The"), [Run::Other(b" The")]);
        let all: String = VOCABULARY.concat();
        assert_eq!(runs(&all).len(), VOCABULARY.len());
    }
}
