//! Output caching: the prefix-cache keys of a prompt followed by the text
//! the emulator generated for it, as the next turn of an agent sends them.
//!
//! A real server (vLLM, SGLang) keeps the KV blocks of the tokens it
//! decoded as well as the prompt's, so a next turn that re-sends the
//! answer finds it cached. The emulator's prompt is a byte stream
//! (`request.rs`: each message is its role, `\n`, its content, `\n`), and
//! a next turn can carry the answer in one of two ways, so both are
//! cached when a request completes:
//!
//! - **appended**: the answer continues the last message's content (a
//!   synthesized prompt is one user message; its next turn's content is
//!   the previous content, the generated text, then more words), or the
//!   completion prompt's text: the keys of the prompt up to the last
//!   message's closing `\n`, then the answer;
//! - **as an assistant message** (recorded-message prompts, and any chat,
//!   Messages or Responses history): the keys of the whole prompt, then
//!   `assistant\n`, the answer, `\n`, exactly the bytes an assistant
//!   message whose content is the answer hashes to.
//!
//! Only full blocks are keyed, as for prompts. Owns [`AnswerBase`];
//! `request.rs` makes it, `server.rs` and `body.rs` insert its keys.

use super::cache::{BlockHasher, HasherMark};

/// Where the two readings of "prompt + answer" start (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct AnswerBase {
    /// The prompt up to its last message's closing `\n` (the whole
    /// prompt, for a completion prompt).
    pub appended: Option<HasherMark>,
    /// The whole prompt, when it is a list of messages.
    pub after: Option<HasherMark>,
}

impl AnswerBase {
    /// The keys of the full blocks that `text` completes after the
    /// prompt, in both readings (the prompt's own blocks not repeated).
    pub(crate) fn blocks(&self, text: &str) -> Vec<u64> {
        let mut keys = Vec::new();
        if let Some(mark) = self.appended {
            let mut h = BlockHasher::resume(mark);
            h.update(text.as_bytes());
            keys.extend(h.finish());
        }
        if let Some(mark) = self.after {
            let mut h = BlockHasher::resume(mark);
            h.update(b"assistant\n");
            h.update(text.as_bytes());
            h.update(b"\n");
            keys.extend(h.finish());
        }
        keys
    }
}
