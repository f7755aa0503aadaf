//! The secrets a target's headers carry, and taking them out of text that
//! is recorded.
//!
//! Owns [`Secrets`]: which header values are secret (Authorization's token
//! after its scheme, `x-api-key`, any header whose name contains `key`,
//! `token`, `auth`, `secret` or `cookie`; each cookie's value too), and
//! [`Secrets::redact`], which replaces every occurrence of each with
//! `[redacted]` in an error message before it reaches `records.jsonl` (a
//! server may echo the key in its 401 body). A message cut at a cap may end
//! inside a secret: a tail that is the start of a secret is redacted too.
//! Values shorter than [`MIN_SECRET`] bytes are left alone (too likely to
//! match ordinary text). Knows no HTTP and no I/O.

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The shortest value redacted, in bytes.
pub const MIN_SECRET: usize = 4;

/// Names (lowercase) containing one of these carry a secret.
const SECRET_NAMES: [&str; 6] = ["key", "token", "auth", "secret", "cookie", "password"];

/// Does a header (or query parameter) name look like it carries a secret?
/// The one rule for every place arbor hides a value by its name.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|word| lower.contains(word))
}

/// The secret values of a target's headers, longest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// The secrets among `headers` (`name`, `value`).
    pub fn of<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Secrets {
        let mut values = Vec::new();
        for (name, value) in headers {
            if !is_secret_name(name) {
                continue;
            }
            let name = name.to_ascii_lowercase();
            let Ok(value) = std::str::from_utf8(value) else {
                continue;
            };
            let value = value.trim();
            values.push(value.to_string());
            // `Bearer <token>`, `Basic <credentials>`: the part after the
            // scheme is the secret.
            if let Some((_, token)) = value.split_once(' ') {
                values.push(token.trim().to_string());
            }
            if name.contains("cookie") {
                for pair in value.split(';') {
                    if let Some((_, v)) = pair.split_once('=') {
                        values.push(v.trim().to_string());
                    }
                }
            }
        }
        values.retain(|v| v.len() >= MIN_SECRET);
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Secrets { values }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`], and a tail that
    /// begins a secret (text cut at a cap) too.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.values {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        if let Some(cut) = self.cut_tail(&out) {
            out.truncate(cut);
            out.push_str(REDACTED);
        }
        out
    }

    /// Where a tail of `text` that is the start of a secret (at least
    /// [`MIN_SECRET`] bytes of it) begins.
    fn cut_tail(&self, text: &str) -> Option<usize> {
        self.values
            .iter()
            .filter_map(|secret| {
                let longest = secret.len().saturating_sub(1).min(text.len());
                (MIN_SECRET..=longest)
                    .rev()
                    .find(|&n| {
                        text.is_char_boundary(text.len() - n)
                            && secret
                                .as_bytes()
                                .starts_with(&text.as_bytes()[text.len() - n..])
                    })
                    .map(|n| text.len() - n)
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(headers: &[(&str, &str)]) -> Secrets {
        Secrets::of(headers.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    #[test]
    fn secret_headers_are_found_by_name() {
        let s = secrets(&[
            ("Authorization", "Bearer sk-live-123456"),
            ("x-api-key", "ak-98765"),
            ("Cookie", "session=abcdef; theme=dark"),
            ("anthropic-version", "2023-06-01"),
            ("X-Trace-Token", "abc"),
        ]);
        let text = "key sk-live-123456 and ak-98765, cookie abcdef, version 2023-06-01, abc";
        assert_eq!(
            s.redact(text),
            "key [redacted] and [redacted], cookie [redacted], version 2023-06-01, abc"
        );
    }

    #[test]
    fn a_secret_cut_at_the_end_is_redacted() {
        let s = secrets(&[("Authorization", "Bearer sk-live-123456")]);
        assert_eq!(s.redact("echo: sk-live-12"), "echo: [redacted]");
        assert_eq!(s.redact("echo: sk-"), "echo: sk-", "too short to tell");
        assert_eq!(s.redact("nothing here"), "nothing here");
        assert!(secrets(&[("Content-Type", "application/json")]).is_empty());
    }
}
