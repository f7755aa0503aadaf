//! The wrong scheme, recognised: an `http://` URL aimed at a port that
//! speaks TLS, or an `https://` URL at one that speaks plain HTTP. When a
//! pre-flight `GET` connected and then broke, the same host and port is
//! asked once more in the other scheme (`GET /v1/models`, no credential
//! sent, the certificate not checked: only whether an HTTP answer comes
//! back); an answer there names the URL to use.

use std::time::Duration;

use reqwest::header::HeaderMap;

use super::answer::{self, Answer};
use crate::endpoint::{at, reqwest_builder};
use crate::live::tls::{client_config, TlsOptions};

/// How long the other scheme is given to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// `endpoint` in the other scheme, when it is `http://` or `https://`.
pub fn swapped(endpoint: &str) -> Option<String> {
    if let Some(rest) = endpoint.strip_prefix("http://") {
        Some(format!("https://{rest}"))
    } else {
        endpoint
            .strip_prefix("https://")
            .map(|rest| format!("http://{rest}"))
    }
}

/// The endpoint in the other scheme when the server answers HTTP there.
pub async fn other_scheme_answers(endpoint: &str) -> Option<String> {
    let other = swapped(endpoint)?;
    let client = if other.starts_with("https://") {
        let tls = client_config(&TlsOptions {
            cacert: None,
            insecure: true,
        })
        .ok()?;
        reqwest_builder(Some(&tls)).build().ok()?
    } else {
        reqwest_builder(None).build().ok()?
    };
    let url = at(&other, "/v1/models");
    match answer::get(&client, &url, &HeaderMap::new(), PROBE_TIMEOUT).await {
        Answer::Json(_) | Answer::NotJson(_) | Answer::Status { .. } => Some(other),
        Answer::Refused(_) | Answer::TimedOut(_) | Answer::Tls { .. } | Answer::Broken(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_is_swapped_and_the_rest_kept() {
        assert_eq!(
            swapped("http://h:8000/api?k=v").as_deref(),
            Some("https://h:8000/api?k=v")
        );
        assert_eq!(swapped("https://h").as_deref(), Some("http://h"));
        assert_eq!(swapped("ftp://h"), None);
    }
}
