//! A benchmark recipe's fixed values and the validity stamp a run carries
//! (docs/agentx.md): what the `agentx-mvp` recipe sets, the reasons a run
//! is not a valid submission, and the rule that stamps them.
//!
//! Owns the rules only; applying a recipe to the flags (which flags the
//! user gave, which conflict) is the front end's.

use arbor_engine::policy::StartWindow;
use arbor_engine::time::{Nanos, NANOS_PER_SEC};

/// The InferenceX AgentX recipe.
pub const AGENTX_MVP: &str = "agentx-mvp";

/// Shortest duration the recipe accepts, and its default.
pub const MIN_DURATION: Nanos = 900 * NANOS_PER_SEC;
pub const DEFAULT_DURATION: Nanos = 1800 * NANOS_PER_SEC;
pub const IDLE_GAP_CAP: Nanos = 10 * NANOS_PER_SEC;
pub const GRACE: Nanos = 30 * NANOS_PER_SEC;
/// The whole recorded span (`0:1`).
pub const START_WINDOW: StartWindow = StartWindow {
    min_ppm: 0,
    max_ppm: 1_000_000,
};

/// Invalidity reasons stamped on `summary.json`.
pub const UNSAFE_OVERRIDE: &str = "unsafe_override";
pub const CONTEXT_OVERFLOW_RATE_EXCEEDED: &str = "context_overflow_rate_exceeded";
pub const RUN_CANCELLED: &str = "run_cancelled";
/// The inputs are not a pinned registry corpus (docs/data.md).
pub const UNPINNED_DATASET: &str = "unpinned_dataset";
/// The run did not end cleanly (no `end.json`: killed, a second Ctrl+C,
/// an engine error such as a failed root warmup); its summary was rebuilt
/// from the records.
pub const RUN_INCOMPLETE: &str = "run_incomplete";
/// More than [`SHORT_OUTPUT_LIMIT`] of the measured outputs were shorter
/// than planned: the server stopped early (it ignored `ignore_eos` or
/// `max_tokens`), so the run did less work than the recipe's.
pub const SHORT_OUTPUTS_EXCEEDED: &str = "short_outputs_exceeded";

/// Every reason a stamp may carry: the tags docs/agentx.md lists, and
/// nothing else.
pub const REASONS: [&str; 6] = [
    UNSAFE_OVERRIDE,
    UNPINNED_DATASET,
    CONTEXT_OVERFLOW_RATE_EXCEEDED,
    SHORT_OUTPUTS_EXCEEDED,
    RUN_CANCELLED,
    RUN_INCOMPLETE,
];

/// How the unpinned-dataset conflict's text starts: an overridden conflict
/// with this text stamps [`UNPINNED_DATASET`], any other
/// [`UNSAFE_OVERRIDE`] (`run.json` keeps only the texts).
pub const UNPINNED_TEXT: &str = "inputs: not a pinned corpus: ";

/// Request-body fields `--extra-body` may not set under the recipe: the
/// ones arbor writes from the workload (the prompt, the output length,
/// `ignore_eos`, streaming) and the ones a server shortens or multiplies a
/// request by (server-side truncation, stop conditions, several choices,
/// tool schemas added to the prompt). Any other field (`temperature`,
/// `chat_template_kwargs`, ...) is the user's.
pub const LOCKED_BODY_FIELDS: [&str; 15] = [
    "messages",
    "prompt",
    "system",
    "max_tokens",
    "max_completion_tokens",
    "ignore_eos",
    "min_tokens",
    "stop",
    "stop_token_ids",
    "truncate_prompt_tokens",
    "n",
    "best_of",
    "stream",
    "stream_options",
    "tools",
];

/// Above this fraction of requests, context overflows invalidate a run.
pub const CONTEXT_OVERFLOW_LIMIT: f64 = 0.01;

/// Above this fraction of the measured outputs (ok requests whose output
/// was reported or counted), outputs shorter than planned invalidate a
/// run; any run above it is warned about (`runs::warnings`).
pub const SHORT_OUTPUT_LIMIT: f64 = 0.01;

/// What a finished run's stamp is judged on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tallies {
    /// Measured requests that failed as `context_overflow`.
    pub context_overflows: u64,
    /// Every measured request: ok, failed and cancelled.
    pub requests: u64,
    /// Measured outputs shorter than planned, of `measured_outputs`.
    pub short_outputs: u64,
    pub measured_outputs: u64,
    pub cancelled: bool,
}

/// A recipe applied to the flags.
#[derive(Debug, Clone)]
pub struct Applied {
    pub name: &'static str,
    /// Conflicting flags run anyway with `--unsafe-override`.
    pub overridden: Vec<String>,
}

impl Applied {
    /// Reasons known before the run (the run adds its own).
    pub fn invalid_reasons(&self) -> Vec<String> {
        let unpinned = |t: &String| t.starts_with(UNPINNED_TEXT);
        let mut reasons = Vec::new();
        if self.overridden.iter().any(|t| !unpinned(t)) {
            reasons.push(UNSAFE_OVERRIDE.to_string());
        }
        if self.overridden.iter().any(unpinned) {
            reasons.push(UNPINNED_DATASET.to_string());
        }
        reasons
    }
}

/// The validity stamp of a finished run: reasons known before it, plus a
/// context-overflow rate strictly above 1 % of the requests, plus short
/// outputs strictly above 1 % of the measured outputs, plus cancellation.
pub fn invalid_reasons(applied: &Applied, run: Tallies) -> Vec<String> {
    let mut reasons = applied.invalid_reasons();
    let over = |n: u64, of: u64, limit: f64| of > 0 && n as f64 > limit * of as f64;
    if over(run.context_overflows, run.requests, CONTEXT_OVERFLOW_LIMIT) {
        reasons.push(CONTEXT_OVERFLOW_RATE_EXCEEDED.to_string());
    }
    if over(run.short_outputs, run.measured_outputs, SHORT_OUTPUT_LIMIT) {
        reasons.push(SHORT_OUTPUTS_EXCEEDED.to_string());
    }
    if run.cancelled {
        reasons.push(RUN_CANCELLED.to_string());
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_a_tag_the_recipes_documentation_lists() {
        let doc = include_str!("../../docs/agentx.md");
        for reason in REASONS {
            assert!(
                doc.contains(&format!("  - `{reason}`: ")),
                "docs/agentx.md lists no `{reason}`"
            );
            assert!(
                reason.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "`{reason}` is a tag, not a sentence"
            );
        }
    }

    #[test]
    fn overflow_rate_is_strictly_above_one_percent() {
        let a = Applied {
            name: AGENTX_MVP,
            overridden: vec![],
        };
        let run = |context_overflows, cancelled| Tallies {
            context_overflows,
            requests: 100,
            cancelled,
            ..Tallies::default()
        };
        assert!(invalid_reasons(&a, run(1, false)).is_empty());
        assert_eq!(
            invalid_reasons(&a, run(2, true)),
            vec![CONTEXT_OVERFLOW_RATE_EXCEEDED, RUN_CANCELLED]
        );
    }

    #[test]
    fn short_outputs_invalidate_strictly_above_one_percent_of_the_measured() {
        let a = Applied {
            name: AGENTX_MVP,
            overridden: vec![],
        };
        let run = |short_outputs, measured_outputs| Tallies {
            requests: 300,
            short_outputs,
            measured_outputs,
            ..Tallies::default()
        };
        assert!(invalid_reasons(&a, run(2, 200)).is_empty());
        assert_eq!(
            invalid_reasons(&a, run(3, 200)),
            vec![SHORT_OUTPUTS_EXCEEDED]
        );
        // Outputs taken from the plan were not measured: nothing to judge.
        assert!(invalid_reasons(&a, run(0, 0)).is_empty());
    }
}
