//! What to suggest to fit a workload to the server's context length
//! (`--max-context`, `--isl-scale`; engine `fit`): the doctor's
//! `context_length` finding and the pre-flight's refusal ([`super::fit`])
//! both word it so.
//!
//! Pure arithmetic on the context length the server reports and, when a
//! workload was given, its largest prompt and output ([`WorkloadSize`]).
//! Knows nothing of probes or reports.

use arbor_engine::Workload;

/// The sizes of a workload that decide whether it fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadSize {
    /// The largest prompt, in tokens.
    pub largest_prompt: u32,
    /// The largest output, in tokens.
    pub largest_output: u32,
}

impl WorkloadSize {
    /// The largest prompt and output of any turn of `workload`.
    pub fn of(workload: &Workload) -> WorkloadSize {
        let turns = workload
            .trees
            .iter()
            .flat_map(|t| t.agents.iter())
            .flat_map(|a| a.turns.iter());
        let (mut largest_prompt, mut largest_output) = (0, 0);
        for turn in turns {
            largest_prompt = largest_prompt.max(turn.isl);
            largest_output = largest_output.max(turn.osl);
        }
        WorkloadSize {
            largest_prompt,
            largest_output,
        }
    }
}

/// The suggestion for a server of `context` tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// `--max-context N`: the context less the workload's largest output
    /// (at least half the context), or the context itself without a
    /// workload.
    pub max_context: u64,
    /// `--isl-scale F`, when the workload's largest prompt exceeds
    /// `max_context`: `max_context / largest prompt`, rounded down to
    /// three decimals (at least 0.001).
    pub isl_scale: Option<f64>,
    /// The suggestion in words.
    pub text: String,
}

/// The suggestion for a server of `context` tokens, for `workload` if
/// one was given.
pub fn advise(context: u64, workload: Option<WorkloadSize>) -> Advice {
    let Some(size) = workload else {
        return Advice {
            max_context: context,
            isl_scale: None,
            text: format!(
                "fit workloads with longer prompts to it: --max-context {context} (less their longest output)"
            ),
        };
    };
    let max_context = context
        .saturating_sub(u64::from(size.largest_output))
        .max(context / 2)
        .max(1);
    let prompt = u64::from(size.largest_prompt);
    if prompt <= max_context {
        return Advice {
            max_context,
            isl_scale: None,
            text: format!(
                "the workload fits: its largest prompt is {prompt} tokens, its largest output {}",
                size.largest_output
            ),
        };
    }
    let scale = ((max_context * 1000 / prompt).max(1)) as f64 / 1000.0;
    Advice {
        max_context,
        isl_scale: Some(scale),
        text: format!(
            "the workload's largest prompt is {prompt} tokens: --max-context {max_context} \
             (drops the oldest context) or --isl-scale {scale} (shrinks every prompt)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_flags_by_the_workload() {
        let bare = advise(8192, None);
        assert_eq!((bare.max_context, bare.isl_scale), (8192, None));
        assert!(bare.text.contains("--max-context 8192"));
        let small = WorkloadSize {
            largest_prompt: 4000,
            largest_output: 192,
        };
        let fits = advise(8192, Some(small));
        assert!(fits.isl_scale.is_none() && fits.text.contains("fits"));
        let big = WorkloadSize {
            largest_prompt: 200_000,
            largest_output: 4192,
        };
        let over = advise(8192, Some(big));
        assert_eq!((over.max_context, over.isl_scale), (4096, Some(0.020)));
        assert!(over.text.contains("--isl-scale 0.02"));
    }
}
