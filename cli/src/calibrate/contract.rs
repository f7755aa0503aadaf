//! TEMPORARY: the contract's names until h-server's API is merged.
#![allow(dead_code)]
use arbor_engine::time::Nanos;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepFeatures {
    pub seqs: u32,
    pub tokens: u32,
    pub decode_context_tokens: u64,
    pub prefill_attention: f64,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulingPolicy {
    Vllm,
    Sglang,
}
#[derive(Debug, Clone, PartialEq)]
pub struct EngineLimits {
    pub max_num_batched_tokens: u32,
    pub max_num_seqs: u32,
    pub block_size: u32,
    pub num_gpu_blocks: u32,
    pub policy: SchedulingPolicy,
}
#[derive(Debug, Clone, PartialEq)]
pub struct StepCoefficients {
    pub constant_ns: f64,
    pub per_seq_ns: f64,
    pub per_token_ns: f64,
    pub knee_tokens: u32,
    pub per_token_above_knee_ns: f64,
    pub per_decode_context_token_ns: f64,
    pub per_prefill_attention_ns: f64,
}
impl StepCoefficients {
    pub fn feature_row(f: &StepFeatures, knee_tokens: u32) -> [f64; 6] {
        [
            1.0,
            f64::from(f.seqs),
            f64::from(f.tokens),
            f64::from(f.tokens.saturating_sub(knee_tokens)),
            f.decode_context_tokens as f64,
            f.prefill_attention,
        ]
    }
}
#[derive(Debug, Clone, PartialEq)]
pub struct Overheads {
    pub arrival_ns: u64,
    pub departure_ns: u64,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileOrigin {
    Fitted,
    Roofline,
    Example,
}
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub label: String,
    pub origin: ProfileOrigin,
    pub engine: EngineLimits,
    pub step: StepCoefficients,
    pub overhead: Overheads,
}
impl Profile {
    pub fn to_toml(&self) -> String {
        String::new()
    }
}
pub struct ServerModel;
pub struct ModelRequest<'a> {
    pub id: u64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub blocks: &'a [u64],
}
pub enum ModelEvent {
    FirstToken {
        id: u64,
        at: Nanos,
        cached_tokens: u32,
    },
    Done {
        id: u64,
        at: Nanos,
    },
}
impl ServerModel {
    pub fn new(_: &Profile) -> ServerModel {
        ServerModel
    }
    pub fn submit(&mut self, _now: Nanos, _r: &ModelRequest) {}
    pub fn next_event_at(&self) -> Option<Nanos> {
        None
    }
    pub fn advance(&mut self, _until: Nanos, _e: &mut Vec<ModelEvent>) {}
}
