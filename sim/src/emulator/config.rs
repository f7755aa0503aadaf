//! Emulator configuration and the parsers behind its command-line flags.
//!
//! Every parser returns a [`PolicyError`] saying what is wrong with the
//! value (never which flag: the CLI uses them as clap value parsers,
//! `value_parser = flags::ttft_ms`, and clap names the flag); the parsed
//! values go into [`EmulatorFlags`] and [`EmulatorFlags::into_config`].

use arbor_engine::time::{millis_to_nanos, secs_to_nanos, Nanos, NANOS_PER_SEC};
use arbor_engine::PolicyError;

use super::router::RouteBy;
use super::tokens::PromptTokenizer;
use crate::server::Profile;

/// Default context length reported by `/v1/models` and enforced on requests.
pub const DEFAULT_MAX_MODEL_LEN: u32 = 131_072;
/// Default model name.
pub const DEFAULT_MODEL_NAME: &str = "arbor-emulator";
/// Default bound on stamps kept in memory (the most recent requests).
pub const DEFAULT_STAMP_CAPACITY: usize = 1_000_000;
/// Output tokens when a request names neither `max_tokens` nor
/// `max_completion_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 16;
/// Most replicas a fleet serves.
pub const MAX_REPLICAS: usize = 256;
/// Default bound on the routing information kept per replica (the most
/// recent requests; `received.rs`).
pub const DEFAULT_RECEIVED_CAPACITY: usize = 100_000;
/// Default [`ReadTimeouts::header`]: 30 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Nanos = 30 * NANOS_PER_SEC;
/// Default [`ReadTimeouts::body`]: 30 s.
pub const DEFAULT_BODY_READ_TIMEOUT: Nanos = 30 * NANOS_PER_SEC;

/// How long the emulator waits for a client's bytes, so a slow or stalled
/// client (slowloris) cannot hold a connection forever
/// (docs/emulator.md, "Read timeouts").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadTimeouts {
    /// A request head must be complete this long after the connection
    /// opened or its previous response ended (so an idle keep-alive
    /// connection is closed after it too); otherwise the connection is
    /// closed. Also bounds an https connection's TLS handshake.
    pub header: Nanos,
    /// A request body must be complete this long after its head arrived;
    /// otherwise the answer is 408 and the connection is closed.
    pub body: Nanos,
}

impl Default for ReadTimeouts {
    fn default() -> Self {
        ReadTimeouts {
            header: DEFAULT_HEADER_READ_TIMEOUT,
            body: DEFAULT_BODY_READ_TIMEOUT,
        }
    }
}

/// How long a request takes (see `docs/emulator.md`).
///
/// `ttft = ttft + uncached_prompt_tokens / prefill` (the prefill term only
/// when `prefill_mtok_s` is set); content chunk `k` (0-based) is written at
/// `receipt + ttft + k * itl`, and the final chunk (finish reason, usage,
/// `[DONE]`) at `receipt + ttft + n * itl`, so a request's service time is
/// the same `ttft + osl * itl` as the virtual clock's `fixed` model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimingModel {
    /// Base time to first token, nanoseconds.
    pub ttft: Nanos,
    /// Inter-token latency, nanoseconds.
    pub itl: Nanos,
    /// Prefill rate for uncached prompt tokens, milli-tokens per second.
    pub prefill_mtok_s: Option<u64>,
}

impl TimingModel {
    /// Time to first token for a request with `uncached` prompt tokens.
    pub fn ttft_for(&self, uncached: u32) -> Nanos {
        let prefill = match self.prefill_mtok_s {
            Some(rate) if uncached > 0 => {
                let numerator = uncached as u128 * NANOS_PER_SEC as u128 * 1000;
                let rate = rate.max(1) as u128;
                ((numerator + rate / 2) / rate).min(u64::MAX as u128) as Nanos
            }
            _ => 0,
        };
        self.ttft.saturating_add(prefill)
    }
}

/// Status of an injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailStatus {
    /// HTTP 500 Internal Server Error.
    #[default]
    InternalError,
    /// HTTP 429 Too Many Requests, with `Retry-After`.
    TooManyRequests,
    /// HTTP 529, Anthropic's "overloaded" (`overloaded_error`).
    Overloaded,
}

impl FailStatus {
    pub fn code(self) -> u16 {
        match self {
            FailStatus::InternalError => 500,
            FailStatus::TooManyRequests => 429,
            FailStatus::Overloaded => 529,
        }
    }
}

/// Fault injection knobs. Each fault fires on a request when a seeded hash
/// of the request's sequence number (and the fault's kind) falls below its
/// rate, so a run is reproducible.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Faults {
    /// Share of requests answered with `fail_status` instead of a completion.
    pub fail_rate: f64,
    pub fail_status: FailStatus,
    /// `Retry-After` seconds on a 429.
    pub retry_after_s: u64,
    /// Share of requests whose connection is closed after
    /// `disconnect_after` content chunks, without `[DONE]`.
    pub disconnect_rate: f64,
    pub disconnect_after: u32,
    /// Share of requests that pause `stall` after their first chunk.
    pub stall_rate: f64,
    pub stall: Nanos,
    /// Share of streams with a malformed SSE line (`data: {not json`)
    /// before their middle chunk.
    pub malformed_rate: f64,
    /// Every stream ends after at most this many tokens, whatever its
    /// `max_tokens` asks: a model that stops early on a server that
    /// ignores `ignore_eos` (`--eos-after`).
    pub eos_after: Option<u32>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            fail_rate: 0.0,
            fail_status: FailStatus::InternalError,
            retry_after_s: 1,
            disconnect_rate: 0.0,
            disconnect_after: 1,
            stall_rate: 0.0,
            stall: 5 * NANOS_PER_SEC,
            malformed_rate: 0.0,
            eos_after: None,
        }
    }
}

/// Everything the emulator needs. `Default` is a zero-latency server with
/// no faults, an unbounded prefix cache and the default model name.
#[derive(Debug, Clone, PartialEq)]
pub struct EmulatorConfig {
    pub timing: TimingModel,
    pub faults: Faults,
    /// Largest `prompt + max tokens` a request may ask for.
    pub max_model_len: u32,
    /// Name reported by `/v1/models` and required of requests that name one.
    pub model_name: String,
    /// The model name the answers carry, when not `model_name`: a router
    /// that served the request with another model (`--answer-as`).
    pub answer_as: Option<String>,
    /// Prefix cache capacity in 64-token blocks (LRU); `None` is unbounded,
    /// `Some(0)` disables the cache.
    pub cache_blocks: Option<usize>,
    /// Seed of the fault decisions.
    pub seed: u64,
    /// Stamps kept in memory: the most recent `stamp_capacity` requests.
    pub stamp_capacity: usize,
    /// Counts prompt text exactly; `None` estimates (see `tokens.rs`).
    pub tokenizer: Option<PromptTokenizer>,
    /// How long a client may take to send a request.
    pub read_timeouts: ReadTimeouts,
    /// Serve under the batching server model of this profile (`arbor
    /// emulate --profile`): queueing, batching, its KV and prefix cache
    /// replace `timing` and `cache_blocks`.
    pub profile: Option<Profile>,
    /// Routing information kept: the most recent `received_capacity`
    /// completion requests (`received.rs`).
    pub received_capacity: usize,
    /// Keep each received request's raw body too (tests only: costs the
    /// bodies' memory).
    pub keep_bodies: bool,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            timing: TimingModel::default(),
            faults: Faults::default(),
            max_model_len: DEFAULT_MAX_MODEL_LEN,
            model_name: DEFAULT_MODEL_NAME.to_string(),
            answer_as: None,
            cache_blocks: None,
            seed: 0,
            stamp_capacity: DEFAULT_STAMP_CAPACITY,
            tokenizer: None,
            read_timeouts: ReadTimeouts::default(),
            profile: None,
            received_capacity: DEFAULT_RECEIVED_CAPACITY,
            keep_bodies: false,
        }
    }
}

impl EmulatorConfig {
    /// Checks values that the typed fields cannot rule out.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let rates = [
            ("fail rate", self.faults.fail_rate),
            ("disconnect rate", self.faults.disconnect_rate),
            ("stall rate", self.faults.stall_rate),
            ("malformed rate", self.faults.malformed_rate),
        ];
        for (name, rate) in rates {
            if !(0.0..=1.0).contains(&rate) {
                return Err(PolicyError::new(format!(
                    "{name}: a rate must be in [0, 1], got {rate}"
                )));
            }
        }
        if self.max_model_len == 0 {
            return Err(PolicyError::new("max model length: must be at least 1"));
        }
        if self.timing.prefill_mtok_s == Some(0) {
            return Err(PolicyError::new("prefill rate: must be positive"));
        }
        if self.read_timeouts.header == 0 || self.read_timeouts.body == 0 {
            return Err(PolicyError::new("read timeouts: must be positive"));
        }
        flags::model_name(&self.model_name)?;
        if let Some(name) = &self.answer_as {
            flags::model_name(name)?;
        }
        if self.faults.eos_after == Some(0) {
            return Err(PolicyError::new("eos after: at least 1 token"));
        }
        Ok(())
    }

    /// The settings in one line, with the flags' names and units, for a
    /// run's console output: `--ttft-ms 10 --itl-ms 0.2, no prefill term,
    /// prefix cache unbounded, no faults`.
    pub fn describe(&self) -> String {
        let t = &self.timing;
        let mut parts = Vec::new();
        if let Some(profile) = &self.profile {
            parts.push(format!("--profile ({})", profile.label));
        } else {
            parts.push(format!(
                "--ttft-ms {} --itl-ms {}",
                millis(t.ttft),
                millis(t.itl)
            ));
            parts.push(match t.prefill_mtok_s {
                Some(rate) => format!("--prefill-tok-s {}", rate as f64 / 1000.0),
                None => "no prefill term".to_string(),
            });
            parts.push(match self.cache_blocks {
                None => "prefix cache unbounded".to_string(),
                Some(0) => "prefix cache off".to_string(),
                Some(n) => format!("prefix cache {n} blocks"),
            });
        }
        let f = &self.faults;
        let faults: Vec<String> = [
            ("--fail-rate", f.fail_rate),
            ("--disconnect-rate", f.disconnect_rate),
            ("--stall-rate", f.stall_rate),
            ("--malformed-rate", f.malformed_rate),
        ]
        .iter()
        .filter(|(_, rate)| *rate > 0.0)
        .map(|(flag, rate)| format!("{flag} {rate}"))
        .collect();
        let mut faults = faults;
        if let Some(n) = f.eos_after {
            faults.push(format!("--eos-after {n}"));
        }
        if let Some(name) = &self.answer_as {
            faults.push(format!("--answer-as {name}"));
        }
        if faults.is_empty() {
            parts.push("no faults".to_string());
        } else {
            parts.extend(faults);
        }
        if let Some(t) = &self.tokenizer {
            parts.push(format!("prompt tokens counted with --tokenizer {}", t.name));
        }
        parts.join(", ")
    }
}

/// Nanoseconds as milliseconds, without trailing zeros: `10`, `0.2`.
fn millis(ns: Nanos) -> String {
    let text = format!("{:.6}", ns as f64 / 1e6);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One parser per flag. Each says what it expected and what it got.
pub mod flags {
    use super::*;

    fn number(text: &str, what: &str) -> Result<f64, PolicyError> {
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(PolicyError::new(format!("expected {what}, got `{text}`"))),
        }
    }

    fn millis(text: &str) -> Result<Nanos, PolicyError> {
        let ms = number(text, "a non-negative number of milliseconds")?;
        millis_to_nanos(ms).ok_or_else(|| PolicyError::new(format!("too large: `{text}`")))
    }

    fn rate_per_s(text: &str) -> Result<u64, PolicyError> {
        let v = number(text, "a positive number of tokens per second")?;
        let mtok = (v * 1000.0).round();
        if !(1.0..=1.0e15).contains(&mtok) {
            return Err(PolicyError::new(format!(
                "expected a positive number of tokens per second, got `{text}`"
            )));
        }
        Ok(mtok as u64)
    }

    fn fraction(text: &str) -> Result<f64, PolicyError> {
        let v = number(text, "a rate in [0, 1]")?;
        if v > 1.0 {
            return Err(PolicyError::new(format!(
                "expected a rate in [0, 1], got `{text}`"
            )));
        }
        Ok(v)
    }

    fn integer<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, PolicyError> {
        text.trim()
            .parse::<T>()
            .map_err(|_| PolicyError::new(format!("expected {what}, got `{text}`")))
    }

    /// `--ttft-ms`: base time to first token.
    pub fn ttft_ms(text: &str) -> Result<Nanos, PolicyError> {
        millis(text)
    }
    /// `--itl-ms`: inter-token latency.
    pub fn itl_ms(text: &str) -> Result<Nanos, PolicyError> {
        millis(text)
    }
    /// `--prefill-tok-s`: prefill rate, returned in milli-tokens per second.
    pub fn prefill_tok_s(text: &str) -> Result<u64, PolicyError> {
        rate_per_s(text)
    }
    /// `--decode-tok-s`: decode rate, returned as the inter-token latency
    /// in nanoseconds (`1 / rate`).
    pub fn decode_tok_s(text: &str) -> Result<Nanos, PolicyError> {
        let mtok = rate_per_s(text)?;
        let itl = (NANOS_PER_SEC as u128 * 1000 + mtok as u128 / 2) / mtok as u128;
        Ok(itl.min(u64::MAX as u128) as Nanos)
    }
    /// `--max-model-len`: context length in tokens (at least 1).
    pub fn max_model_len(text: &str) -> Result<u32, PolicyError> {
        match integer::<u32>(text, "a positive number of tokens")? {
            0 => Err(PolicyError::new(format!(
                "expected at least 1 token, got `{text}`"
            ))),
            n => Ok(n),
        }
    }
    /// `--eos-after`: a number of tokens (at least 1).
    pub fn eos_after(text: &str) -> Result<u32, PolicyError> {
        match integer::<u32>(text, "a positive number of tokens")? {
            0 => Err(PolicyError::new(format!(
                "expected at least 1 token, got `{text}`"
            ))),
            n => Ok(n),
        }
    }
    /// `--model-name`: non-empty, printable, at most 256 bytes.
    pub fn model_name(text: &str) -> Result<String, PolicyError> {
        if text.is_empty() || text.len() > 256 || text.chars().any(|c| c.is_control()) {
            return Err(PolicyError::new(format!(
                "expected a non-empty printable name of at most 256 bytes, got `{text}`"
            )));
        }
        Ok(text.to_string())
    }
    /// `--cache-blocks`: prefix cache capacity in 64-token blocks (0 disables).
    pub fn cache_blocks(text: &str) -> Result<usize, PolicyError> {
        integer(text, "a number of 64-token blocks")
    }
    /// `--fail-rate`.
    pub fn fail_rate(text: &str) -> Result<f64, PolicyError> {
        fraction(text)
    }
    /// `--fail-status 500|429|529`.
    pub fn fail_status(text: &str) -> Result<FailStatus, PolicyError> {
        match text.trim() {
            "500" => Ok(FailStatus::InternalError),
            "429" => Ok(FailStatus::TooManyRequests),
            "529" => Ok(FailStatus::Overloaded),
            _ => Err(PolicyError::new(format!(
                "expected 500, 429 or 529, got `{text}`"
            ))),
        }
    }
    /// `--retry-after-s`: whole seconds sent in `Retry-After` on a 429.
    pub fn retry_after_s(text: &str) -> Result<u64, PolicyError> {
        integer(text, "a whole number of seconds")
    }
    /// `--disconnect-rate`.
    pub fn disconnect_rate(text: &str) -> Result<f64, PolicyError> {
        fraction(text)
    }
    /// `--disconnect-after N`: content chunks written before the close.
    pub fn disconnect_after(text: &str) -> Result<u32, PolicyError> {
        integer(text, "a number of chunks")
    }
    /// `--stall-rate`.
    pub fn stall_rate(text: &str) -> Result<f64, PolicyError> {
        fraction(text)
    }
    /// `--stall-s`: pause after the first chunk, seconds (fractions allowed).
    pub fn stall_s(text: &str) -> Result<Nanos, PolicyError> {
        let s = number(text, "a non-negative number of seconds")?;
        secs_to_nanos(s).ok_or_else(|| PolicyError::new(format!("too large: `{text}`")))
    }
    /// `--malformed-rate`.
    pub fn malformed_rate(text: &str) -> Result<f64, PolicyError> {
        fraction(text)
    }
    /// `--seed`.
    pub fn seed(text: &str) -> Result<u64, PolicyError> {
        integer(text, "an unsigned 64-bit integer")
    }
    /// `--replicas N`: 1 to [`MAX_REPLICAS`].
    pub fn replicas(text: &str) -> Result<usize, PolicyError> {
        match integer::<usize>(text, "a number of replicas")? {
            n @ 1..=MAX_REPLICAS => Ok(n),
            _ => Err(PolicyError::new(format!(
                "expected 1 to {MAX_REPLICAS} replicas, got `{text}`"
            ))),
        }
    }
    /// `--router MODE`: affinity, dynamo, token, user, header:NAME or
    /// round-robin.
    pub fn router(text: &str) -> Result<RouteBy, PolicyError> {
        text.parse()
    }
}

/// The flags as parsed values, all optional; [`EmulatorFlags::into_config`]
/// fills the defaults and checks combinations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmulatorFlags {
    pub ttft_ms: Option<Nanos>,
    pub itl_ms: Option<Nanos>,
    pub prefill_tok_s: Option<u64>,
    /// As returned by [`flags::decode_tok_s`]: an ITL in nanoseconds.
    pub decode_tok_s: Option<Nanos>,
    pub max_model_len: Option<u32>,
    pub model_name: Option<String>,
    pub cache_blocks: Option<usize>,
    pub fail_rate: Option<f64>,
    pub fail_status: Option<FailStatus>,
    pub retry_after_s: Option<u64>,
    pub disconnect_rate: Option<f64>,
    pub disconnect_after: Option<u32>,
    pub stall_rate: Option<f64>,
    pub stall_s: Option<Nanos>,
    pub malformed_rate: Option<f64>,
    pub eos_after: Option<u32>,
    pub answer_as: Option<String>,
    pub seed: Option<u64>,
}

impl EmulatorFlags {
    /// The configuration these flags describe. `--itl-ms` and
    /// `--decode-tok-s` are two ways to say the same thing: giving both is
    /// an error.
    pub fn into_config(self) -> Result<EmulatorConfig, PolicyError> {
        let defaults = EmulatorConfig::default();
        let itl = match (self.itl_ms, self.decode_tok_s) {
            (Some(_), Some(_)) => return Err(PolicyError::new(
                "an inter-token latency and a decode rate say the same thing: give one, not both",
            )),
            (Some(itl), None) | (None, Some(itl)) => itl,
            (None, None) => defaults.timing.itl,
        };
        let f = defaults.faults;
        let config = EmulatorConfig {
            timing: TimingModel {
                ttft: self.ttft_ms.unwrap_or(defaults.timing.ttft),
                itl,
                prefill_mtok_s: self.prefill_tok_s,
            },
            faults: Faults {
                fail_rate: self.fail_rate.unwrap_or(f.fail_rate),
                fail_status: self.fail_status.unwrap_or(f.fail_status),
                retry_after_s: self.retry_after_s.unwrap_or(f.retry_after_s),
                disconnect_rate: self.disconnect_rate.unwrap_or(f.disconnect_rate),
                disconnect_after: self.disconnect_after.unwrap_or(f.disconnect_after),
                stall_rate: self.stall_rate.unwrap_or(f.stall_rate),
                stall: self.stall_s.unwrap_or(f.stall),
                malformed_rate: self.malformed_rate.unwrap_or(f.malformed_rate),
                eos_after: self.eos_after,
            },
            max_model_len: self.max_model_len.unwrap_or(defaults.max_model_len),
            model_name: self.model_name.unwrap_or(defaults.model_name),
            answer_as: self.answer_as,
            cache_blocks: self.cache_blocks,
            seed: self.seed.unwrap_or(defaults.seed),
            stamp_capacity: defaults.stamp_capacity,
            // A loaded file, not a flag's value: the caller sets it.
            tokenizer: None,
            read_timeouts: defaults.read_timeouts,
            // A loaded file too.
            profile: None,
            received_capacity: defaults.received_capacity,
            keep_bodies: false,
        };
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_say_what_they_expected_and_name_no_flag() {
        let cases = [
            flags::fail_rate("1.5").map(|_| ()),
            flags::fail_status("404").map(|_| ()),
            flags::ttft_ms("-3").map(|_| ()),
            flags::max_model_len("0").map(|_| ()),
            flags::prefill_tok_s("0").map(|_| ()),
            flags::model_name("").map(|_| ()),
        ];
        for case in cases {
            let e = case.unwrap_err().to_string();
            assert!(e.starts_with("expected "), "{e}");
            assert!(!e.contains("--"), "{e}");
        }
    }

    #[test]
    fn parsers_convert_units() {
        assert_eq!(flags::ttft_ms("200").unwrap(), 200_000_000);
        assert_eq!(flags::itl_ms("0.5").unwrap(), 500_000);
        assert_eq!(flags::decode_tok_s("50").unwrap(), 20_000_000);
        assert_eq!(flags::prefill_tok_s("1000.5").unwrap(), 1_000_500);
        assert_eq!(flags::stall_s("1.5").unwrap(), 1_500_000_000);
        assert_eq!(
            flags::fail_status("429").unwrap(),
            FailStatus::TooManyRequests
        );
    }

    #[test]
    fn describe_names_the_flags() {
        let mut c = EmulatorConfig::default();
        c.timing.ttft = 10_000_000;
        c.timing.itl = 200_000;
        assert_eq!(
            c.describe(),
            "--ttft-ms 10 --itl-ms 0.2, no prefill term, prefix cache unbounded, no faults"
        );
        c.faults.fail_rate = 0.5;
        c.cache_blocks = Some(0);
        c.timing.prefill_mtok_s = Some(5_000_000);
        assert_eq!(
            c.describe(),
            "--ttft-ms 10 --itl-ms 0.2, --prefill-tok-s 5000, prefix cache off, --fail-rate 0.5"
        );
    }

    #[test]
    fn flags_build_a_config() {
        let mut f = EmulatorFlags {
            ttft_ms: Some(flags::ttft_ms("100").unwrap()),
            decode_tok_s: Some(flags::decode_tok_s("100").unwrap()),
            fail_rate: Some(flags::fail_rate("0.25").unwrap()),
            seed: Some(flags::seed("7").unwrap()),
            ..EmulatorFlags::default()
        };
        let c = f.clone().into_config().unwrap();
        assert_eq!(c.timing.ttft, 100_000_000);
        assert_eq!(c.timing.itl, 10_000_000);
        assert_eq!(c.faults.fail_rate, 0.25);
        assert_eq!(c.seed, 7);
        assert_eq!(c.max_model_len, DEFAULT_MAX_MODEL_LEN);
        f.itl_ms = Some(flags::itl_ms("5").unwrap());
        assert!(f
            .into_config()
            .unwrap_err()
            .to_string()
            .contains("not both"));
    }

    #[test]
    fn ttft_adds_prefill_of_uncached_tokens() {
        let t = TimingModel {
            ttft: 10_000_000,
            itl: 0,
            prefill_mtok_s: Some(1_000_000), // 1000 tok/s
        };
        assert_eq!(t.ttft_for(0), 10_000_000);
        assert_eq!(t.ttft_for(500), 510_000_000);
        let no_rate = TimingModel {
            prefill_mtok_s: None,
            ..t
        };
        assert_eq!(no_rate.ttft_for(500), 10_000_000);
    }
}
