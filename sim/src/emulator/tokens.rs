//! Prompt token counting: how many tokens the emulator says a prompt's
//! text holds (`usage.prompt_tokens`).
//!
//! arbor synthesizes prompts from a fixed list of words, each with a
//! leading space and each one token in the BPE tokenizers of current
//! models ([`arbor_engine::prompt::VOCABULARY`]). Such a word counts one
//! token here, so a synthesized prompt has exactly the token count its
//! plan gave it. Every other byte (recorded text, punctuation, a
//! cache-bust marker) is counted at four bytes a token, rounded up once
//! per prompt: `tokens = vocabulary words + ceil(other bytes / 4)`.
//!
//! A cache hit is counted on the same scale: the cached bytes times the
//! prompt's tokens per counted byte ([`TokenCount::tokens_in`]), which is
//! exactly 64 tokens a 256-byte block for text with no vocabulary words.
//!
//! Words and other bytes are told apart by `crate::token_rule` (the scan
//! the server model's block keys walk too).
//!
//! With a [`PromptTokenizer`] (`arbor emulate --tokenizer FILE`, or `arbor
//! run --tokenizer FILE` against the built-in emulator) every piece of
//! text is counted by it instead, piece by piece as arbor's plan counts
//! recorded messages; a cache hit then scales by the same tokens per byte.
//! The emulator knows only the [`TextTokenizer`] trait: the caller brings
//! the tokenizer. Without one, no text is tokenized.
//! Owns nothing else: reading the body is `request.rs`'s job.

use std::fmt;
use std::sync::Arc;

use crate::token_rule::{scan, Run, OTHER_BYTES_PER_TOKEN};

/// Counts the tokens of a piece of text exactly (a model's tokenizer).
pub trait TextTokenizer: Send + Sync {
    /// Tokens of `text`, special tokens not added.
    fn count(&self, text: &str) -> u32;
}

/// The tokenizer the emulator counts prompt text with, and its name for
/// the emulator's description (a path).
#[derive(Clone)]
pub struct PromptTokenizer {
    pub name: String,
    pub tokenizer: Arc<dyn TextTokenizer>,
}

impl fmt::Debug for PromptTokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptTokenizer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Two are equal when they are the same tokenizer under the same name.
impl PartialEq for PromptTokenizer {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.tokenizer, &other.tokenizer)
    }
}

/// A running count over the pieces of one prompt.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenCount {
    /// Vocabulary words seen: one token each.
    words: u64,
    /// Bytes outside vocabulary words: four to a token.
    other_bytes: u64,
    /// Bytes of the vocabulary words.
    words_bytes: u64,
    /// Tokens a [`TextTokenizer`] counted, and the bytes it counted.
    exact: u64,
    exact_bytes: u64,
}

impl TokenCount {
    /// Counts the text `s` with `tokenizer` when there is one, else as
    /// [`TokenCount::text`] does.
    pub(crate) fn text_with(&mut self, s: &str, tokenizer: Option<&dyn TextTokenizer>) {
        match tokenizer {
            Some(t) => {
                self.exact += u64::from(t.count(s));
                self.exact_bytes += s.len() as u64;
            }
            None => self.text(s),
        }
    }

    /// Counts the text `s` (one message's content, one content part, or a
    /// completion prompt).
    pub(crate) fn text(&mut self, s: &str) {
        scan(s.as_bytes(), |run| match run {
            Run::Word { bytes, .. } => {
                self.words += 1;
                self.words_bytes += bytes.len() as u64;
            }
            Run::Other(bytes) => self.other_bytes += bytes.len() as u64,
        });
    }

    /// Bytes counted at four to a token (token ids of a completion prompt
    /// are four bytes each, so they count one token per id).
    pub(crate) fn bytes(&mut self, n: u64) {
        self.other_bytes += n;
    }

    /// The prompt's tokens, saturating at `u32::MAX`.
    pub(crate) fn tokens(&self) -> u32 {
        (self.words + self.other_bytes.div_ceil(u64::from(OTHER_BYTES_PER_TOKEN)) + self.exact)
            .min(u64::from(u32::MAX)) as u32
    }

    /// The tokens of a prefix of `bytes` counted bytes (a cache hit):
    /// `bytes * tokens / counted bytes`, rounded down, at most the whole.
    pub(crate) fn tokens_in(&self, bytes: u64) -> u32 {
        let counted = self.words_bytes + self.other_bytes + self.exact_bytes;
        let tokens = self.tokens();
        if counted == 0 {
            return 0;
        }
        let share = u128::from(bytes) * u128::from(tokens) / u128::from(counted);
        share.min(u128::from(tokens)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::prompt::VOCABULARY;

    fn count(s: &str) -> u32 {
        let mut c = TokenCount::default();
        c.text(s);
        c.tokens()
    }

    #[test]
    fn vocabulary_words_are_one_token_each() {
        assert_eq!(count(" the of and between"), 4);
        let all: String = VOCABULARY.concat();
        assert_eq!(count(&all), VOCABULARY.len() as u32);
    }

    #[test]
    fn other_text_is_four_bytes_a_token() {
        assert_eq!(count("abcdefgh"), 2);
        assert_eq!(count("abcde"), 2);
        // Not vocabulary: no leading space, a capital, a longer word.
        assert_eq!(count("the"), 1);
        assert_eq!(count(" The"), 1);
        assert_eq!(count(" theoretical"), 3);
        assert_eq!(count(""), 0);
    }

    #[test]
    fn a_marker_before_words_adds_its_bytes() {
        // 20 bytes of marker: 5 tokens, then 3 words.
        assert_eq!(count("[rid:0123456789ab]\n\n the of and"), 8);
    }

    #[test]
    fn hits_scale_by_tokens_per_byte() {
        let mut c = TokenCount::default();
        c.text(&"x".repeat(1000));
        assert_eq!(c.tokens_in(768), 192);
        assert_eq!(c.tokens_in(5000), 250);
        let mut c = TokenCount::default();
        c.text(&" the".repeat(100)); // 400 bytes, 100 tokens
        assert_eq!(c.tokens_in(256), 64);
        let mut c = TokenCount::default();
        c.text(&" between".repeat(64)); // 512 bytes, 64 tokens
        assert_eq!(c.tokens_in(256), 32);
        assert_eq!(TokenCount::default().tokens_in(256), 0);
    }

    /// One token a byte: not how any model counts, which is the point.
    struct Bytes;
    impl TextTokenizer for Bytes {
        fn count(&self, text: &str) -> u32 {
            text.len() as u32
        }
    }

    #[test]
    fn a_tokenizer_counts_instead_and_hits_scale_by_its_tokens() {
        let mut c = TokenCount::default();
        c.text_with(" the of and", Some(&Bytes));
        c.text_with("abcd", Some(&Bytes));
        assert_eq!(c.tokens(), 15);
        assert_eq!(c.tokens_in(10), 10);
        let mut estimated = TokenCount::default();
        estimated.text_with(" the of and", None);
        assert_eq!(estimated.tokens(), 3);
    }

    #[test]
    fn pieces_add_up() {
        let mut c = TokenCount::default();
        c.text(" the");
        c.text("ab");
        c.text("cd");
        c.bytes(4);
        assert_eq!(c.tokens(), 3);
    }
}
