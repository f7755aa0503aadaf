//! The engine limits a fitted profile carries: given by the caller, or
//! from what the server's metrics said (`cache_config_info`'s labels in a
//! run's `metrics.jsonl`; vLLM exposes `block_size` and `num_gpu_blocks`
//! there, and the scrape keeps them with `arbor run --metrics-all`).
//!
//! Owns the rule (a given limit wins; runs must agree; a limit neither
//! given nor found is an error naming the `arbor calibrate` flag that
//! gives it, the user's name for it). Fits nothing.

use std::collections::BTreeMap;

use crate::server::{EngineLimits, SchedulingPolicy};

use arbor_error::Error;

use super::runs::Run;

/// The engine limits a caller gives (`None`: not given; read from the
/// runs' metrics), vLLM's flags of the same names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GivenLimits {
    pub max_num_seqs: Option<u32>,
    pub max_num_batched_tokens: Option<u32>,
    pub block_size: Option<u32>,
    pub num_gpu_blocks: Option<u32>,
}

/// Each limit: its `arbor calibrate` flag, and the metric label that may
/// state it.
const LIMITS: [(&str, &str); 4] = [
    ("--max-num-seqs", "max_num_seqs"),
    ("--max-num-batched-tokens", "max_num_batched_tokens"),
    ("--block-size", "block_size"),
    ("--num-gpu-blocks", "num_gpu_blocks"),
];

/// The engine limits of `runs`' server.
pub fn resolve(
    given: &GivenLimits,
    runs: &[Run],
    policy: SchedulingPolicy,
) -> Result<EngineLimits, Error> {
    let given = [
        given.max_num_seqs,
        given.max_num_batched_tokens,
        given.block_size,
        given.num_gpu_blocks,
    ];
    let mut values = [0u32; 4];
    for (i, (flag, label)) in LIMITS.iter().enumerate() {
        values[i] = match given[i] {
            Some(v) => v,
            None => found(runs, label)?.ok_or_else(|| {
                Error::input(format!(
                    "calibrate: the engine's {label} is not known: give {flag} N (no run's \
                     metrics.jsonl carries it; vLLM's cache_config_info states block_size and \
                     num_gpu_blocks when the run scraped with --metrics-all)"
                ))
            })?,
        };
        if values[i] == 0 {
            return Err(Error::input(format!(
                "calibrate: {flag} must be at least 1"
            )));
        }
    }
    Ok(EngineLimits {
        max_num_seqs: values[0],
        max_num_batched_tokens: values[1],
        block_size: values[2],
        num_gpu_blocks: values[3],
        policy,
    })
}

/// The value of `label` the runs' metrics agree on.
fn found(runs: &[Run], label: &str) -> Result<Option<u32>, Error> {
    let seen: BTreeMap<u32, &str> = runs
        .iter()
        .filter_map(|r| r.engine_labels.get(label).map(|v| (*v, r.name.as_str())))
        .collect();
    match seen.len() {
        0 => Ok(None),
        1 => Ok(seen.keys().next().copied()),
        _ => Err(Error::input(format!(
            "calibrate: the runs' servers differ in {label} ({}): calibrate one server \
             configuration at a time",
            seen.iter()
                .map(|(v, name)| format!("{name}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, labels: &[(&str, u32)]) -> Run {
        Run {
            name: name.into(),
            requests: Vec::new(),
            skipped: 0,
            left_out: 0,
            cut: None,
            engine_labels: labels.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            preemptions: None,
            model: None,
            server: None,
        }
    }

    #[test]
    fn given_limits_win_and_metrics_fill_in() {
        let flags = GivenLimits {
            max_num_seqs: Some(64),
            max_num_batched_tokens: Some(2048),
            block_size: Some(32),
            num_gpu_blocks: None,
        };
        let runs = [run("a", &[("block_size", 16), ("num_gpu_blocks", 900)])];
        let Ok(l) = resolve(&flags, &runs, SchedulingPolicy::Vllm) else {
            panic!("resolved")
        };
        assert_eq!(
            (
                l.max_num_seqs,
                l.max_num_batched_tokens,
                l.block_size,
                l.num_gpu_blocks
            ),
            (64, 2048, 32, 900)
        );
    }

    #[test]
    fn a_missing_or_disputed_limit_names_its_flag() {
        let flags = GivenLimits {
            max_num_seqs: Some(64),
            block_size: Some(16),
            num_gpu_blocks: Some(100),
            ..GivenLimits::default()
        };
        let Err(e) = resolve(&flags, &[run("a", &[])], SchedulingPolicy::Vllm) else {
            panic!("missing")
        };
        assert!(
            e.message.contains("--max-num-batched-tokens"),
            "{}",
            e.message
        );
        let flags = GivenLimits {
            max_num_batched_tokens: Some(512),
            ..flags
        };
        let runs = [
            run("a", &[("num_gpu_blocks", 1)]),
            run("b", &[("num_gpu_blocks", 2)]),
        ];
        let flags = GivenLimits {
            num_gpu_blocks: None,
            ..flags
        };
        let Err(e) = resolve(&flags, &runs, SchedulingPolicy::Vllm) else {
            panic!("disputed")
        };
        assert!(e.message.contains("a: 1, b: 2"), "{}", e.message);
    }
}
