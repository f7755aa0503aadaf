//! Whether a workload fits the context length the server reports for its
//! model, and the one place that reads that length from a `/v1/models`
//! entry ([`context_length`]; the doctor reads it here too). Pure.
//!
//! A turn fits when its prompt and its output together are at most the
//! context (what vLLM and llama.cpp check before they run a request). A
//! workload with turns that do not fit is refused with the doctor's
//! advice (`--max-context`, `--isl-scale`), unless `--allow-overflow`:
//! those turns would fail as `context_overflow` and skip what follows
//! them.

use arbor_engine::Workload;
use serde_json::Value;

use super::fit_advice::{self, WorkloadSize};

/// The context-length keys servers put in `/v1/models` entries.
pub const CONTEXT_KEYS: [&str; 3] = ["max_model_len", "context_length", "max_context_length"];

/// The context length of a `/v1/models` entry and the key it was under.
pub fn context_length(entry: &Value) -> Option<(&'static str, u64)> {
    CONTEXT_KEYS
        .iter()
        .find_map(|k| entry.get(*k).and_then(Value::as_u64).map(|n| (*k, n)))
}

/// The turns of a workload that do not fit a context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// Turns whose prompt and output exceed the context.
    pub turns: u64,
    /// All turns.
    pub of: u64,
    /// The largest prompt plus output of any turn.
    pub largest: u64,
}

/// The turns of `workload` over `context` tokens; `None` when all fit.
pub fn overflow(workload: &Workload, context: u64) -> Option<Overflow> {
    let mut over = Overflow {
        turns: 0,
        of: 0,
        largest: 0,
    };
    let turns = workload
        .trees
        .iter()
        .flat_map(|t| t.agents.iter())
        .flat_map(|a| a.turns.iter());
    for turn in turns {
        let need = u64::from(turn.isl) + u64::from(turn.osl);
        over.of += 1;
        over.largest = over.largest.max(need);
        if need > context {
            over.turns += 1;
        }
    }
    (over.turns > 0).then_some(over)
}

/// The refusal of a workload that overflows `context` (`key` of `model`),
/// with the doctor's advice; under a recipe that locks the prompts
/// (`fit_locked`), the advice is a longer context, never `--max-context`.
pub fn refusal(
    workload: &Workload,
    over: Overflow,
    context: u64,
    key: &str,
    model: &str,
    fit_locked: bool,
) -> String {
    if fit_locked {
        return format!(
            "{} of {} turns need more than the {context} tokens the server reports for {model} \
             ({key}; the largest turn needs {} tokens of prompt and output): they would fail as \
             context_overflow. The recipe sends prompts as recorded (--max-context and \
             --isl-scale are locked): serve the model with a context of at least {} tokens, or \
             give --allow-overflow to run it as it is (overflows above 1 % of requests stamp the \
             run invalid)",
            over.turns, over.of, over.largest, over.largest
        );
    }
    let advice = fit_advice::advise(context, Some(WorkloadSize::of(workload)));
    let scale = advice
        .isl_scale
        .map(|f| format!(" or --isl-scale {f} (shrinks every prompt)"))
        .unwrap_or_default();
    format!(
        "{} of {} turns need more than the {context} tokens the server reports for {model} \
         ({key}; the largest turn needs {} tokens of prompt and output): they would fail as \
         context_overflow. Fit the workload with --max-context {} (drops the oldest \
         context){scale}, or give --allow-overflow to run it as it is",
        over.turns, over.of, over.largest, advice.max_context
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_formats::synthetic::SyntheticSpec;
    use serde_json::json;

    /// Three trees of two turns, every prompt 1,000 tokens and output 100,
    /// but one prompt of `long`.
    fn workload(long: u32) -> Workload {
        let spec: SyntheticSpec = "trees=3,turns=2,spawn=0,isl=1000,max_isl=1000,osl=100"
            .parse()
            .unwrap();
        let mut w = spec.generate();
        for turn in w
            .trees
            .iter_mut()
            .flat_map(|t| t.agents.iter_mut())
            .flat_map(|a| a.turns.iter_mut())
        {
            turn.isl = 1000;
            turn.osl = 100;
        }
        w.trees[1].agents[0].turns[0].isl = long;
        w
    }

    #[test]
    fn the_context_length_is_read_under_any_of_its_keys() {
        assert_eq!(
            context_length(&json!({"id":"m","max_model_len":4096})),
            Some(("max_model_len", 4096))
        );
        assert_eq!(
            context_length(&json!({"id":"m","context_length":8192})),
            Some(("context_length", 8192))
        );
        assert_eq!(context_length(&json!({"id":"m"})), None);
    }

    #[test]
    fn a_turn_fits_when_its_prompt_and_output_do() {
        assert_eq!(overflow(&workload(1000), 1100), None);
        let long = workload(5000);
        let all = long.turn_count() as u64;
        assert!(all >= 2, "the fixture has {all} turns");
        let over = overflow(&long, 1100).unwrap();
        assert_eq!(
            over,
            Overflow {
                turns: 1,
                of: all,
                largest: 5100
            }
        );
        // The output counts: 1,000 + 100 does not fit 1,099.
        assert_eq!(overflow(&workload(1000), 1099).unwrap().turns, all);
    }

    #[test]
    fn the_refusal_gives_the_doctors_advice() {
        let w = workload(101_000);
        let over = overflow(&w, 8192).unwrap();
        let text = refusal(&w, over, 8192, "max_model_len", "m", false);
        let first = format!(
            "1 of {} turns need more than the 8192 tokens the server reports for m",
            w.turn_count()
        );
        for words in [
            first.as_str(),
            "101100 tokens",
            "--max-context 8092",
            "--isl-scale 0.08",
            "--allow-overflow",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
    }

    #[test]
    fn under_the_recipe_the_refusal_advises_a_longer_context_never_max_context() {
        let w = workload(101_000);
        let over = overflow(&w, 8192).unwrap();
        let text = refusal(&w, over, 8192, "max_model_len", "m", true);
        assert!(
            text.contains("a context of at least 101100 tokens")
                && text.contains("--allow-overflow"),
            "{text}"
        );
        assert!(!text.contains("--max-context 8092"), "{text}");
        assert!(!text.contains("--isl-scale 0.08"), "{text}");
    }
}
