//! Live history (`--history live`): each next turn of an agent is built
//! from the text the server generated for that agent's previous turn in
//! this run, instead of the recorded answer, so the server's prefix cache
//! sees what production sees (docs/run.md, "Live history").
//!
//! Owns the mode ([`History`]), pulling the generated text out of a
//! stream's payloads (`push_*`, called by `exchange` only when a request
//! captures: no allocation otherwise), the store of what each agent's last
//! turn sent and got back ([`Store`], one entry per (play, agent), dropped
//! when the agent's next turn is built: memory is bounded by the live
//! agents), and the splice of the generated text into the next prompt,
//! with its counts (turns built from live text, turns that kept the
//! recorded answer).
//!
//! Where the answer goes:
//! - synthesized prompts (hash ids or virtual blocks): when turn k+1
//!   extends turn k, the recorded answer is words `[isl_k, isl_k + osl_k)`
//!   of turn k+1's prompt. The live prompt is the text turn k sent (its
//!   `isl_k` words, as sent), then the generated text, then turn k+1's
//!   words after the answer. The generated text sits right after the
//!   previous prompt's text with no separator added, so a server (or the
//!   emulator) that cached prompt + generated text hits past `isl_k`.
//! - recorded messages: the first assistant message after turn k's
//!   messages in turn k+1's messages gets the generated text as its
//!   content (recorded tool calls kept); the answers spliced into turn k
//!   stay spliced.
//!
//! The length rule: the prompt keeps the recorded length. Synthesized
//! text counts words (each vocabulary word is one token): generated text
//! with more words than the recorded answer is cut after that many, with
//! fewer it is followed by the rest of the recorded answer's words.
//! Recorded text has no word scale: the request's `completion_tokens`
//! against the recorded answer's tokens cut the generated text (by the
//! same share of its bytes, at a character boundary) or pick the share of
//! the recorded answer it is followed by; without `completion_tokens`,
//! byte lengths stand in for both.

use std::collections::HashMap;

use memchr::memmem;

use arbor_engine::content::{prompt_messages, MessageRef, Recorded};
use arbor_engine::model::{Role, Tree};
use arbor_engine::prompt::{self, piece_words_from, Prompt, VOCABULARY};
use arbor_engine::Workload;
use arbor_runs::history::HistoryCounts;
use arbor_runs::record::Response;

use super::request::{build_body, BodyConfig};

/// Where the next turn's history comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum History {
    /// The recorded answers, as recorded (the requests' bytes do not
    /// depend on the server).
    #[default]
    Recorded,
    /// The text the server generated for the previous turn, in this run.
    Live,
}

impl History {
    /// Its name, as `--history` takes it.
    pub fn name(self) -> &'static str {
        match self {
            History::Recorded => "recorded",
            History::Live => "live",
        }
    }
}

impl std::str::FromStr for History {
    type Err = String;

    fn from_str(text: &str) -> Result<History, String> {
        match text {
            "recorded" => Ok(History::Recorded),
            "live" => Ok(History::Live),
            _ => Err(format!("expected recorded or live, got `{text}`")),
        }
    }
}

/// Searchers built once (see `sse.rs`).
struct Keys {
    content: memmem::Finder<'static>,
    text: memmem::Finder<'static>,
    delta: memmem::Finder<'static>,
}

static KEYS: std::sync::LazyLock<Keys> = std::sync::LazyLock::new(|| Keys {
    content: memmem::Finder::new(b"\"content\""),
    text: memmem::Finder::new(b"\"text\""),
    delta: memmem::Finder::new(b"\"delta\""),
});

/// Appends the string value of the first `key` that holds a string
/// ([`super::sse::string_value`]); false when there is none.
fn push_string_value(payload: &[u8], key: &memmem::Finder<'_>, out: &mut String) -> bool {
    match super::sse::string_value(payload, key) {
        Some(text) => {
            out.push_str(&text);
            true
        }
        None => false,
    }
}

/// The generated text of an OpenAI chat or completions chunk (`content`,
/// or a completion's `text`; reasoning is not the answer), appended.
pub fn push_openai(payload: &[u8], out: &mut String) {
    let keys = &*KEYS;
    if !push_string_value(payload, &keys.content, out) {
        push_string_value(payload, &keys.text, out);
    }
}

/// The generated text of an Anthropic Messages event (a text delta's
/// `text`; thinking is not the answer), appended.
pub fn push_messages(payload: &[u8], out: &mut String) {
    push_string_value(payload, &KEYS.text, out);
}

/// The generated text of a Responses `response.output_text.delta` event,
/// appended.
pub fn push_responses(payload: &[u8], out: &mut String) {
    push_string_value(payload, &KEYS.delta, out);
}

/// What a turn sent, as the next turn of its agent builds on it.
#[derive(Debug)]
enum Sent {
    /// Its recorded prompt.
    Recorded,
    /// Synthesized text (without the cache-bust marker), as sent.
    Text(String),
    /// Recorded messages with these contents replaced (by index).
    Messages(Vec<(usize, String)>),
}

/// What the server answered a turn.
#[derive(Debug)]
enum Answer {
    /// Not yet in.
    Pending,
    /// Generated text, and the completion tokens the server reported.
    Generated(String, Option<u64>),
    /// Failed, cancelled, or nothing generated: the recorded answer stays.
    None,
}

#[derive(Debug)]
struct Entry {
    /// The turn (within its agent) the entry is of.
    turn: usize,
    sent: Sent,
    answer: Answer,
}

/// Where a turn sits: its play, its tree, its agent and its index within
/// the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub play: u32,
    pub tree: usize,
    pub agent: usize,
    pub turn: usize,
}

/// What each live agent's last turn sent and got back, by (play, agent).
#[derive(Debug, Default)]
pub struct Store {
    entries: HashMap<(u32, u32), Entry>,
    counts: HistoryCounts,
    /// The lowest play still held (entries below it were dropped).
    first_play: u32,
}

impl Store {
    /// Turns built from live text, and turns that kept the recorded
    /// answer (a later turn whose previous turn failed, generated nothing,
    /// was not sent in this run, or which does not extend it).
    pub fn counts(&self) -> HistoryCounts {
        self.counts
    }

    /// Entries held (one per live agent with a next turn).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops the entries of plays below `first_play` (finished and
    /// forgotten: their agents never come back).
    pub fn forget_below(&mut self, first_play: u32) {
        if first_play > self.first_play {
            self.first_play = first_play;
            self.entries.retain(|(play, _), _| *play >= first_play);
        }
    }

    /// Whether the turn at `place` has a next turn in its agent (only
    /// then is its answer kept).
    pub fn has_next(workload: &Workload, place: Place) -> bool {
        workload
            .trees
            .get(place.tree)
            .and_then(|t| t.agents.get(place.agent))
            .is_some_and(|a| place.turn + 1 < a.turns.len())
    }

    /// The body of the (non-warmup) turn at `place`, built from its agent's
    /// previous turn as it went in this run; `None` when that is the
    /// recorded body (a first turn, or a turn whose previous turn left
    /// nothing to build on). Takes the agent's entry, and keeps what this
    /// turn sends when the agent has a next turn.
    pub fn body(
        &mut self,
        workload: &Workload,
        config: &BodyConfig,
        place: Place,
        max_tokens: u32,
        marker: Option<&str>,
    ) -> Option<Vec<u8>> {
        let key = (place.play, place.agent as u32);
        let previous = self.entries.remove(&key);
        let tree = workload.trees.get(place.tree)?;
        let keep = Store::has_next(workload, place);
        let previous = previous.filter(|e| e.turn + 1 == place.turn);
        if place.turn > 0 {
            let built = previous.and_then(|e| splice(tree, place, e));
            match &built {
                Some((_, true)) => self.counts.live_turns += 1,
                _ => self.counts.recorded_fallbacks += 1,
            }
            if let Some((sent, _)) = built {
                let (body, sent) = sent_body(tree, place, sent, config, max_tokens, marker);
                if keep {
                    self.hold(key, place.turn, sent);
                }
                return Some(body);
            }
        }
        if keep {
            self.hold(key, place.turn, Sent::Recorded);
        }
        None
    }

    fn hold(&mut self, key: (u32, u32), turn: usize, sent: Sent) {
        if key.0 >= self.first_play {
            self.entries.insert(
                key,
                Entry {
                    turn,
                    sent,
                    answer: Answer::Pending,
                },
            );
        }
    }

    /// The turn at `place` was answered: keeps its generated text (taken
    /// from `response`) for the agent's next turn; a failed, cancelled or
    /// empty answer leaves the recorded one.
    pub fn answered(&mut self, place: Place, response: &Response) {
        let key = (place.play, place.agent as u32);
        let Some(entry) = self.entries.get_mut(&key) else {
            return;
        };
        if entry.turn != place.turn {
            return;
        }
        entry.answer = match (&response.error, &response.generated) {
            (None, Some(text)) if !text.is_empty() => {
                Answer::Generated(text.clone(), response.completion_tokens)
            }
            _ => Answer::None,
        };
    }
}

/// What turn `place.turn` sends, from its agent's previous turn `e`: the
/// spliced text or messages, and whether generated text went in. `None`
/// when the turn does not extend the previous one (its recorded prompt is
/// sent).
fn splice(tree: &Tree, place: Place, e: Entry) -> Option<(Sent, bool)> {
    let agent = tree.agents.get(place.agent)?;
    let (prev, this) = (agent.turns.get(e.turn)?, agent.turns.get(place.turn)?);
    let generated = match &e.answer {
        Answer::Generated(text, tokens) => Some((text.as_str(), *tokens)),
        Answer::Pending | Answer::None => None,
    };
    match (prev.text.is_some(), this.text.is_some()) {
        (false, false) => {
            let words = Extension::of(tree, place.agent, e.turn, place.turn)?;
            let prev_text = match e.sent {
                Sent::Text(text) => text,
                _ => match prompt::build(tree, place.agent, e.turn) {
                    Prompt::Synthesized(text) => text,
                    Prompt::Recorded(_) => return None,
                },
            };
            let answer = generated.map_or("", |(text, _)| text);
            let (text, used) = words.splice(tree, place, prev_text, answer);
            Some((Sent::Text(text), used))
        }
        (true, true) => {
            let before = prompt_messages(agent, e.turn);
            let now = prompt_messages(agent, place.turn);
            if now.len() <= before.len() || now[..before.len()] != before[..] {
                return None;
            }
            let at = (before.len()..now.len()).find(|&i| now[i].role == Role::Assistant)?;
            let mut replaced = match e.sent {
                Sent::Messages(replaced) => replaced,
                _ => Vec::new(),
            };
            let used = match generated {
                Some((text, tokens)) => {
                    let recorded = now[at].content;
                    let content = fit_text(text, tokens, prev.osl, recorded);
                    replaced.push((at, content));
                    true
                }
                None => false,
            };
            Some((Sent::Messages(replaced), used))
        }
        _ => None,
    }
}

/// The body a turn sends for `sent`, and `sent` back.
fn sent_body(
    tree: &Tree,
    place: Place,
    sent: Sent,
    config: &BodyConfig,
    max_tokens: u32,
    marker: Option<&str>,
) -> (Vec<u8>, Sent) {
    match sent {
        Sent::Text(text) => {
            // `build_body` reads the prompt; the text is kept for the
            // agent's next turn.
            let prompt = Prompt::Synthesized(text);
            let body = build_body(config, &prompt, max_tokens, marker);
            let text = match prompt {
                Prompt::Synthesized(text) => text,
                Prompt::Recorded(_) => String::new(),
            };
            (body, Sent::Text(text))
        }
        Sent::Messages(replaced) => {
            let recorded = arbor_engine::content::recorded_prompt(tree, place.agent, place.turn);
            let mut messages: Vec<MessageRef<'_>> = recorded.messages;
            for (i, content) in &replaced {
                if let Some(m) = messages.get_mut(*i) {
                    m.content = content;
                }
            }
            let prompt = Prompt::Recorded(Recorded {
                messages,
                shape: recorded.shape,
            });
            let body = build_body(config, &prompt, max_tokens, marker);
            (body, Sent::Messages(replaced))
        }
        Sent::Recorded => {
            let prompt = prompt::build(tree, place.agent, place.turn);
            (
                build_body(config, &prompt, max_tokens, marker),
                Sent::Recorded,
            )
        }
    }
}

/// How a synthesized turn extends the previous turn of its agent, in
/// words of its own prompt: the previous prompt is its first `start`
/// words, the recorded answer the next `answer` words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Extension {
    start: u32,
    answer: u32,
}

impl Extension {
    /// Turn `next` extends turn `prev` of agent `agent` when their pieces
    /// agree up to the previous prompt's last piece, which may differ only
    /// when it is a partial block (the block the answer completes: a new
    /// hash id in the next turn, or the same virtual block, longer), and
    /// the next prompt is longer. `None` otherwise.
    fn of(tree: &Tree, agent: usize, prev: usize, next: usize) -> Option<Extension> {
        let a = tree.agents.get(agent)?;
        let (p, n) = (a.turns.get(prev)?, a.turns.get(next)?);
        if n.isl <= p.isl {
            return None;
        }
        let full = if p.hash_ids.is_empty() {
            prompt::VIRTUAL_BLOCK_TOKENS
        } else if tree.block_size == 0 {
            64
        } else {
            tree.block_size
        };
        let mut before = Vec::new();
        prompt::for_each_piece(tree, agent, prev, |seed, words| before.push((seed, words)));
        let mut after = Vec::with_capacity(before.len() + 1);
        prompt::for_each_piece(tree, agent, next, |seed, words| {
            if after.len() < before.len() {
                after.push((seed, words));
            }
        });
        if after.len() < before.len() {
            return None;
        }
        let last = before.len().saturating_sub(1);
        for (i, (&(seed, words), &(seed2, words2))) in before.iter().zip(&after).enumerate() {
            let same = seed == seed2 && (words == words2 || (i == last && words2 >= words));
            let partial_last = i == last && words < full;
            if !same && !partial_last {
                return None;
            }
        }
        Some(Extension {
            start: p.isl,
            answer: p.osl.min(n.isl - p.isl),
        })
    }

    /// The live text of the turn at `place`: `prev_text` (what the
    /// previous turn sent), then `generated` fitted to the recorded
    /// answer's words, then the turn's own words after the answer. True
    /// when generated text went in.
    fn splice(
        &self,
        tree: &Tree,
        place: Place,
        mut text: String,
        generated: &str,
    ) -> (String, bool) {
        let isl = tree.agents[place.agent].turns[place.turn].isl;
        let (cut, words) = cut_words(generated, self.answer);
        text.reserve(cut.len() + (isl - self.start - words) as usize * 6);
        // No separator: the generated text follows the previous prompt
        // exactly as the server saw it (prompt, then what it generated).
        text.push_str(cut);
        push_words_from(tree, place, self.start + words, &mut text);
        (text, words > 0)
    }
}

/// The first `max` words of `text` (a word: a run of whitespace and the
/// run of other characters after it), and how many words that is.
fn cut_words(text: &str, max: u32) -> (&str, u32) {
    let mut words = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !space && !in_word {
            if words == max {
                // Cut before the whitespace leading this word.
                let end = text[..i].trim_end_matches(char::is_whitespace).len();
                return (&text[..end], words);
            }
            words += 1;
        }
        in_word = !space;
    }
    (text, words)
}

/// Appends the words of the turn at `place`'s synthesized prompt from
/// word `from` on.
fn push_words_from(tree: &Tree, place: Place, from: u32, out: &mut String) {
    let mut at = 0u32;
    prompt::for_each_piece(tree, place.agent, place.turn, |seed, words| {
        if at + words > from {
            piece_words_from(seed, words, from.saturating_sub(at), |w| {
                out.push_str(VOCABULARY[usize::from(w)])
            });
        }
        at += words;
    });
}

/// `generated` fitted to the length of the `recorded` answer of
/// `recorded_tokens` tokens: cut when longer, followed by the rest of the
/// recorded answer when shorter (the module doc). Lengths are the
/// server's `completion_tokens` against `recorded_tokens` when both are
/// known, else bytes.
fn fit_text(generated: &str, tokens: Option<u64>, recorded_tokens: u32, recorded: &str) -> String {
    let (have, want) = match tokens {
        Some(t) if t > 0 && recorded_tokens > 0 => (t, u64::from(recorded_tokens)),
        _ => (generated.len() as u64, recorded.len() as u64),
    };
    if have > want {
        let keep = (generated.len() as u64 * want / have) as usize;
        return generated[..floor_char(generated, keep)].to_string();
    }
    // The share of the recorded answer the generated text stands for.
    let covered = if want == 0 {
        recorded.len()
    } else {
        (recorded.len() as u64 * have).div_ceil(want) as usize
    };
    let rest = &recorded[ceil_char(recorded, covered.min(recorded.len()))..];
    let mut out = String::with_capacity(generated.len() + rest.len());
    out.push_str(generated);
    out.push_str(rest);
    out
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_are_read_from_every_stream() {
        let mut out = String::new();
        push_openai(
            br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":" tok0"}}]}"#,
            &mut out,
        );
        push_openai(
            br#"{"choices":[{"delta":{"content":null,"reasoning_content":"hm"}}]}"#,
            &mut out,
        );
        push_openai(br#"{"choices":[{"text":" a\"b","index":0}]}"#, &mut out);
        push_messages(
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" x"}}"#,
            &mut out,
        );
        push_messages(
            br#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"y"}}"#,
            &mut out,
        );
        push_responses(
            br#"{"type":"response.output_text.delta","item_id":"i","output_index":0,"content_index":0,"delta":" z"}"#,
            &mut out,
        );
        assert_eq!(out, " tok0 a\"b xy z");
    }

    fn hashed(turns: &[(u32, &[u32])]) -> Workload {
        use arbor_engine::model::{Agent, AgentKind, Turn};
        let tree = Tree {
            id: "h".into(),
            block_size: 4,
            agents: vec![Agent {
                id: "root".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns: turns
                    .iter()
                    .map(|(isl, ids)| Turn {
                        isl: *isl,
                        osl: 4,
                        hash_ids: ids.to_vec().into(),
                        ..Turn::default()
                    })
                    .collect(),
            }],
            ..Tree::default()
        };
        Workload { trees: vec![tree] }
    }

    fn place(turn: usize) -> Place {
        Place {
            play: 0,
            tree: 0,
            agent: 0,
            turn,
        }
    }

    fn answer(text: &str) -> Response {
        Response {
            generated: Some(text.into()),
            completion_tokens: Some(4),
            ..Response::default()
        }
    }

    #[test]
    fn an_agents_entry_lives_from_one_turn_to_the_next() {
        let workload = hashed(&[(8, &[1, 2]), (14, &[1, 2, 3, 4]), (20, &[1, 2, 3, 4, 5])]);
        let config = BodyConfig::default();
        let mut store = Store::default();
        assert_eq!(store.body(&workload, &config, place(0), 4, None), None);
        assert_eq!(store.len(), 1, "kept for turn 1");
        store.answered(place(0), &answer(" a b c d e f"));
        let body = store.body(&workload, &config, place(1), 4, None);
        let body: serde_json::Value = serde_json::from_slice(&body.expect("live")).unwrap();
        let text = body["messages"][0]["content"].as_str().unwrap().to_string();
        assert!(text.contains(" a b c d "), "{text}");
        assert!(!text.contains(" e"), "cut at the recorded 4 words: {text}");
        assert_eq!(text.split(' ').count() - 1, 14, "the recorded length");
        assert_eq!(store.len(), 1, "turn 0's entry dropped, turn 1's kept");
        // The last turn keeps nothing.
        store.answered(place(1), &answer(" x"));
        let last = store
            .body(&workload, &config, place(2), 4, None)
            .expect("live");
        let last: serde_json::Value = serde_json::from_slice(&last).unwrap();
        let last = last["messages"][0]["content"].as_str().unwrap();
        // One word generated: the recorded answer's other three follow.
        assert!(last.starts_with(&format!("{text} x ")), "{last}");
        assert_eq!(last.split(' ').count() - 1, 20);
        assert!(store.is_empty());
        assert_eq!(store.counts().live_turns, 2);
        // A play forgotten takes its agents' entries.
        store.body(&workload, &config, place(0), 4, None);
        store.forget_below(1);
        assert!(store.is_empty());
    }

    #[test]
    fn a_turn_that_does_not_extend_the_previous_keeps_its_recorded_prompt() {
        // Turn 1 starts with other blocks: not turn 0's continuation.
        let workload = hashed(&[(8, &[1, 2]), (14, &[7, 8, 9, 10])]);
        let config = BodyConfig::default();
        let mut store = Store::default();
        store.body(&workload, &config, place(0), 4, None);
        store.answered(place(0), &answer(" a b"));
        assert_eq!(store.body(&workload, &config, place(1), 4, None), None);
        assert_eq!(store.counts().recorded_fallbacks, 1);
        assert_eq!(store.counts().live_turns, 0);
    }

    #[test]
    fn words_are_cut_at_the_recorded_count() {
        assert_eq!(cut_words(" a b  c", 2), (" a b", 2));
        assert_eq!(cut_words(" a b", 5), (" a b", 2));
        assert_eq!(cut_words("a\nb", 1), ("a", 1));
        assert_eq!(cut_words("", 3), ("", 0));
        assert_eq!(cut_words(" a", 0), ("", 0));
    }

    #[test]
    fn recorded_text_keeps_its_length_by_tokens_or_bytes() {
        // 8 tokens generated for a recorded 4: half the bytes.
        assert_eq!(fit_text("abcdefgh", Some(8), 4, "WXYZ"), "abcd");
        // 2 tokens of 4: the generated half, then the recorded second half.
        assert_eq!(fit_text("ab", Some(2), 4, "WXYZ"), "abYZ");
        // No usage: bytes.
        assert_eq!(fit_text("abcdef", None, 4, "WXYZ"), "abcd");
        assert_eq!(fit_text("a", None, 4, "WXYZ"), "aXYZ");
        // A cut never splits a character.
        assert_eq!(fit_text("ééé", Some(3), 1, ""), "é");
    }
}
