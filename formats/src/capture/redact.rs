//! `arbor record --redact`: every text of a capture line replaced by
//! synthesized text of the same length, so a capture of private code can
//! be shared and still replays as the original did.
//!
//! Owns [`Redactor`]. A string becomes as many bytes of capital letters
//! (never one of arbor's one-token vocabulary words, which are lowercase),
//! made 16 bytes at a time from a SHA-256 chain over a salt drawn when the
//! proxy starts and the original's bytes so far. So equal strings redact
//! equal, two strings sharing a prefix share it (to 16 bytes) after
//! redaction, and a conversation's next request, which repeats the
//! previous messages and answer, still extends it: the prefix-cache
//! structure and the inferred agents survive. Nothing else does: the text
//! cannot be recovered without the salt, which is never written, and
//! equal words in different places redact differently.
//!
//! Kept as they are: numbers (token counts, `max_tokens`), object keys,
//! and the structural strings of [`KEEP`] (roles, block types, ids, the
//! model name). Knows no HTTP and no I/O.

use serde_json::value::{to_raw_value, RawValue};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Keys whose string values are structure, not content.
const KEEP: [&str; 10] = [
    "role",
    "type",
    "model",
    "id",
    "tool_call_id",
    "tool_use_id",
    "object",
    "finish_reason",
    "stop_reason",
    "media_type",
];

/// Bytes synthesized per link of the chain.
const LINK: usize = 16;

/// Redacts capture lines with one recording's secret salt.
pub struct Redactor {
    salt: [u8; 32],
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor::new()
    }
}

impl Redactor {
    /// A redactor with a fresh random salt.
    pub fn new() -> Redactor {
        Redactor {
            salt: rand::random(),
        }
    }

    /// `text` as synthesized capital letters of the same byte length.
    pub fn text(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(bytes.len());
        let mut state: [u8; 32] = Sha256::new().chain_update(self.salt).finalize().into();
        for link in bytes.chunks(LINK) {
            state = Sha256::new()
                .chain_update(self.salt)
                .chain_update(state)
                .chain_update(link)
                .finalize()
                .into();
            for &b in state.iter().take(link.len()) {
                out.push(char::from(b'A' + b % 26));
            }
        }
        out
    }

    /// A request body (raw JSON), redacted; `None` if it is not JSON.
    pub fn request(&self, raw: &RawValue) -> Option<Box<RawValue>> {
        let mut request = serde_json::from_str::<Value>(raw.get()).ok()?;
        self.value(&mut request, None);
        to_raw_value(&request).ok()
    }

    /// Every content string of `value`, in place (see [`KEEP`]).
    pub fn value(&self, value: &mut Value, key: Option<&str>) {
        match value {
            Value::String(s) => {
                if !key.is_some_and(|k| KEEP.contains(&k)) {
                    *s = self.text(s);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.value(item, key);
                }
            }
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    self.value(v, Some(k));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_length_same_prefixes_no_original_text() {
        let r = Redactor::new();
        let a = "The quick brown fox jumps over the lazy dog, twice over.";
        let b = "The quick brown fox jumps over the lazy cat, twice over.";
        let (ra, rb) = (r.text(a), r.text(b));
        assert_eq!(ra.len(), a.len());
        assert_eq!(r.text(a), ra, "deterministic");
        let shared = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        // Whole links before the first difference are kept; the link
        // holding it differs (its first letters may still agree by chance).
        let aligned = shared / LINK * LINK;
        assert_eq!(ra[..aligned], rb[..aligned]);
        assert_ne!(ra[aligned..aligned + LINK], rb[aligned..aligned + LINK]);
        assert!(ra.bytes().all(|c| c.is_ascii_uppercase()));
        assert_eq!(r.text("héllo").len(), "héllo".len());
        // Another recording, another salt.
        assert_ne!(Redactor::new().text(a), ra);
    }

    #[test]
    fn structure_and_numbers_stay_content_goes() {
        let r = Redactor::new();
        let mut v = json!({"model": "gpt-x", "max_tokens": 5, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "secret plan"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
              "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]}]});
        r.value(&mut v, None);
        let text = v.to_string();
        for gone in ["secret plan", "a.rs", "\"read\""] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(v["model"], "gpt-x");
        assert_eq!(v["max_tokens"], 5);
        assert_eq!(v["messages"][0]["content"][0]["type"], "text");
        assert_eq!(v["messages"][1]["tool_calls"][0]["id"], "call_1");
        assert_eq!(
            v["messages"][0]["content"][0]["text"]
                .as_str()
                .map(str::len),
            Some(11)
        );
    }
}
