//! Prometheus text (what a server's `/metrics` answers) to samples, with
//! the `prometheus-parse` crate.
//!
//! Owns the crate's use and the one thing it cannot do: metric names with
//! a colon (`vllm:num_requests_running`, legal in the format, and how
//! vLLM, SGLang and llama.cpp all name theirs) are not matched by its
//! name pattern, so each name is escaped before parsing (`:` to a
//! sequence no name holds) and unescaped after. Histograms and summaries
//! come out one sample per bucket (`le` label) or quantile (`quantile`
//! label); samples are sorted by name and labels, so a scrape's lines
//! come out in one order whatever the crate's maps hold. Reads no file
//! and knows no metric by name.

use std::collections::BTreeMap;

use prometheus_parse::{Scrape, Value};

/// What the parser never sees in a name: stands for `:` while it parses.
const COLON: &str = "__arbor_colon__";

/// One value of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Every sample of `text` with a finite value, sorted by name and labels.
/// Lines the parser does not understand are skipped (it never fails on
/// text); an answer with no sample at all yields an empty list.
pub fn parse(text: &str) -> Vec<Sample> {
    let lines = text.lines().map(|line| Ok(escape(line)));
    let Ok(scrape) = Scrape::parse(lines) else {
        return Vec::new();
    };
    let mut samples = Vec::new();
    for s in scrape.samples {
        let name = s.metric.replace(COLON, ":");
        let labels: BTreeMap<String, String> = s
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut push = |name: String, labels: BTreeMap<String, String>, value: f64| {
            if value.is_finite() {
                samples.push(Sample {
                    name,
                    labels,
                    value,
                });
            }
        };
        match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => push(name, labels, v),
            Value::Histogram(buckets) => {
                for b in buckets {
                    let mut labels = labels.clone();
                    labels.insert("le".to_string(), bound(b.less_than));
                    push(format!("{name}_bucket"), labels, b.count);
                }
            }
            Value::Summary(quantiles) => {
                for q in quantiles {
                    let mut labels = labels.clone();
                    labels.insert("quantile".to_string(), bound(q.quantile));
                    push(name.clone(), labels, q.count);
                }
            }
        }
    }
    samples.sort_by(|a, b| (&a.name, &a.labels).cmp(&(&b.name, &b.labels)));
    samples
}

/// A bucket bound or quantile as the format writes it.
fn bound(v: f64) -> String {
    if v == f64::INFINITY {
        "+Inf".to_string()
    } else {
        v.to_string()
    }
}

/// `line` with the colons of its metric name escaped: the first word of a
/// sample line, the third of a `# HELP` or `# TYPE` line.
fn escape(line: &str) -> String {
    let trimmed = line.trim_start();
    if let Some(rest) = trimmed.strip_prefix('#') {
        let words: Vec<&str> = rest.trim_start().splitn(2, char::is_whitespace).collect();
        return match words.as_slice() {
            [kind @ ("HELP" | "TYPE"), tail] => {
                let tail = tail.trim_start();
                let (name, after) =
                    tail.split_at(tail.find(char::is_whitespace).unwrap_or(tail.len()));
                format!("# {kind} {}{after}", name.replace(':', COLON))
            }
            _ => line.to_string(),
        };
    }
    let end = trimmed
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(trimmed.len());
    let (name, after) = trimmed.split_at(end);
    format!("{}{after}", name.replace(':', COLON))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colon_names_labels_and_histograms() {
        let text = "# HELP vllm:num_requests_running Number of requests.\n\
                    # TYPE vllm:num_requests_running gauge\n\
                    vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n\
                    # TYPE vllm:e2e_request_latency_seconds histogram\n\
                    vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"m\"} 1.0\n\
                    vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 2.0\n\
                    plain_untyped 7\n\
                    broken line without value\n\
                    nan_gauge NaN\n";
        let samples = parse(text);
        let names: Vec<&str> = samples.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "plain_untyped",
                "vllm:e2e_request_latency_seconds_bucket",
                "vllm:e2e_request_latency_seconds_bucket",
                "vllm:num_requests_running"
            ]
        );
        let running = &samples[3];
        assert_eq!(running.value, 3.0);
        assert_eq!(running.labels.get("engine").map(String::as_str), Some("0"));
        assert_eq!(
            running.labels.get("model_name").map(String::as_str),
            Some("m")
        );
        let inf = samples
            .iter()
            .find(|s| s.labels.get("le").map(String::as_str) == Some("+Inf"));
        assert_eq!(inf.map(|s| s.value), Some(2.0));
        assert!(parse("not prometheus at all {{{").is_empty());
        assert!(parse("").is_empty());
    }
}
