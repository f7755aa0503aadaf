//! `--tokenizer tokenizer.json`: exact token counts for the model served.
//!
//! Applied once, before planning, never on the hot path: every turn that
//! carries recorded text gets its prompt tokens (and, where the format had
//! to estimate them, its output tokens) counted with the real tokenizer,
//! piece by piece as `arbor_engine::shape` lists them (each tool
//! definition's name, description and schema text; each message's content
//! and each tool call's name and arguments; a prompt's count is the sum of
//! its pieces'; the chat template's own tokens are not included, since
//! they depend on the server). Synthesized prompts need no counting: they are built from
//! words that are single tokens, which this checks against the tokenizer.
//!
//! Also hands the same tokenizer to the built-in emulator
//! ([`for_emulator`]), which then counts `usage.prompt_tokens` piece by
//! piece the same way.

use std::path::Path;
use std::sync::Arc;

use arbor_engine::prompt::VOCABULARY;
use arbor_engine::Workload;
use arbor_sim::emulator::{PromptTokenizer, TextTokenizer};
use tokenizers::Tokenizer;

use arbor_error::Error;

/// What applying a tokenizer did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recount {
    /// Turns whose prompt was recounted from recorded text.
    pub text_turns: u64,
    /// Words of the synthesis vocabulary that are not one token.
    pub multi_token_words: Vec<&'static str>,
}

pub fn load(path: &Path) -> Result<Tokenizer, Error> {
    Tokenizer::from_file(path).map_err(|e| {
        Error::input(format!(
            "{}: expected a tokenizer.json (Hugging Face tokenizers format): {e}",
            path.display()
        ))
    })
}

fn count(tokenizer: &Tokenizer, text: &str) -> u32 {
    tokenizer
        .encode_fast(text, false)
        .map_or(0, |e| e.len().min(u32::MAX as usize) as u32)
}

/// A tokenizer as the emulator takes one: it counts as [`apply`] does.
struct Exact(Tokenizer);

impl TextTokenizer for Exact {
    fn count(&self, text: &str) -> u32 {
        count(&self.0, text)
    }
}

/// The tokenizer at `path`, for the built-in emulator's prompt counts.
pub fn for_emulator(path: &Path) -> Result<PromptTokenizer, Error> {
    Ok(PromptTokenizer {
        name: path.display().to_string(),
        tokenizer: Arc::new(Exact(load(path)?)),
    })
}

/// Recounts the text turns of `workload` with `tokenizer`.
pub fn apply(tokenizer: &Tokenizer, workload: &mut Workload) -> Recount {
    let mut recount = Recount {
        multi_token_words: VOCABULARY
            .iter()
            .copied()
            .filter(|w| count(tokenizer, w) != 1)
            .collect(),
        ..Recount::default()
    };
    for tree in &mut workload.trees {
        // Each distinct set of tools counted once.
        let tools: Vec<u32> = tree
            .shapes
            .iter()
            .map(|shape| {
                let prompt = arbor_engine::content::Recorded {
                    messages: Vec::new(),
                    shape: Some(shape),
                };
                let mut n = 0u32;
                arbor_engine::shape::tool_pieces(&prompt, |piece| {
                    n = n.saturating_add(count(tokenizer, piece))
                });
                n
            })
            .collect();
        for agent in &mut tree.agents {
            // Running count of the agent's conversation's messages.
            let mut prompt = 0u32;
            let mut previous_response = 0u32;
            for turn in &mut agent.turns {
                let Some(text) = &turn.text else {
                    prompt = 0;
                    previous_response = 0;
                    continue;
                };
                let mut added = 0u32;
                for m in &text.messages {
                    arbor_engine::shape::message_pieces(
                        &arbor_engine::content::MessageRef::of(m),
                        |piece| added = added.saturating_add(count(tokenizer, piece)),
                    );
                }
                prompt = if text.extends_previous {
                    prompt
                        .saturating_add(previous_response)
                        .saturating_add(added)
                } else {
                    added
                };
                let mut response = text.response.as_deref().map_or(0, |r| count(tokenizer, r));
                arbor_engine::shape::calls_pieces(&text.response_calls, |piece| {
                    response = response.saturating_add(count(tokenizer, piece))
                });
                let tools = text
                    .shape
                    .and_then(|i| tools.get(i as usize))
                    .copied()
                    .unwrap_or(0);
                turn.isl = prompt.saturating_add(tools).max(1);
                if turn.tokens_estimated {
                    turn.osl = response.max(1);
                    turn.tokens_estimated = false;
                }
                previous_response = response;
                recount.text_turns += 1;
            }
        }
    }
    recount
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smollm() -> Tokenizer {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/tokenizers/smollm2-135m/tokenizer.json"
        );
        load(Path::new(path)).unwrap_or_else(|e| panic!("fixture tokenizer: {}", e.message))
    }

    #[test]
    fn the_synthesis_vocabulary_is_single_tokens_for_smollm2() {
        let tokenizer = smollm();
        let recount = apply(&tokenizer, &mut Workload::default());
        assert!(
            recount.multi_token_words.is_empty(),
            "{:?}",
            recount.multi_token_words
        );
        // And a synthesized prompt has exactly its recorded tokens.
        let w = "trees=1,turns=2,depth=0,isl=500,hash_ids=true,seed=2"
            .parse::<arbor_formats::synthetic::SyntheticSpec>()
            .unwrap()
            .generate();
        let t = &w.trees[0];
        match arbor_engine::prompt::build(t, 0, 1) {
            arbor_engine::prompt::Prompt::Synthesized(text) => {
                assert_eq!(count(&tokenizer, &text), t.agents[0].turns[1].isl)
            }
            other => panic!("expected synthesized text, got {other:?}"),
        }
    }

    #[test]
    fn text_turns_are_recounted_message_by_message() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/abench/sample.jsonl"
        );
        let loaded = arbor_formats::load::load_path(Path::new(path), None).unwrap();
        let mut workload = Workload {
            trees: loaded.trees,
        };
        let before: Vec<u32> = workload.trees[0].agents[0]
            .turns
            .iter()
            .map(|t| t.isl)
            .collect();
        let recount = apply(&smollm(), &mut workload);
        let after: Vec<u32> = workload.trees[0].agents[0]
            .turns
            .iter()
            .map(|t| t.isl)
            .collect();
        assert!(recount.text_turns > 0);
        assert_ne!(before, after);
        // Prompts grow: each turn extends the previous one.
        assert!(after.windows(2).all(|w| w[1] > w[0]), "{after:?}");
    }

    #[test]
    fn a_file_that_is_not_a_tokenizer_is_an_input_error() {
        let Err(err) = load(Path::new("Cargo.toml")) else {
            panic!("Cargo.toml is not a tokenizer")
        };
        assert!(err.is_input());
        assert!(err.message.contains("Cargo.toml"));
    }
}
