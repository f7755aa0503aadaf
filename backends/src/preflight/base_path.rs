//! A `GET /v1/models` answered 404: is the base path wrong, or does the
//! server just not list models? The request path itself is asked
//! (`GET` on `/v1/chat/completions` answers 405 or 400 where the route
//! exists, 404 where it does not), and when it is missing too, the usual
//! other bases are tried: each shorter prefix of the given path, then
//! `/api` and `/openai` at the root. The first that lists models is the
//! `--endpoint` to use.

use std::time::Duration;

use reqwest::header::HeaderMap;

use super::answer::{self, Answer};
use crate::endpoint::at;

/// How long each alternative is given to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Bases often put in front of `/v1` by gateways.
const USUAL: [&str; 2] = ["/api", "/openai"];

/// The bases to try instead of `endpoint` (normalized: no trailing `/`,
/// no `/v1`), closest first, without the query string.
pub fn alternatives(endpoint: &str) -> Vec<String> {
    let base = endpoint.split_once('?').map_or(endpoint, |(b, _)| b);
    let Some(scheme_end) = base.find("://").map(|i| i + 3) else {
        return Vec::new();
    };
    let (origin, path) = match base[scheme_end..].find('/') {
        Some(i) => base.split_at(scheme_end + i),
        None => (base, ""),
    };
    let mut bases = Vec::new();
    let mut prefix = path.trim_end_matches('/');
    while let Some(i) = prefix.rfind('/') {
        prefix = &prefix[..i];
        bases.push(format!("{origin}{prefix}"));
    }
    for usual in USUAL {
        let candidate = format!("{origin}{usual}");
        if candidate != base && !bases.contains(&candidate) {
            bases.push(candidate);
        }
    }
    bases
}

/// What a 404 on `/v1/models` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The request path exists: the server only does not list models.
    NoModelList,
    /// Neither exists here; this base lists models.
    MovedTo(String),
    /// Neither exists here, and none of these bases list models.
    Nowhere(Vec<String>),
}

/// Asks the request path `api_path` at `endpoint`, then the alternatives.
pub async fn diagnose(
    client: &reqwest::Client,
    endpoint: &str,
    api_path: &str,
    headers: &HeaderMap,
) -> Missing {
    let route = answer::get(client, &at(endpoint, api_path), headers, PROBE_TIMEOUT).await;
    if !matches!(route, Answer::Status { code: 404, .. }) {
        return Missing::NoModelList;
    }
    let tried = alternatives(endpoint);
    for base in &tried {
        let listed = answer::get(client, &at(base, "/v1/models"), headers, PROBE_TIMEOUT).await;
        if matches!(&listed, Answer::Json(v) if v.get("data").is_some_and(|d| d.is_array())) {
            return Missing::MovedTo(base.clone());
        }
    }
    Missing::Nowhere(tried)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorter_prefixes_come_first_then_the_usual_bases() {
        assert_eq!(
            alternatives("http://h:8000/api/llm?key=1"),
            ["http://h:8000/api", "http://h:8000", "http://h:8000/openai"]
        );
        assert_eq!(
            alternatives("http://h:8000"),
            ["http://h:8000/api", "http://h:8000/openai"]
        );
        assert_eq!(
            alternatives("http://h:8000/openai"),
            ["http://h:8000", "http://h:8000/api"]
        );
    }
}
