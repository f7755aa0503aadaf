//! Service-time models (docs/service-models.md).
//!
//! | model | `--service` | service time of a request |
//! |---|---|---|
//! | recorded | `recorded` | its recorded duration (unknown: 0) |
//! | fixed | `fixed:TTFT_MS:ITL_MS` | `ttft + osl * itl` |
//! | throughput | `throughput:PREFILL_TOK_S:DECODE_TOK_S` | `isl / prefill + osl / decode` |
//!
//! | server | `server:PROFILE.toml` | the batching server model of `server/` (queueing, batching, KV and prefix cache): not a per-request formula, see [`Service`] |
//!
//! The throughput model has no contention: every request sees the full
//! rates, as on a server with one request at a time. All arithmetic is
//! integer nanoseconds (rates are held in milli-tokens per second), so a
//! model gives the same answer on every machine.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use arbor_engine::time::{Nanos, NANOS_PER_MS, NANOS_PER_SEC};
use arbor_engine::PolicyError;

use crate::server::Profile;

/// What a model may look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRequest {
    pub isl: u32,
    pub osl: u32,
    /// Recorded duration (unknown: 0).
    pub recorded: Nanos,
}

/// A model of a server's service time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServiceModel {
    #[default]
    Recorded,
    Fixed {
        ttft: Nanos,
        itl: Nanos,
    },
    /// Rates in milli-tokens per second.
    Throughput {
        prefill_mtok_s: u64,
        decode_mtok_s: u64,
    },
}

impl ServiceModel {
    /// Time from sending the request to its last byte.
    pub fn service_time(&self, request: &ServiceRequest) -> Nanos {
        match *self {
            ServiceModel::Recorded => request.recorded,
            ServiceModel::Fixed { ttft, itl } => {
                ttft.saturating_add(itl.saturating_mul(request.osl as u64))
            }
            ServiceModel::Throughput {
                prefill_mtok_s,
                decode_mtok_s,
            } => tokens_time(request.isl, prefill_mtok_s)
                .saturating_add(tokens_time(request.osl, decode_mtok_s)),
        }
    }
}

/// Nanoseconds to process `tokens` at `mtok_s` milli-tokens per second,
/// rounded to the nearest nanosecond.
fn tokens_time(tokens: u32, mtok_s: u64) -> Nanos {
    let numerator = tokens as u128 * NANOS_PER_SEC as u128 * 1000;
    let rate = mtok_s.max(1) as u128;
    ((numerator + rate / 2) / rate).min(u64::MAX as u128) as Nanos
}

fn bad(text: &str) -> PolicyError {
    PolicyError::new(format!(
        "expected recorded, fixed:TTFT_MS:ITL_MS or throughput:PREFILL_TOK_S:DECODE_TOK_S, got `{text}`"
    ))
}

fn parse_number(text: &str, whole: &str) -> Result<f64, PolicyError> {
    match text.parse::<f64>() {
        Ok(v) if (0.0..=1.0e12).contains(&v) => Ok(v),
        _ => Err(bad(whole)),
    }
}

impl FromStr for ServiceModel {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = text.split(':').collect();
        match parts.as_slice() {
            ["recorded"] => Ok(ServiceModel::Recorded),
            ["fixed", ttft, itl] => Ok(ServiceModel::Fixed {
                ttft: (parse_number(ttft, text)? * NANOS_PER_MS as f64).round() as Nanos,
                itl: (parse_number(itl, text)? * NANOS_PER_MS as f64).round() as Nanos,
            }),
            ["throughput", prefill, decode] => {
                let prefill = (parse_number(prefill, text)? * 1000.0).round() as u64;
                let decode = (parse_number(decode, text)? * 1000.0).round() as u64;
                if prefill == 0 || decode == 0 {
                    return Err(PolicyError::new(format!(
                        "rates must be positive, got `{text}`"
                    )));
                }
                Ok(ServiceModel::Throughput {
                    prefill_mtok_s: prefill,
                    decode_mtok_s: decode,
                })
            }
            _ => Err(bad(text)),
        }
    }
}

impl fmt::Display for ServiceModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ServiceModel::Recorded => write!(f, "recorded"),
            ServiceModel::Fixed { ttft, itl } => {
                write!(f, "fixed:{}:{}", ttft as f64 / 1e6, itl as f64 / 1e6)
            }
            ServiceModel::Throughput {
                prefill_mtok_s,
                decode_mtok_s,
            } => write!(
                f,
                "throughput:{}:{}",
                prefill_mtok_s as f64 / 1000.0,
                decode_mtok_s as f64 / 1000.0
            ),
        }
    }
}

/// A `--service` value: one of the per-request [`ServiceModel`]s, or the
/// batching server model under a profile (`server:PROFILE.toml`), which a
/// virtual driver runs as a whole rather than asking per request.
#[derive(Debug, Clone, PartialEq)]
pub enum Service {
    Model(ServiceModel),
    Server(ServerService),
}

/// `server:PATH`: the profile file and what it holds (read once, shared).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerService {
    /// The path as given.
    pub path: PathBuf,
    pub profile: Arc<Profile>,
}

impl Default for Service {
    fn default() -> Self {
        Service::Model(ServiceModel::default())
    }
}

impl From<ServiceModel> for Service {
    fn from(model: ServiceModel) -> Self {
        Service::Model(model)
    }
}

impl FromStr for Service {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some(path) = text.strip_prefix("server:") else {
            return text.parse().map(Service::Model);
        };
        if path.is_empty() {
            return Err(PolicyError::new(format!(
                "expected server:PROFILE.toml (a profile file), got `{text}`"
            )));
        }
        let path = PathBuf::from(path);
        let profile =
            Profile::from_toml_path(&path).map_err(|e| PolicyError::new(e.to_string()))?;
        Ok(Service::Server(ServerService {
            path,
            profile: Arc::new(profile),
        }))
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Service::Model(model) => model.fmt(f),
            Service::Server(server) => write!(f, "server:{}", server.path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(isl: u32, osl: u32, recorded: Nanos) -> ServiceRequest {
        ServiceRequest { isl, osl, recorded }
    }

    #[test]
    fn recorded_returns_the_recording() {
        assert_eq!(
            ServiceModel::Recorded.service_time(&req(10, 10, 1234)),
            1234
        );
    }

    #[test]
    fn fixed_is_ttft_plus_osl_times_itl() {
        let m: ServiceModel = "fixed:250:20".parse().unwrap();
        // 250 ms + 100 * 20 ms = 2.25 s
        assert_eq!(m.service_time(&req(5000, 100, 0)), 2_250_000_000);
        assert_eq!(m.to_string(), "fixed:250:20");
    }

    #[test]
    fn throughput_is_prefill_plus_decode_time() {
        let m: ServiceModel = "throughput:10000:50".parse().unwrap();
        // 20000 / 10000 = 2 s, plus 100 / 50 = 2 s.
        assert_eq!(m.service_time(&req(20_000, 100, 0)), 4_000_000_000);
        // Fractional rates: 1 token at 3 tok/s = 333_333_333 ns (rounded).
        let m: ServiceModel = "throughput:3:3".parse().unwrap();
        assert_eq!(m.service_time(&req(1, 0, 0)), 333_333_333);
    }

    #[test]
    fn bad_models_are_rejected() {
        for bad in [
            "",
            "fixed",
            "fixed:1",
            "fixed:a:b",
            "throughput:0:1",
            "throughput:-1:5",
            "nope",
        ] {
            assert!(bad.parse::<ServiceModel>().is_err(), "{bad}");
        }
    }
}
