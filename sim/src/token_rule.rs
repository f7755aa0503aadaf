//! The token rule arbor estimates prompt text by, when no tokenizer is
//! given: a vocabulary word is one token, every other byte a quarter of
//! one.
//!
//! arbor synthesizes prompts from a fixed list of words, each with a
//! leading space and each one token in the BPE tokenizers of current
//! models ([`arbor_engine::prompt::VOCABULARY`]). A word here is a space
//! followed by a maximal run of ASCII lowercase letters; it is a
//! vocabulary word when the list has it (looked up packed as an integer
//! of at most eight bytes, so a scan is one pass with no allocation), and
//! the scan hands over its index in the list.
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

/// The vocabulary, each word packed little-endian into a `u64` beside its
/// index in [`VOCABULARY`], sorted by the packed word.
fn packed_vocabulary() -> &'static [(u64, u8)] {
    static PACKED: OnceLock<Vec<(u64, u8)>> = OnceLock::new();
    PACKED.get_or_init(|| {
        let mut words: Vec<(u64, u8)> = (0..=u8::MAX)
            .zip(VOCABULARY)
            .filter(|(_, w)| w.len() <= MAX_WORD)
            .map(|(i, w)| (pack(w.as_bytes()), i))
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
    /// One vocabulary word (one token): its bytes and its index in
    /// [`VOCABULARY`].
    Word { bytes: &'a [u8], index: u8 },
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
        let found = (word.len() > 1 && word.len() <= MAX_WORD)
            .then(|| vocabulary.binary_search_by_key(&pack(word), |&(packed, _)| packed))
            .and_then(Result::ok);
        if let Some(at) = found {
            if other_from < i {
                f(Run::Other(&text[other_from..i]));
            }
            f(Run::Word {
                bytes: word,
                index: vocabulary[at].1,
            });
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
                Run::Word {
                    bytes: b" the",
                    index: 0
                },
                Run::Other(b" theoretical"),
                Run::Word {
                    bytes: b" of",
                    index: 1
                },
                Run::Other(b","),
            ]
        );
        assert_eq!(runs(""), []);
        assert_eq!(runs(" "), [Run::Other(b" ")]);
        assert_eq!(runs(" The"), [Run::Other(b" The")]);
        // Every word is found, as its own index (no word is listed twice).
        let all: String = VOCABULARY.concat();
        let indices: Vec<u8> = runs(&all)
            .into_iter()
            .filter_map(|r| match r {
                Run::Word { index, .. } => Some(index),
                Run::Other(_) => None,
            })
            .collect();
        assert_eq!(indices, (0..=127).collect::<Vec<u8>>());
    }
}
