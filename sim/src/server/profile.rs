//! A server profile: the engine limits, the step-time coefficients and the
//! per-request overheads of one modelled inference engine, read from and
//! written to TOML (docs/capacity.md documents every field).
//!
//! Owns the file format, its checks and its errors. Must not: compute step
//! times (`step.rs`) or hold any run state.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What a profile is: where its numbers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileOrigin {
    /// Fitted here against a real server (`arbor calibrate`).
    Fitted,
    /// A roofline estimate for a named GPU and model, arithmetic shown.
    Roofline,
    /// A small example for tests and the emulator: no real server.
    Example,
}

/// How a step is composed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedulingPolicy {
    /// vLLM V1: running requests first (decodes and unfinished chunks),
    /// then waiting requests' prefill chunks, first come first served.
    #[default]
    Vllm,
    /// SGLang-style: waiting requests' prefills first, then decodes.
    Sglang,
}

/// A server profile (TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// What it is, e.g. "roofline: H100 SXM, Llama-3.1-8B bf16".
    pub label: String,
    pub origin: ProfileOrigin,
    pub engine: EngineLimits,
    pub step: StepCoefficients,
    #[serde(default)]
    pub overhead: Overheads,
    /// How sure the fit is of its coefficients (fitted profiles only):
    /// draws a prediction is repeated under to give its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// A fitted profile's uncertainty: its coefficients refitted on
/// resamples of the calibration's requests (docs/capacity.md,
/// "Uncertainty"). A prediction repeated under every draw
/// ([`Profile::with_draw`]) gives the fit's share of its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Uncertainty {
    /// How the draws were made, in words (e.g. "bootstrap: 40 resamples
    /// of 412 requests").
    pub method: String,
    /// One refitted set of coefficients per resample.
    #[serde(default)]
    pub draws: Vec<Draw>,
}

/// One resample's coefficients: the step and the overheads (the engine
/// limits are the profile's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draw {
    pub step: StepCoefficients,
    #[serde(default)]
    pub overhead: Overheads,
}

/// The engine's limits (vLLM's flags of the same names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineLimits {
    pub max_num_batched_tokens: u32,
    pub max_num_seqs: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// KV pool size in blocks.
    pub num_gpu_blocks: u32,
    #[serde(default)]
    pub policy: SchedulingPolicy,
}

/// Step time = constant + per_seq·seqs + per_token·tokens
///           + per_token_above_knee·max(0, tokens − knee_tokens)
///           + per_decode_context_token·Σ(context of decoding seqs)
///           + per_prefill_attention·Σ(chunk_tokens · (cached_or_done_context + chunk_tokens/2))
///
/// All coefficients non-negative, in nanoseconds (f64 in the file; the
/// model rounds once per step to integer ns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepCoefficients {
    pub constant_ns: f64,
    #[serde(default)]
    pub per_seq_ns: f64,
    #[serde(default)]
    pub per_token_ns: f64,
    #[serde(default)]
    pub knee_tokens: u32,
    #[serde(default)]
    pub per_token_above_knee_ns: f64,
    #[serde(default)]
    pub per_decode_context_token_ns: f64,
    #[serde(default)]
    pub per_prefill_attention_ns: f64,
}

/// Per-request overheads: from receipt to the scheduler (tokenizing,
/// queueing into the engine), and from a token's step to the client
/// (detokenizing, streaming). Both are added to every request, outside
/// the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overheads {
    #[serde(default)]
    pub arrival_ns: u64,
    #[serde(default)]
    pub departure_ns: u64,
}

/// The step-time features of one batch (what calibration regresses on).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepFeatures {
    /// Sequences in the batch (decodes and prefill chunks).
    pub seqs: u32,
    /// Tokens computed in the step (one per decode, a chunk per prefill).
    pub tokens: u32,
    /// Σ context of the decoding sequences (tokens attended, the new one
    /// included).
    pub decode_context_tokens: u64,
    /// Σ chunk_tokens · (context before the chunk + chunk_tokens / 2) over
    /// the prefill chunks.
    pub prefill_attention: f64,
}

/// A profile that cannot be used: the file, the key, what was expected.
#[derive(Debug, Error)]
pub enum ProfileError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: `{key}`: expected {expected}", path.display())]
    Invalid {
        path: PathBuf,
        key: &'static str,
        expected: &'static str,
    },
}

impl Profile {
    /// Reads and checks a profile file.
    pub fn from_toml_path(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::from_toml_str(&text, path)
    }

    /// Parses and checks profile text; `path` names it in errors.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        let profile: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().replace('\n', " "),
        })?;
        profile
            .check()
            .map_err(|(key, expected)| ProfileError::Invalid {
                path: path.to_path_buf(),
                key,
                expected,
            })?;
        Ok(profile)
    }

    /// This profile with `draw`'s coefficients and no uncertainty of its
    /// own (its limits and label unchanged).
    pub fn with_draw(&self, draw: &Draw) -> Profile {
        Profile {
            label: self.label.clone(),
            origin: self.origin,
            engine: self.engine.clone(),
            step: draw.step.clone(),
            overhead: draw.overhead,
            uncertainty: None,
        }
    }

    /// The profile as TOML (what `arbor calibrate` writes).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// The first field out of range: its key and what it must be.
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        const POSITIVE: &str = "a whole number above 0";
        let e = &self.engine;
        if e.max_num_batched_tokens == 0 {
            return Err(("engine.max_num_batched_tokens", POSITIVE));
        }
        if e.max_num_seqs == 0 {
            return Err(("engine.max_num_seqs", POSITIVE));
        }
        if e.block_size == 0 {
            return Err(("engine.block_size", POSITIVE));
        }
        if e.num_gpu_blocks == 0 {
            return Err(("engine.num_gpu_blocks", POSITIVE));
        }
        let s = &self.step;
        let coefficients = [
            ("step.constant_ns", s.constant_ns),
            ("step.per_seq_ns", s.per_seq_ns),
            ("step.per_token_ns", s.per_token_ns),
            ("step.per_token_above_knee_ns", s.per_token_above_knee_ns),
            (
                "step.per_decode_context_token_ns",
                s.per_decode_context_token_ns,
            ),
            ("step.per_prefill_attention_ns", s.per_prefill_attention_ns),
        ];
        for (key, value) in coefficients {
            if !in_range(value) {
                return Err((key, "a number of nanoseconds from 0 to 1e12"));
            }
        }
        let draws = self.uncertainty.iter().flat_map(|u| &u.draws);
        for d in draws.map(|d| &d.step) {
            let all = [
                d.constant_ns,
                d.per_seq_ns,
                d.per_token_ns,
                d.per_token_above_knee_ns,
                d.per_decode_context_token_ns,
                d.per_prefill_attention_ns,
            ];
            if !all.into_iter().all(in_range) {
                return Err((
                    "uncertainty.draws",
                    "step coefficients of nanoseconds from 0 to 1e12",
                ));
            }
        }
        Ok(())
    }
}

/// Whether `value` is a coefficient a profile may state.
fn in_range(value: f64) -> bool {
    value.is_finite() && (0.0..=MAX_COEFFICIENT_NS).contains(&value)
}

/// The largest coefficient a profile may state (about 17 minutes).
pub const MAX_COEFFICIENT_NS: f64 = 1.0e12;

impl fmt::Display for ProfileOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProfileOrigin::Fitted => "fitted",
            ProfileOrigin::Roofline => "roofline",
            ProfileOrigin::Example => "example",
        })
    }
}

impl FromStr for SchedulingPolicy {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "vllm" => Ok(SchedulingPolicy::Vllm),
            "sglang" => Ok(SchedulingPolicy::Sglang),
            _ => Err(format!("expected vllm or sglang, got `{text}`")),
        }
    }
}
