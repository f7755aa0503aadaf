//! One `GET` of the pre-flight, and what it came to: a model list, an
//! HTTP status with the server's own words, or a transport failure
//! classed as refused (nothing listens yet), timed out, or broken (the
//! connection was made and then failed: the wrong scheme, a certificate).
//! And the ready poll: `GET /v1/models` again every
//! [`POLL_INTERVAL`] while the server refuses connections or answers
//! 502/503/504 (still loading: llama.cpp answers 503 `Loading model`),
//! until it lists its models or `--ready-timeout` runs out.

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::endpoint::{read_capped, without_url, MODELS_BODY_CAP};
use crate::live::tls;

/// How often the ready poll asks again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// The longest one `GET` of the pre-flight may take.
const ATTEMPT_CAP: Duration = Duration::from_secs(30);
/// The shortest: a slow server still answers a `GET /v1/models` in this.
const ATTEMPT_FLOOR: Duration = Duration::from_secs(5);

/// What one `GET` came to.
#[derive(Debug, Clone)]
pub enum Answer {
    /// 2xx with a JSON body.
    Json(Value),
    /// 2xx whose body is not JSON (or could not be read in full).
    NotJson(String),
    /// Any other status, with the server's words (one line, short).
    Status { code: u16, words: String },
    /// The connection was refused: nothing listens (yet).
    Refused(String),
    /// No answer in time.
    TimedOut(Duration),
    /// The TLS handshake failed: the problem in plain words, and whether
    /// it is about the server's certificate.
    Tls { words: String, certificate: bool },
    /// A connection was made and failed: the words of the failure.
    Broken(String),
}

impl Answer {
    /// A server that is not there yet or still loading: worth asking again.
    pub fn not_ready(&self) -> bool {
        match self {
            Answer::Refused(_) => true,
            Answer::Status { code, .. } => matches!(code, 502..=504),
            _ => false,
        }
    }

    /// What the answer was, in a few words.
    pub fn said(&self) -> String {
        match self {
            Answer::Json(_) => "a model list".to_string(),
            Answer::NotJson(why) => format!("an answer that is not JSON ({why})"),
            Answer::Status { code, words } if words.is_empty() => format!("HTTP {code}"),
            Answer::Status { code, words } => format!("HTTP {code}: {words}"),
            Answer::Refused(words) => format!("connection refused ({words})"),
            Answer::TimedOut(after) => format!("no answer within {} s", after.as_secs_f64()),
            Answer::Tls { words, .. } => format!("the TLS handshake failed: {words}"),
            Answer::Broken(words) => words.clone(),
        }
    }
}

/// `GET url` with `headers`, within `timeout`.
pub async fn get(
    client: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    timeout: Duration,
) -> Answer {
    let exchange = async {
        let response = match client.get(url).headers(headers.clone()).send().await {
            Ok(response) => response,
            Err(e) => return transport(&e, timeout),
        };
        let code = response.status().as_u16();
        let body = read_capped(response, MODELS_BODY_CAP).await;
        if !(200..300).contains(&code) {
            let words = body.map(|b| server_words(&b)).unwrap_or_default();
            return Answer::Status { code, words };
        }
        match body {
            Ok(body) => match serde_json::from_slice(&body) {
                Ok(value) => Answer::Json(value),
                Err(e) => Answer::NotJson(e.to_string()),
            },
            Err(why) => Answer::NotJson(why),
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(answer) => answer,
        Err(_) => Answer::TimedOut(timeout),
    }
}

/// A reqwest failure, classed.
fn transport(e: &reqwest::Error, timeout: Duration) -> Answer {
    if e.is_timeout() {
        return Answer::TimedOut(timeout);
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut innermost = None;
    while let Some(s) = source {
        let tls = s
            .downcast_ref::<rustls::Error>()
            .or_else(|| s.downcast_ref::<std::io::Error>().and_then(rustls_inside));
        if let Some(tls) = tls {
            return Answer::Tls {
                words: tls::explain(tls),
                certificate: tls::is_certificate_problem(tls),
            };
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return Answer::Refused(io.to_string());
            }
        }
        innermost = Some(s);
        source = s.source();
    }
    // reqwest's outer words name the URL and say "error sending request":
    // the innermost cause is what went wrong.
    Answer::Broken(innermost.map_or_else(|| without_url(e), |s| s.to_string()))
}

/// The rustls error inside an I/O error, through the I/O errors that wrap
/// it (hyper's connector wraps tokio-rustls's, and an I/O error's
/// `source` skips the one it holds).
fn rustls_inside(e: &std::io::Error) -> Option<&rustls::Error> {
    let mut inner = e.get_ref()?;
    loop {
        if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        inner = inner.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
}

/// The server's own words in an error body: OpenAI's `error.message`,
/// a plain `message` or FastAPI's `detail`, else the text; one line, at
/// most 200 characters.
pub fn server_words(body: &[u8]) -> String {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let from_json = json.as_ref().and_then(|v| {
        let picked = v
            .pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .or_else(|| v.get("error"))?;
        Some(match picked.as_str() {
            Some(text) => text.to_string(),
            None => picked.to_string(),
        })
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 200 {
        format!("{}...", one_line.chars().take(200).collect::<String>())
    } else {
        one_line
    }
}

/// `GET url` until it is not [`Answer::not_ready`] or `ready_timeout` has
/// passed (one try when it is zero). Returns the last answer and how long
/// the server was waited for.
pub async fn poll(
    client: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    ready_timeout: Duration,
) -> (Answer, Duration) {
    let started = Instant::now();
    let deadline = started + ready_timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = left.clamp(ATTEMPT_FLOOR, ATTEMPT_CAP);
        let answer = get(client, url, headers, timeout).await;
        if !answer.not_ready() || Instant::now() + POLL_INTERVAL > deadline {
            return (answer, started.elapsed());
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_words_are_taken_from_its_error_shapes() {
        let openai = br#"{"error":{"message":"The model `x` does not exist","type":"invalid_request_error"}}"#;
        assert_eq!(server_words(openai), "The model `x` does not exist");
        assert_eq!(server_words(br#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(server_words(br#"{"error":"Unauthorized"}"#), "Unauthorized");
        assert_eq!(
            server_words(b"<html>\n  <h1>404</h1>\n</html>"),
            "<html> <h1>404</h1> </html>"
        );
        let long = "a ".repeat(300);
        assert!(server_words(long.as_bytes()).ends_with("..."));
    }

    #[test]
    fn only_a_server_that_is_not_there_yet_or_loading_is_asked_again() {
        assert!(Answer::Refused("os error 111".into()).not_ready());
        for code in [502, 503, 504] {
            assert!(Answer::Status {
                code,
                words: String::new()
            }
            .not_ready());
        }
        for code in [401, 403, 404, 500] {
            assert!(!Answer::Status {
                code,
                words: String::new()
            }
            .not_ready());
        }
        assert!(!Answer::Broken("tls".into()).not_ready());
        assert!(!Answer::TimedOut(Duration::from_secs(5)).not_ready());
    }
}
