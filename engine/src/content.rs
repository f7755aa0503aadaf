//! What a turn's prompt is, for every format that keeps text.
//!
//! Owns the reconstruction of a prompt from the text deltas of the model
//! ([`crate::model::TurnText`]) and the content fingerprint of a prompt:
//! chained hashes of its successive 256-byte chunks, so two prompts share
//! their first `k` block hashes exactly when they share the first `k`
//! chunks of bytes (up to hash collisions). Nothing here copies text: a
//! prompt is a list of borrowed [`MessageRef`]s.
//!
//! The serialized form hashed is, for each message in order,
//! `role` `\n` `content`, then for each tool call `\x01` `name` `\x01`
//! `arguments`, then `\0` (role as [`Role::as_str`]). A prompt is cut
//! into chunks of [`TEXT_BLOCK_BYTES`] bytes; block `i`'s hash is FNV-1a
//! 64 over (block `i-1`'s hash as 8 little-endian bytes, chunk `i`'s
//! bytes), with the FNV offset basis standing in for block `-1`. A final
//! partial chunk is a block too (as hash-id formats count
//! `ceil(tokens / block_size)`); its hash differs from that of the full
//! chunk the next turn completes it into.

use crate::model::{Agent, Message, RequestShape, Role, ToolCall, ToolResult, Tree};

/// Bytes of serialized prompt per text block.
pub const TEXT_BLOCK_BYTES: usize = 256;

/// One message of a reconstructed prompt, borrowed from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageRef<'a> {
    pub role: Role,
    pub content: &'a str,
    /// An assistant message's tool calls (empty for others).
    pub calls: &'a [ToolCall],
    /// The call a tool message answers.
    pub result: Option<&'a ToolResult>,
}

impl<'a> MessageRef<'a> {
    /// A message of plain text.
    pub fn text(role: Role, content: &'a str) -> MessageRef<'a> {
        MessageRef {
            role,
            content,
            calls: &[],
            result: None,
        }
    }

    /// A recorded message, borrowed.
    pub fn of(message: &'a Message) -> MessageRef<'a> {
        MessageRef {
            role: message.role,
            content: &message.content,
            calls: message.calls(),
            result: message.result(),
        }
    }

    /// An owned copy.
    pub fn to_message(&self) -> Message {
        let tool = if !self.calls.is_empty() {
            Some(Box::new(crate::model::ToolPart::Calls(self.calls.to_vec())))
        } else {
            self.result
                .map(|r| Box::new(crate::model::ToolPart::Result(r.clone())))
        };
        Message {
            role: self.role,
            content: self.content.to_string(),
            tool,
        }
    }
}

/// A turn's whole recorded prompt: its messages and the request fields
/// sent with them (tools, tool choice, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recorded<'a> {
    pub messages: Vec<MessageRef<'a>>,
    pub shape: Option<&'a RequestShape>,
}

/// The recorded prompt of turn `turn` of agent `agent` of `tree`: its
/// messages ([`prompt_messages`]) and the turn's request shape.
pub fn recorded_prompt(tree: &Tree, agent: usize, turn: usize) -> Recorded<'_> {
    let Some(a) = tree.agents.get(agent) else {
        return Recorded::default();
    };
    Recorded {
        messages: prompt_messages(a, turn),
        shape: a
            .turns
            .get(turn)
            .and_then(|t| t.text.as_deref())
            .and_then(|t| tree.shape_of(t)),
    }
}

/// Index of the turn where `turn`'s prompt starts: walking back while a
/// turn extends its previous one, and that previous turn has text.
fn chain_start(agent: &Agent, turn: usize) -> usize {
    let mut start = turn;
    while start > 0 {
        let extends = agent.turns[start]
            .text
            .as_ref()
            .is_some_and(|t| t.extends_previous);
        if !extends || agent.turns[start - 1].text.is_none() {
            break;
        }
        start -= 1;
    }
    start
}

/// The whole prompt of `agent.turns[turn]`, rebuilt from the deltas: from
/// the last turn at or before it that does not extend its previous one
/// (or whose previous one has no text), each turn's messages, with every
/// earlier turn's recorded `response` (and its tool calls) inserted as an
/// assistant message before the next turn's messages. Empty when the turn has no text or
/// `turn` is out of range.
pub fn prompt_messages(agent: &Agent, turn: usize) -> Vec<MessageRef<'_>> {
    let mut out = Vec::new();
    if agent.turns.get(turn).is_none_or(|t| t.text.is_none()) {
        return out;
    }
    let start = chain_start(agent, turn);
    for i in start..=turn {
        let text = agent.turns[i]
            .text
            .as_deref()
            .expect("chain turns have text");
        if i > start {
            let previous = agent.turns[i - 1].text.as_deref().expect("chain");
            if previous.response.is_some() || !previous.response_calls.is_empty() {
                out.push(MessageRef {
                    role: Role::Assistant,
                    content: previous.response.as_deref().unwrap_or(""),
                    calls: &previous.response_calls,
                    result: None,
                });
            }
        }
        out.extend(text.messages.iter().map(MessageRef::of));
    }
    out
}

/// FNV-1a 64's offset basis: the hash of nothing.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`, continuing from `hash` ([`FNV_OFFSET`] to start):
/// the one hash of arbor's synthesized text, its seeds and the server
/// model's prefix keys.
pub fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The chained hash of a chunk following a block whose hash is `previous`
/// (`None` for the first chunk).
fn chain_hash(previous: Option<u64>, chunk: &[u8]) -> u64 {
    let seed = fnv1a(FNV_OFFSET, &previous.unwrap_or(FNV_OFFSET).to_le_bytes());
    fnv1a(seed, chunk)
}

/// Incremental text-block hashing: feed messages in order; read the hashes
/// of the full chunks so far and of the pending partial chunk. Cloning it
/// (or simply continuing to feed it) extends a prompt without rehashing
/// what came before.
#[derive(Debug, Clone, Default)]
pub struct TextBlockHasher {
    full: Vec<u64>,
    pending: Vec<u8>,
}

impl TextBlockHasher {
    pub fn new() -> Self {
        TextBlockHasher::default()
    }

    /// Appends one message of plain text (`role` `\n` `content` `\0`).
    pub fn push_message(&mut self, role: Role, content: &str) {
        self.push_with_calls(role, content, &[]);
    }

    /// Appends one message with its tool calls (see the module doc).
    pub fn push_with_calls(&mut self, role: Role, content: &str, calls: &[ToolCall]) {
        self.push_bytes(role.as_str().as_bytes());
        self.push_bytes(b"\n");
        self.push_bytes(content.as_bytes());
        for call in calls {
            self.push_bytes(b"\x01");
            self.push_bytes(call.name.as_bytes());
            self.push_bytes(b"\x01");
            self.push_bytes(call.arguments.as_bytes());
        }
        self.push_bytes(b"\0");
    }

    fn push_bytes(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = TEXT_BLOCK_BYTES - self.pending.len();
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.pending.extend_from_slice(now);
            bytes = rest;
            if self.pending.len() == TEXT_BLOCK_BYTES {
                let hash = chain_hash(self.full.last().copied(), &self.pending);
                self.full.push(hash);
                self.pending.clear();
            }
        }
    }

    /// Hashes of the full chunks so far.
    pub fn full_blocks(&self) -> &[u64] {
        &self.full
    }

    /// Hash of the partial chunk after the full ones, if any bytes are
    /// pending.
    pub fn partial_block(&self) -> Option<u64> {
        (!self.pending.is_empty()).then(|| chain_hash(self.full.last().copied(), &self.pending))
    }

    /// Every block of the prompt so far: the full ones, then the partial.
    pub fn blocks(&self) -> Vec<u64> {
        let mut out = self.full.clone();
        out.extend(self.partial_block());
        out
    }

    /// Drops the state, keeping the hashes of the full chunks (to reuse
    /// their memory).
    pub fn into_full_blocks(self) -> Vec<u64> {
        self.full
    }
}

/// Chained block hashes of a prompt (see the module docs).
pub fn text_block_hashes(messages: &[MessageRef<'_>]) -> Vec<u64> {
    let mut hasher = TextBlockHasher::new();
    for m in messages {
        hasher.push_with_calls(m.role, m.content, m.calls);
    }
    hasher.blocks()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AgentKind, Message, Turn, TurnText};

    fn msg(role: Role, content: &str) -> Message {
        Message::text(role, content)
    }

    fn text_turn(extends: bool, messages: Vec<Message>, response: Option<&str>) -> Turn {
        Turn {
            text: Some(Box::new(TurnText {
                extends_previous: extends,
                messages,
                response: response.map(str::to_string),
                ..Default::default()
            })),
            ..Turn::default()
        }
    }

    fn agent(turns: Vec<Turn>) -> Agent {
        Agent {
            id: "a".into(),
            parent: None,
            kind: AgentKind::Root,
            recorded_end: None,
            turns,
        }
    }

    fn pairs<'a>(messages: &[MessageRef<'a>]) -> Vec<(Role, &'a str)> {
        messages.iter().map(|m| (m.role, m.content)).collect()
    }

    #[test]
    fn prompts_are_rebuilt_from_deltas() {
        use Role::*;
        let a = agent(vec![
            text_turn(
                false,
                vec![msg(System, "sys"), msg(User, "hi")],
                Some("hello"),
            ),
            text_turn(true, vec![msg(Tool, "ls: a b")], None),
            // No response recorded for turn 1: nothing inserted.
            text_turn(true, vec![msg(User, "more")], Some("done")),
            // A fresh prompt.
            text_turn(false, vec![msg(User, "new")], Some("r")),
            Turn::default(),
            // Extends a turn without text: its own messages only.
            text_turn(true, vec![msg(User, "orphan")], None),
        ]);
        assert_eq!(
            pairs(&prompt_messages(&a, 0)),
            vec![(System, "sys"), (User, "hi")]
        );
        assert_eq!(
            pairs(&prompt_messages(&a, 1)),
            vec![
                (System, "sys"),
                (User, "hi"),
                (Assistant, "hello"),
                (Tool, "ls: a b")
            ]
        );
        assert_eq!(
            pairs(&prompt_messages(&a, 2)),
            vec![
                (System, "sys"),
                (User, "hi"),
                (Assistant, "hello"),
                (Tool, "ls: a b"),
                (User, "more")
            ]
        );
        assert_eq!(pairs(&prompt_messages(&a, 3)), vec![(User, "new")]);
        assert!(prompt_messages(&a, 4).is_empty());
        assert_eq!(pairs(&prompt_messages(&a, 5)), vec![(User, "orphan")]);
        assert!(prompt_messages(&a, 99).is_empty());
        // Borrowed, not copied.
        let first = prompt_messages(&a, 2)[0].content.as_ptr();
        assert_eq!(
            first,
            a.turns[0].text.as_ref().unwrap().messages[0]
                .content
                .as_ptr()
        );
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn blocks_are_256_byte_chunks_chained() {
        // "user\n" + 600 x + "\0" = 606 bytes: two full chunks and a partial.
        let content = "x".repeat(600);
        let m = [MessageRef::text(Role::User, &content)];
        let blocks = text_block_hashes(&m);
        assert_eq!(blocks.len(), 3);
        let mut bytes = b"user\n".to_vec();
        bytes.extend_from_slice(content.as_bytes());
        bytes.push(0);
        let b0 = chain_hash(None, &bytes[..256]);
        let b1 = chain_hash(Some(b0), &bytes[256..512]);
        let b2 = chain_hash(Some(b1), &bytes[512..]);
        assert_eq!(blocks, vec![b0, b1, b2]);
        // Deterministic across runs and platforms: a pinned value.
        assert_eq!(
            text_block_hashes(&[MessageRef::text(Role::User, "hi")]),
            vec![chain_hash(None, b"user\nhi\0")]
        );
        assert!(text_block_hashes(&[]).is_empty());
    }

    #[test]
    fn equal_prefixes_give_equal_leading_blocks() {
        let long = "a".repeat(600);
        let base = [MessageRef::text(Role::User, &long)];
        let extended = [base[0], MessageRef::text(Role::Assistant, "ok")];
        let a = text_block_hashes(&base);
        let b = text_block_hashes(&extended);
        assert_eq!(a.len(), 3);
        assert_eq!(b.len(), 3);
        assert_eq!(a[..2], b[..2], "full chunks are shared");
        assert_ne!(a[2], b[2], "the partial chunk grew");
        // A change in the first chunk changes every later block (chained).
        let other = format!("b{}", &long[1..]);
        let c = text_block_hashes(&[MessageRef::text(Role::User, &other)]);
        assert!(a.iter().zip(&c).all(|(x, y)| x != y));
        // The role is part of the content.
        let d = text_block_hashes(&[MessageRef::text(Role::System, &long)]);
        assert_ne!(a[0], d[0]);
    }

    #[test]
    fn the_incremental_hasher_agrees_with_whole_prompts() {
        use Role::*;
        let big = "y".repeat(300);
        let a = agent(vec![
            text_turn(false, vec![msg(User, &big)], Some("first answer")),
            text_turn(true, vec![msg(Tool, &big)], Some(&big)),
            text_turn(true, vec![msg(User, "z")], None),
        ]);
        let mut hasher = TextBlockHasher::new();
        for (i, turn) in a.turns.iter().enumerate() {
            let text = turn.text.as_ref().unwrap();
            if i > 0 {
                let prev = a.turns[i - 1].text.as_ref().unwrap();
                if let Some(r) = &prev.response {
                    hasher.push_message(Assistant, r);
                }
            }
            for m in &text.messages {
                hasher.push_message(m.role, &m.content);
            }
            assert_eq!(
                hasher.blocks(),
                text_block_hashes(&prompt_messages(&a, i)),
                "turn {i}"
            );
        }
    }
}
