//! Value parsers: flag text to typed values, at parse time.
//!
//! Owns the parsers clap calls for every typed flag value (durations, byte
//! counts, percentages, the API, the max-tokens field, JSON objects,
//! URLs). Each says what it expected and what it got; clap names the flag
//! (`error: invalid value 'x' for '--grace <DURATION>': ...`) and exits 2.
//! Policy types with a `FromStr` of their own (gap transforms, arrivals,
//! staggers, start windows, service models, formats) are parsed by it.

use arbor::backends::live::request::{Api, MaxTokensField};
use arbor::engine::policy::{parse_duration, GapTransform, Policy};
use arbor::engine::time::Nanos;
use arbor::formats::write::Target;
use arbor::json::{Map, Value};
use arbor::options::History;

/// A non-negative duration: `30`, `0.5` (seconds) or `250ms`, `30s`, `5m`,
/// `1h`.
pub fn duration(text: &str) -> Result<Nanos, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// A duration longer than zero.
pub fn positive_duration(text: &str) -> Result<Nanos, String> {
    match duration(text)? {
        0 => Err(format!("expected more than 0 seconds, got `{text}`")),
        ns => Ok(ns),
    }
}

/// A byte count above 0: `1000000`, or with a binary unit `64KiB`,
/// `512MiB`, `4GiB`, `1TiB`.
pub fn byte_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        _ => {
            return Err(format!(
                "expected a byte count such as 1000000, 512MiB or 4GiB, got `{text}`"
            ))
        }
    };
    match number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
    {
        Some(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "expected a byte count above 0 such as 1000000, 512MiB or 4GiB, got `{text}`"
        )),
    }
}

/// An `http://` or `https://` URL with a host, kept as given
/// (`--metrics-url`).
pub fn http_url(text: &str) -> Result<String, String> {
    arbor::backends::endpoint::http_url(text)
}

/// HTTP statuses given as one value (`429,503`): a type of its own, since
/// clap reads an `Option<Vec<_>>` field as a flag of many values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statuses(pub Vec<u16>);

/// `--retry-on 429,503`: refusal statuses.
pub fn retry_statuses(text: &str) -> Result<Statuses, String> {
    arbor::backends::live::retry::parse_statuses(text).map(Statuses)
}

/// A share from 0 to 1 (`--max-error-rate 0.1`).
pub fn share(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected a share from 0 to 1 (0.1 is 10 %), got `{text}`"
        )),
    }
}

/// A percentage `P`, as the gap transform `pct:P`.
pub fn percent(text: &str) -> Result<GapTransform, String> {
    Policy::think_pct(text).map_err(|e| e.to_string())
}

/// `chat`, `completions`, `messages` or `responses`.
pub fn api(text: &str) -> Result<Api, String> {
    match text {
        "chat" => Ok(Api::Chat),
        "completions" => Ok(Api::Completions),
        "messages" => Ok(Api::Messages),
        "responses" => Ok(Api::Responses),
        _ => Err(format!(
            "expected chat, completions, messages or responses, got `{text}`"
        )),
    }
}

/// `recorded` or `live` (`--history`).
pub fn history(text: &str) -> Result<History, String> {
    text.parse()
}

/// `max_tokens` or `max_completion_tokens`.
pub fn max_tokens_field(text: &str) -> Result<MaxTokensField, String> {
    [
        MaxTokensField::MaxTokens,
        MaxTokensField::MaxCompletionTokens,
    ]
    .into_iter()
    .find(|f| f.name() == text)
    .ok_or_else(|| format!("expected max_tokens or max_completion_tokens, got `{text}`"))
}

/// `--isl-scale`: a finite factor above 0.
pub fn isl_scale(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!(
            "expected a factor above 0 (e.g. 0.25), got `{text}`"
        )),
    }
}

/// `--max-context`: a token count of at least 1.
pub fn max_context(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "expected a token count of at least 1 (e.g. 8192), got `{text}`"
        )),
    }
}

/// What `convert --to` writes: a format arbor writes.
pub fn convert_target(text: &str) -> Result<Target, String> {
    text.parse()
}

/// A JSON object (`--extra-body`).
pub fn json_object(text: &str) -> Result<Map<String, Value>, String> {
    arbor::json::object(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_body_must_be_an_object() {
        assert!(json_object(r#"{"temperature":0}"#).is_ok());
        for bad in ["[1]", "3", "{oops", ""] {
            assert!(json_object(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn byte_counts_take_binary_units() {
        assert_eq!(byte_count("4GiB"), Ok(4 << 30));
        assert_eq!(byte_count("512 MiB"), Ok(512 << 20));
        assert_eq!(byte_count("1000"), Ok(1000));
        for bad in ["0", "", "4GB", "-1", "1.5GiB", "99999999999TiB", "GiB"] {
            assert!(byte_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn timeouts_must_be_positive() {
        assert_eq!(positive_duration("1m"), Ok(60_000_000_000));
        assert!(positive_duration("0").unwrap_err().contains("more than 0"));
        assert!(positive_duration("soon").is_err());
    }

    #[test]
    fn fit_values_are_checked() {
        assert_eq!(isl_scale("0.5"), Ok(0.5));
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(isl_scale(bad).unwrap_err().contains("above 0"), "{bad}");
        }
        assert_eq!(max_context("8192"), Ok(8192));
        for bad in ["0", "-5", "1.5", "many"] {
            assert!(
                max_context(bad).unwrap_err().contains("at least 1"),
                "{bad}"
            );
        }
    }

    #[test]
    fn names_round_trip() {
        for api_text in ["chat", "completions", "messages", "responses"] {
            assert_eq!(api(api_text).unwrap().name(), api_text);
        }
        for field in ["max_tokens", "max_completion_tokens"] {
            assert_eq!(max_tokens_field(field).unwrap().name(), field);
        }
        assert!(api("realtime").is_err());
    }
}

/// `--intervals`: `off`, or a level in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalLevel(pub Option<f64>);

/// `off`, or a level in percent from 50 to 99.9 (`90`, `95%`).
pub fn interval_level(text: &str) -> Result<IntervalLevel, String> {
    arbor::options::IntervalOptions::parse_level(text).map(IntervalLevel)
}
